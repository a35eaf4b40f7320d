"""Benchmark: ``report --format json`` and ``list --format json`` (whole processes) against the
least work that answers them.

All sides are measured as separate Python processes in the same run, interleaved, so interpreter
start-up is paid by each. Two baselines:

- ``json_rows_walk.py`` (issue 34 item 10, target: ``report`` at most 1.0x): map the file, walk
  the function list with ``struct``, label each name with the MLX rules and write the same
  function and group rows as JSON. The script checks first that its rows equal the report's.
- ``mdsz_walk.py`` (issue 11, target 1.5x): only sum every function's ``MDSZ`` (no names, no rows).

``import builder.cli`` and ``python -c pass`` are timed too, to show what start-up alone costs.

    python benchmarks/bench_report.py                       # mlx-metal 0.32.4 (cached wheel)
    python benchmarks/bench_report.py path/to/mlx.metallib --runs 11

It is a script, not a test: timings depend on the machine. By default the processes may cache
bytecode (in a temporary ``PYTHONPYCACHEPREFIX``, not in the tree), as an installed package would;
``--no-bytecode-cache`` measures with every module compiled from source on each run, which is what
happens under ``PYTHONDONTWRITEBYTECODE=1``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from _timing import BENCH, ENV, ROOT, default_metallib, interleaved, print_medians


def check_rows(py: str, path: Path, env: dict[str, str]) -> None:
    """The baseline writes the report's function rows and group totals, value for value."""

    def run(cmd: list[str]) -> dict:
        return json.loads(subprocess.run(cmd, check=True, capture_output=True, env=env).stdout)

    walk = run([py, str(BENCH / "json_rows_walk.py"), str(path)])
    report = run([py, "-m", "builder", "report", str(path), "--format", "json"])
    groups = [{k: g[k] for k in walk["groups"][0]} for g in report["groups"] if not g["overhead"]]
    if walk["functions"] != report["functions"] or walk["groups"] != groups:
        sys.exit("json_rows_walk.py does not write the report's rows: no baseline for them")
    print(f"baseline checked: the same {len(walk['functions']):,} function rows and groups")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("metallib", nargs="?", help="default: mlx.metallib of mlx-metal 0.32.4")
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument(
        "--no-bytecode-cache", action="store_true", help="compile every module on every run"
    )
    args = parser.parse_args()
    path = Path(args.metallib) if args.metallib else default_metallib()
    py = sys.executable
    cases = {
        "JSON rows walk": [py, str(BENCH / "json_rows_walk.py"), str(path)],
        "MDSZ walk": [py, str(BENCH / "mdsz_walk.py"), str(path)],
        "report --format json": [py, "-m", "builder", "report", str(path), "--format", "json"],
        "list --format json": [py, "-m", "builder", "list", str(path), "--format", "json"],
        "import builder.cli": [py, "-c", "import builder.cli"],
        "python -c pass": [py, "-c", "pass"],
    }
    env = dict(ENV)
    if args.no_bytecode_cache:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.pop("PYTHONPYCACHEPREFIX")
    check_rows(py, path, env)
    mode = "no bytecode cache" if args.no_bytecode_cache else "bytecode cached"
    print(f"{path} ({path.stat().st_size:,} bytes), {mode}")
    results = interleaved(cases, args.runs, cwd=ROOT, env=env)
    print_medians(results, args.runs)
    for label, base, target in (
        ("report --format json", "JSON rows walk", 1.0),
        ("report --format json", "MDSZ walk", 1.5),
        ("list --format json", "MDSZ walk", 1.5),
    ):
        (wall, cpu), (base_wall, base_cpu) = results[label], results[base]
        print(
            f"{label} / {base}: {wall / base_wall:.2f} wall, {cpu / base_cpu:.2f} CPU "
            f"(target <= {target:g})"
        )


if __name__ == "__main__":
    main()
