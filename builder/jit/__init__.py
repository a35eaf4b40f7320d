"""JIT generation: kernel headers inlined into preambles and embedded in a host C++ library.

``preamble`` inlines quoted includes (host tools only: no Metal compiler), ``literals`` and
``codegen`` turn preambles into C++ sources, ``generate`` holds the actions CMake runs
(``python -m builder.jit``), ``depfile`` writes what they were made from for the build tool,
``checking`` turns them into ``check`` chunks. This package must not
import click or rich (it runs inside scikit-build-core's isolated build environment).
"""

from __future__ import annotations

from builder.jit.preamble import Fragment, IncludeError, Preamble, inline_preamble

__all__ = ["Fragment", "IncludeError", "Preamble", "inline_preamble"]
