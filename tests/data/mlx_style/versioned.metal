// Kernels that exist only for some language versions or definitions.
#include "mlx/backend/metal/kernels/utils.h"
#include "mlx/backend/metal/kernels/unary_ops.h"
#include "mlx/backend/metal/kernels/unary.h"

#if __METAL_VERSION__ >= 320
instantiate_kernel("v_" "Cos" "float32" "float32", unary_v, float, float, Cos, 1)

[[kernel]] void msl32_only(
    device float* data [[buffer(0)]],
    uint index [[thread_position_in_grid]]) {
  data[index] = 0.0f;
}
#else
[[kernel]] void before_msl32(
    device float* data [[buffer(0)]],
    uint index [[thread_position_in_grid]]) {
  data[index] = 1.0f;
}
#endif

#ifdef WITH_EXTRA_KERNELS
kernel void extra_kernel(
    device float* data [[buffer(0)]],
    uint index [[thread_position_in_grid]]) {
  data[index] = 2.0f;
}
#endif

#if defined(__METAL_MACOS__) && defined(__METAL__)
kernel void macos_kernel(
    device float* data [[buffer(0)]],
    uint index [[thread_position_in_grid]]) {
  data[index] = 3.0f;
}
#endif
