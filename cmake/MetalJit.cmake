# MetalJit: a host C++ library embedding Metal kernel sources for run-time compilation.
#
#   include(MetalJit)
#   metallib_add_jit_library(<target>
#     SOURCE_DIR <kernel tree root>      # a directory with catalog.json (e.g. metal_src)
#     FAMILIES <family>...               # catalog families to embed; none = empty registry
#     [DTYPES <dtype>...]                # dtype selection (default: all)
#     [COMPRESS]                         # zlib-compress embedded text, inflated at lookup
#     [NO_DEDUP]                         # store shared headers once per family (benchmarks)
#     [STRIP_COMMENTS]                   # leave comments out of the embedded text
#     [NAMESPACE <ns>]                   # C++ namespace of the registry (default metal_jit)
#     [PYTHON <python executable>])      # default: METALLIB_BUILDER_PYTHON, else FindPython3's
#
# For each family a build-time custom command runs `python -m builder.jit family`, which
# inlines the family header's quoted includes (each file once, #line markers, angle includes
# kept) into <binary dir>/<target>/<family>.cpp; its depfile lists the headers it read, so
# touching a header regenerates only the families that embed it, and an unchanged output is
# not rewritten (no recompile). No Metal compiler is involved. `<target>/embed.json` records
# what each family embeds (docs/jit.md). The library exposes metal_jit/registry.h (C++ API)
# and a small C API (mbjit_*) for ctypes.
#
# metallib_add_tree_jit_library(<target> PLAN <plan.json> UNITS <entry file>...) (below) is the
# host library of a kernel tree without a catalog: the run-time preambles of its JIT entry files.
#
# Including MetalJit defines these functions only (no cache variable, no Python run). They need
# C++ enabled in the project (project(... LANGUAGES CXX)) and a checkout or wheel layout: the
# registry's sources are metal_src/host/ beside this folder.

include_guard(GLOBAL)

include("${CMAKE_CURRENT_LIST_DIR}/MetallibPython.cmake")


