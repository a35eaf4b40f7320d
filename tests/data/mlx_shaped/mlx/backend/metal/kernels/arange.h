// start, start + step, start + 2 * step, ...
#pragma once

template <typename T>
[[kernel]] void arange(
    constant const T& start [[buffer(0)]],
    constant const T& step [[buffer(1)]],
    device T* out [[buffer(2)]],
    uint index [[thread_position_in_grid]]) {
  out[index] = start + T(index) * step;
}
