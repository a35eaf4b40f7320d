#include "consumer/ops.h"

kernel void scale(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  x[i] = consumer::scaled(x[i]);
}
