// Scatter: out[slice j at the position of index row i] (op)= updates[i, j].
//
// Layout as in gather: NIDX index arrays index `out` along `axes`, updates hold one slice of
// `slice_sizes` per index row. ScatterNone stores (last writer wins); the reducing ops update
// through a 32-bit compare-and-swap (common/atomic.h), so they are declared for dtypes of at
// most 4 bytes.
#pragma once

#include <metal_stdlib>

#include "common/atomic.h"
#include "common/defines.h"
#include "common/gather_index.h"
#include "common/indexing.h"
#include "common/reduce_ops.h"

struct ScatterNone {};
struct ScatterSum : ReduceSum {};
struct ScatterProd : ReduceProd {};
struct ScatterMax : ReduceMax {};
struct ScatterMin : ReduceMin {};

template <typename T, typename IdxT, typename Op, int NIDX>
[[kernel]] void scatter(
    device const T* updates [[buffer(0)]],
    device const IdxT* indices [[buffer(1)]],
    device T* out [[buffer(2)]],
    constant const int* out_shape [[buffer(3)]],
    constant const int64_t* out_strides [[buffer(4)]],
    constant const int& out_ndim [[buffer(5)]],
    constant const int* slice_sizes [[buffer(6)]],
    constant const int* axes [[buffer(7)]],
    constant const size_t& n_indices [[buffer(8)]],
    constant const size_t& slice_size [[buffer(9)]],
    uint index [[thread_position_in_grid]]) {
  size_t i = index / slice_size;
  size_t j = index % slice_size;
  if (i >= n_indices) {
    return;
  }
  int64_t base = indexed_offset<IdxT, NIDX>(indices, n_indices, i, out_shape, out_strides, axes);
  int64_t loc = base + elem_to_loc(j, slice_sizes, out_strides, out_ndim);
  if constexpr (metal::is_same_v<Op, ScatterNone>) {
    out[loc] = updates[index];
  } else {
    atomic_update<T, Op>(reinterpret_cast<device metal::atomic_uint*>(out), loc, updates[index]);
  }
}
