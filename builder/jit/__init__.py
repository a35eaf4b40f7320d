"""JIT generation: kernel headers inlined into preambles and embedded in a host C++ library.

``preamble`` inlines quoted includes (host tools only: no Metal compiler), ``literals`` and
``codegen`` turn preambles into C++ pieces, ``preamble_functions`` into functions returning
them, ``unit_names`` names the namespace a unit's arrays live in (what a host library is
measured by), ``family_source`` (a catalog family's source) and ``generate`` (``embed``) hold
the actions CMake runs (``python -m builder.jit``), ``depfile`` writes what they were made from
for the build tool, ``checking`` turns them into ``check`` chunks. This package must not
import click or rich (it runs inside scikit-build-core's isolated build environment).
"""

from __future__ import annotations

from builder.jit.preamble import Fragment, IncludeError, Preamble, inline_preamble

__all__ = ["Fragment", "IncludeError", "Preamble", "inline_preamble"]
