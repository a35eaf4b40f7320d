"""The C++ namespace that carries a JIT unit's name into the symbols of its generated arrays.

A host library is measured per unit by symbol (``builder.size.host_symbols``). Telling which unit a
symbol belongs to used to rest on ELF's ``STT_FILE`` symbols (the locals after ``unary.cpp``'s
file symbol are ``unary``'s); Mach-O has none, so a Mac build's ``.dylib`` could not be measured
per unit. Instead, every array a unit's generated source stores is declared in a namespace named
after the unit, so the unit is in each symbol's (mangled) name whatever the object format:

    namespace metal_jit::detail { namespace { namespace mbjit_unit_unary { ... } } }
    -> _ZN9metal_jit6detail12_GLOBAL__N_116mbjit_unit_unary17family_unary_poolE

The name is ``mbjit_unit_`` and the unit's name encoded one to one: ``[A-Za-z0-9]`` stays, any
other byte of its UTF-8 becomes two lowercase hex digits and a ``_`` (``unary_subset.metal`` ->
``mbjit_unit_unary5f_subset2e_metal``). The ``_`` follows the two hex digits, so no two
underscores ever meet (a C++ identifier holding ``__`` is reserved) and no two units share a
namespace. Standard library only: the generator runs in CMake's build environment.
"""

from __future__ import annotations

__all__ = ["UNIT_NAMESPACE_PREFIX", "unit_namespace"]

UNIT_NAMESPACE_PREFIX = "mbjit_unit_"

_KEPT = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")


def unit_namespace(unit: str) -> str:
    """The namespace holding ``unit``'s arrays (``steel/gemm.metal`` ->
    ``mbjit_unit_steel2f_gemm2e_metal``); distinct units give distinct names."""
    encoded = "".join(chr(b) if b in _KEPT else f"{b:02x}_" for b in unit.encode("utf-8"))
    return UNIT_NAMESPACE_PREFIX + encoded
