// dtype helpers: the bfloat16 spelling, the type arithmetic is done in, and limits.
#pragma once

#include <metal_stdlib>

#include "common/complex.h"

// Metal 3.1's native bfloat; host names call it bfloat16.
typedef bfloat bfloat16_t;

// True for the three floating dtypes (half and bfloat are not is_floating_point everywhere).
template <typename T>
constant constexpr bool is_float_dtype_v =
    metal::is_same_v<T, float> || metal::is_same_v<T, half> || metal::is_same_v<T, bfloat16_t>;

// Narrow floats are computed in float: precise enough and one code path for every math op.
template <typename T>
struct compute_type {
  typedef T type;
};
template <>
struct compute_type<half> {
  typedef float type;
};
template <>
struct compute_type<bfloat16_t> {
  typedef float type;
};
template <typename T>
using compute_t = typename compute_type<T>::type;

template <typename T>
constant constexpr bool is_complex_v = metal::is_same_v<T, complex64_t>;

// Truth value of any dtype; floats compare in float (no direct bfloat -> bool conversion needed).
template <typename T>
inline bool truthy(T x) {
  if constexpr (is_complex_v<T>) {
    return x.real != 0.0f || x.imag != 0.0f;
  } else if constexpr (is_float_dtype_v<T>) {
    return static_cast<float>(x) != 0.0f;
  } else {
    return static_cast<bool>(x);
  }
}

// T -> U conversion: anything -> bool tests against zero; to or from a 16-bit float the value
// goes through float, so only conversions every Metal version has (float <-> x) are used.
// Complex -> real keeps the real part (as numpy does); real -> complex has a zero imaginary part.
template <typename U, typename T>
inline U convert(T value) {
  if constexpr (metal::is_same_v<U, bool>) {
    return truthy(value);
  } else if constexpr (metal::is_same_v<T, U>) {
    return value;
  } else if constexpr (is_complex_v<T>) {
    return convert<U>(value.real);
  } else if constexpr (is_complex_v<U>) {
    return complex64_t(convert<float>(value), 0.0f);
  } else if constexpr ((is_float_dtype_v<T> || is_float_dtype_v<U>) && !metal::is_same_v<T, float> &&
                       !metal::is_same_v<U, float>) {
    return static_cast<U>(static_cast<float>(value));
  } else {
    return static_cast<U>(value);
  }
}

// Identity elements for max/min: -inf/+inf for floats, the integer range otherwise.
template <typename T>
inline T lowest_value() {
  if constexpr (is_float_dtype_v<T>) {
    return static_cast<T>(-metal::numeric_limits<float>::infinity());
  } else if constexpr (metal::is_same_v<T, bool>) {
    return false;
  } else {
    return metal::numeric_limits<T>::lowest();
  }
}

template <typename T>
inline T highest_value() {
  if constexpr (is_float_dtype_v<T>) {
    return static_cast<T>(metal::numeric_limits<float>::infinity());
  } else if constexpr (metal::is_same_v<T, bool>) {
    return true;
  } else {
    return metal::numeric_limits<T>::max();
  }
}
