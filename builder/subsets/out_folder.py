"""Where a ``variants --from`` run is written versus where its files end up.

The variants are written into a new sibling folder that replaces OUTDIR as a whole only once
every file, ``variants.json`` last, is complete (``builder.files.output_folder``): a run that fails
or
is killed leaves the previous OUTDIR as it was, and OUTDIR never mixes two runs. Every path a run
records (and ``variants.json`` shows) names the files where they end up, so the run is moved
before it is described.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from builder.subsets.variants import VariantsRun

__all__ = ["moved"]


def moved(run: VariantsRun, outdir: Path) -> VariantsRun:
    """``run`` as it reads once its folder ``run.outdir`` has become ``outdir``."""

    def there(path: Path | None) -> Path | None:
        return None if path is None else outdir / path.relative_to(run.outdir)

    variants = tuple(
        replace(v, metallib=there(v.metallib), sources_file=there(v.sources_file))
        for v in run.variants
    )
    return replace(run, variants=variants, outdir=outdir)
