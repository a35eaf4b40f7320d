"""Benchmark: ``kernels --source-dir`` (discovery, whole process) vs a plain shell loop running the
same preprocessor command over the same files, one after the other.

The loop is the least work discovery can do: it preprocesses every entry file and throws the text
away, with no Python at all. Discovery also starts Python, parses every file's output and prints
JSON, and uses every core (``-j``); the target (issue 34 item 11) is at most 1.1x the loop's
wall time. CPU time (``os.wait4``: the process and the compilers it waited for) is printed too.
``-j 1`` is timed too, to show what the cores buy.

Default tree: the MLX-style entry files of tests/data/mlx_style, copied 7 times under a temporary
folder (42 files), over the real MLX headers of the mlx-metal 0.32.0 wheel (downloaded once into
the cache). Any other tree: ``--tree DIR -I DIR [--exclude GLOB]...``, e.g. MLX's own kernels:

    python benchmarks/bench_discovery.py --runs 9
    git -C mlx archive v0.32.1 mlx/backend/metal/kernels | tar -x -C /tmp/mlx
    python benchmarks/bench_discovery.py --tree /tmp/mlx/mlx/backend/metal/kernels \\
        -I /tmp/mlx --exclude fence.metal --exclude '*_nax.metal'
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

from _timing import ROOT, interleaved, print_medians

sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

COPIES = 7
TARGET = 1.1
"""Issue 34 item 11: discovery at most 1.1x the loop's wall time (on MLX's tree)."""


def default_tree(tmp: Path) -> tuple[Path, Path]:
    """(tree of 42 MLX-style entry files, include root of the real MLX headers)."""
    from kernels.discovery.mlx_tree import DATA, MLX_PLATFORM, MLX_VERSION, extract_kernel_headers

    from builder.inputs import wheels

    wheel = wheels.download_wheel("mlx-metal", MLX_VERSION, MLX_PLATFORM)
    headers = extract_kernel_headers(
        wheel, wheels.cache_dir() / "kernel-headers" / wheel.name.removesuffix(".whl")
    )
    tree = tmp / "tree"
    for copy in range(COPIES):
        shutil.copytree(DATA, tree / f"copy{copy}", ignore=shutil.ignore_patterns("*.md"))
    return tree, headers


def loop_command(tree: Path, include: list[Path], exclude: list[str]) -> list[str]:
    """``bash -c 'for f in ...; do <preprocessor command> "$f" >/dev/null; done'`` with exactly
    the command discovery runs for each file (same flags, same working directory)."""
    from builder.kernels.preprocess import find_preprocessor, metal_defines, preprocess_command
    from builder.kernels.tree_files import entry_files

    files = entry_files(tree, exclude)
    dirs = [*(p.resolve() for p in include), tree.resolve()]
    cmd = preprocess_command(
        find_preprocessor(), ["FILE"], dirs, metal_defines([]), line_markers=True
    )[:-1]  # as discovery runs it
    body = " ".join(shlex.quote(a) for a in cmd)
    names = " ".join(shlex.quote(f) for f in files)
    script = (
        f"cd {shlex.quote(str(tree))} && for f in {names}; "
        f'do {body} "$f" >/dev/null || exit 1; done'
    )
    return ["bash", "-c", script]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tree", type=Path, help="a folder of .metal files (default: see above)")
    parser.add_argument("-I", dest="include", action="append", type=Path, default=[])
    parser.add_argument("--exclude", action="append", default=[])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-discovery-") as tmp:
        if args.tree:
            tree, include = args.tree, args.include
        else:
            tree, headers = default_tree(Path(tmp))
            include = [headers, *args.include]
        py = sys.executable
        ours = [py, "-m", "builder", "kernels", "--source-dir", str(tree), "--format", "json"]
        for folder in include:
            ours += ["-I", str(folder)]
        for glob in args.exclude:
            ours += ["--exclude", glob]
        cases = {
            "discovery (-j all cores)": ours,
            "discovery -j 1": [*ours, "-j", "1"],
            "shell loop (sequential)": loop_command(tree, include, args.exclude),
        }
        results = interleaved(cases, args.runs, cwd=ROOT)
        from builder.kernels.tree_files import entry_files

        files = len(entry_files(tree, args.exclude))
        print(f"{tree}: {files} entry files")
        print_medians(results, args.runs)
        wall, cpu = results["discovery (-j all cores)"]
        wall_1, cpu_1 = results["discovery -j 1"]
        loop_wall, loop_cpu = results["shell loop (sequential)"]
        print(
            f"  discovery / loop: {wall / loop_wall:.2f} wall, {cpu / loop_cpu:.2f} CPU "
            f"(target <= {TARGET:g} wall); -j 1 / loop: {wall_1 / loop_wall:.2f} wall, "
            f"{cpu_1 / loop_cpu:.2f} CPU"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
