// Reductions of the consumer's kernels.
#pragma once

#include "ops.h"

namespace consumer {

template <typename T>
T add(T a, T b) { return a + b; }

}  // namespace consumer
