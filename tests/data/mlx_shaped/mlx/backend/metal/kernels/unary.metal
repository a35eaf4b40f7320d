// Unary kernels, named and instantiated through layered macros as MLX's unary.metal does.
#include "mlx/backend/metal/kernels/utils.h"
#include "mlx/backend/metal/kernels/unary_ops.h"
#include "mlx/backend/metal/kernels/unary.h"

#define instantiate_unary_all(op, tname, type)                 \
  instantiate_kernel("v_" #op #tname, unary_v, type, type, op) \
  instantiate_kernel("g_" #op #tname, unary_g, type, type, op)

#define instantiate_unary_float(op)        \
  instantiate_unary_all(op, float16, half) \
  instantiate_unary_all(op, float32, float)

instantiate_unary_float(Abs)
instantiate_unary_float(Negative)
instantiate_unary_float(Exp)
