"""C++ names that a tree's settings and the generated sources share: identifiers and
(nested) namespaces.

``metallib.toml`` names the namespace of a tree's run-time sources
(``builder.kernels.runtime_sources``), ``embed --namespace`` and ``--jit-namespace`` name one on
the command line, and CMake's NAMESPACE reaches the generators: every one is checked by
``namespace_problem`` here, which ``builder.jit`` uses and cmake/MetallibPython.cmake
states again (``_metallib_namespace_problem``; tests/jit/test_codegen.py checks the two agree).
Kept below ``builder.jit`` so the settings reader needs nothing above it.
"""

from __future__ import annotations

import re

from builder.kernels.cxx_keywords import CXX_KEYWORDS

__all__ = ["CXX_IDENTIFIER", "CXX_NAMESPACE", "namespace_problem", "valid_namespace"]

CXX_IDENTIFIER = r"[A-Za-z_][A-Za-z0-9_]*"
"""A family name as it becomes part of a C++ name (``family_<name>``). cmake/MetalJit.cmake
states the same pattern for FAMILIES; tests/jit/test_codegen.py checks the two agree."""
CXX_NAMESPACE = rf"{CXX_IDENTIFIER}(::{CXX_IDENTIFIER})*"
"""The form of a (nested) C++ namespace name, ``a`` or ``a::b``; no part may be a keyword
besides (``namespace_problem``)."""


def namespace_problem(name: str) -> str | None:
    """Why ``name`` cannot follow ``namespace`` in C++, for a message's parentheses, or None
    when it can: ``letters, digits and _ in names joined by ::`` or ``'int' is a C++ keyword``
    (``namespace int {`` does not compile)."""
    if re.fullmatch(CXX_NAMESPACE, name) is None:
        return "letters, digits and _ in names joined by ::, not starting with a digit"
    keyword = next((part for part in name.split("::") if part in CXX_KEYWORDS), None)
    if keyword is not None:
        return f"{keyword!r} is a C++ keyword"
    return None


def valid_namespace(name: str) -> bool:
    """``name`` can follow ``namespace`` in C++ (nested names allowed, no keyword)."""
    return namespace_problem(name) is None
