# MetallibEmbed: kernel headers embedded in an existing C++ target as run-time preamble strings.
#
#   include(MetallibEmbed)
#   metallib_embed_headers(<target>
#     NAMESPACE <ns>                  # C++ namespace of the functions (a or a::b)
#     HEADERS <header>...             # one function per header, named after its file stem
#     INCLUDE_DIRECTORIES <dir>...    # where quoted includes resolve (after the includer's folder)
#     [API string|cstring]            # const std::string& f() (default) or const char* f() (MLX)
#     [LOOKUP ON|OFF]                 # also define NS::preamble(name) (default ON); OFF for a
#                                     # host that calls the functions by name, as MLX does
#     [DEFINES <NAME[=VALUE]>...]     # #define lines at the top of every preamble
#     [STRIP_COMMENTS]                # leave comments out of the embedded text
#     [OUTPUT <file.cpp>]             # default ${CMAKE_CURRENT_BINARY_DIR}/metallib_embed/<target>.cpp
#     [PYTHON <python executable>])   # default METALLIB_BUILDER_PYTHON, then the found Python
#
# A build-time custom command runs the generator (`metallib-builder embed`'s code): each header
# with its quoted includes inlined (each file once, #line markers, angle includes kept for the
# run-time compiler), as one C++17 source added to <target>. Its depfile
# names every file inlined, so editing a header any number of includes deep regenerates the
# source on the next build; an unchanged result is not rewritten (no recompile). No Metal
# compiler is involved. Relative HEADERS and INCLUDE_DIRECTORIES are relative to
# CMAKE_CURRENT_SOURCE_DIR, a relative OUTPUT to CMAKE_CURRENT_BINARY_DIR. Keep the headers under
# an INCLUDE_DIRECTORIES folder: #line markers and the lookup names are relative to it, so the
# generated source is the same wherever the tree and the build folder are.
#
# Several calls on one target are fine (MLX makes three groups: unconditional, MLX_METAL_JIT,
# NAX): each writes its own source. Only one of them per NAMESPACE may define the lookup; a second
# one with LOOKUP ON is a configure error naming the first, not a link error.
#
# Any directory: the target may have been created in another directory (MLX creates `mlx` at the
# top and embeds from mlx/backend/metal). A custom command's output has a rule only in targets of
# its own directory, so the call then adds a small custom target here that generates the source,
# and makes <target> depend on it; with CMP0118 the source is known as generated everywhere.
#
# Standalone: needs no variable of the project that includes it. Needs CMake 3.20 (DEPFILE for
# the Ninja and Makefile generators) and C++ enabled in the project (the target compiles the
# generated source).

include_guard(GLOBAL)

if(CMAKE_VERSION VERSION_LESS 3.20)
  message(FATAL_ERROR "MetallibEmbed needs CMake 3.20 or newer (add_custom_command DEPFILE); "
                      "this is ${CMAKE_VERSION}")
endif()

# metallib-builder vendor: the generator, from here to its end mark. `metallib-builder vendor
# DIR` writes this file with this part replaced by the vendored generator's (cmake/vendor/).
#
# The generator is the installed package's `python -m builder.jit embed`: where it comes from,
# METALLIB_BUILDER_PYTHONPATH and METALLIB_BUILDER_PYTHON (cmake/MetallibPython.cmake,
# docs/jit.md). The first call finds the interpreter, checks that it can import the generator and
# says which variable to set when it cannot; including this file runs nothing and writes no cache
# variable.
include("${CMAKE_CURRENT_LIST_DIR}/MetallibPython.cmake")

# _metallib_embed_generator(<command-out> <depends-out> <python> <caller>): the command that runs
# the generator (its `embed` arguments follow), and the files whose change regenerates.
function(_metallib_embed_generator command_out depends_out python caller)
  metallib_builder_python(python "${python}" CHECK builder.jit.generate CALLER "${caller}")
  metallib_builder_command(command "${python}" builder.jit)
  set(generator_files "")
  metallib_builder_pythonpath(package)
  if(package)
    # The generator's modules whose code shapes the output: a new version regenerates. (Stated
    # per call, not at include time: include_guard(GLOBAL) skips a second directory's include.)
    foreach(module IN ITEMS preamble lexing literals writer generate depfile __main__)
      set(file "${package}/builder/jit/${module}.py")
      if(EXISTS "${file}")
        list(APPEND generator_files "${file}")
      endif()
    endforeach()
  endif()
  set(${command_out} ${command} PARENT_SCOPE)
  set(${depends_out} ${generator_files} PARENT_SCOPE)
