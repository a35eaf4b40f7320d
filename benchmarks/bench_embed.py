"""Benchmark (issue 34 item 12): ``embed`` of ggml's ``ggml-metal.metal`` against a plain Python
inliner that writes the same text.

Input: llama-cpp-python 0.3.2's vendored ``ggml-metal.metal`` (ggml's Metal kernels in one file,
which includes ``ggml-common.h``), from the sdist the real-data tests download and cache
(``tests/support/real_sdists.py``), or any ``--header`` with its ``-I`` folders. Both sides are
whole processes, interleaved, medians of wall and CPU time. The baseline is
``benchmarks/plain_inliner.py`` (no comment scan, no checks, one string literal); the script
checks first that it writes exactly the preamble text ``embed`` embeds. Target: at most 2x.

    python benchmarks/bench_embed.py --runs 11
    python benchmarks/bench_embed.py --header path/to/x.metal -I path/to

It is a script, not a test: timings depend on the machine (docs/performance.md).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from _timing import BENCH, ROOT, interleaved, print_medians

sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

TARGET = 2.0


def ggml_metal() -> tuple[Path, list[Path]]:
    """llama-cpp-python 0.3.2's ggml-metal.metal and its include folder (downloaded once)."""
    from support.real_sdists import ggml_metal_or_skip

    folder = ggml_metal_or_skip("0.3.2")
    return folder / "ggml-metal.metal", [folder.parent]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--header", type=Path)
    parser.add_argument("-I", dest="include", action="append", type=Path, default=[])
    parser.add_argument("--runs", type=int, default=11)
    args = parser.parse_args()
    header, include = (args.header, args.include) if args.header else ggml_metal()
    from builder.jit.preamble import inline_preamble

    flags = [a for d in include for a in ("-I", str(d))]
    with tempfile.TemporaryDirectory(prefix="bench-embed-") as tmp:
        cwd = header.parent
        py = sys.executable
        cases = {
            "embed": [py, "-m", "builder", "embed", header.name, *flags, "-o", f"{tmp}/e.cpp"],
            "plain inliner": [
                py,
                str(BENCH / "plain_inliner.py"),
                header.name,
                *flags,
                "-o",
                f"{tmp}/p.cpp",
            ],
        }
        os.chdir(cwd)  # both name files relative to here, as embed's markers do
        expected = inline_preamble([header.name], include).text
        results = interleaved(cases, args.runs, cwd=cwd)
        written = Path(tmp, "p.cpp").read_text(encoding="utf-8")
        if written != f'const char preamble[] = R"mbjit({expected})mbjit";\n':
            sys.exit("plain_inliner.py does not write embed's text: no baseline for it")
    print(
        f"{header} ({header.stat().st_size:,} bytes; the preamble: {len(expected):,} characters, "
        "the same in both)"
    )
    print_medians(results, args.runs)
    (wall, cpu), (base_wall, base_cpu) = results["embed"], results["plain inliner"]
    print(
        f"embed / plain inliner: {wall / base_wall:.2f} wall, {cpu / base_cpu:.2f} CPU "
        f"(target <= {TARGET:g})"
    )
    return 0 if wall / base_wall <= TARGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
