"""HTML report: file size and first paint in headless Chromium, for real mlx-metal libraries.

    python benchmarks/bench_html.py                   # 0.30.0 (macOS 14) and 0.32.0 (macOS 26)
    python benchmarks/bench_html.py --runs 15 --compare

For each library the page is written once (``report --format html``; ``--compare`` also writes
``compare`` 0.29.0 -> that library), then loaded ``--runs`` times in one headless Chromium
(1400x1000 viewport, a fresh document each time: about:blank, then the file). Timings are read
from the page's clock, ``performance.now()`` (zero = navigation start):

* first paint: the page sets ``window.__report.firstPaintMs`` in the second animation frame after
  it inserted the treemap, i.e. once the frame holding the treemap was produced. It includes
  reading the HTML, parsing the embedded JSON, building the tree, layout and drawing.
* script: the page's own work (tree, search index, treemap SVG, table), for reference.

Medians and the range are printed, as is the file size in bytes. Needs Debian's ``chromium``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # the Chromium driver: render.chromium

from render.chromium import Browser, chromium_path

LIBRARIES = [("0.30.0", "macosx_14_0_arm64"), ("0.32.0", "macosx_26_0_arm64")]
PAINTED = "document.documentElement.getAttribute('data-painted') && window.__report"


def write_page(argv: list[str], out: Path) -> int:
    subprocess.run(
        [sys.executable, "-m", "builder", *argv, "--format", "html", "-o", str(out)],
        check=True,
        cwd=ROOT,
        stderr=subprocess.DEVNULL,
    )
    return out.stat().st_size


def measure(browser: Browser, page: Path, runs: int) -> tuple[float, list[float], list[float], int]:
    """(first load's paint, then per counted load: paint, script; cells drawn)."""
    paints, scripts, cells = [], [], 0
    for _ in range(runs + 1):  # the first load warms the browser up and is not counted
        browser.open(page.as_uri())
        state = browser.wait_for(PAINTED)
        paints.append(state["firstPaintMs"])
        scripts.append(state["scriptEnd"] - state["scriptStart"])
        cells = state["cells"]
    return paints[0], paints[1:], scripts[1:], cells


def describe(values: list[float]) -> str:
    return (
        f"median {statistics.median(values):6.0f} ms (min {min(values):.0f}, max {max(values):.0f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--compare", action="store_true", help="also time compare 0.29.0 -> X")
    args = parser.parse_args()
    if chromium_path() is None:
        sys.exit("chromium is not installed (apt-get install chromium)")
    with tempfile.TemporaryDirectory(prefix="bench-html-") as tmp, Browser() as browser:
        for version, platform in LIBRARIES:
            jobs = [("report", ["report", f"mlx-metal=={version}", "--platform", platform])]
            if args.compare:
                jobs.append(
                    (
                        "compare",
                        [
                            "compare",
                            "mlx-metal==0.29.0",
                            f"mlx-metal=={version}",
                            "--platform",
                            platform,
                        ],
                    )
                )
            for kind, argv in jobs:
                page = Path(tmp) / f"{kind}-{version}-{platform}.html"
                size = write_page(argv, page)
                cold, paints, scripts, cells = measure(browser, page, args.runs)
                print(
                    f"{kind:7} mlx-metal {version} {platform}: {size:,} bytes, {cells:,} cells; "
                    f"first paint {describe(paints)}, first load {cold:.0f} ms; "
                    f"script {describe(scripts)} [{args.runs} loads]"
                )


if __name__ == "__main__":
    main()
