"""The gates on what a library holds, on libraries made here (an empty one, a few functions with
the Metal versions chosen) and on real ones that load quickly or hold two libraries: executorch
1.5.1's (164 functions), torch 2.14.1's ``metal_basic`` and ``metal_40``. Bad values stop with
one line and exit 2, never a verdict."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from clirun import run_cli
from support.content_reference import held
from support.real_wheels import libraries_or_skip
from synthetic import new_function, new_library

from builder.metallib import library_bytes

LIB = [("v_copyfloat32float32", 300), ("steel_gemm_fused_nax_nn_float16", 900)]


@pytest.fixture
def empty(tmp_path: Path) -> Path:
    """A library holding no function (it links, and fails at load time)."""
    path = tmp_path / "empty.metallib"
    path.write_bytes(library_bytes(new_library([])))
    return path


def _versions(tmp_path: Path, name: str, version: tuple[int, int, int, int]) -> Path:
    """A library whose two functions state AIR ``version[:2]`` and Metal ``version[2:]``."""
    fns = [new_function(f"k{i}", b"BC\xc0\xde" + bytes(40), version=version) for i in range(2)]
    path = tmp_path / name
    path.write_bytes(library_bytes(new_library(fns, deployment_target=(15, 0))))
    return path


def test_an_empty_library_always_fails_compare(
    empty: Path, write_metallib: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    size = empty.stat().st_size
    assert held(empty).names == ()  # the reference: no function
    code, out, err = run_cli(["compare", str(empty), str(empty), "--format", "json"], capsys)
    assert code == 1  # no option asked for it
    (gate,) = json.loads(out)["gates"]
    assert (gate["name"], gate["passed"], gate["value"]) == ("empty-library", False, 0)
    message = f"empty-library: {empty} holds no function: an empty library ({size} B) fails"
    assert message in err and gate["message"].startswith(message)
    code, _, err = run_cli(["compare", str(empty), str(empty), "--warn-only"], capsys)
    assert code == 0 and "warning: size gate failed (--warn-only: exit 0)" in err
    full = write_metallib("full.metallib", LIB)  # a library holding functions: no verdict
    code, out, _ = run_cli(["compare", str(full), str(full), "--format", "json"], capsys)
    assert code == 0 and json.loads(out)["gates"] == []


def test_an_empty_library_always_fails_budget(
    empty: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    budget = tmp_path / "metallib-size.toml"
    budget.write_text(f'[[budget]]\nname = "kernels"\ntarget = "{empty}"\nmax-size = "1MB"\n')
    code, out, err = run_cli(["budget", str(budget), "--format", "markdown"], capsys)
    assert code == 1
    lines = out.splitlines()
    assert lines[3] == (
        f"❌ kernels holds no function: an empty library ({empty.stat().st_size} B) fails at "
        "load time (**1 of 2 limits exceeded**)"
    )
    assert "error: budget exceeded: kernels holds no function" in err


def test_require_counts_and_floors(
    write_metallib: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    lib = str(write_metallib("a.metallib", LIB))
    code, _, err = run_cli(["compare", lib, lib, "--require", "*_nax*>=2"], capsys)
    assert code == 1
    assert "holds 1 functions matching '*_nax*', at least 2 required (base: 1)" in err
    code, _, err = run_cli(["compare", lib, lib, "--require", "*_nax*", "--require", "v_*"], capsys)
    assert code == 0 and err.strip().endswith("size gates passed")
    code, _, err = run_cli(["compare", lib, lib, "--require", "*_NAX*"], capsys)
    assert code == 1 and "holds 0 functions matching '*_NAX*' (base: 0 either; is the glob" in err
    code, _, err = run_cli(["compare", lib, lib, "--min-functions", "3"], capsys)
    assert code == 1 and "holds 2 functions, fewer than 3" in err
    code, _, err = run_cli(["compare", lib, lib, "--min-functions", "2"], capsys)
    assert code == 0


def test_metal_versions_compare_as_versions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = _versions(tmp_path, "old.metallib", (2, 6, 3, 1))
    new = _versions(tmp_path, "new.metallib", (2, 8, 4, 0))
    assert held(new).metal == {"4.0"} and held(new).deployment_target == "15.0"
    args = ["compare", str(old), str(new), "--max-metal-version", "3.1"]
    code, _, err = run_cli(args, capsys)
    assert code == 1 and "states Metal language 4.0, above 3.1" in err
    code, _, _ = run_cli([*args[:-1], "4"], capsys)  # 4 is 4.0
    assert code == 0
    code, _, err = run_cli(["compare", str(old), str(new), "--fail-on-platform-change"], capsys)
    assert code == 1 and "platform changed: Metal 3.1 → 4.0; AIR 2.6 → 2.8" in err
    code, _, _ = run_cli(["compare", str(old), str(new), "--max-deployment-target", "15"], capsys)
    assert code == 0  # 15.0 is 15


@pytest.mark.realdata
def test_executorch_min_functions(capsys: pytest.CaptureFixture[str]) -> None:
    (lib,) = libraries_or_skip("executorch==1.5.1", "macosx_14_0_arm64")
    assert lib.path is not None
    count = len(held(lib.path).names)
    target = str(lib.path)
    code, _, err = run_cli(["compare", target, target, "--min-functions", str(count + 1)], capsys)
    assert code == 1 and f"holds {count:,} functions, fewer than {count + 1:,}" in err
    code, _, _ = run_cli(["compare", target, target, "--min-functions", str(count)], capsys)
    assert code == 0


@pytest.mark.realdata
def test_torch_two_libraries_one_for_macos_26(capsys: pytest.CaptureFixture[str]) -> None:
    """torch's ``metal_40`` is for macOS 26 only, by design: a gate at 14.0 fails it and passes
    ``metal_basic``, library by library."""
    libs = libraries_or_skip("torch==2.14.1", "macosx_14_0_arm64")
    refs = {}
    for lib in libs:
        assert lib.path is not None and lib.window is not None
        refs[lib.member] = held(lib.path, lib.window.offset, lib.window.size)
    args = ["compare", "torch==2.14.1", "torch==2.14.1", "--format", "json"]
    limits = ["--max-deployment-target", "14.0", "--max-metal-version", "3.1"]
    code, out, _ = run_cli([*args, *limits], capsys)
    assert code == 1
    seen = {}
    for pair in json.loads(out)["libraries"]:
        ref = refs[pair["head"]["member"]]
        (metal,) = ref.metal
        for gate in pair["gates"]:
            expected = metal if gate["name"] == "--max-metal-version" else ref.deployment_target
            assert gate["value_text"] == expected
            seen[pair["head"]["member"], gate["name"]] = gate["passed"]
    basic, forty = (f"torch/lib/libtorch_cpu.dylib#__TEXT,{s}" for s in ("metal_basic", "metal_40"))
    assert seen == {
        (basic, "--max-deployment-target"): True,
        (basic, "--max-metal-version"): True,
        (forty, "--max-deployment-target"): False,
        (forty, "--max-metal-version"): False,
    }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--require", ">=3"], "--require must be a glob of function names, with an optional"),
        (["--require", "*_nax*>=0"], "with an optional count from 1"),
        (["--max-deployment-target", "fourteen"], 'must be an OS version such as "14.0"'),
        (["--max-metal-version", "3.1.4"], 'must be a Metal language version such as "3.1"'),
        (["--min-functions", "-1"], "--min-functions must be a count from 0"),
    ],
)
def test_a_bad_gate_value_is_one_line_and_exit_2(
    args: list[str],
    message: str,
    write_metallib: Callable[..., Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    lib = str(write_metallib("a.metallib", LIB))
    code, out, err = run_cli(["compare", lib, lib, *args], capsys)
    assert code == 2 and out == ""
    (line,) = err.strip().splitlines()
    assert line.startswith("error: ") and message in line, line


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('require = "*_nax*"', "'require' must be a list of strings, got '*_nax*'"),
        ('require = ["*>=x>=0"]', "'require' must be a glob of function names"),
        ('fail-on-removed = "*"', "'fail-on-removed' needs 'base'"),
        ("fail-on-platform-change = true", "'fail-on-platform-change' needs 'base'"),
        ('max-metal-version = 4\nmax-size = "1MB"', "'max-metal-version' must be"),
        ('base = "a.metallib"\nmax-size = "1MB"', "'base' is what max-growth, fail-on-removed"),
    ],
)
def test_a_bad_budget_key_is_one_line_and_exit_2(
    text: str,
    message: str,
    write_metallib: Callable[..., Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_metallib("a.metallib", LIB)
    budget = tmp_path / "metallib-size.toml"
    budget.write_text(f'[[budget]]\ntarget = "a.metallib"\n{text}\n')
    code, out, err = run_cli(["budget", str(budget)], capsys)
    assert code == 2 and out == ""
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"error: {budget}: [[budget]] #1") and message in last, last


def test_a_saved_report_without_its_library_record_is_exit_2(
    write_metallib: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lib = str(write_metallib("a.metallib", LIB))
    code, out, _ = run_cli(["report", lib, "--format", "json"], capsys)
    doc = json.loads(out)
    del doc["provenance"]["library"]
    saved = tmp_path / "old.json"
    saved.write_text(json.dumps(doc))
    args = ["compare", str(saved), str(saved), "--max-deployment-target", "14.0"]
    code, out, err = run_cli(args, capsys)
    assert code == 2 and "no deployment target recorded" in err


def test_budget_content_limits_without_a_base(
    write_metallib: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_metallib("a.metallib", LIB)  # deployment target 14.0, as new_library writes it
    budget = tmp_path / "metallib-size.toml"
    budget.write_text(
        '[[budget]]\nname = "kernels"\ntarget = "a.metallib"\nrequire = ["*_nax*>=2"]\n'
        'max-deployment-target = "13.5"\nmin-functions = 2\n'
    )
    code, out, err = run_cli(["budget", str(budget), "--format", "csv"], capsys)
    assert code == 1
    assert "kernels holds 1 functions matching '*_nax*', at least 2 required;" in err  # no base
    assert "kernels's deployment target 14.0 is above 13.5" in err
    header, *rows = out.splitlines()
    cells = [dict(zip(header.split(","), row.split(","))) for row in rows]
    by_key = {c["key"]: c for c in cells}
    assert (by_key["max-deployment-target"]["value"], by_key["max-deployment-target"]["limit"]) == (
        "14.0",
        "13.5",
    )
    assert by_key["max-deployment-target"]["counts"] == "version"
    assert (by_key["min-functions"]["value"], by_key["min-functions"]["passed"]) == ("2", "true")


@pytest.mark.realdata
def test_the_comment_names_what_the_user_named(capsys: pytest.CaptureFixture[str]) -> None:
    """The PR comment says the spec a reviewer recognises, not the runner's cache path (issue 37,
    item 8): no line of it holds the folder the wheel was unpacked to."""
    (lib,) = libraries_or_skip("executorch==1.5.1", "macosx_14_0_arm64")
    assert lib.path is not None
    cache = str(Path(lib.path).parents[2])  # metallibs/<wheel>/executorch/lib/mlx.metallib
    spec = "executorch==1.5.1"
    code, out, err = run_cli(["compare", spec, spec, "--format", "markdown"], capsys)
    assert code == 0, err
    assert cache not in out and Path(lib.path).parts[-4] not in out
    footer = [line for line in out.splitlines() if line.startswith("<sub>Grouped by")]
    assert len(footer) == 1
    assert f"Measured in base `{spec}:executorch/lib/mlx.metallib`" in footer[0]


@pytest.mark.realdata
def test_the_budget_names_what_the_user_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A budget's "measured in" line, in the table and the markdown, says the spec and member a
    reviewer recognises, not the cache path the wheel was unpacked to."""
    (lib,) = libraries_or_skip("executorch==1.5.1", "macosx_14_0_arm64")
    assert lib.path is not None
    spec = "executorch==1.5.1"
    budget = tmp_path / "metallib-size.toml"
    budget.write_text(f'[[budget]]\nname = "et"\ntarget = "{spec}"\nmax-functions = 1000\n')
    for fmt in ("table", "markdown"):
        code, out, err = run_cli(["budget", str(budget), "--format", fmt], capsys)
        assert code == 0, err
        assert str(Path(lib.path).parents[2]) not in out and Path(lib.path).parts[-4] not in out
        assert f"{spec}:executorch/lib/mlx.metallib" in " ".join(out.split())
