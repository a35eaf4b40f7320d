#include "consumer/reduce.h"

template <typename T>
[[kernel]] void sum(device const T* x [[buffer(0)]], device T* out [[buffer(1)]],
                    uint i [[thread_position_in_grid]]) {
  out[0] = consumer::add(out[0], x[i]);
}

template [[host_name("sum_float32")]] [[kernel]] void sum<float>(
    device const float*, device float*, uint);
template [[host_name("sum_int32")]] [[kernel]] void sum<int>(
    device const int*, device int*, uint);
