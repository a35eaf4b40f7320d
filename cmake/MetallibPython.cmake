# MetallibPython: where metallib-builder's Python generators come from, for every module that runs
# one (MetalJit, MetallibEmbed, the project's own CMakeLists.txt).
#
#   include(MetallibPython)
#   metallib_builder_python(<out-var> [<interpreter>] [CHECK <module> CALLER <name>])
#       The interpreter: <interpreter> when given, else METALLIB_BUILDER_PYTHON, else
#       Python_EXECUTABLE or Python3_EXECUTABLE, else find_package(Python 3.10). With CHECK, the
#       first call for an interpreter and package folder imports <module> and otherwise stops
#       with one message naming both cache variables.
#   metallib_builder_command(<out-var> <interpreter> <module>)
#       The command list running `<interpreter> -m <module>` with METALLIB_BUILDER_PYTHONPATH on
#       PYTHONPATH (and no bytecode written into the package folder).
#
# Cache variables (docs/build.md):
#   METALLIB_BUILDER_PYTHONPATH  the folder holding the `builder` package; default: the package
#                                beside this file (a checkout's cmake/ -> the checkout, an installed
#                                builder/_data/cmake/ -> site-packages); empty: the interpreter
#                                imports it by itself
#   METALLIB_BUILDER_PYTHON      the interpreter; empty: the project's Python

include_guard(GLOBAL)

if(EXISTS "${CMAKE_CURRENT_LIST_DIR}/../builder/__init__.py")
  get_filename_component(_metallib_python_root "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
elseif(EXISTS "${CMAKE_CURRENT_LIST_DIR}/../../../builder/__init__.py")
  get_filename_component(_metallib_python_root "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
else()
  set(_metallib_python_root "")
endif()
set(METALLIB_BUILDER_PYTHONPATH "${_metallib_python_root}" CACHE PATH
    "Folder holding the builder package (metallib-builder's generators); empty: the interpreter's own")
set(METALLIB_BUILDER_PYTHON "" CACHE FILEPATH
    "Python interpreter that runs metallib-builder's generators (empty: the project's Python)")
unset(_metallib_python_root)

function(metallib_builder_command out python module)
  set(command "${CMAKE_COMMAND}" -E env PYTHONDONTWRITEBYTECODE=1)
  if(METALLIB_BUILDER_PYTHONPATH)
    list(APPEND command "PYTHONPATH=${METALLIB_BUILDER_PYTHONPATH}")
  endif()
  set(${out} ${command} "${python}" -m "${module}" PARENT_SCOPE)
endfunction()

function(metallib_builder_python out)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "CHECK;CALLER" "")
  set(explicit "")
  if(arg_UNPARSED_ARGUMENTS)
    list(GET arg_UNPARSED_ARGUMENTS 0 explicit)
  endif()
  if(explicit)
    set(python "${explicit}")
  elseif(METALLIB_BUILDER_PYTHON)
    set(python "${METALLIB_BUILDER_PYTHON}")
  elseif(Python_EXECUTABLE)
    set(python "${Python_EXECUTABLE}")
  elseif(Python3_EXECUTABLE)
    set(python "${Python3_EXECUTABLE}")
  else()
    find_package(Python 3.10 COMPONENTS Interpreter REQUIRED)
    set(python "${Python_EXECUTABLE}")
  endif()
  if(arg_CHECK)
    string(MD5 key "${python}|${METALLIB_BUILDER_PYTHONPATH}|${arg_CHECK}")
    get_property(checked GLOBAL PROPERTY "_METALLIB_PYTHON_CHECKED_${key}")
    if(NOT checked)
      set(command "${python}" -c "import ${arg_CHECK}")
      if(METALLIB_BUILDER_PYTHONPATH)
        set(command "${CMAKE_COMMAND}" -E env "PYTHONPATH=${METALLIB_BUILDER_PYTHONPATH}" ${command})
      endif()
      execute_process(COMMAND ${command} RESULT_VARIABLE failed OUTPUT_QUIET ERROR_VARIABLE error)
      if(failed)
        string(STRIP "${error}" error)
        string(REGEX REPLACE ".*\n" "" error "${error}")
        message(FATAL_ERROR
          "${arg_CALLER}: ${python} cannot import metallib-builder's generator (${arg_CHECK}) "
          "with METALLIB_BUILDER_PYTHONPATH='${METALLIB_BUILDER_PYTHONPATH}': ${error}. Set "
          "METALLIB_BUILDER_PYTHONPATH to the folder holding builder/, or "
          "METALLIB_BUILDER_PYTHON (or PYTHON) to an interpreter with metallib-builder installed.")
      endif()
      set_property(GLOBAL PROPERTY "_METALLIB_PYTHON_CHECKED_${key}" TRUE)
    endif()
  endif()
  set(${out} "${python}" PARENT_SCOPE)
endfunction()
