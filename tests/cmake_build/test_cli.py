"""``build`` and ``presets`` end to end: the pre-configure check, progress, sizes, the build
presets side by side."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from builder.cmake_build.plan import make_plan
from builder.cmake_build.plan_model import BuildRequest
from builder.render.text import human_size

from .conftest import cli_without_metal

ROOT = Path(__file__).resolve().parents[2]


def test_aot_without_compiler_fails_before_configuring(tmp_path: Path) -> None:
    build_dir = tmp_path / "b"
    done = cli_without_metal("build", "--kernels", "arange", "--build-dir", str(build_dir))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr  # one line
    for part in (
        "Metal compiler",
        "xcrun not found",
        "Xcode or the Metal toolchain on macOS and with the Metal Developer Tools for Windows",
        "METAL_COMPILER=/path",
        "--metal-compiler",
    ):
        assert part in done.stderr
    assert not build_dir.exists()
    # no aot-only entry file: --jit alone builds it all, and its plan asks for no compiler
    assert done.stderr.endswith(
        ", or build every unit JIT with --jit (no Metal compiler needed).\n"
    )
    request = BuildRequest().replace(kernels=("arange",), jit=("*",), build_dir=build_dir)
    assert make_plan(request).aot == ()


@pytest.mark.parametrize("asked", [[], ["--jit"], ["--jit", "*"], ["--aot", "tiles/*.metal"]])
def test_without_compiler_the_line_suggests_only_what_builds_the_tree(
    tmp_path: Path, mlx_tree: Path, asked: list[str]
) -> None:
    """On a tree whose metallib.toml keeps entry files AOT, whatever is asked (an AOT build,
    --jit, a split) the one line names them and does not send the user to --jit, which fails
    again on them (issue 37, item 2); what it proposes instead, --jit with --exclude for each,
    plans no AOT unit, so it builds with no Metal compiler. Entry files that write their own
    kernel templates (plain_kernels.metal) are not among them: they are embedded whole."""
    toml = mlx_tree / "metallib.toml"
    toml.write_text(toml.read_text() + 'aot-only = ["tiles/*.metal"]\n')
    build_dir = tmp_path / "b"
    done = cli_without_metal(
        "build", *asked, "--source-dir", str(mlx_tree), "--build-dir", str(build_dir)
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert (
        "[build] aot-only keeps 1 entry file AOT whatever --jit asks, so only that compiler "
        "builds them: tiles/tile_copy.metal. Without it, build the other entry files JIT "
        "(--jit, with --exclude for each of those)" in done.stderr
    )
    assert "every unit JIT" not in done.stderr and "'*'" not in done.stderr
    assert "plain_kernels.metal" not in done.stderr and "MLX" not in done.stderr
    assert not build_dir.exists()
    # the way out it names: no AOT unit left, so no Metal compiler is asked for
    request = BuildRequest().replace(
        source_dir=mlx_tree, jit=("*",), exclude=("tiles/tile_copy.metal",), build_dir=build_dir
    )
    plan = make_plan(request)
    assert plan.aot == () and "plain_kernels.metal" in plan.jit


def test_mixed_without_compiler_fails_too(tmp_path: Path) -> None:
    done = cli_without_metal(
        "build",
        "--kernels",
        "arange,copy",
        "--jit",
        "copy",
        "--build-dir",
        str(tmp_path / "b"),
    )
    assert done.returncode == 2 and "Metal compiler" in done.stderr


def test_bad_selection_is_exit_2(tmp_path: Path) -> None:
    done = cli_without_metal(
        "build", "--jit", "*", "--kernels", "nope", "--build-dir", str(tmp_path / "b")
    )
    assert done.returncode == 2 and "unknown catalog family 'nope'" in done.stderr
    done = cli_without_metal(
        "build", "--kernels", "arange", "--jit", "copy", "--build-dir", str(tmp_path / "b")
    )
    assert (
        done.returncode == 2 and "--jit 'copy' matches no unit of the catalog tree" in done.stderr
    )
    assert not (tmp_path / "b").exists()


@pytest.mark.cmake
def test_cmake_alone_stops_with_the_same_advice(tmp_path: Path) -> None:
    from builder.cmake_build.cmake import find_tool

    env = {k: v for k, v in os.environ.items() if k != "METAL_COMPILER"}
    done = subprocess.run(
        [
            find_tool("cmake"),
            "-S",
            str(ROOT),
            "-B",
            str(tmp_path / "b"),
            "-G",
            "Ninja",
            f"-DCMAKE_MAKE_PROGRAM={find_tool('ninja')}",
            f"-DPython3_EXECUTABLE={sys.executable}",
            "-DMETALLIB_KERNELS=arange",
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode != 0
    text = " ".join((done.stdout + done.stderr).split())
    assert "Xcode or the Metal toolchain on macOS and with the Metal Developer Tools" in text
    assert "-DMETALLIB_COMPILER=/path/to/metal" in text


@pytest.mark.cmake
def test_build_aot_with_standin(tmp_path: Path, standin_tools: Path) -> None:
    metal = standin_tools
    build_dir = tmp_path / "b"
    done = cli_without_metal(
        "build",
        "--kernels",
        "unary,arange",
        "--dtypes",
        "float32",
        "--build-dir",
        str(build_dir),
        "--metal-compiler",
        str(metal),
        "--format",
        "json",
        "-j",
        "2",
    )
    assert done.returncode == 0, done.stderr
    assert "[1/" in done.stderr and "Linking mlx.metallib" in done.stderr  # plain progress lines
    doc = json.loads(done.stdout)  # the JSON report of the build
    assert doc["file_size"] == (build_dir / "mlx.metallib").stat().st_size
    groups = {g["name"]: g for g in doc["groups"]}
    assert set(groups) == {"unary", "arange"} and doc["jit_units"] == []
    assert sum(g["bytes"] for g in groups.values()) + doc["overhead_bytes"] == doc["file_size"]
    # a second run configures nothing and builds nothing
    again = cli_without_metal(
        "build",
        "--kernels",
        "unary,arange",
        "--dtypes",
        "float32",
        "--build-dir",
        str(build_dir),
        "--metal-compiler",
        str(metal),
    )
    assert again.returncode == 0, again.stderr
    assert "Configuring" not in again.stderr and "(0 build steps)" in again.stderr
    assert "measured in" in again.stdout and "manifest.json" in again.stdout.replace("\n", "")


@pytest.mark.cmake
def test_build_prints_what_report_prints(
    tmp_path: Path, mlx_tree: Path, standin_tools: Path, cxx_available: None
) -> None:
    """One JIT build of the MLX-style tree (two entry files AOT): ``build`` prints what
    ``report BUILD_DIR`` prints, table and JSON, and its host-library rows add up to the file."""
    toml = mlx_tree / "metallib.toml"
    toml.write_text(toml.read_text() + 'aot-only = ["plain_kernels.metal", "tiles/*.metal"]\n')
    build_dir = tmp_path / "b"
    args = [
        "build",
        "--source-dir",
        str(mlx_tree),
        "--jit",
        "*",
        "--build-dir",
        str(build_dir),
        "--metal-compiler",
        str(standin_tools),
        "-j",
        "2",
    ]
    built = cli_without_metal(*args)
    assert built.returncode == 0, built.stderr
    reported = cli_without_metal("report", str(build_dir))
    assert reported.returncode == 0, reported.stderr
    assert built.stdout == reported.stdout
    built_json = cli_without_metal(*args, "--format", "json")
    assert "(0 build steps)" in built_json.stderr  # measured again, not built again
    assert json.loads(built_json.stdout) == json.loads(
        cli_without_metal("report", str(build_dir), "--format", "json").stdout
    )
    # the JIT table: every row of the host library, and their total is its file size
    jit = built.stdout[built.stdout.index("JIT unit") :]
    cells = [[c.strip() for c in line.split("│")[1:-1]] for line in jit.splitlines()]
    heading = [c.strip() for c in jit.splitlines()[0].split("┃")][:-1]
    at = heading.index("bytes")  # after "embedding" when an entry file is embedded whole
    rows = {c[0]: c[at] for c in cells if len(c) > at and c[at]}  # JIT unit -> bytes
    host = (build_dir / "libmetal_jit.so").stat().st_size
    assert {"[runtime, shared]", "[not in any symbol]", "total"} <= set(rows), jit
    parts = [int(v.replace(",", "")) for k, v in rows.items() if k != "total"]
    assert sum(parts) == int(rows["total"].replace(",", "")) == host
    jit_entries = [
        u
        for u in json.loads((build_dir / "metal_plan" / "plan.json").read_text())["units"]
        if u["mode"] == "jit"
    ]
    assert len(parts) == len(jit_entries) + 2 >= 4  # each JIT entry file, shared, in no symbol


def _build_arange(tree: Path, build_dir: Path, tools: Path) -> subprocess.CompletedProcess[str]:
    """``build --kernels arange`` of ``tree`` into ``build_dir`` with the stand-in ``tools``."""
    return cli_without_metal(
        *("build", "--kernels", "arange", "--source-dir", str(tree)),
        *("--build-dir", str(build_dir), "--metal-compiler", str(tools)),
    )


@pytest.mark.cmake
def test_build_failure_shows_the_failing_command(
    tmp_path: Path, kernel_tree: Path, standin_tools: Path
) -> None:
    """Ninja's FAILED block comes out as the lines Ninja wrote (it used to be one line with
    literal \\n)."""
    header = kernel_tree / "arange" / "arange.h"
    header.write_text('#include "common/missing.h"\n' + header.read_text())
    build_dir = tmp_path / "b"
    done = _build_arange(kernel_tree, build_dir, standin_tools)
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    at = lines.index(f"error: build failed in {build_dir}:")
    failed, command, *output = lines[at + 1 :]
    assert failed.startswith("FAILED: ")
    assert failed.split()[-1] == str(build_dir / "metal_aot.air" / "arange" / "arange_v_int8.air")
    assert command.startswith(f"cd {build_dir} && ") and "metal-standin" in command
    assert output[-1] == "ninja: build stopped: subcommand failed."
    assert any(
        line.startswith("metal-standin: error: arange_v_int8.metal: does not preprocess: ")
        and line.endswith("common/missing.h: No such file or directory")
        for line in output
    ), output
    assert "\\n" not in done.stderr


@pytest.mark.cmake
def test_cmake_log_keeps_its_lines_and_escapes_within_them(
    tmp_path: Path, kernel_tree: Path, standin_tools: Path
) -> None:
    """CMake refuses a build folder whose name holds an ESC sequence: its log comes out as its
    own lines, and the ESC, in the message and in every line of the log, as ``\\x1b``."""
    build_dir = tmp_path / "b\x1b[31mred"
    done = _build_arange(kernel_tree, build_dir, standin_tools)
    assert done.returncode == 2
    shown = str(build_dir).replace("\x1b", "\\x1b")
    lines = done.stderr.splitlines()
    at = lines.index(f"error: CMake configuration failed in {shown}:")
    log = lines[at + 1 :]
    assert len(log) > 1 and "CMake Generate step failed." in log[-1]
    assert any(shown in line for line in log) and not any("\x1b" in line for line in log)


@pytest.mark.cmake
@pytest.mark.slow
def test_presets_without_compiler_build_jit_only(tmp_path: Path, cxx_available: None) -> None:
    done = cli_without_metal(
        "presets", "--kernels", "arange,copy", "--build-dir", str(tmp_path / "v")
    )
    assert done.returncode == 0, done.stderr
    reason = (
        "not built: jit-off, mixed: no Metal compiler (xcrun not found) — Xcode on macOS, or Metal "
        "tools for Windows"
    )
    assert reason in done.stdout
    assert (done.stdout + done.stderr).count("not built") == 1  # said once, for both
    assert (tmp_path / "v" / "jit-on" / "manifest.json").is_file()
    assert not (tmp_path / "v" / "jit-off").exists()


@pytest.mark.cmake
@pytest.mark.slow
def test_presets_with_standin_side_by_side(
    tmp_path: Path, standin_tools: Path, cxx_available: None
) -> None:
    done = cli_without_metal(
        "presets",
        "--kernels",
        "arange,copy,softmax",
        "--dtypes",
        "float32",
        "--build-dir",
        str(tmp_path / "v"),
        "--metal-compiler",
        str(standin_tools),
        "--format",
        "json",
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert set(data) == {"schema", "presets"}  # build presets, not variants (subsets)
    built = {p["name"]: p for p in data["presets"]}
    assert set(built) == {"jit-on", "jit-off", "mixed"} and all(p["built"] for p in built.values())
    mixed = built["mixed"]["report"]
    modes = {
        **{g["name"]: "aot" for g in mixed["groups"]},
        **{j["name"]: "jit" for j in mixed["jit_units"]},
    }
    assert modes == {"arange": "aot", "copy": "jit", "softmax": "aot"}
    assert built["jit-on"]["report"]["source"]["path"] is None  # no metallib
    assert "host_library" not in built["jit-off"]["report"]  # no JIT unit
    for name, preset in built.items():  # what ships: the files on disk
        files = [tmp_path / "v" / name / f for f in ("mlx.metallib", "libmetal_jit.so")]
        assert preset["shipped_bytes"] == sum(f.stat().st_size for f in files if f.exists())
    # the table: each column adds up to the total shipped, which is the files' sizes (CSV: the
    # mode and the exact bytes of each preset apart; the terminal table: the same in words)
    args = ["presets", "--kernels", "arange,copy,softmax", "--dtypes", "float32"]
    args += ["--build-dir", str(tmp_path / "v"), "--metal-compiler", str(standin_tools)]
    done = cli_without_metal(*args, "--format", "csv")
    assert done.returncode == 0, done.stderr
    records = list(csv.DictReader(io.StringIO(done.stdout)))
    names = [key.removesuffix("_bytes") for key in records[0] if key.endswith("_bytes")]
    assert names == ["jit-on", "jit-off", "mixed"]
    total = next(r for r in records if r["group"] == "total shipped")
    body = records[: records.index(total)]
    assert {r["group"]: r["mixed_mode"] for r in body if r["mixed_mode"]} == {
        name: mode.upper() for name, mode in modes.items()
    }
    for name in names:
        preset = built[name]
        assert int(total[f"{name}_bytes"]) == preset["shipped_bytes"]
        # the rows of the column are the report's figures, which add up to what ships
        report = preset["report"]
        exact = [g["bytes"] for g in report["groups"]]
        if report["source"]["path"] is not None:
            exact.append(report["overhead_bytes"])
        if "host_library" in report:
            host = report["host_library"]
            exact += [j["host_bytes"] for j in report["jit_units"]]
            exact += [host["shared_bytes"], host["unattributed_bytes"]]
        assert sum(exact) == preset["shipped_bytes"]
        shown = [int(r[f"{name}_bytes"]) for r in body if r[f"{name}_bytes"]]
        assert sorted(shown) == sorted(exact)
    done = cli_without_metal(*args)
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if "total shipped" in x)
    shipped = [human_size(built[name]["shipped_bytes"]) for name in names]
    assert [cell.strip() for cell in line.strip("│ ").split("│")] == ["total shipped", *shipped]
