# MetallibPython: where metallib-builder's Python generators come from, for every module that runs
# one (MetalJit, MetallibEmbed, the project's own CMakeLists.txt). Including it defines functions
# only: no cache variable is written and no Python runs until a function needs the interpreter.
#
#   metallib_builder_python(<out-var> [<interpreter>] [CHECK <module>] [CALLER <name>])
#       The interpreter: <interpreter> when given, else METALLIB_BUILDER_PYTHON, else the one
#       find_package(Python3 3.10 COMPONENTS Interpreter) finds (Python3_EXECUTABLE when set, an
#       activated virtual environment first). With CHECK, the first call for an interpreter and
#       package folder imports <module> (and, for an installed package, compares its version with
#       the config's); when that fails, configuration stops with one message naming both variables.
#   metallib_builder_pythonpath(<out-var>)
#       The folder holding the `builder` package (below).
#   metallib_builder_command(<out-var> <interpreter> <module>)
#       The command list running `<interpreter> -m <module>` with that folder on PYTHONPATH (and no
#       bytecode written into it).
#   _metallib_require_cxx(<caller>)
#       Stops unless C++ is enabled: every generator writes C++ sources. (enable_language() cannot
#       run in a function, and including a module must not enable a language.)
#   _metallib_namespace_problem(<out-var> <name>)
#       Empty when <name> can follow `namespace` in C++ (a or a::b, no part a C++ keyword), else
#       why not, for a message: the rule of builder.settings.text_rules.namespace_problem, with the
#       same pattern and keywords (tests/jit/test_codegen.py checks that both accept the same
#       names). NAMESPACE of metallib_add_jit_library and metallib_embed_headers.
#   metallib_find_python3([REQUIRED] <component>...)
#       find_package(Python3 3.10 ...) in the caller's scope: the one place the package asks
#       FindPython3 (MetallibNative adds Development.Module).
#
# Read, never written (-D on the command line, or set() before the call):
#   METALLIB_BUILDER_PYTHON      the interpreter
#   METALLIB_BUILDER_PYTHONPATH  the folder holding builder/ (empty: the interpreter imports it by
#                                itself); default: the package the config belongs to
#                                (MetallibBuilderConfig.cmake), else the checkout or wheel these
#                                modules are part of (a checkout's cmake/, a wheel's
#                                builder/_data/cmake/)

include_guard(GLOBAL)

function(_metallib_require_cxx caller)
  get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  if(NOT "CXX" IN_LIST languages)
    message(FATAL_ERROR "${caller}: the generated sources are C++: enable it first "
                        "(project(... LANGUAGES CXX) or enable_language(CXX))")
  endif()
endfunction()

