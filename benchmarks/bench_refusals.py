"""How long the refusals of hostile inputs take, whole process, against a least-work baseline.

The tests of these refusals (tests/kernels/test_tree_limits.py,
tests/publish/test_hostile_replies.py) asserted wall-clock bounds, which a loaded machine can
break with nothing wrong (issue 33 item 24); they now check what is refused and how, under a hang
guard only, and the times are measured here:

* ``kernels`` on a tree whose entry file is a FIFO (the test's former bound: 10 s);
* a header linked to /dev/zero under ``METALLIB_BUILDER_PP_MEMORY=1GiB`` (30 s);
* a header that blocks (a FIFO) under ``METALLIB_BUILDER_PP_TIMEOUT=1`` (15 s);
* the run-time-only scan passing over a FIFO, /dev/zero and a header past
  ``METALLIB_BUILDER_MAX_SOURCE=1KB`` (20 s);
  baseline: ``kernels`` on a one-file tree, the least a ``kernels`` process does;
* ``compare --github-comment`` against a server that drips its reply a byte per 0.5 s, in the
  headers or in the body, with ``METALLIB_BUILDER_HTTP_DEADLINE=3`` (3 + 5 s); baseline:
  ``compare`` of the same pair without the comment.

Medians of ``--runs`` interleaved runs (case, baseline, case, ...), the load average printed
with them; each line also says whether the median is within the test's former bound.

    python benchmarks/bench_refusals.py [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from _timing import ENV, ROOT

sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # tests/synthetic.py builds libraries

from synthetic import new_function, new_library

from builder.metallib import library_bytes
from tests.support.drip import BYTE_EVERY, start_reply

DEADLINE = 3


@dataclass
class Case:
    name: str
    bound: float
    """The wall-clock bound the test used to assert, in seconds."""
    ours: list[str]
    env: dict[str, str]
    baseline: list[str]
    before: Callable[[], None] = field(default=lambda: None)
    """Run untimed before each timed run of ``ours``."""


def timed(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, int]:
    """Seconds and exit code of ``metallib-builder ARGS``."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "builder", *args],
        cwd=cwd,
        env={**ENV, **env},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    return time.perf_counter() - start, done.returncode


def _tree(root: Path, extra: Callable[[Path], None] = lambda _: None) -> Path:
    root.mkdir(parents=True)
    (root / "a.metal").write_text("kernel void ka() {}\n")
    extra(root)
    return root


def _fifo_entry(tree: Path) -> None:
    os.mkfifo(tree / "f.metal")


def _zero_header(tree: Path) -> None:
    (tree / "zero.h").symlink_to("/dev/zero")
    (tree / "b.metal").write_text('#include "zero.h"\nkernel void kb() {}\n')


def _blocking_header(tree: Path) -> None:
    os.mkfifo(tree / "wait.h")
    (tree / "b.metal").write_text('#include "wait.h"\nkernel void kb() {}\n')


def _unreached_headers(tree: Path) -> None:
    os.mkfifo(tree / "wait.h")
    (tree / "zero.h").symlink_to("/dev/zero")
    (tree / "big.h").write_text("kernel void big() {}\n" + "//" * 600 + "\n")
    (tree / "lone.h").write_text("template <typename T> [[kernel]] void lone(device T* x) {}\n")


class _Drip(BaseHTTPRequestHandler):
    where = "body"

    def do_GET(self) -> None:
        rest = start_reply(self, self.where)
        try:
            for byte in rest:
                self.wfile.write(bytes([byte]))
                time.sleep(BYTE_EVERY)
        except OSError:  # the client hung up
            return

    do_POST = do_PATCH = do_GET

    def log_message(self, *args: object) -> None:
        pass


def _pair(folder: Path) -> list[str]:
    paths = []
    for name, size in (("base", 300), ("head", 340)):
        function = new_function("v_copy", b"x" * size, reflection=bytes(8))
        path = folder / f"{name}.metallib"
        path.write_bytes(library_bytes(new_library([function])))
        paths.append(str(path))
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-refusals-") as scratch:
        tmp = Path(scratch)
        base_tree = _tree(tmp / "plain")
        kernels = ["kernels", "--source-dir"]
        plain = [*kernels, str(base_tree)]
        cases = [
            Case(
                "FIFO entry file", 10, [*kernels, str(_tree(tmp / "fifo", _fifo_entry))], {}, plain
            ),
            Case(
                "header -> /dev/zero, PP_MEMORY=1GiB",
                30,
                [*kernels, str(_tree(tmp / "zero", _zero_header))],
                {"METALLIB_BUILDER_PP_MEMORY": "1GiB"},
                plain,
            ),
            Case(
                "blocking header, PP_TIMEOUT=1",
                15,
                [*kernels, str(_tree(tmp / "wait", _blocking_header)), "-j", "1"],
                {"METALLIB_BUILDER_PP_TIMEOUT": "1"},
                [*plain, "-j", "1"],
            ),
            Case(
                "run-time-only scan of FIFO, zero, big",
                20,
                [*kernels, str(_tree(tmp / "unreached", _unreached_headers)), "--format", "json"],
                {"METALLIB_BUILDER_MAX_SOURCE": "1KB"},
                [*plain, "--format", "json"],
            ),
        ]
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Drip)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        event = tmp / "event.json"
        event.write_text(json.dumps({"number": 17, "pull_request": {"number": 17}}))
        github = {
            "GITHUB_TOKEN": "ghs_bench_token",
            "GITHUB_REPOSITORY": "octo/metal",
            "GITHUB_API_URL": f"http://127.0.0.1:{server.server_address[1]}",
            "GITHUB_EVENT_PATH": str(event),
            "METALLIB_BUILDER_HTTP_DEADLINE": str(DEADLINE),
        }
        pair = _pair(tmp)
        for where in ("headers", "body"):
            cases.append(
                Case(
                    f"dripping reply ({where}), HTTP_DEADLINE={DEADLINE}",
                    DEADLINE + 5,
                    ["compare", *pair, "--github-comment"],
                    github,
                    ["compare", *pair],
                    before=lambda where=where: setattr(_Drip, "where", where),
                )
            )
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        print(f"medians of {args.runs} interleaved runs (load average {load} at the start)")
        for case in cases:
            mine, base, codes = [], [], set()
            for _ in range(args.runs):
                case.before()
                seconds, code = timed(case.ours, tmp, case.env)
                mine.append(seconds)
                codes.add(code)
                base.append(timed(case.baseline, tmp, {})[0])
            m, b = statistics.median(mine), statistics.median(base)
            verdict = "within" if m < case.bound else "PAST"
            print(
                f"  {case.name:42} {m:6.2f} s (exit {', '.join(map(str, sorted(codes)))}), "
                f"baseline {b:5.2f} s: {verdict} the former test bound of {case.bound:g} s"
            )
        server.shutdown()


if __name__ == "__main__":
    main()
