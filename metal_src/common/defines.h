// Project-wide definitions shared by every kernel family.
//
// Include rule for all of metal_src: project headers are included with quotes and a path
// relative to the metal_src root ("common/types.h"); Metal's own headers with angle brackets.
#pragma once

#include <metal_stdlib>

// Every instantiation names dtypes, so the dtype spellings come with the macro.
#include "common/types.h"

// The one way a kernel is instantiated. The host name is the string the host looks the function
// up by; it follows the grammar in docs/kernels.md and is produced from catalog.json, never
// written by hand. The same line is used in AOT instantiation sources and appended to JIT sources.
#define instantiate_kernel(name, func, ...) \
  template [[host_name(name)]] [[kernel]] decltype(func<__VA_ARGS__>) func<__VA_ARGS__>;

// Elements handled by each thread in the "several per thread" forms and row reductions.
constant constexpr int WORK_PER_THREAD = 4;
// Largest SIMD-group on Apple GPUs; sizes threadgroup scratch arrays of per-SIMD-group partials.
constant constexpr int MAX_SIMDGROUPS = 32;
