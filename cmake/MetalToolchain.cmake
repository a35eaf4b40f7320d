# MetalToolchain.cmake: find Apple's Metal compiler driver and record its version.
#
#   include(MetalToolchain)
#   metal_find_toolchain([REQUIRED])
#   metal_compiler_command(<out var> [SDK <sdk>])
#
# The compiler (`metal`) is, in this order:
#   1. the cache variable METAL_COMPILER (a path, or a program name on PATH);
#   2. found through xcrun: `xcrun -sdk ${METAL_SDK} --find metal` (METAL_SDK defaults to macosx).
# The same driver compiles (`metal -c x.metal -o x.air`) and links (`metal -o lib.metallib
# a.air b.air`), as MLX does and Apple's "Building a shader library by precompiling source files"
# shows, so a deployment target given to the link is recorded in the library.
#
# On success metal_find_toolchain creates the imported executable Metal::compiler and caches
# METAL_COMPILER_VERSION (first line of `--version`) for the build manifest. When the compiler came
# from xcrun, commands run it as `xcrun -sdk <sdk> metal`, so the SDK is the one asked for (its
# headers and its default deployment target), not whichever xcrun would pick: that is what
# metal_compiler_command() returns (a list; SDK defaults to METAL_SDK).
#
# METAL_COMPILER_LAUNCHER (a list, like CMAKE_<LANG>_COMPILER_LAUNCHER) is put in front of every
# compile by metallib_add_metallib, so ccache-like caches or a remote executor can wrap it. With
# REQUIRED and no compiler, configuration stops with one message that says what is missing and how
# to point at a compiler.

include_guard(GLOBAL)

set(METAL_SDK "macosx" CACHE STRING "xcrun SDK of the Metal compiler (macosx, iphoneos, iphonesimulator)")
set(METAL_COMPILER "" CACHE STRING "Metal compiler (metal: a path or a program name); empty: xcrun -sdk \${METAL_SDK} --find metal")
set(METAL_COMPILER_LAUNCHER "" CACHE STRING "Command list prepended to every metal compile (a cache or remote executor)")

# _metal_resolve(<out>): the absolute path of the compiler, or "" with the reason in <out>_WHY;
# <out>_XCRUN is the xcrun that found it ("" for an explicit METAL_COMPILER).
function(_metal_resolve out)
  set(${out}_XCRUN "" PARENT_SCOPE)
  if(METAL_COMPILER)
    if(IS_ABSOLUTE "${METAL_COMPILER}")
      set(found "${METAL_COMPILER}")
      if(NOT EXISTS "${found}")
        set(${out} "" PARENT_SCOPE)
        set(${out}_WHY "METAL_COMPILER=${METAL_COMPILER} does not exist" PARENT_SCOPE)
        return()
      endif()
    else()
      find_program(found NAMES "${METAL_COMPILER}" NO_CACHE)
      if(NOT found)
        set(${out} "" PARENT_SCOPE)
        set(${out}_WHY "METAL_COMPILER=${METAL_COMPILER} is not on PATH" PARENT_SCOPE)
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
    COMMAND "${xcrun}" -sdk "${METAL_SDK}" --find metal
    OUTPUT_VARIABLE found ERROR_VARIABLE err RESULT_VARIABLE rc
    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0 OR NOT found)
    set(${out} "" PARENT_SCOPE)
    set(${out}_WHY "xcrun -sdk ${METAL_SDK} --find metal failed: ${err}" PARENT_SCOPE)
    return()
  endif()
  set(${out} "${found}" PARENT_SCOPE)
  set(${out}_XCRUN "${xcrun}" PARENT_SCOPE)
endfunction()

function(metal_compiler_command out)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "SDK" "")
  if(NOT TARGET Metal::compiler)
    message(FATAL_ERROR "metal_compiler_command: call metal_find_toolchain() first")
  endif()
  if(NOT arg_SDK)
    set(arg_SDK "${METAL_SDK}")
  endif()
  get_target_property(xcrun Metal::compiler METAL_XCRUN)
  if(xcrun)
    set(${out} "${xcrun}" -sdk "${arg_SDK}" metal PARENT_SCOPE)
  else()
    set(${out} "$<TARGET_FILE:Metal::compiler>" PARENT_SCOPE)
  endif()
endfunction()

function(metal_find_toolchain)
  cmake_parse_arguments(PARSE_ARGV 0 arg "REQUIRED" "" "")
  if(TARGET Metal::compiler)
    set(METAL_TOOLCHAIN_FOUND TRUE PARENT_SCOPE)
    return()
  endif()
  _metal_resolve(compiler)
  if(NOT compiler)
    set(METAL_TOOLCHAIN_FOUND FALSE PARENT_SCOPE)
    if(arg_REQUIRED)
      message(FATAL_ERROR
        "AOT build needs Apple's Metal compiler, which was not found (${compiler_WHY}). "
        "AOT compilation needs macOS with Xcode or the Metal toolchain; point at a compiler with "
        "-DMETAL_COMPILER=/path/to/metal, or build with METAL_JIT=ON (no Metal compiler needed).")
    endif()
    return()
  endif()
  if(compiler_XCRUN)
    set(version_cmd "${compiler_XCRUN}" -sdk "${METAL_SDK}" metal --version)
  else()
    set(version_cmd "${compiler}" --version)
  endif()
  execute_process(COMMAND ${version_cmd} OUTPUT_VARIABLE text ERROR_VARIABLE text)
  string(REGEX REPLACE "\n.*" "" version "${text}")
  string(STRIP "${version}" version)
  set(METAL_COMPILER_VERSION "${version}" CACHE INTERNAL "metal --version, first line")
  add_executable(Metal::compiler IMPORTED GLOBAL)
  set_target_properties(Metal::compiler PROPERTIES IMPORTED_LOCATION "${compiler}"
                        METAL_VERSION "${version}" METAL_XCRUN "${compiler_XCRUN}")
  if(compiler_XCRUN)
    message(STATUS "Metal compiler: ${compiler_XCRUN} -sdk <sdk> metal (${compiler}, ${version})")
  else()
    message(STATUS "Metal compiler: ${compiler} (${version})")
  endif()
  if(METAL_COMPILER_LAUNCHER)
    message(STATUS "Metal compiler launcher: ${METAL_COMPILER_LAUNCHER}")
  endif()
  set(METAL_TOOLCHAIN_FOUND TRUE PARENT_SCOPE)
endfunction()
