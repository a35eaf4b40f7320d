"""``python -m builder.kernels.catalog``: the catalog for CMake, without Click or rich.

CMake runs this at configure time to learn what to build: ``names`` prints host names (one per
line, or a CMake list), ``headers`` the project headers the selected families need (relative to
metal_src, dependencies first), ``write-aot`` writes instantiation sources (one family per file,
split into chunks) and prints their paths. Files are rewritten only when their bytes change, so an
unchanged catalog does not trigger a rebuild.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from builder.errors import BuilderError
from builder.kernels.catalog import Instantiation, load_catalog, render_translation_unit
from builder.kernels.headers import header_closure

__all__ = ["main", "write_aot_sources"]


def _split(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def write_aot_sources(
    instantiations: Sequence[Instantiation], out_dir: Path, max_per_file: int = 500
) -> list[Path]:
    """Write ``<family>_<k>.metal`` files (at most ``max_per_file`` lines each); return their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    by_family: dict[str, list[Instantiation]] = {}
    for inst in instantiations:
        by_family.setdefault(inst.family, []).append(inst)
    paths = []
    for family, items in by_family.items():
        for k in range(0, len(items), max_per_file):
            path = out_dir / f"{family}_{k // max_per_file}.metal"
            text = render_translation_unit(items[k : k + max_per_file])
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                path.write_text(text, encoding="utf-8")
            paths.append(path)
    return paths


def main(argv: Sequence[str] | None = None) -> int:
    """Parse arguments, run one action, print results for CMake; 2 on a bad catalog or selection."""
    parser = argparse.ArgumentParser(prog="python -m builder.kernels.catalog", allow_abbrev=False)
    parser.add_argument("action", choices=["names", "headers", "write-aot"])
    parser.add_argument(
        "--source-dir", type=Path, default=None, help="kernel tree (default: bundled)"
    )
    parser.add_argument("--kernels", help="comma-separated families (default: all)")
    parser.add_argument("--dtypes", help="comma-separated dtypes (default: all)")
    parser.add_argument("--out-dir", type=Path, help="where write-aot puts the sources")
    parser.add_argument("--max-per-file", type=int, default=500)
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
    elif args.action == "headers":
        lines = []
        for header in dict.fromkeys(inst.header for inst in items):
            lines += [h for h in header_closure(catalog.source_dir, header) if h not in lines]
    else:
        if args.out_dir is None:
            parser.error("write-aot needs --out-dir")
        lines = [str(p) for p in write_aot_sources(items, args.out_dir, args.max_per_file)]
    print(";".join(lines) if args.cmake else "\n".join(lines))
    return 0
