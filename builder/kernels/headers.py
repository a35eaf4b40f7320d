"""Which project headers a kernel family needs, by the include rule of metal_src.

Rule (docs/kernels.md): project headers are included with quotes and a path relative to the
metal_src root; Metal's headers with angle brackets. So a family's closure is found by reading
quoted includes only, each resolved against the root. The JIT build embeds exactly these files
(dependencies first) and CMake can list them as the dependencies of an instantiation source.
"""

from __future__ import annotations

import re
from pathlib import Path

from builder.errors import UsageError

__all__ = ["angle_includes", "header_closure", "quoted_includes"]

_QUOTED = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)
_ANGLE = re.compile(r"^\s*#\s*include\s+<([^>]+)>", re.MULTILINE)


def quoted_includes(text: str) -> list[str]:
    """Project headers named by ``#include "..."`` lines, in order."""
    return _QUOTED.findall(text)


def angle_includes(text: str) -> list[str]:
    """System headers named by ``#include <...>`` lines, in order."""
    return _ANGLE.findall(text)


def header_closure(source_dir: Path, header: str) -> list[str]:
    """``header`` and every project header it includes, transitively, dependencies first.

    Paths are relative to ``source_dir`` (metal_src). Raises UsageError naming the including file
    when a quoted include does not exist under the root (a violation of the include rule).
    """
    order: list[str] = []
    visiting: set[str] = set()

    def visit(rel: str, included_from: str | None) -> None:
        if rel in order or rel in visiting:
            return
        path = source_dir / rel
        if not path.is_file():
            where = f" (included from {included_from})" if included_from else ""
            raise UsageError(f"{source_dir}: header {rel!r} not found{where}")
        visiting.add(rel)
        for dep in quoted_includes(path.read_text(encoding="utf-8")):
            visit(dep, rel)
        visiting.discard(rel)
        order.append(rel)

    visit(header, None)
    return order
