// Unary kernels for three ops, instantiated through two layers of macros: the names are built
// from "#op #tname #tname" (stringified macro arguments, joined as adjacent literals).
#include "mlx/backend/metal/kernels/utils.h"
#include "mlx/backend/metal/kernels/unary_ops.h"
#include "mlx/backend/metal/kernels/unary.h"

#define unary_layouts(op, tname, type)                                        \
  instantiate_kernel("v_" #op #tname #tname, unary_v, type, type, op, 1)      \
  instantiate_kernel("v2_" #op #tname #tname, unary_v2, type, type, op)       \
  instantiate_kernel(                                                         \
      "gn1_" #op #tname #tname, unary_g, type, type, op, 1, int)

#define unary_float_types(op)                   \
  unary_layouts(op, float16, half)              \
  unary_layouts(op, float32, float)             \
  unary_layouts(op, bfloat16, bfloat16_t)

unary_float_types(Abs)
unary_float_types(Sin)
unary_layouts(Exp, float32, float)
