"""JIT generation: kernel headers inlined into preambles and embedded in a host C++ library.

``preamble`` inlines quoted includes (host tools only: no Metal compiler), ``literals`` turns
text into C++ tokens and names the namespace a unit's arrays live in (what a host library is
measured by), ``writer`` is the one writer of run-time C++ (preambles as stored pieces and as
functions returning them, and a catalog's kernel table), ``generate`` (``embed``) holds the
action CMake runs (``python -m builder.jit``), ``tree_preambles`` says which preambles a tree's
JIT entry files need, and ``check`` is the one checker of every tree. This package must not
import click or rich (it runs inside scikit-build-core's isolated build environment).
"""

from __future__ import annotations

from builder.jit.preamble import Fragment, IncludeError, Preamble, inline_preamble

__all__ = ["Fragment", "IncludeError", "Preamble", "inline_preamble"]
