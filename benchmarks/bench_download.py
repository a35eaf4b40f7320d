"""Benchmark: ``report --download`` against ``gzip -6``, and the download model against the truth.

Two parts, on the cached mlx-metal 0.32.4 wheels (macOS 14: 147 MB library, macOS 26: 214 MB):

* **time** (whole processes, interleaved, medians): ``report --download --format json`` against
  ``gzip -6 -c FILE > /dev/null`` (the target: no slower), a single zlib level-6 pass in Python
  (what computing the exact wheel member size costs), and ``report --format json`` without
  download. ``--python`` adds the pure-Python path (``METALLIB_BUILDER_NATIVE=0``).
* **accuracy**: the modelled total against the wheel's real compressed size of ``mlx.metallib``
  (the zip's ``compress_size``), and for the ``--groups`` largest groups (by download) what the
  report says each costs against what removing it saves: ``slim --drop`` the group, compress the
  result with zlib level 6 (raw deflate, as the wheel), subtract from the real member size.

    python benchmarks/bench_download.py                          # both parts, both libraries
    python benchmarks/bench_download.py --part time --runs 7
    python benchmarks/bench_download.py --part accuracy --platform macosx_26_0_arm64 --groups 5
    python benchmarks/bench_download.py --part accuracy --by dtype

It is a script, not a test: timings depend on the machine (and on what else runs on it).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
import zlib
from pathlib import Path

from _timing import ENV, ROOT

sys.path.insert(0, str(ROOT))

PLATFORMS = ("macosx_14_0_arm64", "macosx_26_0_arm64")
_ZLIB_PASS = (
    "import sys, zlib; data = open(sys.argv[1], 'rb').read(); "
    "c = zlib.compressobj(6, zlib.DEFLATED, -15); print(len(c.compress(data) + c.flush()))"
)


def _library(version: str, platform: str) -> tuple[Path, int]:
    """The cached mlx.metallib and its compressed size in the wheel (the zip directory's)."""
    from builder.inputs.wheels import download_wheel, extract_metallibs

    wheel = download_wheel("mlx-metal", version, platform)
    path = extract_metallibs(wheel)[0]
    with zipfile.ZipFile(wheel) as archive:
        member = next(i for i in archive.infolist() if i.filename.endswith("mlx.metallib"))
    return path, member.compress_size


def _shell(cmd: list[str] | str, env: dict[str, str]) -> tuple[float, float]:
    """Wall time and CPU time (user + system, the process and its children) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        cmd, check=True, stdout=subprocess.DEVNULL, cwd=ROOT, env=env, shell=isinstance(cmd, str)
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def time_part(path: Path, runs: int, python: bool) -> None:
    py = sys.executable
    cases: dict[str, tuple[list[str] | str, dict[str, str]]] = {
        "gzip -6": (f"gzip -6 -c '{path}' > /dev/null", ENV),
        "report --download": (
            [py, "-m", "builder", "report", str(path), "--download", "--format", "json"],
            ENV,
        ),
        "one zlib pass (Python)": ([py, "-c", _ZLIB_PASS, str(path)], ENV),
        "report (no download)": (
            [py, "-m", "builder", "report", str(path), "--format", "json"],
            ENV,
        ),
    }
    if python:
        cases["report --download, pure Python"] = (
            cases["report --download"][0],
            {**ENV, "METALLIB_BUILDER_NATIVE": "0"},
        )
    for cmd, env in cases.values():  # warm the page cache and the bytecode cache
        _shell(cmd, env)
    times: dict[str, list[float]] = {label: [] for label in cases}
    cpu: dict[str, list[float]] = {label: [] for label in cases}
    for _ in range(runs):
        for label, (cmd, env) in cases.items():
            wall, used = _shell(cmd, env)
            times[label].append(wall)
            cpu[label].append(used)
    print(f"{path} ({path.stat().st_size:,} bytes), {runs} interleaved runs")
    for label, values in times.items():
        print(
            f"  {label:<32} median {statistics.median(values):6.2f} s   min {min(values):6.2f} s"
            f"   CPU median {statistics.median(cpu[label]):6.2f} s"
        )
    ratio = statistics.median(times["report --download"]) / statistics.median(times["gzip -6"])
    print(f"  report --download / gzip -6: {ratio:.2f} by medians (target <= 1.0)")


def accuracy_part(path: Path, real: int, groups: int, by: str) -> None:
    from builder.size.load import load_reports
    from builder.subsets.slim import slim_file

    (report,) = load_reports(str(path), by=by, download=True)
    download = report.download
    assert download is not None
    error = download.total - real
    print(
        f"{path}: modelled {download.total:,} bytes, the wheel stores {real:,}: "
        f"{error:+,} bytes ({100 * error / real:+.4f}%), {download.model['shards']} shards"
    )
    shares: dict[str, int] = {}
    names: dict[str, list[str]] = {}
    for fn, share in zip(report.functions, download.functions):
        shares[fn.group] = shares.get(fn.group, 0) + share
        names.setdefault(fn.group, []).append(fn.name)
    largest = sorted(shares, key=lambda g: (-shares[g], g))[:groups]
    print(f"  {'group (by ' + by + ')':<22} {'report says':>12} {'removal saves':>14} {'error':>8}")
    with tempfile.TemporaryDirectory() as scratch:
        for group in largest:
            out = Path(scratch) / "without.metallib"
            slim_file(path, out, drop=names[group])
            packer = zlib.compressobj(6, zlib.DEFLATED, -15)
            data = out.read_bytes()
            saved = real - len(packer.compress(data) + packer.flush())
            print(
                f"  {group:<22} {shares[group]:>12,} {saved:>14,} "
                f"{100 * (shares[group] - saved) / saved:>+7.2f}%",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--part", choices=("time", "accuracy", "both"), default="both")
    parser.add_argument("--version", default="0.32.4")
    parser.add_argument(
        "--platform", choices=PLATFORMS, action="append", help="default: both macOS 14 and macOS 26"
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--groups", type=int, default=3, help="largest groups to remove")
    parser.add_argument("--by", default="kernel", help="grouping for the accuracy part")
    parser.add_argument("--python", action="store_true", help="also time the pure-Python path")
    parser.add_argument("--json", action="store_true", help="print the libraries used as JSON")
    args = parser.parse_args()
    for platform in args.platform or PLATFORMS:
        path, real = _library(args.version, platform)
        if args.json:
            print(json.dumps({"metallib": str(path), "member_compressed": real}))
        if args.part in ("time", "both"):
            time_part(path, args.runs, args.python)
        if args.part in ("accuracy", "both"):
            accuracy_part(path, real, args.groups, args.by)


if __name__ == "__main__":
    main()