function(_metallib_namespace_problem out name)
  set(cxx_identifier "[A-Za-z_][A-Za-z0-9_]*")
  set(cxx_namespace "${cxx_identifier}(::${cxx_identifier})*")
  set(cxx_keywords
    alignas alignof and and_eq asm auto bitand bitor bool break case catch char char16_t char32_t
    char8_t class co_await co_return co_yield compl concept const const_cast consteval constexpr
    constinit continue decltype default delete do double dynamic_cast else enum explicit export
    extern false float for friend goto if inline int long mutable namespace new noexcept not
    not_eq nullptr operator or or_eq private protected public register reinterpret_cast requires
    return short signed sizeof static static_assert static_cast struct switch template this
    thread_local throw true try typedef typeid typename union unsigned using virtual void
    volatile wchar_t while xor xor_eq)
  if(NOT name MATCHES "^${cxx_namespace}$")
    set(${out} "letters, digits and _ in names joined by ::, not starting with a digit"
        PARENT_SCOPE)
    return()
  endif()
  string(REPLACE "::" ";" parts "${name}")
  foreach(part IN LISTS parts)
    list(FIND cxx_keywords "${part}" at)
    if(NOT at EQUAL -1)
      set(${out} "'${part}' is a C++ keyword" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(${out} "" PARENT_SCOPE)
endfunction()

macro(metallib_find_python3)
  find_package(Python3 3.10 ${ARGN})
endmacro()

function(metallib_builder_pythonpath out)
  if(DEFINED METALLIB_BUILDER_PYTHONPATH)
    set(${out} "${METALLIB_BUILDER_PYTHONPATH}" PARENT_SCOPE)
    return()
  endif()
  if(COMMAND _metallib_builder_installed)  # defined by MetallibBuilderConfig.cmake
    _metallib_builder_installed(path version)
    set(${out} "${path}" PARENT_SCOPE)
    return()
  endif()
  foreach(up .. ../../..)
    if(EXISTS "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/${up}/builder/__init__.py")
      get_filename_component(path "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/${up}" ABSOLUTE)
      set(${out} "${path}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(${out} "" PARENT_SCOPE)
endfunction()

# _metallib_python_env(<out> <python>): <python> run with the package folder on PYTHONPATH.
function(_metallib_python_env out python)
  metallib_builder_pythonpath(path)
  set(command "${CMAKE_COMMAND}" -E env PYTHONDONTWRITEBYTECODE=1)
  if(path)
    list(APPEND command "PYTHONPATH=${path}")
  endif()
  set(${out} ${command} "${python}" PARENT_SCOPE)
endfunction()

function(metallib_builder_command out python module)
  _metallib_python_env(command "${python}")
  set(${out} ${command} -m "${module}" PARENT_SCOPE)
endfunction()

# _metallib_found_python(<out> <caller>): METALLIB_BUILDER_PYTHON, else FindPython3's interpreter
# (looked for once per configure), else a fatal error naming the variables.
function(_metallib_found_python out caller)
  if(METALLIB_BUILDER_PYTHON)
    set(${out} "${METALLIB_BUILDER_PYTHON}" PARENT_SCOPE)
    return()
  endif()
  get_property(python GLOBAL PROPERTY _METALLIB_BUILDER_FOUND_PYTHON)
  if(NOT python)
    metallib_find_python3(QUIET COMPONENTS Interpreter)
    if(NOT Python3_Interpreter_FOUND)
      _metallib_python_vars(vars)
      message(FATAL_ERROR "${caller}: no Python 3.10+ interpreter found to run metallib-builder's "
                          "generator. ${vars}")
    endif()
    set(python "${Python3_EXECUTABLE}")
    set_property(GLOBAL PROPERTY _METALLIB_BUILDER_FOUND_PYTHON "${python}")
  endif()
  set(${out} "${python}" PARENT_SCOPE)
endfunction()

# _metallib_python_vars(<out>): the sentence naming both variables, for every failure message.
function(_metallib_python_vars out)
  metallib_builder_pythonpath(path)
  string(CONCAT text
    "Set METALLIB_BUILDER_PYTHON to a Python 3.10+ interpreter. It runs with "
    "METALLIB_BUILDER_PYTHONPATH on its PYTHONPATH, which defaults to the folder holding the "
    "builder/ of this package: '${path}'; if that folder is gone, reinstall metallib-builder and "
    "pass MetallibBuilder_DIR=$(metallib-builder --cmake-dir) again.")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

function(metallib_builder_python out)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "CHECK;CALLER" "")
  if(NOT arg_CALLER)
    set(arg_CALLER metallib_builder_python)
  endif()
  set(python "")
  if(arg_UNPARSED_ARGUMENTS)
    list(GET arg_UNPARSED_ARGUMENTS 0 python)
  endif()
  if(NOT python)
    _metallib_found_python(python "${arg_CALLER}")
  endif()
  if(arg_CHECK)
    _metallib_check_python("${python}" "${arg_CHECK}" "${arg_CALLER}")
  endif()
  set(${out} "${python}" PARENT_SCOPE)
endfunction()

# _metallib_check_python(<python> <module> <caller>): import <module> once per interpreter and
# package folder, in the build folder (so a builder/ in the working folder cannot stand in).
function(_metallib_check_python python module caller)
  metallib_builder_pythonpath(path)
  string(MD5 key "${python}|${path}|${module}")
  get_property(checked GLOBAL PROPERTY "_METALLIB_PYTHON_CHECKED_${key}")
  if(checked)
    return()
  endif()
  set(expected "")
  if(COMMAND _metallib_builder_installed)
    _metallib_builder_installed(unused expected)
  endif()
  _metallib_python_env(command "${python}")
  execute_process(
    COMMAND ${command} -c "import builder, ${module}; print(builder.__version__)"
    WORKING_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}"
    RESULT_VARIABLE failed OUTPUT_VARIABLE version ERROR_VARIABLE error
    OUTPUT_STRIP_TRAILING_WHITESPACE)
  _metallib_python_vars(vars)
  if(failed)
    string(STRIP "${error}" error)
    string(REGEX REPLACE ".*\n" "" error "${error}")
    message(FATAL_ERROR "${caller}: ${python} cannot import metallib-builder's generator "
                        "(${module}) from '${path}': ${error}. ${vars}")
  endif()
  if(expected AND NOT version STREQUAL expected)
    message(FATAL_ERROR "${caller}: ${python} imports metallib-builder ${version} from '${path}', "
                        "but this CMake package is ${expected} (an editable install's checkout "
                        "changed version?). ${vars}")
  endif()
  set_property(GLOBAL PROPERTY "_METALLIB_PYTHON_CHECKED_${key}" TRUE)
endfunction()
