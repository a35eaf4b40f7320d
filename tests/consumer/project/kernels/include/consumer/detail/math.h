// ops.h -> math.h: the math the operations use.
#pragma once

#include "approx.h"

namespace consumer::detail {

inline float square(float x) { return x * x; }

}  // namespace consumer::detail
