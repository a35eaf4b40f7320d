# MetalAot.cmake: compile .metal files ahead of time into one metallib. Plain CMake: no Python, no
# catalog; any project with .metal files can use it. Including it defines functions (and
# METALLIB_DEFAULT_FLAGS) only; the compiler is found at the first call (MetalToolchain.cmake).
#
#   include(MetalAot)
#   metallib_add_metallib(<name>
#       SOURCES <file.metal>...
#       [INCLUDE_DIRECTORIES <dir>...]      # -I, in order (a source's own folder is searched first)
#       [DEFINES <NAME[=VALUE]>...]         # -D
#       [FLAGS <flag>...]                   # default: ${METALLIB_DEFAULT_FLAGS}; FLAGS alone: none
#       [STD <metal3.1|macos-metal2.4|...>] # -std=
#       [DEPLOYMENT_TARGET <version>]       # -mmacosx-version-min= (iOS forms by SDK), compile
#                                           # and link; default: CMAKE_OSX_DEPLOYMENT_TARGET
#       [SDK <macosx|iphoneos|iphonesimulator>]  # default METALLIB_SDK, else macosx; via xcrun
#       [COMPILER_LAUNCHER <command>...]    # in front of every compile (ccache, a remote
#                                           # executor); default METALLIB_COMPILER_LAUNCHER
#       [OUTPUT <file.metallib>]            # default ${CMAKE_CURRENT_BINARY_DIR}/<name>.metallib
#       [SOURCE_ROOT <dir>]                 # .air paths mirror sources below it (default: the
#                                           # current source dir; others by file name)
#       [INSTALL DESTINATION <dir> [COMPONENT <component>]])  # install(FILES <OUTPUT> ...)
#
# Each source is compiled exactly once, by its own custom command:
#   [COMPILER_LAUNCHER...] <metal> -x metal <FLAGS> [-std=STD] [-m<os>-version-min=V]
#       -D... -I... -c x.metal -o <name>.air/x.air -MMD -MF <name>.air/x.d
# with DEPFILE: the compiler writes the headers it read, so touching a header rebuilds exactly the
# .air files whose sources reach it; no header is listed by hand (MLX's build_kernel(... DEPENDS)
# lists them and misses some). One command links them all through the same driver:
#   <metal> [-m<os>-version-min=V] -o <OUTPUT> a.air b.air ...
# <metal> is `xcrun -sdk <SDK> metal` when the compiler was found through xcrun (MetalToolchain).
# <name> is an ALL target; its properties METALLIB_OUTPUT, METALLIB_SOURCES, METALLIB_AIR_FILES
# (same order as the sources) and METALLIB_DEPLOYMENT_TARGET (what the compiles got, or empty) say
# what it builds.

include_guard(GLOBAL)
include("${CMAKE_CURRENT_LIST_DIR}/MetalToolchain.cmake")

# Metal compiles with fast math unless told otherwise (MSL specification, "Math Intrinsics
# Compiler Options"; MTLCompileOptions.fastMathEnabled defaults to true): kernels that use
# infinities as identities or call isinf/isnan need -fno-fast-math. docs/build.md cites each flag.
set(METALLIB_DEFAULT_FLAGS -Wall -Wextra -fno-fast-math)

# _metallib_version_flag(<out> <sdk> <version>): the deployment-target flag of an SDK.
function(_metallib_version_flag out sdk version)
  if(sdk STREQUAL "macosx")
    set(${out} "-mmacosx-version-min=${version}" PARENT_SCOPE)
  elseif(sdk STREQUAL "iphoneos")
    set(${out} "-mios-version-min=${version}" PARENT_SCOPE)
  elseif(sdk STREQUAL "iphonesimulator")
    set(${out} "-mios-simulator-version-min=${version}" PARENT_SCOPE)
  else()
    message(FATAL_ERROR "DEPLOYMENT_TARGET: no known version flag for SDK '${sdk}' (macosx, "
                        "iphoneos, iphonesimulator); pass the flag in FLAGS instead")
  endif()
endfunction()

# _metallib_install_args(<out> <caller> [DESTINATION <dir> [COMPONENT <component>]]): the
# arguments of install(FILES) after the file, or "" when INSTALL was not given.
function(_metallib_install_args out me)
  set(${out} "" PARENT_SCOPE)
  if(ARGC EQUAL 2)
    return()
  endif()
  cmake_parse_arguments(PARSE_ARGV 2 inst "" "DESTINATION;COMPONENT" "")
  if(inst_UNPARSED_ARGUMENTS OR NOT inst_DESTINATION)
    message(FATAL_ERROR "${me}: INSTALL takes DESTINATION <dir> [COMPONENT <component>], "
                        "not '${ARGN}'")
  endif()
  set(args DESTINATION "${inst_DESTINATION}")
  if(inst_COMPONENT)
    list(APPEND args COMPONENT "${inst_COMPONENT}")
  endif()
  set(${out} ${args} PARENT_SCOPE)
endfunction()

