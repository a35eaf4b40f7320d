# metallib_add_native_module: the container reader's C extension (_metallib_native).
#
#   metallib_add_native_module(<target>
#     SOURCES <c files>...          always compiled
#     SHA256_SOURCES <c files>...   compiled with OpenSSL (libssl-dev) when CMake finds it; they
#                                   define sha256_spans, used by `verify` to hash on two threads
#     DESTINATION <dir>)            install directory (a top-level module: see below)
#
# The module is installed at the top of site-packages rather than inside builder/, so that a
# source checkout run against the installation (the test suite) finds it too;
# builder/metallib/native.py loads it, checks its ABI number and falls back to Python without it.
function(metallib_add_native_module target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "DESTINATION" "SOURCES;SHA256_SOURCES")
  if(NOT arg_SOURCES OR NOT arg_DESTINATION)
    message(FATAL_ERROR "metallib_add_native_module: SOURCES and DESTINATION are required")
  endif()
  find_package(Python 3.10 REQUIRED COMPONENTS Interpreter Development.Module)
  Python_add_library(${target} MODULE WITH_SOABI ${arg_SOURCES})
  set_target_properties(${target} PROPERTIES C_STANDARD 11 C_VISIBILITY_PRESET hidden)
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
                      "verify will hash modules with Python's hashlib, more slowly")
    endif()
  endif()
  install(TARGETS ${target} LIBRARY DESTINATION "${arg_DESTINATION}")
endfunction()
