"""JIT sources through ``builder.kernels.check``: the host-compiler check of the kernel library.

A run-time source is a family preamble followed by one instantiation line, so the family's
preamble followed by *all* its lines is a single translation unit that compiles if and only if
every one of those sources does (each line is an independent explicit instantiation; the
preamble is included once either way). That keeps the check to one compile (one chunk) per JIT
unit, a catalog family.

The preamble's ``#line`` markers name files relative to the kernel tree (so builds in different
directories match); for the check they are anchored to the tree, so diagnostics are attributed
to the real kernel files.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from builder.jit.literals import cxx_string
from builder.kernels.catalog import Catalog
from builder.kernels.check import CheckChunk

__all__ = ["anchor_line_markers", "jit_check_chunks"]

_MARKER = re.compile(r'^#line (\d+) "((?:[^"\\/]|\\.)(?:[^"\\]|\\.)*)"$', re.MULTILINE)


def anchor_line_markers(text: str, source_dir: Path) -> str:
    """``#line N "rel/path"`` -> ``#line N "<source_dir>/rel/path"`` (absolute ones unchanged).

    The path in a marker is a C string literal (escapes included); the folder is written as one
    too and the two literals' contents joined, so escaped names stay exactly what they were."""
    root = cxx_string(Path(source_dir).resolve().as_posix() + "/")[:-1]  # without its closing "
    return _MARKER.sub(lambda m: f'#line {m.group(1)} {root}{m.group(2)}"', text)


def jit_check_chunks(
    catalog: Catalog,
    preambles: Mapping[str, str],
    families: Iterable[str] | None = None,
    dtypes: Iterable[str] | None = None,
) -> list[CheckChunk]:
    """One chunk per catalog family built JIT: its preamble (as given, e.g. read back from a
    built library) plus every selected instantiation line of the family."""
    lines: dict[str, list[str]] = {}
    for inst in catalog.expand(families, dtypes):
        lines.setdefault(inst.family, []).append(inst.instantiation_line())
    chunks = []
    for family, family_lines in lines.items():
        text = anchor_line_markers(preambles[family], catalog.source_dir)
        chunks.append(CheckChunk(f"jit.{family}", text + "\n".join(family_lines) + "\n", family))
    return chunks
