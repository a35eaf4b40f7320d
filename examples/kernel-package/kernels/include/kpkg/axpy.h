// y = alpha * x + y, the BLAS level-1 update, with alpha held in float.
#pragma once

#include "kpkg/common.h"

namespace kpkg {

template <typename T>
[[kernel]] void axpy(
    device const T* x [[buffer(0)]],
    device T* y [[buffer(1)]],
    constant float& alpha [[buffer(2)]],
    constant uint& count [[buffer(3)]],
    uint index [[thread_position_in_grid]]) {
  if (past_end(index, count)) {
    return;
  }
  y[index] = static_cast<T>(alpha * static_cast<float>(x[index]) + static_cast<float>(y[index]));
}

}  // namespace kpkg
