// Math the Metal standard library does not provide.
#pragma once

#include <metal_stdlib>

// Error function, |error| < 1.2e-7 on all of float: Chebyshev-fitted erfc (Numerical Recipes
// "erfcc" form) for |x| >= 0.5, Taylor series near zero where the fit loses relative accuracy.
inline float erf_approx(float x) {
  float a = metal::fabs(x);
  if (a < 0.5f) {
    float x2 = x * x;
    // 2/sqrt(pi) * (x - x^3/3 + x^5/10 - x^7/42 + x^9/216 - x^11/1320)
    float poly = 1.0f +
        x2 * (-1.0f / 3.0f +
        x2 * (1.0f / 10.0f +
        x2 * (-1.0f / 42.0f + x2 * (1.0f / 216.0f + x2 * (-1.0f / 1320.0f)))));
    return 1.1283791670955126f * x * poly;
  }
  float t = 1.0f / (1.0f + 0.5f * a);
  float p = -1.26551223f +
      t * (1.00002368f +
      t * (0.37409196f +
      t * (0.09678418f +
      t * (-0.18628806f +
      t * (0.27886807f +
      t * (-1.13520398f +
      t * (1.48851587f +
      t * (-0.82215223f + t * 0.17087277f))))))));
  float erfc = t * metal::exp(-a * a + p);
  float r = 1.0f - erfc;
  return x < 0.0f ? -r : r;
}

inline float sigmoid_f(float x) {
  return 1.0f / (1.0f + metal::exp(-x));
}
