// Element-wise operations of one argument.
#pragma once

#include <metal_math>

struct Abs {
  template <typename T>
  T operator()(T x) {
    return metal::abs(x);
  }
};

struct Negative {
  template <typename T>
  T operator()(T x) {
    return -x;
  }
};

struct Exp {
  template <typename T>
  T operator()(T x) {
    return metal::exp(x);
  }
};
