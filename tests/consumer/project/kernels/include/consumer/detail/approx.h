// ops.h -> math.h -> approx.h: a cheap exponential.
#pragma once

#include "constants.h"

namespace consumer::detail {

inline float approx_exp(float x) { return 1.0f + x * (1.0f + x * kHalf); }

}  // namespace consumer::detail
