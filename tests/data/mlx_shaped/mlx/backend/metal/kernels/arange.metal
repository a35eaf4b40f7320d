// arange for three types.
#include "mlx/backend/metal/kernels/utils.h"
#include "mlx/backend/metal/kernels/arange.h"

#define instantiate_arange(tname, type) \
  instantiate_kernel("arange" #tname, arange, type)

instantiate_arange(float16, half)
instantiate_arange(float32, float)
instantiate_arange(int32, int)
