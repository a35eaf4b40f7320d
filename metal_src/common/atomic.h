// Read-modify-write of any dtype of at most 4 bytes through a 32-bit compare-and-swap.
//
// Apple GPUs have 32-bit atomics only, so an element is updated by swapping the aligned word
// that contains it. The buffer must start 4-byte aligned (Metal buffers are) and is addressed as
// words; 8-byte dtypes cannot be updated this way and are not declared for atomic ops.
#pragma once

#include <metal_atomic>
#include <metal_stdlib>

#include "common/types.h"

template <typename T>
inline T word_extract(uint word, uint shift) {
  if constexpr (sizeof(T) == 4) {
    return as_type<T>(word);
  } else if constexpr (sizeof(T) == 2) {
    return as_type<T>(static_cast<ushort>(word >> shift));
  } else {
    return as_type<T>(static_cast<uchar>(word >> shift));
  }
}

template <typename T>
inline uint word_insert(uint word, T value, uint shift) {
  if constexpr (sizeof(T) == 4) {
    return as_type<uint>(value);
  } else if constexpr (sizeof(T) == 2) {
    uint bits = static_cast<uint>(as_type<ushort>(value));
    return (word & ~(0xffffu << shift)) | (bits << shift);
  } else {
    uint bits = static_cast<uint>(as_type<uchar>(value));
    return (word & ~(0xffu << shift)) | (bits << shift);
  }
}

// words[element `loc` of a T array] = Op(old, value), atomically.
template <typename T, typename Op>
inline void atomic_update(device metal::atomic_uint* words, int64_t loc, T value) {
  static_assert(sizeof(T) <= 4, "atomic_update needs a dtype of at most 4 bytes");
  size_t byte = static_cast<size_t>(loc) * sizeof(T);
  device metal::atomic_uint* word = words + byte / 4;
  uint shift = static_cast<uint>(byte % 4) * 8;
  Op op;
  uint expected = metal::atomic_load_explicit(word, metal::memory_order_relaxed);
  while (true) {
    T updated = op(word_extract<T>(expected, shift), value);
    uint desired = word_insert<T>(expected, updated, shift);
    if (metal::atomic_compare_exchange_weak_explicit(
            word, &expected, desired, metal::memory_order_relaxed, metal::memory_order_relaxed)) {
      break;
    }
  }
}
