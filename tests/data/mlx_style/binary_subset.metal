// Binary kernels: a per-type layer under a per-op layer, and one instantiation whose template
// argument list holds a parenthesised expression (not MLX's one-line form, so it is read by the
// general parser).
#include <metal_integer>
#include <metal_math>

#include "mlx/backend/metal/kernels/defines.h"
#include "mlx/backend/metal/kernels/utils.h"
#include "mlx/backend/metal/kernels/binary_ops.h"
#include "mlx/backend/metal/kernels/binary.h"

#define binary_pair(op, tname, type)                            \
  instantiate_kernel("ss_" #op #tname, binary_ss, type, type, op) \
  instantiate_kernel("vv_" #op #tname, binary_vv, type, type, op, 1)

#define binary_ops_for(tname, type) \
  binary_pair(Add, tname, type)     \
  binary_pair(Multiply, tname, type)

binary_ops_for(float16, half)
binary_ops_for(float32, float)

instantiate_kernel("gn2_" "Add" "float32", binary_g, float, float, Add, (1 + 1), int)
