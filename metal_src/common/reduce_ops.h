// Reduction functors with their identity elements; used by reductions and softmax.
#pragma once

#include <metal_stdlib>

#include "common/types.h"

// Sum and product accumulate in U (the output dtype); each step goes through compute_t<U> so
// 16-bit floats round once per step, like a float accumulator stored back to U.
struct ReduceSum {
  template <typename U>
  static U init() { return static_cast<U>(0.0f); }
  template <typename U>
  U operator()(U a, U b) const {
    return static_cast<U>(static_cast<compute_t<U>>(a) + static_cast<compute_t<U>>(b));
  }
};

struct ReduceProd {
  template <typename U>
  static U init() { return static_cast<U>(1.0f); }
  template <typename U>
  U operator()(U a, U b) const {
    return static_cast<U>(static_cast<compute_t<U>>(a) * static_cast<compute_t<U>>(b));
  }
};

struct ReduceMax {
  template <typename U>
  static U init() { return lowest_value<U>(); }
  template <typename U>
  U operator()(U a, U b) const { return a < b ? b : a; }
};

struct ReduceMin {
  template <typename U>
  static U init() { return highest_value<U>(); }
  template <typename U>
  U operator()(U a, U b) const { return b < a ? b : a; }
};

struct ReduceAnd {
  template <typename U>
  static U init() { return static_cast<U>(true); }
  template <typename U>
  U operator()(U a, U b) const { return static_cast<U>(truthy(a) && truthy(b)); }
};

struct ReduceOr {
  template <typename U>
  static U init() { return static_cast<U>(false); }
  template <typename U>
  U operator()(U a, U b) const { return static_cast<U>(truthy(a) || truthy(b)); }
};
