// Entry file: row sum and row max for float32 and float16.
#include "kpkg/reduce.h"

#define KPKG_REDUCE(op, opname, type, tname)                                                \
  template [[host_name("row_" #opname "_" #tname)]] [[kernel]] void kpkg::row_reduce<type, op>( \
      device const type*, device type*, constant uint&, uint, uint, uint, uint, uint);

KPKG_REDUCE(kpkg::Sum, sum, float, float32)
KPKG_REDUCE(kpkg::Sum, sum, half, float16)
KPKG_REDUCE(kpkg::Max, max, float, float32)
KPKG_REDUCE(kpkg::Max, max, half, float16)
