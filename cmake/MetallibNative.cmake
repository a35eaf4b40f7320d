# The container code's C extension, builder.metallib._native (sources: builder/metallib/csrc/).
#
#   metallib_add_native_module(<target>
#     SOURCES <c files>...          always compiled
#     SHA256_SOURCES <c files>...   compiled with OpenSSL (libssl-dev) when CMake finds it; they
#                                   define sha256_spans, which hashes modules on two threads
#     ZLIB_SOURCES <c files>...     compiled with zlib (zlib1g-dev) when CMake finds it; they
#                                   define deflate_share, the download model's parallel pass
#     ABI_FROM <file>               the Python file stating the result layout's number (ABI = <n>)
#     DESTINATION <dir>)            install directory: builder/metallib in the wheel
#
# The module is named _native; builder/metallib/native.py imports it, checks its ABI number and
# falls back to Python without it. The ABI number is stated once, in ABI_FROM, and compiled in as
# -DNATIVE_ABI=<n> (metallib_native_abi; tests/metallib/test_native_contract.py runs it).
# Python comes from FindPython3, asked in one place (metallib_find_python3, MetallibPython.cmake):
# scikit-build-core names its interpreter in Python3_EXECUTABLE.

include_guard(GLOBAL)
include("${CMAKE_CURRENT_LIST_DIR}/MetallibPython.cmake")

# metallib_native_abi(<out-var> <file>): the number on the file's one line "ABI = <n>".
function(metallib_native_abi out file)
  file(STRINGS "${file}" lines REGEX "^ABI = [0-9]+$")
  list(LENGTH lines count)
  if(NOT count EQUAL 1)
    message(FATAL_ERROR "${file}: expected one line 'ABI = <number>', found ${count}")
  endif()
  string(REGEX REPLACE "^ABI = ([0-9]+)$" "\\1" abi "${lines}")
  set(${out} "${abi}" PARENT_SCOPE)
endfunction()

function(metallib_add_native_module target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "DESTINATION;ABI_FROM" "SOURCES;SHA256_SOURCES;ZLIB_SOURCES")
  if(NOT arg_SOURCES OR NOT arg_DESTINATION OR NOT arg_ABI_FROM)
    message(FATAL_ERROR "metallib_add_native_module: SOURCES, ABI_FROM and DESTINATION are required")
  endif()
  metallib_native_abi(abi "${arg_ABI_FROM}")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${arg_ABI_FROM}")
  metallib_find_python3(REQUIRED COMPONENTS Interpreter Development.Module)
  Python3_add_library(${target} MODULE WITH_SOABI ${arg_SOURCES})
  set_target_properties(${target} PROPERTIES OUTPUT_NAME _native C_STANDARD 11 C_VISIBILITY_PRESET hidden)
  target_compile_definitions(${target} PRIVATE NATIVE_ABI=${abi})
  target_compile_options(${target} PRIVATE $<$<C_COMPILER_ID:GNU,Clang>:-Wall -Wextra>)
  if(arg_SHA256_SOURCES)
    find_package(OpenSSL 1.1 COMPONENTS Crypto)
    find_package(Threads)
    if(OpenSSL_FOUND AND Threads_FOUND)
      target_sources(${target} PRIVATE ${arg_SHA256_SOURCES})
      target_compile_definitions(${target} PRIVATE METALLIB_NATIVE_SHA256)
      target_link_libraries(${target} PRIVATE OpenSSL::Crypto Threads::Threads)
    else()
      message(WARNING "${target}: OpenSSL headers not found (install libssl-dev); "
                      "verify and slim will hash modules with Python's hashlib, more slowly")
    endif()
  endif()
  if(arg_ZLIB_SOURCES)
    find_package(ZLIB)
    find_package(Threads)
    if(ZLIB_FOUND AND Threads_FOUND)
      target_sources(${target} PRIVATE ${arg_ZLIB_SOURCES})
      target_compile_definitions(${target} PRIVATE METALLIB_NATIVE_ZLIB)
      target_link_libraries(${target} PRIVATE ZLIB::ZLIB Threads::Threads)
    else()
      message(WARNING "${target}: zlib headers not found (install zlib1g-dev); "
                      "report --download will compress with Python's zlib, more slowly")
    endif()
  endif()
  install(TARGETS ${target} LIBRARY DESTINATION "${arg_DESTINATION}")
endfunction()
