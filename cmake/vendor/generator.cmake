# The generator, vendored: metallib_embed/metallib_embed.py beside this file (metallib-builder
# @VERSION@'s `embed`, its modules copied unchanged but for two comment lines naming the
# version), run by a Python 3.10+ interpreter as `python -I -S`: only Python's standard library is
# used, nothing is imported from site-packages. The interpreter: PYTHON in the call,
# else METALLIB_BUILDER_PYTHON, else the one find_package(Python3 3.10 COMPONENTS Interpreter)
# finds (Python3_EXECUTABLE when set, an activated virtual environment first), asked once, at the
# first call. Including this file runs nothing and writes no cache variable.
@REQUIRE_CXX@
@NAMESPACE_PROBLEM@
# _metallib_embed_generator(<command-out> <depends-out> <python> <caller>): the command that runs
# the vendored generator (its `embed` arguments follow), and its files: a new copy regenerates.
function(_metallib_embed_generator command_out depends_out python caller)
  if(NOT python)
    set(python "${METALLIB_BUILDER_PYTHON}")
  endif()
  if(NOT python)
    get_property(python GLOBAL PROPERTY _METALLIB_EMBED_PYTHON)
  endif()
  if(NOT python)
    find_package(Python3 3.10 QUIET COMPONENTS Interpreter)
    if(NOT Python3_Interpreter_FOUND)
      message(FATAL_ERROR "${caller}: no Python 3.10+ interpreter found to run the vendored "
                          "generator; set Python3_EXECUTABLE or METALLIB_BUILDER_PYTHON")
    endif()
    set(python "${Python3_EXECUTABLE}")
    set_property(GLOBAL PROPERTY _METALLIB_EMBED_PYTHON "${python}")
  endif()
  # (the function's own folder: include_guard(GLOBAL) skips a second directory's include)
  set(folder "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/metallib_embed")
  set(script "${folder}/metallib_embed.py")
  set(command "${python}" -I -S "${script}")
  # Once per interpreter: it runs the script, and the script is this copy.
  string(MD5 key "${python}")
  get_property(checked GLOBAL PROPERTY "_METALLIB_EMBED_CHECKED_${key}")
  if(NOT checked)
    execute_process(COMMAND ${command} --version
                    RESULT_VARIABLE failed OUTPUT_VARIABLE version ERROR_VARIABLE error
                    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_STRIP_TRAILING_WHITESPACE)
    if(failed OR NOT version STREQUAL "metallib-builder @VERSION@ (vendored)")
      message(FATAL_ERROR "${caller}: ${python} cannot run the vendored generator ${script} "
                          "(${version}${error}); set Python3_EXECUTABLE or "
                          "METALLIB_BUILDER_PYTHON to a Python 3.10+ interpreter")
    endif()
    set_property(GLOBAL PROPERTY "_METALLIB_EMBED_CHECKED_${key}" TRUE)
  endif()
  set(files "")
  foreach(file IN ITEMS
@FILES@)
    list(APPEND files "${folder}/${file}")
  endforeach()
  set(${command_out} ${command} PARENT_SCOPE)
  set(${depends_out} ${files} PARENT_SCOPE)
endfunction()
