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
# The catalog is a generator of an ordinary tree: at configure time the planner
# (builder.cmake_build.plan --select) checks the families and writes the plan that builds them
# all JIT (<binary dir>/<target>/metal_plan/plan.json), and metallib_add_tree_jit_library
# (below) embeds it as it embeds any tree: each family's header is one run-time preamble, a
# function named after the family. For a catalog the generator adds the kernel table, which
# metal_src/host/registry.cpp serves: metal_jit/registry.h (C++ API) and a small C API
# (mbjit_*) for ctypes. No Metal compiler is involved. `<target>/embed.json` records what each
# family embeds (docs/jit.md).
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
  if(NOT arg_NAMESPACE)
    set(arg_NAMESPACE metal_jit)
  endif()
  _metallib_require_cxx("metallib_add_jit_library(${target})")
  metallib_builder_python(python "${arg_PYTHON}")
  # The families are checked by the one selection function of the build plan
  # (builder.cmake_build.plan), which the project's own build uses too: unknown ones stop the
  # configuration, naming the valid ones. It writes the plan (only when it changes).
  set(gen_dir "${CMAKE_CURRENT_BINARY_DIR}/${target}")
  list(JOIN arg_FAMILIES "," asked)
  list(JOIN arg_DTYPES "," dtypes)
  set(compress "")
  if(arg_COMPRESS)
    set(compress --compress)
  endif()
  metallib_builder_command(plan_command "${python}" builder.cmake_build.plan)
  execute_process(
    COMMAND ${plan_command} --select --source-dir "${source_dir}" --kernels "${asked}"
            --dtypes "${dtypes}" ${compress} --build-dir "${gen_dir}"
    OUTPUT_VARIABLE families ERROR_VARIABLE err RESULT_VARIABLE rc
    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    string(REGEX REPLACE "^error: " "" err "${err}")
    message(FATAL_ERROR "metallib_add_jit_library(${target}): ${err}")
  endif()
  if(NOT arg_FAMILIES)
    set(families "")
  endif()
  # A family names its preamble function: the same pattern as builder.settings.text_rules.
  # CXX_IDENTIFIER (tests/jit/test_codegen.py checks).
  set(cxx_identifier "[A-Za-z_][A-Za-z0-9_]*")
  foreach(family IN LISTS families)
    if(NOT family MATCHES "^${cxx_identifier}$")
      message(FATAL_ERROR "metallib_add_jit_library(${target}): family '${family}' is not a C++ name")
    endif()
  endforeach()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${source_dir}/catalog.json")
  set(options "")
  foreach(option NO_DEDUP STRIP_COMMENTS)
    if(arg_${option})
      list(APPEND options ${option})
    endif()
  endforeach()
  metallib_add_tree_jit_library(${target} PLAN "${gen_dir}/metal_plan/plan.json"
    UNITS ${families} NAMESPACE "${arg_NAMESPACE}" PYTHON "${python}" ${options})
endfunction()

# metallib_add_tree_jit_library(<target> PLAN <plan.json> UNITS <unit>...
#                               [NAMESPACE <ns>] [PYTHON <python>] [NO_DEDUP] [STRIP_COMMENTS])
#
# The host library of any kernel tree: the run-time preambles its JIT units need (UNITS, the JIT
# units of the build plan written by builder.cmake_build.plan, in the order the library lists
# them), each `const std::string& <function>()` (or the plan's API, metallib.toml's jit-api) in
# NAMESPACE (default: the plan's jit-namespace, else metal_jit). At build time
# `python -m builder.cmake_build.tree_jit` writes <target>/<unit>.cpp (the text only that unit
# stores), <target>/_shared_preambles.cpp (the rest, the functions and, for a catalog tree, the
# kernel table) and <target>/embed.json (their bytes); its depfile names every header inlined, so
# touching one regenerates the sources (an unchanged output is not rewritten: no recompile).
# A catalog tree's library also compiles metal_src/host/registry.cpp (metal_jit/registry.h),
# exports only that API, and links zlib when the plan compresses.
function(metallib_add_tree_jit_library target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "NO_DEDUP;STRIP_COMMENTS" "PLAN;NAMESPACE;PYTHON" "UNITS")
  if(arg_UNPARSED_ARGUMENTS OR NOT arg_PLAN)
    message(FATAL_ERROR "metallib_add_tree_jit_library(${target}): PLAN is required "
                        "(unknown arguments: ${arg_UNPARSED_ARGUMENTS})")
  endif()
  file(READ "${arg_PLAN}" plan_json)
  string(JSON kind GET "${plan_json}" kind)
  string(JSON compress GET "${plan_json}" cmake compress)
  if(NOT arg_NAMESPACE)  # else the plan's (metallib.toml [build] jit-namespace), else metal_jit
    string(JSON arg_NAMESPACE ERROR_VARIABLE no_namespace GET "${plan_json}" jit_namespace)
    if(no_namespace OR NOT arg_NAMESPACE)
      set(arg_NAMESPACE metal_jit)
    endif()
  endif()
  # NAMESPACE may be nested (a::b), no part a C++ keyword: MetallibPython.cmake's rule,
  # builder.settings.text_rules'.
  _metallib_namespace_problem(problem "${arg_NAMESPACE}")
  if(problem)
    message(FATAL_ERROR "metallib_add_tree_jit_library(${target}): NAMESPACE '${arg_NAMESPACE}' "
                        "is not a C++ namespace (${problem})")
  endif()
  _metallib_require_cxx("metallib_add_tree_jit_library(${target})")
  metallib_builder_python(python "${arg_PYTHON}")
  set(gen_dir "${CMAKE_CURRENT_BINARY_DIR}/${target}")
  set(sources "")
  foreach(unit IN LISTS arg_UNITS)
    list(APPEND sources "${gen_dir}/${unit}.cpp")
  endforeach()
  list(APPEND sources "${gen_dir}/_shared_preambles.cpp")
  set(options "")
  if(kind STREQUAL "catalog")  # the families in the order the library lists them (C++ names)
    list(JOIN arg_UNITS "$<SEMICOLON>" units)  # one argument
    list(APPEND options "--units=${units}")  # "--units=" when none
  endif()
  if(arg_NO_DEDUP)
    list(APPEND options --no-dedup)
  endif()
  if(arg_STRIP_COMMENTS)
    list(APPEND options --strip-comments)
  endif()
  metallib_builder_command(tree_jit "${python}" builder.cmake_build.tree_jit)
  add_custom_command(
    OUTPUT "${gen_dir}/embed.json" ${sources}
    COMMAND ${tree_jit} --plan "${arg_PLAN}" --out-dir "${gen_dir}" --jit-namespace "${arg_NAMESPACE}"
            --target "${target}" ${options} --depfile "${gen_dir}/embed.d"
    DEPENDS "${arg_PLAN}"
    DEPFILE "${gen_dir}/embed.d"
    COMMENT "Embedding run-time preambles (${target})"
    VERBATIM)
  set(registry "")
  if(kind STREQUAL "catalog")
    get_filename_component(host_dir "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/../metal_src/host" ABSOLUTE)
    set(registry "${host_dir}/registry.cpp")
  endif()
  add_library(${target} SHARED ${registry} ${sources} "${gen_dir}/embed.json")
  set_target_properties(${target} PROPERTIES
    CXX_STANDARD 17
    CXX_STANDARD_REQUIRED ON
    CXX_EXTENSIONS OFF
    POSITION_INDEPENDENT_CODE ON
    METALLIB_JIT_EMBED_JSON "${gen_dir}/embed.json")
  # Generated sources live in the build tree: keep its path out of the binary so builds in
  # different directories are byte-identical.
  target_compile_options(${target} PRIVATE
    "$<$<CXX_COMPILER_ID:GNU,Clang,AppleClang>:-ffile-prefix-map=${CMAKE_CURRENT_BINARY_DIR}/=>")
  if(registry)
    set_target_properties(${target} PROPERTIES
      CXX_VISIBILITY_PRESET hidden
      VISIBILITY_INLINES_HIDDEN ON)
    target_include_directories(${target} PUBLIC "$<BUILD_INTERFACE:${host_dir}/include>")
    target_compile_definitions(${target}
      PUBLIC "METAL_JIT_NAMESPACE=${arg_NAMESPACE}"
      PRIVATE MBJIT_BUILDING)
    if(compress)
      find_package(ZLIB REQUIRED)
      target_link_libraries(${target} PRIVATE ZLIB::ZLIB)
      target_compile_definitions(${target} PRIVATE METAL_JIT_HAVE_ZLIB=1)
    else()
      target_compile_definitions(${target} PRIVATE METAL_JIT_HAVE_ZLIB=0)
    endif()
  endif()
endfunction()
