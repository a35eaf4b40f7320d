// Element-wise operations of the consumer's kernels.
#pragma once

#include <metal_stdlib>

#include "detail/math.h"

namespace consumer {

inline float scaled(float x) { return detail::approx_exp(x) * detail::kScale; }

}  // namespace consumer
