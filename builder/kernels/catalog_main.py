"""``python -m builder.kernels.catalog``: the catalog for CMake, without Click or rich.

CMake runs this at configure time to learn what to build: ``names`` prints host names (one per
line, or a CMake list), ``headers`` the project headers the selected families need (relative to
metal_src, dependencies first). The AOT build writes its instantiation sources with
``builder.cmake_build.aot_sources``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from builder.errors import BuilderError
from builder.kernels.catalog import load_catalog
from builder.kernels.headers import header_closure

__all__ = ["main"]


def _split(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def main(argv: Sequence[str] | None = None) -> int:
    """Parse arguments, run one action, print results for CMake; 2 on a bad catalog or selection."""
    parser = argparse.ArgumentParser(prog="python -m builder.kernels.catalog", allow_abbrev=False)
    parser.add_argument("action", choices=["names", "headers"])
    parser.add_argument(
        "--source-dir", type=Path, default=None, help="kernel tree (default: bundled)"
    )
    parser.add_argument("--kernels", help="comma-separated families (default: all)")
    parser.add_argument("--dtypes", help="comma-separated dtypes (default: all)")
    parser.add_argument("--cmake", action="store_true", help="print one ';'-joined CMake list")
    args = parser.parse_args(argv)
    try:
        catalog = load_catalog(args.source_dir)
        items = catalog.expand(_split(args.kernels), _split(args.dtypes))
    except BuilderError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.action == "names":
        lines = [inst.host_name for inst in items]
    else:
        lines = []
        for header in dict.fromkeys(inst.header for inst in items):
            lines += [h for h in header_closure(catalog.source_dir, header) if h not in lines]
    print(";".join(lines) if args.cmake else "\n".join(lines))
    return 0
