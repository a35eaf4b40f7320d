"""docs/mlx.md's fenced blocks, read the one way every test of it reads them: the doc's CMake,
settings and commands are what the tests run (tests/docs/test_mlx_doc.py), and MLX's
``metallib.toml`` in it is the one file the run-time source tests take (tests/subsets/
test_variants_mlx_api.py), so what the doc shows is what is measured."""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["DOC", "KERNELS", "block", "blocks", "metallib_toml", "stated_bytes", "table_row"]

DOC = (Path(__file__).resolve().parents[2] / "docs" / "mlx.md").read_text(encoding="utf-8")
KERNELS = "mlx/backend/metal/kernels"
"""MLX's kernel folder, relative to its checkout (and to a wheel's include root)."""


def blocks() -> list[tuple[str, list[str]]]:
    """Every fenced block of the doc: (its language, its lines)."""
    found: list[tuple[str, list[str]]] = []
    current: tuple[str, list[str]] | None = None
    for line in DOC.splitlines():
        if line.startswith("```"):
            if current is None:
                current = (line[3:].strip(), [])
            else:
                found.append(current)
                current = None
        elif current is not None:
            current[1].append(line)
    return found


def block(language: str, first_line: str | None) -> str:
    """The fenced block of ``language`` whose first line is ``first_line``, without that line
    (``None``: the first block of ``language``, whole)."""
    for lang, lines in blocks():
        if lang == language and first_line is None:
            return "\n".join(lines) + "\n"
        if lang == language and lines and lines[0] == first_line:
            return "\n".join(lines[1:]) + "\n"
    raise AssertionError(f"docs/mlx.md has no {language!r} block starting {first_line!r}")


def metallib_toml() -> str:
    """MLX v0.32.1's ``metallib.toml``, as the doc gives it (its path line left out)."""
    return block("toml", f"# {KERNELS}/metallib.toml")


def stated_bytes(pattern: str) -> tuple[int, ...]:
    """The numbers the doc's prose states where ``pattern`` (a regular expression with one
    ``([\\d,]+)`` group per number, matched across line breaks) says them."""
    found = re.search(pattern.replace(" ", r"\s+"), DOC)
    assert found is not None, f"docs/mlx.md does not say {pattern!r}"
    return tuple(int(g.replace(",", "")) for g in found.groups())


def table_row(first_cell: str) -> list[str]:
    """The cells of the doc's one table row whose first cell is ``first_cell``."""
    rows = [
        [c.strip() for c in line.strip().strip("|").split("|")]
        for line in DOC.splitlines()
        if line.startswith(f"| {first_cell} |")
    ]
    assert len(rows) == 1, f"docs/mlx.md has {len(rows)} table rows starting {first_cell!r}"
    return rows[0]
