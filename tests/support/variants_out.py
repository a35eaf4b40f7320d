"""Helpers for the tests of a ``variants --from -o OUT`` folder: runs of the real command over
mlx-metal's library and the MLX-style tree, and what a consistent OUT is, checked independently
of the code that writes it (file contents hashed, the JSON read against the files on disk, each
metallib verified)."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mlx_tree import DATA

from builder.metallib import open_metallib, verify
from support.spawn import start

__all__ = [
    "RUN_A",
    "RUN_B",
    "TEMP",
    "Snapshot",
    "check_described",
    "leftovers",
    "snapshot",
    "start",
    "variants_args",
    "wait_for",
]

RUN_A = ("--jit", "unary_subset.metal")
"""Two variants: all-aot, jit-1."""
RUN_B = ("--jit", "binary_subset.metal", "--aot", "arange_subset.metal")
"""Three variants: all-aot, aot-1, jit-1 (another jit-1 than RUN_A's)."""
TEMP = re.compile(r"\.(?P<name>.+)\.[0-9a-f]{12}\.(tmp|old)\Z")
"""The temporary names docs/outputs.md promises."""

Snapshot = dict[str, str]
"""Path relative to OUT -> SHA-256 of the file's bytes."""


def variants_args(library: Path, headers: Path, out: Path, *extra: str) -> list[str]:
    return [
        "variants",
        "--from",
        str(library),
        "--source-dir",
        str(DATA),
        "-I",
        str(headers),
        "-o",
        str(out),
        "--format",
        "json",
        *extra,
    ]


def snapshot(out: Path) -> Snapshot:
    """Every file under ``out`` by content (folders only through their files)."""
    found = {}
    for path in sorted(out.rglob("*")):
        if path.is_file():
            digest = hashlib.sha256()
            with path.open("rb") as handle:
                while chunk := handle.read(1 << 22):
                    digest.update(chunk)
            found[path.relative_to(out).as_posix()] = digest.hexdigest()
    return found


def check_described(out: Path) -> dict[str, Any]:
    """OUT holds exactly what its variants.json describes: one folder per variant with its
    metallib (the size stated, passing ``verify``, the number of functions stated) and its JIT
    source when it has one, and nothing else."""
    doc: dict[str, Any] = json.loads((out / "variants.json").read_text())
    expected = {"variants.json"}
    for v in doc["variants"]:
        if v["metallib"] is not None:
            path = Path(v["metallib"])
            assert path.parent == out / v["name"], v["metallib"]
            assert path.stat().st_size == v["metallib_bytes"]
            with open_metallib(path) as lib:
                assert verify(lib).ok, path
                assert len(lib.columns().names) == v["function_count"]
            expected.add(f"{v['name']}/{path.name}")
        if v["jit_sources_file"] is not None:
            # (all-aot has one too when the tree has run-time-only kernels)
            assert Path(v["jit_sources_file"]) == out / v["name"] / "jit_sources.cpp"
            expected.add(f"{v['name']}/jit_sources.cpp")
    on_disk = {p.relative_to(out).as_posix() for p in out.rglob("*") if not p.is_dir()}
    assert on_disk == expected
    folders = {p.name for p in out.iterdir() if p.is_dir()}
    assert folders == {v["name"] for v in doc["variants"]}
    return doc


def leftovers(folder: Path) -> list[str]:
    """Temporary or lock files in ``folder`` (what no finished run may leave)."""
    return sorted(
        p.name for p in folder.iterdir() if TEMP.match(p.name) or p.name.endswith(".lock")
    )


def wait_for(
    condition: Callable[[], bool], proc: subprocess.Popen[str], timeout: float = 120
) -> bool:
    """Poll ``condition`` every millisecond while ``proc`` runs; True when it held first."""
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            if condition():
                return True
        except OSError:
            pass  # a folder renamed or removed under the listing: look again
        time.sleep(0.001)
    return False
