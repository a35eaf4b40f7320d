// Reduction functors with their identity elements; used by reductions and softmax.
#pragma once

#include <metal_stdlib>

#include "common/types.h"

struct ReduceSum {
  template <typename U>
  static U init() { return static_cast<U>(0); }
  template <typename U>
  U operator()(U a, U b) const { return static_cast<U>(a + b); }
};

struct ReduceProd {
  template <typename U>
  static U init() { return static_cast<U>(1); }
  template <typename U>
  U operator()(U a, U b) const { return static_cast<U>(a * b); }
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
  U operator()(U a, U b) const { return static_cast<U>(static_cast<bool>(a) && static_cast<bool>(b)); }
};

struct ReduceOr {
  template <typename U>
  static U init() { return static_cast<U>(false); }
  template <typename U>
  U operator()(U a, U b) const { return static_cast<U>(static_cast<bool>(a) || static_cast<bool>(b)); }
};
