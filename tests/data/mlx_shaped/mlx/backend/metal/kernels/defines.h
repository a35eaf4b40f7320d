// The instantiation macro, in the form MLX's kernels use: one explicit instantiation of a
// kernel template under a host name.
#pragma once

#define instantiate_kernel(name, func, ...) \
  template [[host_name(                      \
      name)]] [[kernel]] decltype(func<__VA_ARGS__>) func<__VA_ARGS__>;
