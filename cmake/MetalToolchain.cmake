# MetalToolchain.cmake: find Apple's Metal compiler driver and record its version.
#
#   include(MetalToolchain)
#   metallib_find_toolchain([REQUIRED] [SDK <sdk>] [ADVICE <text>])
#   metallib_compiler_command(<out var> [SDK <sdk>])
#
# Including this file defines these functions and nothing else: no cache variable, no program run.
# The compiler is looked for at the first call, once per project:
#   1. METALLIB_COMPILER, when the project or the user (-DMETALLIB_COMPILER=...) sets it: a path,
#      or a program name on PATH;
#   2. else through xcrun: `xcrun -sdk <sdk> --find metal`, <sdk> the call's SDK, else
#      METALLIB_SDK, else macosx.
# The same driver compiles (`metal -c x.metal -o x.air`) and links (`metal -o lib.metallib
# a.air b.air`), as MLX does and Apple's "Building a shader library by precompiling source files"
# shows, so a deployment target given to the link is recorded in the library.
#
# On success metallib_find_toolchain creates the imported executable MetallibBuilder::metal_compiler
# with the properties METALLIB_COMPILER_VERSION (first line of `--version`, for the build manifest)
# and METALLIB_XCRUN (the xcrun that found it, or empty), and sets METALLIB_TOOLCHAIN_FOUND in the
# caller's scope. When the compiler came from xcrun, commands run it as `xcrun -sdk <sdk> metal`, so
# the SDK is the one asked for (its headers and its default deployment target), not whichever xcrun
# would pick: that is what metallib_compiler_command() returns (a list).
#
# With REQUIRED and no compiler, configuration stops with one message that says what is missing and
# how to point at a compiler: ADVICE, else "point at a compiler with -DMETALLIB_COMPILER=...". (A
# project whose users set another variable says so: this project's CMakeLists.txt names its own.)

include_guard(GLOBAL)

# _metallib_default_sdk(<out> <sdk>): <sdk>, else METALLIB_SDK, else macosx.
function(_metallib_default_sdk out sdk)
  if(NOT sdk)
    set(sdk "${METALLIB_SDK}")
  endif()
  if(NOT sdk)
    set(sdk macosx)
  endif()
  set(${out} "${sdk}" PARENT_SCOPE)
endfunction()

# _metallib_resolve(<out> <sdk>): the absolute path of the compiler, or "" with the reason in
# <out>_WHY; <out>_XCRUN is the xcrun that found it ("" for an explicit METALLIB_COMPILER).
function(_metallib_resolve out sdk)
  set(${out}_XCRUN "" PARENT_SCOPE)
  if(METALLIB_COMPILER)
    if(IS_ABSOLUTE "${METALLIB_COMPILER}")
      set(found "${METALLIB_COMPILER}")
      if(NOT EXISTS "${found}")
        set(${out} "" PARENT_SCOPE)
        set(${out}_WHY "METALLIB_COMPILER=${METALLIB_COMPILER} does not exist" PARENT_SCOPE)
        return()
      endif()
    else()
      find_program(found NAMES "${METALLIB_COMPILER}" NO_CACHE)
      if(NOT found)
        set(${out} "" PARENT_SCOPE)
        set(${out}_WHY "METALLIB_COMPILER=${METALLIB_COMPILER} is not on PATH" PARENT_SCOPE)
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
    COMMAND "${xcrun}" -sdk "${sdk}" --find metal
    OUTPUT_VARIABLE found ERROR_VARIABLE err RESULT_VARIABLE rc
    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0 OR NOT found)
    set(${out} "" PARENT_SCOPE)
    set(${out}_WHY "xcrun -sdk ${sdk} --find metal failed: ${err}" PARENT_SCOPE)
    return()
  endif()
  set(${out} "${found}" PARENT_SCOPE)
  set(${out}_XCRUN "${xcrun}" PARENT_SCOPE)
endfunction()

function(metallib_compiler_command out)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "SDK" "")
  if(NOT TARGET MetallibBuilder::metal_compiler)
    message(FATAL_ERROR "metallib_compiler_command: call metallib_find_toolchain() first")
  endif()
  _metallib_default_sdk(sdk "${arg_SDK}")
  get_target_property(xcrun MetallibBuilder::metal_compiler METALLIB_XCRUN)
  if(xcrun)
    set(${out} "${xcrun}" -sdk "${sdk}" metal PARENT_SCOPE)
  else()
    set(${out} "$<TARGET_FILE:MetallibBuilder::metal_compiler>" PARENT_SCOPE)
  endif()
endfunction()

function(metallib_find_toolchain)
  cmake_parse_arguments(PARSE_ARGV 0 arg "REQUIRED" "SDK;ADVICE" "")
  if(TARGET MetallibBuilder::metal_compiler)
    set(METALLIB_TOOLCHAIN_FOUND TRUE PARENT_SCOPE)
    return()
  endif()
  _metallib_default_sdk(sdk "${arg_SDK}")
  _metallib_resolve(compiler "${sdk}")
  if(NOT compiler)
    set(METALLIB_TOOLCHAIN_FOUND FALSE PARENT_SCOPE)
    if(NOT arg_ADVICE)
      set(arg_ADVICE "point at a compiler with -DMETALLIB_COMPILER=/path/to/metal")
    endif()
    if(arg_REQUIRED)
      message(FATAL_ERROR
        "AOT build needs Apple's Metal compiler, which was not found (${compiler_WHY}). "
        "It comes with Xcode or the Metal toolchain on macOS and with the Metal Developer Tools "
        "for Windows; ${arg_ADVICE}.")
    endif()
    return()
  endif()
  if(compiler_XCRUN)
    set(version_cmd "${compiler_XCRUN}" -sdk "${sdk}" metal --version)
  else()
    set(version_cmd "${compiler}" --version)
  endif()
  execute_process(COMMAND ${version_cmd} OUTPUT_VARIABLE text ERROR_VARIABLE text)
  string(REGEX REPLACE "\n.*" "" version "${text}")
  string(STRIP "${version}" version)
  add_executable(MetallibBuilder::metal_compiler IMPORTED GLOBAL)
  set_target_properties(MetallibBuilder::metal_compiler PROPERTIES IMPORTED_LOCATION "${compiler}"
                        METALLIB_COMPILER_VERSION "${version}" METALLIB_XCRUN "${compiler_XCRUN}")
  if(compiler_XCRUN)
    message(STATUS "Metal compiler: ${compiler_XCRUN} -sdk <sdk> metal (${compiler}, ${version})")
  else()
    message(STATUS "Metal compiler: ${compiler} (${version})")
  endif()
  set(METALLIB_TOOLCHAIN_FOUND TRUE PARENT_SCOPE)
endfunction()
