// Unary op functors. Each maps T -> T, except LogicalNot (T -> bool); kernels cast to the
// output type. Narrow floats are computed in float (see compute_t in common/types.h).
#pragma once

#include <metal_stdlib>

#include "common/math.h"
#include "common/types.h"

// A float math op: x is the input converted to float, EXPR the float result.
#define UNARY_FLOAT_OP(NAME, EXPR)            \
  struct NAME {                               \
    template <typename T>                     \
    T operator()(T in) const {                \
      float x = static_cast<float>(in);       \
      return static_cast<T>(EXPR);            \
    }                                         \
  };

UNARY_FLOAT_OP(Exp, metal::exp(x))
UNARY_FLOAT_OP(Exp2, metal::exp2(x))
UNARY_FLOAT_OP(Log, metal::log(x))
UNARY_FLOAT_OP(Log2, metal::log2(x))
UNARY_FLOAT_OP(Log10, metal::log10(x))
UNARY_FLOAT_OP(Sqrt, metal::sqrt(x))
UNARY_FLOAT_OP(Rsqrt, metal::rsqrt(x))
UNARY_FLOAT_OP(Reciprocal, 1.0f / x)
UNARY_FLOAT_OP(Sin, metal::sin(x))
UNARY_FLOAT_OP(Cos, metal::cos(x))
UNARY_FLOAT_OP(Tan, metal::tan(x))
UNARY_FLOAT_OP(ArcSin, metal::asin(x))
UNARY_FLOAT_OP(ArcCos, metal::acos(x))
UNARY_FLOAT_OP(ArcTan, metal::atan(x))
UNARY_FLOAT_OP(Sinh, metal::sinh(x))
UNARY_FLOAT_OP(Cosh, metal::cosh(x))
UNARY_FLOAT_OP(Tanh, metal::tanh(x))
UNARY_FLOAT_OP(Sigmoid, sigmoid_f(x))
UNARY_FLOAT_OP(Erf, erf_approx(x))
UNARY_FLOAT_OP(Floor, metal::floor(x))
UNARY_FLOAT_OP(Ceil, metal::ceil(x))
// Round half to even, like numpy (Metal's round() rounds half away from zero).
UNARY_FLOAT_OP(Round, metal::rint(x))
UNARY_FLOAT_OP(Trunc, metal::trunc(x))

#undef UNARY_FLOAT_OP

// The ops below work on every numeric dtype; floats go through compute_t (float).
struct Abs {
  template <typename T>
  T operator()(T x) const {
    if constexpr (metal::is_unsigned_v<T>) {
      return x;
    } else {
      compute_t<T> c = static_cast<compute_t<T>>(x);
      return static_cast<T>(c < 0 ? -c : c);
    }
  }
};

// Unsigned negation wraps modulo 2^n, as in C++ and numpy.
struct Negative {
  template <typename T>
  T operator()(T x) const { return static_cast<T>(-static_cast<compute_t<T>>(x)); }
};

// -1, 0 or 1 (0 for unsigned zero); the sign of a float zero is not kept.
struct Sign {
  template <typename T>
  T operator()(T x) const {
    compute_t<T> c = static_cast<compute_t<T>>(x);
    if constexpr (metal::is_unsigned_v<T>) {
      return static_cast<T>(c != 0);
    } else {
      return static_cast<T>((0 < c) - (c < 0));
    }
  }
};

struct Square {
  template <typename T>
  T operator()(T x) const {
    compute_t<T> c = static_cast<compute_t<T>>(x);
    return static_cast<T>(c * c);
  }
};

struct LogicalNot {
  template <typename T>
  bool operator()(T x) const { return !truthy(x); }
};

struct BitwiseNot {
  template <typename T>
  T operator()(T x) const {
    if constexpr (metal::is_same_v<T, bool>) {
      return !x;
    } else {
      return static_cast<T>(~x);
    }
  }
};
