// Element-wise operations of two arguments.
#pragma once

#include <metal_integer>
#include <metal_math>

struct Add {
  template <typename T>
  T operator()(T x, T y) {
    return x + y;
  }
};

struct Multiply {
  template <typename T>
  T operator()(T x, T y) {
    return x * y;
  }
};

struct Maximum {
  template <typename T>
  T operator()(T x, T y) {
    return metal::max(x, y);
  }
};
