"""Gates count everything shipped: a build's JIT host library grows the target as much as its
metallib does (``--max-growth``), and ``--max-total-size`` is the metallib plus the host library.

Both sides are saved reports of the same synthetic metallib whose build also ships a host library
(as ``report --format json`` of a JIT build writes them); only the host library differs, by
+7.9 %, the case the issue found passing: "size gates passed" next to "host library +7.9%".
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from clirun import run_cli

LIB = [
    ("v_copyfloat32float32", 300),
    ("vv_Addfloat32", 500),
    ("steel_gemm_fused_nn_float16_float16_bm64_bn64", 2000),
]
HOST_BASE, HOST_HEAD = 845_000, 911_812  # +66,812 bytes, +7.9 %


def _saved(
    tmp_path: Path, name: str, metallib: Path, host_size: int, capsys: pytest.CaptureFixture[str]
) -> Path:
    code, out, _ = run_cli(["report", str(metallib), "--format", "json"], capsys)
    assert code == 0
    doc = json.loads(out)
    doc["jit_units"] = [
        {"name": "rope", "embedded_bytes": 4000, "host_bytes": None, "kernel_count": 4}
    ]
    doc["host_library"] = {
        "path": f"{name}/libmlx_jit.dylib",
        "file_size": host_size,
        "measured_by": None,
        "shared_bytes": None,
        "unattributed_bytes": None,
    }
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture
def sides(
    write_metallib: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[str, str, int]:
    lib = write_metallib("lib/mlx.metallib", LIB)
    base = _saved(tmp_path, "base", lib, HOST_BASE, capsys)
    head = _saved(tmp_path, "head", lib, HOST_HEAD, capsys)
    return str(base), str(head), os.stat(lib).st_size


def test_host_library_growth_fails_the_growth_gate(
    sides: tuple[str, str, int], capsys: pytest.CaptureFixture[str]
) -> None:
    base, head, metallib = sides
    code, _, err = run_cli(["compare", base, head, "--max-growth", "1%"], capsys)
    grown, shipped = HOST_HEAD - HOST_BASE, metallib + HOST_BASE
    assert code == 1, err  # the metallib did not change; the host library grew 7.9 %
    assert "(metallib + JIT host library) grew by +66.81 kB" in err
    assert f"(+{100 * grown / shipped:.2f}%)" in err
    code, _, err = run_cli(["compare", base, head, "--max-growth", f"{grown}"], capsys)
    assert code == 0 and err.strip().endswith("size gates passed")
    code, _, err = run_cli(["compare", base, head, "--max-growth", f"{grown - 1}"], capsys)
    assert code == 1


def test_max_total_size_is_metallib_plus_host_library(
    sides: tuple[str, str, int], capsys: pytest.CaptureFixture[str]
) -> None:
    base, head, metallib = sides
    total = metallib + HOST_HEAD
    code, _, err = run_cli(["compare", base, head, "--max-total-size", str(total)], capsys)
    assert code == 0
    code, out, err = run_cli(
        [
            "compare",
            base,
            head,
            "--max-total-size",
            str(total - 1),
            "--max-size",
            str(metallib),
            "--format",
            "json",
        ],
        capsys,
    )
    assert code == 1 and "--max-size" not in err  # the metallib alone is within its limit
    assert f"--max-total-size {total - 1:,}".replace(",", "") not in err  # worded as a size
    gates = {g["name"]: g for g in json.loads(out)["gates"]}
    assert gates["--max-size"]["passed"] and not gates["--max-total-size"]["passed"]
    assert f"({total:,} bytes)" in gates["--max-total-size"]["message"]
