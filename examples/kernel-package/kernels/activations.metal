// Entry file: relu, silu and gelu for every dtype of KPKG_DTYPES.
#include "kpkg/activations.h"

#define KPKG_ACTIVATION(op, opname, type, tname)                                         \
  template [[host_name(#opname "_" #tname)]] [[kernel]] void kpkg::activation<type, op>( \
      device const type*, device type*, constant uint&, uint);

#define KPKG_ACTIVATIONS(type, tname)                  \
  KPKG_ACTIVATION(kpkg::Relu, relu, type, tname)       \
  KPKG_ACTIVATION(kpkg::Silu, silu, type, tname)       \
  KPKG_ACTIVATION(kpkg::Gelu, gelu, type, tname)

KPKG_DTYPES(KPKG_ACTIVATIONS)
