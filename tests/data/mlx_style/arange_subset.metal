// Explicit instantiations spelled out with their full signature (MLX's conv and scan files use
// this form) instead of the decltype shorthand of instantiate_kernel.
#include "mlx/backend/metal/kernels/utils.h"
#include "mlx/backend/metal/kernels/arange.h"

#define arange_with_signature(tname, type)                  \
  template [[host_name("arange" #tname)]] [[kernel]] void   \
  arange<type>(                                             \
      constant const type& start,                           \
      constant const type& step,                            \
      device type* out,                                     \
      uint index [[thread_position_in_grid]]);

arange_with_signature(float32, float)
arange_with_signature(float16, half)
arange_with_signature(int32, int32_t)
