// Binary kernels for three operations and three types.
#include "mlx/backend/metal/kernels/utils.h"
#include "mlx/backend/metal/kernels/binary_ops.h"
#include "mlx/backend/metal/kernels/binary.h"

#define instantiate_binary(op, tname, type)                       \
  instantiate_kernel("vv_" #op #tname, binary_vv, type, type, op) \
  instantiate_kernel("sv_" #op #tname, binary_sv, type, type, op)

#define instantiate_binary_types(op)     \
  instantiate_binary(op, float16, half)  \
  instantiate_binary(op, float32, float) \
  instantiate_binary(op, int32, int)

instantiate_binary_types(Add)
instantiate_binary_types(Multiply)
instantiate_binary_types(Maximum)
