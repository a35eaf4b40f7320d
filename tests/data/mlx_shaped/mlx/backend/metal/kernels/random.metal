// Kernels written in the entry file itself (no template), as in MLX's random.metal: a JIT
// build embeds this file whole.
#include "mlx/backend/metal/kernels/utils.h"

[[kernel]] void rbits(
    device const uint32_t* keys [[buffer(0)]],
    device uint32_t* out [[buffer(1)]],
    uint index [[thread_position_in_grid]]) {
  uint32_t x = keys[index] ^ (index * 0x9E3779B9u);
  x ^= x >> 16;
  out[index] = x * 0x85EBCA6Bu;
}

[[kernel]] void rbits_fill(
    device uint32_t* out [[buffer(0)]],
    constant const uint32_t& value [[buffer(1)]],
    uint index [[thread_position_in_grid]]) {
  out[index] = value ^ index;
}
