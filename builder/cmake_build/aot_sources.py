"""``python -m builder.cmake_build.aot_sources``: write the AOT instantiation sources and their plan.

CMake runs this at configure time (``metal_add_aot_library``). Each selected family becomes one
or more ``<family>_<k>.metal`` files of at most ``--chunk-size`` instantiations, so Ninja can
compile a large family on several cores. A file is rewritten only when its bytes change and
stale chunks are removed, so a no-op reconfigure leaves every timestamp alone and Ninja rebuilds
nothing. The plan (JSON, also written only on change) records which host names each source
holds; the build manifest is derived from it. stdout is the ';'-joined source list for CMake.

No click or rich here: this runs inside CMake with only the standard library and ``builder``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from builder.errors import BuilderError, UsageError
from builder.fileio import write_if_changed
from builder.kernels.catalog import (
    Instantiation,
    load_catalog,
    render_translation_unit,
    split_names,
)

__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "main",
    "select_families",
    "write_sources",
]

DEFAULT_CHUNK_SIZE = 250
"""Instantiations per generated source: binary (~1,850) becomes 8 sources, so 2-8 cores stay busy
while one source still amortises the family header's parse over many instantiations."""


def write_sources(
    instantiations: Sequence[Instantiation], out_dir: Path, chunk_size: int
) -> list[dict[str, object]]:
    """Write the chunked sources; return the plan's family entries (catalog order)."""
    if chunk_size < 1:
        raise BuilderError(f"chunk size must be at least 1, got {chunk_size}")
    by_family: dict[str, list[Instantiation]] = {}
    for inst in instantiations:
        by_family.setdefault(inst.family, []).append(inst)
    families: list[dict[str, object]] = []
    wanted: set[Path] = set()
    for family, items in by_family.items():
        chunks = []
        for k in range(0, len(items), chunk_size):
            part = items[k : k + chunk_size]
            path = out_dir / f"{family}_{k // chunk_size}.metal"
            text = render_translation_unit(part)
            write_if_changed(path, text)
            wanted.add(path)
            chunks.append(
                {
                    "source": str(path),
                    "bytes": len(text.encode("utf-8")),
                    "host_names": [inst.host_name for inst in part],
                }
            )
        families.append({"name": family, "header": items[0].header, "chunks": chunks})
    for stale in out_dir.glob("*.metal"):
        if stale not in wanted:
            stale.unlink()
    return families


def select_families(source_dir: Path, families: str | None, jit: str | None) -> list[str]:
    """Validate a selection against the catalog; return ``[selected, jit]`` as CMake lists
    (printed as ``selected|jit``).

    Families come back in catalog order (so option order never changes the build); an unknown
    family, or a JIT family outside the selection, raises UsageError (exit 2 in CMake).
    """
    catalog = load_catalog(source_dir)
    chosen = set(split_names(families) or catalog.family_names)
    catalog.expand(chosen, [])  # validates the names
    jit_set = set(split_names(jit) or [])
    outside = sorted(jit_set - chosen)
    if outside:
        raise UsageError(
            f"JIT families {', '.join(outside)} are not among the selected families "
            f"({', '.join(n for n in catalog.family_names if n in chosen)})"
        )
    catalog.expand(jit_set, [])
    order = catalog.family_names
    return [";".join(n for n in order if n in chosen), ";".join(n for n in order if n in jit_set)]


def main(argv: Sequence[str] | None = None) -> int:
    """Write sources and plan (or, with ``--select``, validate a selection); print CMake lists.

    Exit 2 on a bad catalog or selection, with the reason on stderr.
    """
    parser = argparse.ArgumentParser(
        prog="python -m builder.cmake_build.aot_sources", allow_abbrev=False
    )
    parser.add_argument("--source-dir", type=Path, required=True)
    parser.add_argument("--families", default="", help="comma-separated families (empty: all)")
    parser.add_argument("--jit-families", default="", help="with --select: the JIT subset")
    parser.add_argument("--select", action="store_true", help="only validate and print families")
    parser.add_argument("--dtypes", default="", help="comma-separated dtypes (empty: all)")
    parser.add_argument("--chunk-size", type=int, default=DEFAULT_CHUNK_SIZE)
    parser.add_argument("--out-dir", type=Path)
    parser.add_argument("--plan", type=Path)
    args = parser.parse_args(argv)
    try:
        if args.select:
            print("|".join(select_families(args.source_dir, args.families, args.jit_families)))
            return 0
        if args.out_dir is None or args.plan is None:
            parser.error("--out-dir and --plan are required to write sources")
        catalog = load_catalog(args.source_dir)
        items = catalog.expand(split_names(args.families), split_names(args.dtypes))
        families = write_sources(items, args.out_dir, args.chunk_size)
        plan = {"schema": 1, "chunk_size": args.chunk_size, "families": families}
        write_if_changed(args.plan, json.dumps(plan, indent=1) + "\n")
    except BuilderError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    sources = [c["source"] for f in families for c in f["chunks"]]  # type: ignore[attr-defined]
    print(";".join(str(s) for s in sources))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
