// An entry file in a sub-folder with a template of its own: tile sizes and a flag become part
// of each name ("_bm" #bm ...), and the arguments are types, integers and booleans.
#include "mlx/backend/metal/kernels/utils.h"

template <typename T, int BM, int BN, bool transpose>
[[kernel]] void tile_copy(
    device const T* in [[buffer(0)]],
    device T* out [[buffer(1)]],
    constant int& ld [[buffer(2)]],
    uint2 tid [[threadgroup_position_in_grid]],
    uint2 lid [[thread_position_in_threadgroup]]) {
  int row = tid.y * BM + lid.y;
  int col = tid.x * BN + lid.x;
  out[transpose ? col * ld + row : row * ld + col] = in[row * ld + col];
}

#define instantiate_tile(tname, type, bm, bn, trans)                          \
  instantiate_kernel(                                                         \
      "tile_copy_" #tname "_bm" #bm "_bn" #bn "_t" #trans,                    \
      tile_copy, type, bm, bn, trans)

#define instantiate_tiles(tname, type)            \
  instantiate_tile(tname, type, 32, 32, false)    \
  instantiate_tile(tname, type, 64, 16, true)

instantiate_tiles(float32, float)
instantiate_tiles(bfloat16, bfloat16_t)
