// A header named like the entry file that includes it (fft.metal), as MLX's fft.h is: the kernel
// template and the non-template kernel below are written here, not in fft.metal, so they belong
// to this header wherever they are instantiated or emitted.
#pragma once

#include "mlx/backend/metal/kernels/utils.h"

template <typename T, int N>
[[kernel]] void fft_pass(
    device const T* in [[buffer(0)]],
    device T* out [[buffer(1)]],
    uint index [[thread_position_in_grid]]) {
  T sum = T(0);
  for (int k = 0; k < N; k++) {
    sum += in[(index + k) % N];
  }
  out[index] = sum;
}

// Emitted by every entry file that includes this header (a definition with a body).
[[kernel]] void make_twiddles(
    device float2* out [[buffer(0)]],
    constant const int& n [[buffer(1)]],
    uint index [[thread_position_in_grid]]) {
  float angle = -2.0f * M_PI_F * float(index) / float(n);
  out[index] = float2(metal::cos(angle), metal::sin(angle));
}