function(metallib_add_metallib name)
  set(me "metallib_add_metallib(${name})")
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "STD;DEPLOYMENT_TARGET;SDK;OUTPUT;SOURCE_ROOT"
    "SOURCES;INCLUDE_DIRECTORIES;DEFINES;FLAGS;COMPILER_LAUNCHER;INSTALL")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${me}: unknown arguments ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT arg_SOURCES)
    message(FATAL_ERROR "${me}: SOURCES is required")
  endif()
  if(NOT DEFINED arg_FLAGS AND NOT "FLAGS" IN_LIST arg_KEYWORDS_MISSING_VALUES)
    set(arg_FLAGS ${METALLIB_DEFAULT_FLAGS})
  endif()
  _metallib_default_sdk(arg_SDK "${arg_SDK}")
  if(NOT DEFINED arg_COMPILER_LAUNCHER
     AND NOT "COMPILER_LAUNCHER" IN_LIST arg_KEYWORDS_MISSING_VALUES)
    set(arg_COMPILER_LAUNCHER ${METALLIB_COMPILER_LAUNCHER})
  endif()
  # The caller's CMAKE_OSX_DEPLOYMENT_TARGET, as CMake gives it to C and C++ compiles.
  if(NOT arg_DEPLOYMENT_TARGET AND CMAKE_OSX_DEPLOYMENT_TARGET)
    set(arg_DEPLOYMENT_TARGET "${CMAKE_OSX_DEPLOYMENT_TARGET}")
  endif()
  if("INSTALL" IN_LIST arg_KEYWORDS_MISSING_VALUES)
    message(FATAL_ERROR "${me}: INSTALL takes DESTINATION <dir> [COMPONENT <component>]")
  endif()
  _metallib_install_args(install "${me}" ${arg_INSTALL})
  if(NOT arg_OUTPUT)
    set(arg_OUTPUT "${CMAKE_CURRENT_BINARY_DIR}/${name}.metallib")
  endif()
  if(NOT arg_SOURCE_ROOT)
    set(arg_SOURCE_ROOT "${CMAKE_CURRENT_SOURCE_DIR}")
  endif()
  get_filename_component(source_root "${arg_SOURCE_ROOT}" ABSOLUTE)
  metallib_find_toolchain(REQUIRED SDK "${arg_SDK}")
  metallib_compiler_command(metal SDK "${arg_SDK}")

  set(version_flag "")
  if(arg_DEPLOYMENT_TARGET)
    _metallib_version_flag(version_flag "${arg_SDK}" "${arg_DEPLOYMENT_TARGET}")
  endif()
  set(compile_flags -x metal ${arg_FLAGS})
  if(arg_STD)
    list(APPEND compile_flags "-std=${arg_STD}")
  endif()
  list(APPEND compile_flags ${version_flag})
  foreach(define IN LISTS arg_DEFINES)
    list(APPEND compile_flags "-D${define}")
  endforeach()
  foreach(dir IN LISTS arg_INCLUDE_DIRECTORIES)
    get_filename_component(dir "${dir}" ABSOLUTE)
    list(APPEND compile_flags -I "${dir}")
  endforeach()

  set(air_dir "${CMAKE_CURRENT_BINARY_DIR}/${name}.air")
  set(airs "")
  set(sources "")
  set(seen "")
  foreach(src IN LISTS arg_SOURCES)
    get_filename_component(src "${src}" ABSOLUTE)
    file(RELATIVE_PATH rel "${source_root}" "${src}")
    if(rel MATCHES "^\\.\\./" OR IS_ABSOLUTE "${rel}")
      get_filename_component(rel "${src}" NAME)
    endif()
    string(REGEX REPLACE "\\.[^./]*$" "" stem "${rel}")
    if(stem IN_LIST seen)
      message(FATAL_ERROR "${me}: two sources would compile to "
                          "${stem}.air; give a SOURCE_ROOT that holds them both")
    endif()
    list(APPEND seen "${stem}")
    set(air "${air_dir}/${stem}.air")
    set(dep "${air_dir}/${stem}.d")
    add_custom_command(
      OUTPUT "${air}"
      COMMAND ${arg_COMPILER_LAUNCHER} ${metal} ${compile_flags}
              -c "${src}" -o "${air}" -MMD -MF "${dep}"
      DEPENDS "${src}"
      DEPFILE "${dep}"
      COMMENT "Compiling Metal ${rel}"
      VERBATIM COMMAND_EXPAND_LISTS)
    list(APPEND airs "${air}")
    list(APPEND sources "${src}")
  endforeach()
  get_filename_component(out_name "${arg_OUTPUT}" NAME)
  add_custom_command(
    OUTPUT "${arg_OUTPUT}"
    COMMAND ${metal} ${version_flag} -o "${arg_OUTPUT}" ${airs}
    DEPENDS ${airs}
    COMMENT "Linking ${out_name}"
    VERBATIM COMMAND_EXPAND_LISTS)
  add_custom_target(${name} ALL DEPENDS "${arg_OUTPUT}")
  set_target_properties(${name} PROPERTIES
    METALLIB_OUTPUT "${arg_OUTPUT}"
    METALLIB_AIR_FILES "${airs}"
    METALLIB_SOURCES "${sources}"
    METALLIB_DEPLOYMENT_TARGET "${arg_DEPLOYMENT_TARGET}")
  if(install)
    install(FILES "${arg_OUTPUT}" ${install})
  endif()
endfunction()