endfunction()
# metallib-builder vendor: end of the generator.

function(metallib_embed_headers target)
  set(me "metallib_embed_headers(${target})")
  cmake_parse_arguments(PARSE_ARGV 1 arg "STRIP_COMMENTS" "NAMESPACE;API;LOOKUP;OUTPUT;PYTHON"
                        "HEADERS;INCLUDE_DIRECTORIES;DEFINES")
  if(arg_UNPARSED_ARGUMENTS)
    list(JOIN arg_UNPARSED_ARGUMENTS " " unknown)
    message(FATAL_ERROR "${me}: unknown argument(s) ${unknown}; valid: NAMESPACE, HEADERS, "
                        "INCLUDE_DIRECTORIES, API, LOOKUP, DEFINES, STRIP_COMMENTS, OUTPUT, PYTHON")
  endif()
  if(arg_KEYWORDS_MISSING_VALUES)
    list(JOIN arg_KEYWORDS_MISSING_VALUES ", " empty)
    message(FATAL_ERROR "${me}: ${empty} given without a value")
  endif()

  # The target: a real one, of this directory or another.
  if(NOT TARGET "${target}")
    message(FATAL_ERROR "${me}: no target named '${target}' (create it first)")
  endif()
  get_target_property(aliased "${target}" ALIASED_TARGET)
  get_target_property(imported "${target}" IMPORTED)
  get_target_property(type "${target}" TYPE)
  if(aliased OR imported OR NOT type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY|OBJECT_LIBRARY)$")
    message(FATAL_ERROR "${me}: '${target}' must be an executable or a library built here "
                        "(not an alias, imported or interface target)")
  endif()
  _metallib_require_cxx("${me}")
  get_target_property(target_dir "${target}" SOURCE_DIR)

  # The same pattern as builder.settings.text_rules.CXX_IDENTIFIER (tests/jit/test_codegen.py checks).
  set(cxx_identifier "[A-Za-z_][A-Za-z0-9_]*")
  if(NOT DEFINED arg_NAMESPACE)
    message(FATAL_ERROR "${me}: NAMESPACE <ns> is required (the C++ namespace of the functions)")
  endif()
  _metallib_namespace_problem(problem "${arg_NAMESPACE}")
  if(problem)
    message(FATAL_ERROR "${me}: NAMESPACE '${arg_NAMESPACE}' is not a C++ namespace (${problem})")
  endif()
  if(NOT DEFINED arg_API)
    set(arg_API string)
  endif()
  if(NOT arg_API MATCHES "^(string|cstring)$")
    message(FATAL_ERROR "${me}: API '${arg_API}' is neither string nor cstring")
  endif()
  if(NOT DEFINED arg_LOOKUP)
    set(arg_LOOKUP ON)
  endif()
  if(NOT arg_LOOKUP MATCHES "^(ON|OFF)$")
    message(FATAL_ERROR "${me}: LOOKUP '${arg_LOOKUP}' is neither ON nor OFF")
  endif()
  if(arg_LOOKUP)
    # One NS::preamble(name) per namespace and target: a second would not link.
    get_property(lookups TARGET "${target}" PROPERTY METALLIB_EMBED_LOOKUPS)
    if("${arg_NAMESPACE}" IN_LIST lookups)
      message(FATAL_ERROR "${me}: an earlier call already defines ${arg_NAMESPACE}::preamble() "
                          "for '${target}'; give this one LOOKUP OFF (or another NAMESPACE)")
    endif()
  endif()
  if(NOT arg_HEADERS)
    message(FATAL_ERROR "${me}: HEADERS <header>... is required")
  endif()
  if(NOT arg_INCLUDE_DIRECTORIES)
    message(FATAL_ERROR "${me}: INCLUDE_DIRECTORIES <dir>... is required (where quoted includes "
                        "resolve, and what #line paths are relative to)")
  endif()

  set(headers "")
  foreach(header IN LISTS arg_HEADERS)
    get_filename_component(path "${header}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    if(NOT EXISTS "${path}" OR IS_DIRECTORY "${path}")
      message(FATAL_ERROR "${me}: HEADERS: '${header}' is not a file (${path})")
    endif()
    list(APPEND headers "${path}")
  endforeach()
  set(include_args "")
  foreach(dir IN LISTS arg_INCLUDE_DIRECTORIES)
    get_filename_component(path "${dir}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    if(NOT IS_DIRECTORY "${path}")
      message(FATAL_ERROR "${me}: INCLUDE_DIRECTORIES: '${dir}' is not a folder (${path})")
    endif()
    list(APPEND include_args -I "${path}")
  endforeach()
  set(define_args "")
  foreach(define IN LISTS arg_DEFINES)
    if(NOT define MATCHES "^${cxx_identifier}(=.*)?$")
      message(FATAL_ERROR "${me}: DEFINES: '${define}' is not NAME or NAME=VALUE")
    endif()
    list(APPEND define_args -D "${define}")
  endforeach()

  # The output: OUTPUT, else one file per call under metallib_embed/.
  get_property(outputs TARGET "${target}" PROPERTY METALLIB_EMBED_SOURCES)
  if(DEFINED arg_OUTPUT)
    get_filename_component(output "${arg_OUTPUT}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
  else()
    list(LENGTH outputs count)
    if(count EQUAL 0)
      set(output "${CMAKE_CURRENT_BINARY_DIR}/metallib_embed/${target}.cpp")
    else()
      math(EXPR count "${count} + 1")
      set(output "${CMAKE_CURRENT_BINARY_DIR}/metallib_embed/${target}_${count}.cpp")
    endif()
  endif()
  if(output IN_LIST outputs)
    message(FATAL_ERROR "${me}: ${output} is already generated for '${target}'; give OUTPUT")
  endif()
  set(depfile "${output}.d")

  _metallib_embed_generator(command generator_files "${arg_PYTHON}" "${me}")
  list(APPEND command embed ${headers} ${include_args} ${define_args}
       -o "${output}" --jit-namespace "${arg_NAMESPACE}" --jit-api "${arg_API}"
       --depfile "${depfile}")
  if(arg_STRIP_COMMENTS)
    list(APPEND command --strip-comments)
  endif()
  if(NOT arg_LOOKUP)
    list(APPEND command --no-jit-lookup)
  endif()
  list(LENGTH headers count)
  get_filename_component(shown "${output}" NAME)
  # CMP0116 NEW: CMake rewrites the depfile for Ninja, whatever the calling project's policies.
  cmake_policy(PUSH)
  cmake_policy(SET CMP0116 NEW)
  add_custom_command(
    OUTPUT "${output}"
    COMMAND ${command}
    DEPENDS ${headers} ${generator_files}
    DEPFILE "${depfile}"
    COMMENT "Embedding ${count} header(s) into ${target} (${shown})"
    VERBATIM)
  cmake_policy(POP)
  if(NOT target_dir STREQUAL CMAKE_CURRENT_SOURCE_DIR)
    # The rule lives here: a custom target of this directory generates the source before
    # <target> compiles it, wherever <target> was created.
    string(MAKE_C_IDENTIFIER "${shown}" step)
    set(step "${target}_metallib_embed_${step}")
    add_custom_target("${step}" DEPENDS "${output}")
    add_dependencies("${target}" "${step}")
    set_source_files_properties("${output}" TARGET_DIRECTORY "${target}" PROPERTIES GENERATED TRUE)
  endif()
  target_sources("${target}" PRIVATE "${output}")
  target_compile_features("${target}" PRIVATE cxx_std_17)
  set_property(TARGET "${target}" APPEND PROPERTY METALLIB_EMBED_SOURCES "${output}")
  if(arg_LOOKUP)
    set_property(TARGET "${target}" APPEND PROPERTY METALLIB_EMBED_LOOKUPS "${arg_NAMESPACE}")
  endif()
endfunction()
