// Elementwise activations: y[i] = f(x[i]), computed in float whatever the storage type.
#pragma once

#include "kpkg/common.h"

namespace kpkg {

struct Relu {
  float operator()(float x) const { return metal::max(x, 0.0f); }
};

struct Silu {
  float operator()(float x) const { return x / (1.0f + metal::exp(-x)); }
};

// The tanh form of GELU (Hendrycks and Gimpel, 2016), as most inference code uses it.
struct Gelu {
  float operator()(float x) const {
    const float inner = 0.7978845608f * (x + 0.044715f * x * x * x);
    return 0.5f * x * (1.0f + metal::precise::tanh(inner));
  }
};

template <typename T, typename Op>
[[kernel]] void activation(
    device const T* x [[buffer(0)]],
    device T* y [[buffer(1)]],
    constant uint& count [[buffer(2)]],
    uint index [[thread_position_in_grid]]) {
  if (past_end(index, count)) {
    return;
  }
  y[index] = static_cast<T>(Op()(static_cast<float>(x[index])));
}

}  // namespace kpkg
