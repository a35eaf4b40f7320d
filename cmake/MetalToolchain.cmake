# MetalToolchain.cmake: find Apple's Metal compiler and linker, record their versions.
#
#   include(MetalToolchain)
#   metal_find_toolchain([REQUIRED])
#
# Resolution order for each tool (compiler `metal`, linker `metallib`):
#   1. the cache variable METAL_COMPILER / METALLIB_LINKER (a path or a program name on PATH);
#   2. `xcrun -sdk ${METAL_SDK} --find metal|metallib` (METAL_SDK defaults to macosx).
# With only METAL_COMPILER given, a `metallib` beside it is taken as the linker.
# On success it creates two imported executables, Metal::compiler and Metal::linker, so build
# rules name targets rather than global variables, and caches METAL_COMPILER_VERSION /
# METALLIB_LINKER_VERSION (first line of `--version`) for the build manifest.
#
# METAL_COMPILER_LAUNCHER (a list, like CMAKE_<LANG>_COMPILER_LAUNCHER) is prepended to every
# compile, so ccache-like caches or a remote executor can wrap it. With REQUIRED and no compiler,
# configuration stops with one message that says what is missing and how to point at a compiler.

include_guard(GLOBAL)

set(METAL_SDK "macosx" CACHE STRING "xcrun SDK used to find metal and metallib")
set(METAL_COMPILER "" CACHE STRING "Metal compiler (metal: a path or a program name); empty: xcrun -sdk \${METAL_SDK} --find metal")
set(METALLIB_LINKER "" CACHE STRING "Metal linker (metallib: a path or a program name); empty: xcrun -sdk \${METAL_SDK} --find metallib")
set(METAL_COMPILER_LAUNCHER "" CACHE STRING "Command list prepended to every metal compile (a cache or remote executor)")

# _metal_resolve(<out> <cache var> <tool>): the absolute path of one tool, or "" with the reason
# in <out>_WHY.
function(_metal_resolve out cache_var tool)
  set(given "${${cache_var}}")
  if(given)
    if(IS_ABSOLUTE "${given}")
      set(found "${given}")
      if(NOT EXISTS "${found}")
        set(${out} "" PARENT_SCOPE)
        set(${out}_WHY "${cache_var}=${given} does not exist" PARENT_SCOPE)
        return()
      endif()
    else()
      find_program(found NAMES "${given}" NO_CACHE)
      if(NOT found)
        set(${out} "" PARENT_SCOPE)
        set(${out}_WHY "${cache_var}=${given} is not on PATH" PARENT_SCOPE)
        return()
      endif()
    endif()
    set(${out} "${found}" PARENT_SCOPE)
    return()
  endif()
  find_program(xcrun NAMES xcrun NO_CACHE)
  if(NOT xcrun)
    set(${out} "" PARENT_SCOPE)
    set(${out}_WHY "xcrun not found" PARENT_SCOPE)
    return()
  endif()
  execute_process(
    COMMAND "${xcrun}" -sdk "${METAL_SDK}" --find "${tool}"
    OUTPUT_VARIABLE found ERROR_VARIABLE err RESULT_VARIABLE rc
    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0 OR NOT found)
    set(${out} "" PARENT_SCOPE)
    set(${out}_WHY "xcrun -sdk ${METAL_SDK} --find ${tool} failed: ${err}" PARENT_SCOPE)
    return()
  endif()
  set(${out} "${found}" PARENT_SCOPE)
endfunction()

# _metal_version(<out> <exe>): first line of `<exe> --version` (empty when it prints nothing).
function(_metal_version out exe)
  execute_process(COMMAND "${exe}" --version OUTPUT_VARIABLE text ERROR_VARIABLE text
                  RESULT_VARIABLE rc)
  string(REGEX REPLACE "\n.*" "" first "${text}")
  string(STRIP "${first}" first)
  set(${out} "${first}" PARENT_SCOPE)
endfunction()

function(metal_find_toolchain)
  cmake_parse_arguments(PARSE_ARGV 0 arg "REQUIRED" "" "")
  if(TARGET Metal::compiler)
    return()
  endif()
  _metal_resolve(compiler METAL_COMPILER metal)
  if(compiler AND NOT METALLIB_LINKER)
    # An explicit compiler usually has its linker beside it (a toolchain's usr/bin).
    get_filename_component(compiler_dir "${compiler}" DIRECTORY)
    if(EXISTS "${compiler_dir}/metallib")
      set(METALLIB_LINKER "${compiler_dir}/metallib")  # this call only; the cache stays empty
    endif()
  endif()
  _metal_resolve(linker METALLIB_LINKER metallib)
  if(NOT compiler OR NOT linker)
    set(why "")
    if(NOT compiler)
      list(APPEND why "compiler: ${compiler_WHY}")
    endif()
    if(NOT linker)
      list(APPEND why "linker: ${linker_WHY}")
    endif()
    list(JOIN why "; " why)
    set(METAL_TOOLCHAIN_FOUND FALSE PARENT_SCOPE)
    if(arg_REQUIRED)
      message(FATAL_ERROR
        "AOT build needs Apple's Metal compiler, which was not found (${why}). "
        "AOT compilation needs macOS with Xcode or the Metal toolchain; point at a compiler with "
        "-DMETAL_COMPILER=/path/to/metal -DMETALLIB_LINKER=/path/to/metallib, "
        "or build with METAL_JIT=ON (no Metal compiler needed).")
    endif()
    return()
  endif()
  _metal_version(compiler_version "${compiler}")
  _metal_version(linker_version "${linker}")
  set(METAL_COMPILER_VERSION "${compiler_version}" CACHE INTERNAL "metal --version, first line")
  set(METALLIB_LINKER_VERSION "${linker_version}" CACHE INTERNAL "metallib --version, first line")
  add_executable(Metal::compiler IMPORTED GLOBAL)
  set_target_properties(Metal::compiler PROPERTIES IMPORTED_LOCATION "${compiler}"
                        METAL_VERSION "${compiler_version}")
  add_executable(Metal::linker IMPORTED GLOBAL)
  set_target_properties(Metal::linker PROPERTIES IMPORTED_LOCATION "${linker}"
                        METAL_VERSION "${linker_version}")
  message(STATUS "Metal compiler: ${compiler} (${compiler_version})")
  message(STATUS "Metal linker: ${linker} (${linker_version})")
  if(METAL_COMPILER_LAUNCHER)
    message(STATUS "Metal compiler launcher: ${METAL_COMPILER_LAUNCHER}")
  endif()
  set(METAL_TOOLCHAIN_FOUND TRUE PARENT_SCOPE)
endfunction()
