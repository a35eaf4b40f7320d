// complex64: a pair of float32 (real, imag), laid out like numpy's complex64.
//
// A trivially copyable struct, so it loads from and stores to device memory like any struct;
// arithmetic follows numpy (no special handling of infinities in products and quotients).
#pragma once

#include <metal_stdlib>

struct complex64_t {
  float real;
  float imag;

  complex64_t() = default;
  constexpr complex64_t(float re, float im) : real(re), imag(im) {}
};

inline complex64_t operator-(complex64_t a) {
  return complex64_t(-a.real, -a.imag);
}

inline complex64_t operator+(complex64_t a, complex64_t b) {
  return complex64_t(a.real + b.real, a.imag + b.imag);
}

inline complex64_t operator-(complex64_t a, complex64_t b) {
  return complex64_t(a.real - b.real, a.imag - b.imag);
}

inline complex64_t operator*(complex64_t a, complex64_t b) {
  return complex64_t(a.real * b.real - a.imag * b.imag, a.real * b.imag + a.imag * b.real);
}

// Smith's algorithm: scales by the larger component of b so |b|^2 cannot overflow.
inline complex64_t operator/(complex64_t a, complex64_t b) {
  if (metal::fabs(b.real) >= metal::fabs(b.imag)) {
    float r = b.imag / b.real;
    float d = b.real + b.imag * r;
    return complex64_t((a.real + a.imag * r) / d, (a.imag - a.real * r) / d);
  }
  float r = b.real / b.imag;
  float d = b.real * r + b.imag;
  return complex64_t((a.real * r + a.imag) / d, (a.imag * r - a.real) / d);
}

inline bool operator==(complex64_t a, complex64_t b) {
  return a.real == b.real && a.imag == b.imag;
}

inline bool operator!=(complex64_t a, complex64_t b) {
  return !(a == b);
}
