// The data layout shared by the generated kernel table and the registry (not for apps).
//
// A catalog tree's host library is a tree's host library (builder.cmake_build.tree_jit): each
// unit's preamble is a function `const std::string& <unit>()` written by the one writer of
// run-time C++, its text stored in the unit's own source. The kernel table (written beside the
// functions) adds, per unit, its kernels' strings: no per-kernel table is stored; the registry
// derives offsets and the by-name order from the strings on first use, so a kernel costs the
// library only its (compressible) name and arguments.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

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

struct Unit {
  const char* name;
  const std::string& (*preamble)();  // the unit's preamble function
  std::uint32_t preamble_size;       // its bytes; a text of another size failed to inflate
  // Kernel strings: for each kernel, in table order, "<host name>\0<args>\0"; pieces as above
  // (nullptr when the selection left no kernel). A kernel's instantiation line is
  //   <line_head><host name>", <args>)
  const Piece* pool;
  std::uint32_t pool_piece_count;
  std::uint32_t pool_size;
  std::uint32_t kernel_count;
};

struct UnitTable {
  const Unit* items;
  std::size_t count;
  const char* line_head;  // e.g.  instantiate_kernel("
  bool compressed;        // any piece is a zlib stream
};

// Defined by the generated kernel table.
const UnitTable& unit_table();

}  // namespace detail
}  // namespace METAL_JIT_NAMESPACE
