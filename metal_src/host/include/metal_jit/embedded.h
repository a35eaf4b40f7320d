// The data layout shared by the generated family sources and the registry (not for apps).
//
// Each family's generated translation unit (python -m builder.jit family) defines one
// `Family`: its preamble as an ordered list of pieces (raw text, or zlib streams when the
// library is built with COMPRESS), and its kernels in catalog order with a by-name permutation
// for binary search. A generated index (written by CMake) lists the families of the library.
#pragma once

#include <cstddef>
#include <cstdint>

#ifndef METAL_JIT_NAMESPACE
#define METAL_JIT_NAMESPACE metal_jit
#endif

namespace METAL_JIT_NAMESPACE {
namespace detail {

// One stored array. Text pieces hold `raw_size` bytes plus a NUL; compressed ones hold a zlib
// stream of `size` bytes that inflates to `raw_size` bytes.
struct Piece {
  const void* data;
  std::uint32_t size;
  std::uint32_t raw_size;
  bool compressed;
};

// One registry entry: where its host name and instantiation arguments sit in the family's
// string chunks (offsets, not pointers: no dynamic relocation per kernel). Its instantiation
// line is  <line_head><host_name>", <args>)
struct Kernel {
  std::uint16_t name_chunk;
  std::uint16_t name_offset;
  std::uint16_t args_chunk;
  std::uint16_t args_offset;
};

struct Family {
  const char* name;
  const char* line_head;  // e.g.  instantiate_kernel("
  const Piece* pieces;
  std::uint32_t piece_count;
  std::uint32_t preamble_size;  // bytes of the assembled preamble
  const char* const* strings;   // string chunks of NUL-terminated names and arguments
  const Kernel* kernels;        // catalog order; nullptr when the selection left none
  std::uint32_t kernel_count;
  const std::uint32_t* by_name;  // kernel indices sorted by host name (bytewise)
};

inline const char* host_name(const Family& family, const Kernel& kernel) {
  return family.strings[kernel.name_chunk] + kernel.name_offset;
}
inline const char* args(const Family& family, const Kernel& kernel) {
  return family.strings[kernel.args_chunk] + kernel.args_offset;
}

struct FamilyTable {
  const Family* const* items;
  std::size_t count;
};

// Defined by the generated index source.
const FamilyTable& family_table();

}  // namespace detail
}  // namespace METAL_JIT_NAMESPACE
