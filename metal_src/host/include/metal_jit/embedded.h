// The data layout shared by the generated family sources and the registry (not for apps).
//
// Each family's generated translation unit (python -m builder.jit family) defines one
// `Family`: its preamble as an ordered list of pieces (raw text, or zlib streams when the
// library is built with COMPRESS), and its kernels' strings. No per-kernel table is stored:
// the registry derives offsets and the by-name order from the strings on first use, so a
// kernel costs the library only its (compressible) name and arguments. A generated index
// (written by CMake) lists the families of the library.
//
// No header is included: a family's source needs none, so it compiles for any target the
// compiler knows, also without that target's C++ standard library (a Darwin target on Linux).
#pragma once

#ifndef METAL_JIT_NAMESPACE
#define METAL_JIT_NAMESPACE metal_jit
#endif

namespace METAL_JIT_NAMESPACE {
namespace detail {

using u32 = unsigned int;  // std::uint32_t without <cstdint>
static_assert(sizeof(u32) == 4, "metal_jit needs a 32-bit unsigned int");
using usize = decltype(sizeof 0);  // std::size_t without <cstddef>

// One stored array. Text pieces hold `raw_size` bytes plus a NUL; compressed ones hold a zlib
// stream of `size` bytes that inflates to `raw_size` bytes.
struct Piece {
  const void* data;
  u32 size;
  u32 raw_size;
  bool compressed;
};

struct Family {
  const char* name;
  const char* line_head;  // e.g.  instantiate_kernel("
  const Piece* pieces;
  u32 piece_count;
  u32 preamble_size;  // bytes of the assembled preamble
  // Registry strings: for each kernel, in catalog order, "<host name>\0<args>\0"; pieces as
  // above (nullptr when the selection left no kernel). A kernel's instantiation line is
  //   <line_head><host name>", <args>)
  const Piece* pool;
  u32 pool_piece_count;
  u32 pool_size;
  u32 kernel_count;
};

struct FamilyTable {
  const Family* const* items;
  usize count;
};

// Defined by the generated index source.
const FamilyTable& family_table();

}  // namespace detail
}  // namespace METAL_JIT_NAMESPACE
