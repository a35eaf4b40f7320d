// Offsets addressed by gather/scatter index arrays, shared by both families.
#pragma once

#include <metal_stdlib>

// Offset of index row `i` in an array indexed along `axes` by NIDX index arrays stored one after
// another in `indices` (array k at indices[k * n_indices]). Negative indices count from the end.
template <typename IdxT, int NIDX>
inline int64_t indexed_offset(
    device const IdxT* indices,
    size_t n_indices,
    size_t i,
    constant const int* shape,
    constant const int64_t* strides,
    constant const int* axes) {
  int64_t offset = 0;
#pragma unroll
  for (int k = 0; k < NIDX; ++k) {
    int axis = axes[k];
    int64_t idx = static_cast<int64_t>(indices[k * n_indices + i]);
    if constexpr (metal::is_signed_v<IdxT>) {
      if (idx < 0) {
        idx += shape[axis];
      }
    }
    offset += idx * strides[axis];
  }
  return offset;
}
