// An entry file named like its header (fft.h): it only instantiates what fft.h writes, so at run
// time the header's preamble holds every kernel it emits.
#include "mlx/backend/metal/kernels/utils.h"
#include "fft.h"

#define instantiate_fft_pass(tname, type, n) \
  instantiate_kernel("fft_pass_" #tname "_n" #n, fft_pass, type, n)

instantiate_fft_pass(float32, float, 4)
instantiate_fft_pass(float32, float, 8)
instantiate_fft_pass(float16, half, 4)
