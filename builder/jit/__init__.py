"""JIT generation: kernel headers inlined into preambles and embedded in a host C++ library.

``preamble`` inlines quoted includes (host tools only: no Metal compiler), ``literals`` turns
text into C++ tokens and names the namespace a unit's arrays live in (what a host library is
measured by), ``writer`` is the one writer of run-time C++ (preambles as stored pieces and as
functions returning them), ``family_source`` (a catalog family's registry source, and its
``check`` chunk) and ``generate`` (``embed``) hold the actions CMake runs (``python -m
builder.jit``), ``depfile`` writes what they were made from for the build tool. This package
must not import click or rich (it runs inside scikit-build-core's isolated build environment).
"""

from __future__ import annotations

from builder.jit.preamble import Fragment, IncludeError, Preamble, inline_preamble

__all__ = ["Fragment", "IncludeError", "Preamble", "inline_preamble"]
