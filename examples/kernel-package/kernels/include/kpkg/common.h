// Shared by every kernel family of kernel-package: index helpers and the dtype spellings the
// host names kernels by (relu_float32, sum_float16, ...).
#pragma once

#include <metal_stdlib>

namespace kpkg {

// One thread per element; a grid may be rounded up past the end of the data.
inline bool past_end(uint index, constant uint& count) {
  return index >= count;
}

template <typename T>
struct Limits {
  static constexpr T lowest() { return metal::numeric_limits<T>::lowest(); }
};

}  // namespace kpkg

// KPKG_DTYPES(M): M(type, name) for each element type a kernel family is built for.
#define KPKG_DTYPES(M) \
  M(float, float32)    \
  M(half, float16)     \
  M(bfloat, bfloat16)
