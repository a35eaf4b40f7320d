"""C++ names that a tree's settings and the generated sources share: identifiers and
(nested) namespaces.

``metallib.toml`` names the namespace of a tree's run-time sources
(``builder.kernels.runtime_sources``) and ``embed --namespace`` names one on the command line;
both are checked with the one pattern here, which ``builder.jit.codegen`` re-exports and
cmake/MetalJit.cmake states again (tests/jit/test_codegen.py checks the two agree). Kept below
``builder.jit`` so the settings reader needs nothing above it.
"""

from __future__ import annotations

import re

__all__ = ["CXX_IDENTIFIER", "CXX_NAMESPACE", "valid_namespace"]

CXX_IDENTIFIER = r"[A-Za-z_][A-Za-z0-9_]*"
"""A family name as it becomes part of a C++ name (``family_<name>``). cmake/MetalJit.cmake
states the same pattern for FAMILIES; tests/jit/test_codegen.py checks the two agree."""
CXX_NAMESPACE = rf"{CXX_IDENTIFIER}(::{CXX_IDENTIFIER})*"
"""A (nested) C++ namespace name, ``a`` or ``a::b``: ``embed --namespace`` here and NAMESPACE of
``metallib_add_jit_library`` in cmake/MetalJit.cmake (same pattern, checked by the same test)."""


def valid_namespace(name: str) -> bool:
    """``name`` can follow ``namespace`` in C++ (nested names allowed)."""
    return re.fullmatch(CXX_NAMESPACE, name) is not None
