// arange: out[i] = start + i * step, computed in float for the 16-bit floats.
#pragma once

#include <metal_stdlib>

#include "common/defines.h"
#include "common/types.h"

template <typename T>
[[kernel]] void arange(
    constant const T& start [[buffer(0)]],
    constant const T& step [[buffer(1)]],
    device T* out [[buffer(2)]],
    constant const size_t& size [[buffer(3)]],
    uint index [[thread_position_in_grid]]) {
  if (index < size) {
    typedef compute_t<T> C;
    out[index] = static_cast<T>(static_cast<C>(start) + static_cast<C>(step) * static_cast<C>(index));
  }
}
