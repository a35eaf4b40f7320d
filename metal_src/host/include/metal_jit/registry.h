// The host JIT library: embedded kernel sources, looked up by family or by instantiation.
//
// An app compiles a kernel at run time with
//
//   if (auto src = metal_jit::source_for("unary_v_exp_float16")) {
//     id<MTLLibrary> lib = [device newLibraryWithSource:@(src->c_str()) options:nil error:&err];
//     id<MTLFunction> fn = [lib newFunctionWithName:@"unary_v_exp_float16"];
//   }
//
// The source is the family's preamble (its header with every project header inlined once, with
// #line markers) followed by the instantiation line from the same catalog the AOT build uses.
// The namespace is `metal_jit` unless the library was built with NAMESPACE (the CMake target
// then defines METAL_JIT_NAMESPACE for everything that links it). Thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#ifndef METAL_JIT_NAMESPACE
#define METAL_JIT_NAMESPACE metal_jit
#endif

#if defined(_WIN32) && defined(MBJIT_BUILDING)
#define MBJIT_API __declspec(dllexport)
#elif defined(_WIN32)
#define MBJIT_API __declspec(dllimport)
#else
#define MBJIT_API __attribute__((visibility("default")))
#endif

namespace METAL_JIT_NAMESPACE {

// The family's preamble, assembled (and inflated) on first use and kept for the library's
// lifetime; empty for an unknown family.
MBJIT_API std::string_view preamble(std::string_view family);

// The complete run-time source for one instantiation (preamble + instantiation line + "\n"),
// or nullopt when the library does not embed that host name.
MBJIT_API std::optional<std::string> source_for(std::string_view host_name);

// The family embedding `host_name` ("" if none), and the embedded names in catalog order.
MBJIT_API std::string_view family_of(std::string_view host_name);
MBJIT_API std::size_t kernel_count();
MBJIT_API std::string_view kernel_name(std::size_t index);  // "" when out of range
MBJIT_API std::size_t family_count();
MBJIT_API std::string_view family_name(std::size_t index);  // "" when out of range

}  // namespace METAL_JIT_NAMESPACE

// C API for foreign-function bindings (the tests read it with ctypes, tests/support/
// jit_library.py). Strings returned as `const char*` are owned by the library and live as long
// as it is loaded.
extern "C" {
MBJIT_API std::size_t mbjit_count(void);
MBJIT_API const char* mbjit_name(std::size_t index);  // NULL when out of range
MBJIT_API const char* mbjit_family(const char* host_name);  // NULL when unknown
// 0: *out is a malloc'ed NUL-terminated source of *len bytes (free with mbjit_free);
// 1: unknown host name; 2: an embedded piece failed to inflate.
MBJIT_API int mbjit_source(const char* host_name, char** out, std::size_t* len);
MBJIT_API void mbjit_free(char* text);
MBJIT_API std::size_t mbjit_family_count(void);
MBJIT_API const char* mbjit_family_name(std::size_t index);  // NULL when out of range
// 0: *out points at the family's preamble (*len bytes, NUL-terminated, library-owned);
// 1: unknown family; 2: inflate failed.
MBJIT_API int mbjit_preamble(const char* family, const char** out, std::size_t* len);
MBJIT_API int mbjit_compressed(void);  // 1 when any embedded piece is zlib-compressed
}
