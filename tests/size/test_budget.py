"""``budget``: size budgets committed with a project, checked like size-limit checks them.

Values are checked against references computed here: file sizes from ``os.stat``, group bytes
from ``report --format json`` of the same library, download sizes from a ZIP written by the
standard library's ``zipfile`` (deflate level 6, as a wheel stores a file).
"""

from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from clirun import run_cli

from builder.render.text import human_size

LIB = [
    ("v_copyfloat32float32", 300),
    ("v_copyfloat16float16", 200),
    ("vv_Addfloat32", 500),
    ("vv_Addfloat16", 450),
    ("steel_gemm_fused_nn_float16_float16_bm64_bn64", 2000),
]
GROWN = [*LIB, ("steel_gemm_fused_nn_bfloat16_bfloat16_bm64_bn64", 2100)]


def _groups(target: str, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, int]:
    code, out, _ = run_cli(["report", target, "--format", "json", *extra], capsys)
    assert code == 0
    return {g["name"]: g["bytes"] for g in json.loads(out)["groups"]}


def _budget(folder: Path, text: str, name: str = "metallib-size.toml") -> Path:
    path = folder / name
    path.write_text(text)
    return path


def test_real_release_group_limit_fails_and_names_the_group(
    mlx_metallib: Callable[[str, str], Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The issue's acceptance case: mlx-metal 0.32.4 for macOS 26, a group limit it breaks."""
    metallib = mlx_metallib("0.32.4", "macosx_26_0_arm64")  # cached: no download
    groups = _groups(str(metallib), capsys)
    _budget(
        tmp_path,
        """[project]
name = "demo"

[[tool.metallib-builder.budget]]
name = "mlx macOS 26"
target = "mlx-metal==0.32.4"
platform = "macosx_26_0_arm64"
max-size = "250MB"
max-functions = 20000
groups = { quantized = "30MB", gemm = "40MB" }
""",
        "pyproject.toml",
    )
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(["budget", "--format", "json"], capsys)
    assert code == 1
    assert err.splitlines()[-1] == (
        f"error: budget exceeded: mlx macOS 26: group quantized is "
        f"{human_size(groups['quantized'])}, limit 30.00 MB"
    )
    verdicts = {(c["key"], c["group"]): c for c in json.loads(out)["verdicts"]}
    assert verdicts[("max-size", None)]["value"] == os.stat(metallib).st_size
    # named as the budget's target names it, not by the cache folder the wheel was unpacked to
    assert verdicts[("max-size", None)]["measured_in"] == ["mlx-metal==0.32.4:mlx/lib/mlx.metallib"]
    assert verdicts[("groups", "quantized")]["value"] == groups["quantized"] > 30_000_000
    assert verdicts[("groups", "gemm")]["value"] == groups["gemm"]
    assert [c["passed"] for c in verdicts.values()] == [True, True, False, True]
    code, out, _ = run_cli(["budget"], capsys)  # the table: one row per limit, like size-limit
    row = next(line for line in out.splitlines() if "quantized" in line)
    assert "FAIL" in row and human_size(groups["quantized"]) in row and "30.00 MB" in row


def test_budget_file_found_upward_glob_summed_and_every_limit_checked(
    write_metallib: Callable[..., Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first = write_metallib("libs/a.metallib", LIB)
    second = write_metallib("libs/b.metallib", GROWN)
    base = tmp_path / "base.json"
    code, out, _ = run_cli(["report", str(first), "--format", "json"], capsys)
    base.write_text(out)
    total = os.stat(first).st_size + os.stat(second).st_size
    functions = len(LIB) + len(GROWN)
    gemm = _groups(str(first), capsys)["gemm"] + _groups(str(second), capsys)["gemm"]
    _budget(
        tmp_path,
        f"""[[budget]]
target = "libs/*.metallib"
max-size = {total}
max-functions = {functions - 1}
groups = {{ gemm = {gemm} }}
base = "base.json"
max-growth = "200%"
""",
    )
    (tmp_path / "deep" / "er").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "deep" / "er")
    code, out, err = run_cli(["budget", "--format", "json"], capsys)
    assert code == 1 and f"max-functions is {functions:,} functions, limit" in err
    doc = json.loads(out)
    assert doc["file"] == str(tmp_path / "metallib-size.toml") and doc["passed"] is False
    assert doc["schema"] == 3 and "checks" not in doc  # schema 2 called the verdicts checks
    values = {c["key"]: (c["value"], c["limit"], c["passed"]) for c in doc["verdicts"]}
    assert values["max-size"] == (total, total, True)  # a limit equal to the value holds
    assert values["groups"] == (gemm, gemm, True)
    assert values["max-functions"] == (functions, functions - 1, False)
    growth = total - os.stat(first).st_size
    assert values["max-growth"] == (growth, 2 * os.stat(first).st_size, True)
    assert next(c for c in doc["verdicts"] if c["key"] == "max-growth")["max_growth"] == "200%"


def test_max_download_is_the_deflate_size_a_zip_stores(
    write_metallib: Callable[..., Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    lib = write_metallib("a.metallib", GROWN * 3)
    with zipfile.ZipFile(tmp_path / "ref.zip", "w", zipfile.ZIP_DEFLATED, compresslevel=6) as z:
        z.write(lib, "a.metallib")
    expected = zipfile.ZipFile(tmp_path / "ref.zip").getinfo("a.metallib").compress_size
    text = f'[[budget]]\ntarget = "a.metallib"\nmax-download-size = {expected - 1}\n'
    path = _budget(tmp_path, text)
    code, out, _ = run_cli(["budget", str(path), "--format", "json"], capsys)
    assert code == 1
    (check,) = json.loads(out)["verdicts"]
    assert (check["key"], check["value"]) == ("max-download-size", expected)


def test_saved_report_with_host_library_counts_it_in_max_total_size(
    write_metallib: Callable[..., Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A build with JIT families ships its host library: max-total-size counts it, max-size
    (the metallib) does not."""
    lib = write_metallib("a.metallib", LIB)
    code, out, _ = run_cli(["report", str(lib), "--format", "json"], capsys)
    doc = json.loads(out)
    doc["jit_units"] = [
        {"name": "rope", "embedded_bytes": 900, "host_bytes": None, "kernel_count": 2}
    ]
    doc["host_library"] = {
        "path": "libhost.so",
        "file_size": 50_000,
        "measured_by": None,
        "shared_bytes": None,
        "unattributed_bytes": None,
    }
    (tmp_path / "saved.json").write_text(json.dumps(doc))
    size = os.stat(lib).st_size
    path = _budget(
        tmp_path,
        f'[[budget]]\ntarget = "saved.json"\nmax-size = {size}\nmax-total-size = {size + 49_999}\n',
    )
    code, out, err = run_cli(["budget", str(path), "--format", "json"], capsys)
    assert code == 1 and "max-total-size is" in err
    values = {c["key"]: c["value"] for c in json.loads(out)["verdicts"]}
    assert values == {"max-size": size, "max-total-size": size + 50_000}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            'target = "a.metallib"\nmax-szie = "1MB"',
            "unknown key 'max-szie'; did you mean 'max-size'?",
        ),
        ('max-size = "1MB"', "'target' is missing"),
        ('target = "a.metallib"', "no limit; give any of max-size"),
        ('target = "a.metallib"\nmax-size = "lots"', "'max-size': 'lots' is not a size"),
        (
            'target = "a.metallib"\nmax-size = -5',
            "'max-size': -5: a size limit must not be negative",
        ),
        ('target = "a.metallib"\nmax-functions = "many"', "'max-functions' must be a count"),
        ('target = "a.metallib"\ngroups = {}', "'groups' must be a table of group = limit"),
        ('target = "a.metallib"\ngroups = { gemm = "big" }', "groups: 'gemm': 'big' is not a size"),
        ('target = "a.metallib"\nmax-growth = "1%"', "'max-growth' needs 'base'"),
        ('target = "a.metallib"\nbase = "b.json"\nmax-growth = "x%"', "'x%' is not a percentage"),
        (
            'target = "a.metallib"\nbase = "b.json"\nmax-growth = "nan%"',
            "'nan%' is not a percentage",
        ),
        (
            'target = "a.metallib"\nbase = "b.json"\nmax-growth = "inf%"',
            "'inf%' is not a percentage",
        ),
        ('target = "a.metallib"\nby = "colour"\nmax-size = 1', "'by' must be one of"),
        ('target = "a.metallib"\nby = "source"\ngroups = { x = 1 }', "needs 'source-dir'"),
        ('target = "none/*.metallib"\nmax-size = 1', "target 'none/*.metallib' matches no file"),
        (
            'target = "a.metallib"\ngroups = { gemmm = 1 }',
            "no group 'gemmm' in a.metallib by kernel; closest: gemm",
        ),
    ],
)
def test_bad_budget_exits_2_naming_the_key(
    text: str,
    message: str,
    write_metallib: Callable[..., Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_metallib("a.metallib", LIB)
    path = _budget(tmp_path, "[[budget]]\n" + text + "\n")
    code, out, err = run_cli(["budget", str(path)], capsys)
    assert code == 2 and out == ""
    *progress, last = err.strip().splitlines()  # progress lines, then one error line
    assert all(line.startswith("budgets: ") for line in progress)
    assert last.startswith(f"error: {path}: [[budget]] #1") and message in last, last


def test_budget_file_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(["budget"], capsys)
    assert code == 2 and "no budget found in" in err and "[[tool.metallib-builder.budget]]" in err
    (tmp_path / "pyproject.toml").write_text("[tool.metallib-builder]\nbudgets = []\n")
    code, _, err = run_cli(["budget"], capsys)
    assert code == 2 and "unknown key 'budgets'; did you mean 'budget'?" in err
    (tmp_path / "metallib-size.toml").write_text("[[budget]]\n")
    code, _, err = run_cli(["budget"], capsys)
    assert code == 2 and "budgets in both metallib-size.toml and pyproject.toml" in err
    (tmp_path / "pyproject.toml").unlink()
    (tmp_path / "metallib-size.toml").write_text("[[budget]\n")
    code, _, err = run_cli(["budget"], capsys)
    assert code == 2 and "invalid TOML" in err and err.count("\n") == 1


def test_a_limit_has_one_name_in_budgets_and_compare() -> None:
    """A budget key that compare also gates on is the compare option's name without ``--``."""
    from builder.cli.size import compare_command
    from builder.size.budget_file import _LIMITS

    options = {o for p in compare_command.params for o in p.opts}
    shared = [key for key in _LIMITS if key not in ("max-functions", "groups")]
    assert shared and all(f"--{key}" in options for key in shared), (shared, options)
