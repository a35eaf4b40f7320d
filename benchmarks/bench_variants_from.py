"""Benchmark: ``variants --from`` with three variants against ``slim --keep '*'`` and discovery.

Issue 14's target: writing three variants of a 147 MB library (all-aot, one ``--jit`` split and
its complement as ``--aot``) takes at most three times ``slim --keep '*'`` on that library plus
discovery of the tree: ``variants <= 3 x slim + kernels`` (discovery counted once, the stricter
reading; ``3 x (slim + kernels)`` is printed too). All three are whole processes, interleaved,
medians; outputs go to a temporary folder beside the checkout and are deleted before each run.

Default library: mlx-metal 0.32.4 macOS 14 (146,876,416 bytes, downloaded once). Default tree:
the MLX-style entry files of tests/data/mlx_style over the mlx-metal 0.32.0 headers (few of the
library's functions are in it; every variant still writes the whole rest). MLX's own tree:

    git -C mlx archive v0.32.1 mlx/backend/metal/kernels | tar -x -C /tmp/mlx-0.32.1
    python benchmarks/bench_variants_from.py --tree /tmp/mlx-0.32.1/mlx/backend/metal/kernels \\
        -I /tmp/mlx-0.32.1 --exclude fence.metal --exclude '*_nax.metal'

The ``--jit`` split is every second entry file of the tree (so both split variants drop about
half the tree's functions).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _timing import ROOT, default_metallib, run_once

sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


def default_tree() -> tuple[Path, list[Path]]:
    from mlx_tree import DATA, MLX_PLATFORM, MLX_VERSION, extract_kernel_headers

    from builder.inputs import wheels

    wheel = wheels.download_wheel("mlx-metal", MLX_VERSION, MLX_PLATFORM)
    headers = extract_kernel_headers(
        wheel, wheels.cache_dir() / "kernel-headers" / wheel.name.removesuffix(".whl")
    )
    return DATA, [headers]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--library", type=Path, help="a .metallib (default: mlx-metal 0.32.4's)")
    parser.add_argument("--tree", type=Path, help="a folder of .metal files (default: see above)")
    parser.add_argument("-I", dest="include", action="append", type=Path, default=[])
    parser.add_argument("--exclude", action="append", default=[])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    from builder.kernels.tree_files import entry_files

    library = args.library or default_metallib()
    tree, include = (args.tree, args.include) if args.tree else default_tree()
    files = entry_files(tree, args.exclude)
    half = ",".join(files[::2])
    tree_args = ["--source-dir", str(tree)]
    for folder in include:
        tree_args += ["-I", str(folder)]
    for glob in args.exclude:
        tree_args += ["--exclude", glob]
    py = sys.executable
    with tempfile.TemporaryDirectory(dir=ROOT, prefix=".bench-variants-") as tmp:
        out = Path(tmp)
        cases = {
            "variants --from (3 variants)": [
                py,
                "-m",
                "builder",
                "variants",
                "--from",
                str(library),
                *tree_args,
                "-o",
                str(out / "variants"),
                "--jit",
                half,
                "--aot",
                half,
                "--format",
                "json",
            ],
            "slim --keep '*'": [
                py,
                "-m",
                "builder",
                "slim",
                str(library),
                "-o",
                str(out / "slim.metallib"),
                "--keep",
                "*",
            ],
            "kernels (discovery)": [py, "-m", "builder", "kernels", *tree_args, "--format", "json"],
        }

        def clean() -> None:
            shutil.rmtree(out / "variants", ignore_errors=True)
            (out / "slim.metallib").unlink(missing_ok=True)

        for cmd in cases.values():  # warm-up: page cache, bytecode cache; fails loudly
            clean()
            run_once(cmd)
        times: dict[str, list[float]] = {label: [] for label in cases}
        for _ in range(args.runs):
            for label, cmd in cases.items():
                clean()
                start = time.perf_counter()
                run_once(cmd)
                times[label].append(time.perf_counter() - start)
    med = {label: statistics.median(values) for label, values in times.items()}
    size = library.stat().st_size
    print(
        f"{library} ({size:,} bytes); tree {tree}: {len(files)} entry files; "
        f"{args.runs} interleaved runs (medians)"
    )
    for label, value in med.items():
        print(f"  {label:<30} {value * 1000:8.1f} ms   min {min(times[label]) * 1000:8.1f} ms")
    ours, slim, kernels = med.values()
    print(
        f"  variants / (3 x slim + discovery):   {ours / (3 * slim + kernels):.2f}  (target <= 1)"
    )
    print(f"  variants / (3 x (slim + discovery)): {ours / (3 * (slim + kernels)):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
