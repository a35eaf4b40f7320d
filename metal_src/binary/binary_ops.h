// Binary op functors: (T, T) -> T, comparisons and logical ops (T, T) -> bool. Integer
// arithmetic wraps to T; narrow floats are computed in float.
#pragma once

#include <metal_stdlib>

#include "common/types.h"

// Arithmetic whose result is cast back to T (integer promotion would widen int8/int16).
#define BINARY_ARITH_OP(NAME, EXPR)                     \
  struct NAME {                                         \
    template <typename T>                               \
    T operator()(T a_in, T b_in) const {                \
      compute_t<T> a = static_cast<compute_t<T>>(a_in); \
      compute_t<T> b = static_cast<compute_t<T>>(b_in); \
      return static_cast<T>(EXPR);                      \
    }                                                   \
  };

BINARY_ARITH_OP(Add, a + b)
BINARY_ARITH_OP(Subtract, a - b)
BINARY_ARITH_OP(Multiply, a * b)
BINARY_ARITH_OP(Divide, a / b)
BINARY_ARITH_OP(Maximum, a < b ? b : a)
BINARY_ARITH_OP(Minimum, b < a ? b : a)
#undef BINARY_ARITH_OP

// Remainder with the sign of the dividend (C fmod semantics), for integers and floats.
struct Remainder {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (is_float_dtype_v<T>) {
      return static_cast<T>(metal::fmod(static_cast<float>(a), static_cast<float>(b)));
    } else {
      return static_cast<T>(a % b);
    }
  }
};

#define BINARY_FLOAT_OP(NAME, EXPR)             \
  struct NAME {                                 \
    template <typename T>                       \
    T operator()(T a_in, T b_in) const {        \
      float a = static_cast<float>(a_in);       \
      float b = static_cast<float>(b_in);       \
      return static_cast<T>(EXPR);              \
    }                                           \
  };

BINARY_FLOAT_OP(Power, metal::pow(a, b))
BINARY_FLOAT_OP(ArcTan2, metal::atan2(a, b))
// log(exp(a) + exp(b)) without overflow: max + log(1 + exp(-|a - b|)).
BINARY_FLOAT_OP(
    LogAddExp,
    metal::isinf(metal::max(a, b)) ? metal::max(a, b)
                                   : metal::max(a, b) + metal::log(1.0f + metal::exp(-metal::fabs(a - b))))
#undef BINARY_FLOAT_OP

#define BINARY_PREDICATE(NAME, EXPR)     \
  struct NAME {                          \
    template <typename T>                \
    bool operator()(T a, T b) const {    \
      return EXPR;                       \
    }                                    \
  };

BINARY_PREDICATE(Equal, a == b)
BINARY_PREDICATE(NotEqual, a != b)
BINARY_PREDICATE(Less, a < b)
BINARY_PREDICATE(LessEqual, a <= b)
BINARY_PREDICATE(Greater, a > b)
BINARY_PREDICATE(GreaterEqual, a >= b)
BINARY_PREDICATE(LogicalAnd, truthy(a) && truthy(b))
BINARY_PREDICATE(LogicalOr, truthy(a) || truthy(b))
#undef BINARY_PREDICATE

#define BINARY_BITWISE_OP(NAME, EXPR)     \
  struct NAME {                           \
    template <typename T>                 \
    T operator()(T a, T b) const {        \
      return static_cast<T>(EXPR);        \
    }                                     \
  };

BINARY_BITWISE_OP(BitwiseAnd, a & b)
BINARY_BITWISE_OP(BitwiseOr, a | b)
BINARY_BITWISE_OP(BitwiseXor, a ^ b)
BINARY_BITWISE_OP(LeftShift, a << b)
BINARY_BITWISE_OP(RightShift, a >> b)
#undef BINARY_BITWISE_OP
