// Entry file: axpy for every dtype of KPKG_DTYPES.
#include "kpkg/axpy.h"

#define KPKG_AXPY(type, tname)                                                  \
  template [[host_name("axpy_" #tname)]] [[kernel]] void kpkg::axpy<type>(      \
      device const type*, device type*, constant float&, constant uint&, uint);

KPKG_DTYPES(KPKG_AXPY)