function(metallib_add_jit_library target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "COMPRESS;NO_DEDUP;STRIP_COMMENTS" "SOURCE_DIR;NAMESPACE;PYTHON"
                        "FAMILIES;DTYPES")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR
      "metallib_add_jit_library(${target}): unknown arguments ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT arg_SOURCE_DIR OR NOT EXISTS "${arg_SOURCE_DIR}/catalog.json")
    message(FATAL_ERROR
      "metallib_add_jit_library(${target}): SOURCE_DIR '${arg_SOURCE_DIR}' is not a kernel tree "
      "(no catalog.json)")
  endif()
  get_filename_component(source_dir "${arg_SOURCE_DIR}" ABSOLUTE)
  # A family name becomes part of a C++ name: the same pattern as
  # builder.settings.checks.CXX_IDENTIFIER (tests/jit/test_codegen.py checks). NAMESPACE may be nested
  # (a::b), no part a C++ keyword: MetallibPython.cmake's rule, builder.settings.checks'.
  set(cxx_identifier "[A-Za-z_][A-Za-z0-9_]*")
  if(NOT arg_NAMESPACE)
    set(arg_NAMESPACE metal_jit)
  endif()
  _metallib_namespace_problem(problem "${arg_NAMESPACE}")
  if(problem)
    message(FATAL_ERROR "metallib_add_jit_library(${target}): NAMESPACE '${arg_NAMESPACE}' is "
                        "not a C++ namespace (${problem})")
  endif()
  _metallib_require_cxx("metallib_add_jit_library(${target})")
  get_filename_component(host_dir "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/../metal_src/host" ABSOLUTE)
  metallib_builder_python(python "${arg_PYTHON}")
  # The families are checked by the one selection function of the build plan
  # (builder.cmake_build.plan), which the project's own build uses too: unknown ones stop the
  # configuration, naming the valid ones.
  list(JOIN arg_FAMILIES "," asked)
  metallib_builder_command(plan_command "${python}" builder.cmake_build.plan)
  execute_process(
    COMMAND ${plan_command} --select --source-dir "${source_dir}" --kernels "${asked}"
    OUTPUT_VARIABLE families ERROR_VARIABLE err RESULT_VARIABLE rc
    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    string(REGEX REPLACE "^error: " "" err "${err}")
    message(FATAL_ERROR "metallib_add_jit_library(${target}): ${err}")
  endif()
  if(NOT arg_FAMILIES)
    set(families "")
  endif()
  foreach(family IN LISTS families)
    if(NOT family MATCHES "^${cxx_identifier}$")
      message(FATAL_ERROR "metallib_add_jit_library(${target}): family '${family}' is not a C++ name")
    endif()
  endforeach()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${source_dir}/catalog.json")

  set(gen_dir "${CMAKE_CURRENT_BINARY_DIR}/${target}")
  file(MAKE_DIRECTORY "${gen_dir}")
  metallib_builder_command(generator "${python}" builder.jit)
  set(options "")
  if(arg_COMPRESS)
    list(APPEND options --compress)
  endif()
  if(arg_NO_DEDUP)
    list(APPEND options --no-dedup)
  endif()
  if(arg_STRIP_COMMENTS)
    list(APPEND options --strip-comments)
  endif()
  set(selection "")
  if(arg_DTYPES)
    list(JOIN arg_DTYPES "," dtypes)
    set(selection --dtypes "${dtypes}")
  endif()

  set(sources "")
  set(facts "")
  set(declarations "")
  set(items "")
  foreach(family IN LISTS families)
    add_custom_command(
      OUTPUT "${gen_dir}/${family}.cpp" "${gen_dir}/${family}.json"
      COMMAND ${generator} family --source-dir "${source_dir}" --family "${family}"
              ${selection} --out-dir "${gen_dir}" --depfile "${gen_dir}/${family}.d" ${options}
      DEPENDS "${source_dir}/catalog.json"
      DEPFILE "${gen_dir}/${family}.d"
      WORKING_DIRECTORY "${gen_dir}"
      COMMENT "Embedding JIT unit ${family} (${target})"
      VERBATIM)
    list(APPEND sources "${gen_dir}/${family}.cpp")
    list(APPEND facts "${gen_dir}/${family}.json")
    string(APPEND declarations "extern const Family family_${family};\n")
    string(APPEND items "&family_${family}, ")
  endforeach()

  # The family index is known at configure time; file(CONFIGURE) rewrites it only on change.
  list(LENGTH families count)
  if(count EQUAL 0)
    set(table "static constexpr FamilyTable table{nullptr, 0};")
  else()
    set(table "static constexpr FamilyTable table{kItems, ${count}};")
    string(APPEND declarations "namespace {\nconst Family* const kItems[] = {${items}};\n}  // namespace\n")
  endif()
  file(CONFIGURE OUTPUT "${gen_dir}/index.cpp" CONTENT [=[
// Generated by MetalJit.cmake: the families of this library. Do not edit.
#include "metal_jit/embedded.h"

namespace METAL_JIT_NAMESPACE {
namespace detail {

@declarations@
const FamilyTable& family_table() {
  @table@
  return table;
}

}  // namespace detail
}  // namespace METAL_JIT_NAMESPACE
]=] @ONLY)

  add_custom_command(
    OUTPUT "${gen_dir}/embed.json"
    COMMAND ${generator} merge --target "${target}" ${options} --out "${gen_dir}/embed.json"
            ${facts}
    DEPENDS ${facts}
    WORKING_DIRECTORY "${gen_dir}"
    COMMENT "Writing ${target}/embed.json"
    VERBATIM)

  add_library(${target} SHARED
    "${host_dir}/registry.cpp" "${gen_dir}/index.cpp" ${sources}
    "${gen_dir}/embed.json")
  set_target_properties(${target} PROPERTIES
    CXX_STANDARD 17
    CXX_STANDARD_REQUIRED ON
    CXX_EXTENSIONS OFF
    POSITION_INDEPENDENT_CODE ON
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    METALLIB_JIT_EMBED_JSON "${gen_dir}/embed.json")
  target_include_directories(${target} PUBLIC
    "$<BUILD_INTERFACE:${host_dir}/include>")
  target_compile_definitions(${target}
    PUBLIC "METAL_JIT_NAMESPACE=${arg_NAMESPACE}"
    PRIVATE MBJIT_BUILDING)
  # Generated sources live in the build tree: keep its path out of the binary so builds in
  # different directories are byte-identical.
  target_compile_options(${target} PRIVATE
    "$<$<CXX_COMPILER_ID:GNU,Clang,AppleClang>:-ffile-prefix-map=${CMAKE_CURRENT_BINARY_DIR}/=>")
  if(arg_COMPRESS)
    find_package(ZLIB REQUIRED)
    target_link_libraries(${target} PRIVATE ZLIB::ZLIB)
    target_compile_definitions(${target} PRIVATE METAL_JIT_HAVE_ZLIB=1)
  else()
    target_compile_definitions(${target} PRIVATE METAL_JIT_HAVE_ZLIB=0)
  endif()
endfunction()

# metallib_add_tree_jit_library(<target> PLAN <plan.json> UNITS <entry file>...
#                               [NAMESPACE <ns>] [PYTHON <python>])
#
# The host library of a kernel tree without a catalog: the run-time preambles its JIT entry files
# need (UNITS, the JIT entry files of the build plan written by builder.cmake_build.plan), each
# `const std::string& <function>()` (or the plan's API, metallib.toml's jit-api) in NAMESPACE
# (default: the plan's jit-namespace, else metal_jit). At build time
# `python -m builder.cmake_build.tree_jit` writes <target>/<entry file>.cpp (the preambles only that
# entry needs), <target>/_shared_preambles.cpp (the others) and <target>/embed.json (their bytes);
# its depfile names every header inlined, so touching one regenerates the sources.
function(metallib_add_tree_jit_library target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "PLAN;NAMESPACE;PYTHON" "UNITS")
  if(arg_UNPARSED_ARGUMENTS OR NOT arg_PLAN)
    message(FATAL_ERROR "metallib_add_tree_jit_library(${target}): PLAN is required "
                        "(unknown arguments: ${arg_UNPARSED_ARGUMENTS})")
  endif()
  set(namespace_args "")
  if(arg_NAMESPACE)  # else the plan's (metallib.toml [build] jit-namespace), else metal_jit
    set(namespace_args --jit-namespace "${arg_NAMESPACE}")
  endif()
  _metallib_require_cxx("metallib_add_tree_jit_library(${target})")
  metallib_builder_python(python "${arg_PYTHON}")
  set(gen_dir "${CMAKE_CURRENT_BINARY_DIR}/${target}")
  set(sources "")
  foreach(unit IN LISTS arg_UNITS)
    list(APPEND sources "${gen_dir}/${unit}.cpp")
  endforeach()
  list(APPEND sources "${gen_dir}/_shared_preambles.cpp")
  metallib_builder_command(tree_jit "${python}" builder.cmake_build.tree_jit)
  add_custom_command(
    OUTPUT "${gen_dir}/embed.json" ${sources}
    COMMAND ${tree_jit} --plan "${arg_PLAN}" --out-dir "${gen_dir}"
            ${namespace_args} --depfile "${gen_dir}/embed.d"
    DEPENDS "${arg_PLAN}"
    DEPFILE "${gen_dir}/embed.d"
    COMMENT "Embedding run-time preambles (${target})"
    VERBATIM)
  add_library(${target} SHARED ${sources} "${gen_dir}/embed.json")
  set_target_properties(${target} PROPERTIES
    CXX_STANDARD 17
    CXX_STANDARD_REQUIRED ON
    CXX_EXTENSIONS OFF
    POSITION_INDEPENDENT_CODE ON
    METALLIB_JIT_EMBED_JSON "${gen_dir}/embed.json")
  target_compile_options(${target} PRIVATE
    "$<$<CXX_COMPILER_ID:GNU,Clang,AppleClang>:-ffile-prefix-map=${CMAKE_CURRENT_BINARY_DIR}/=>")
endfunction()
