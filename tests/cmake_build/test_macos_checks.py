"""The macOS workflow (.github/workflows/macos.yml) and the one script its steps run
(scripts/macos_checks.py), run here as the workflow runs it with only the compiler changed: the
stand-in's ``xcrun`` first on PATH, so the script finds ``xcrun -sdk macosx metal`` as on a Mac.

What the steps did is read back from their reports, the stand-in's log of every call, and the
files they wrote, each compared with an independent source: the kernel names written out by hand
from tests/data/mlx_shaped, the host library read through its C API (ctypes,
support.jit_library), the reference inliner. metal_src is built with two families and one dtype
here (the workflow builds all of it) to keep the test short."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.jit_library import JitLibrary
from support.reference_inliner import reference_preamble
from support.shared import shared_folder
from support.workflow_lint import assert_lint_clean

from .conftest import ROOT, XCRUN_DIR

pytestmark = pytest.mark.cmake

WORKFLOW = ROOT / ".github/workflows/macos.yml"
SCRIPT = "scripts/macos_checks.py"
FAST = ["--kernels", "unary,arange", "--dtypes", "float32", "-j", "2"]
"""What the test adds to the workflow's command lines: a smaller metal_src."""
INCLUDE_ROOT = ROOT / "tests/data/mlx_shaped"
KERNELS = INCLUDE_ROOT / "mlx/backend/metal/kernels"


def _mlx_shaped_kernels() -> set[str]:
    """Every kernel of tests/data/mlx_shaped, read off its .metal files by hand."""
    unary = {f"{layout}_{op}{t}" for layout in ("v", "g") for op in ("Abs", "Negative", "Exp")
             for t in ("float16", "float32")}  # fmt: skip
    binary = {f"{layout}_{op}{t}" for layout in ("vv", "sv")
              for op in ("Add", "Multiply", "Maximum")
              for t in ("float16", "float32", "int32")}  # fmt: skip
    arange = {f"arange{t}" for t in ("float16", "float32", "int32")}
    return unary | binary | arange | {"rbits", "rbits_fill"}


def workflow_runs() -> list[str]:
    """The ``run:`` command of every step, in order (each is one line)."""
    runs = []
    for line in WORKFLOW.read_text(encoding="utf-8").splitlines():
        match = re.match(r"^\s*(?:- )?run:\s*(.*)$", line)
        if match:
            assert match.group(1) not in ("|", ">", "|-", ">-"), "a run: block; keep it one line"
            runs.append(match.group(1))
    return runs


def _script_argv(run: str) -> list[str]:
    words = shlex.split(run)
    assert words[:2] == ["python", SCRIPT], run
    return [sys.executable, SCRIPT, *words[2:]]


def _env(path: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "METAL_COMPILER"}
    return {**env, "PATH": path, "NO_COLOR": "1", **extra}


def _standin_path() -> str:
    return f"{XCRUN_DIR}{os.pathsep}{os.environ['PATH']}"


def _run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False
    )


def test_the_workflow_passes_the_schema_and_zizmor() -> None:
    assert_lint_clean(WORKFLOW, "vendor.github-workflows")


def test_every_check_step_runs_the_one_script() -> None:
    """The steps: an install, then the script's aot, jit and tests; every action pinned."""
    runs = workflow_runs()
    assert runs[0].startswith("python -m pip install ") and "-e '.[test]'" in runs[0]
    assert [shlex.split(r)[:3] for r in runs[1:]] == [
        ["python", SCRIPT, step] for step in ("aot", "jit", "tests")
    ]
    uses = re.findall(r"uses:\s*(\S+)(.*)", WORKFLOW.read_text(encoding="utf-8"))
    assert uses and all(re.fullmatch(r"[\w-]+/[\w-]+@[0-9a-f]{40}", u) for u, _ in uses)
    assert all(re.fullmatch(r" # v\d+\.\d+\.\d+", comment) for _, comment in uses)


@pytest.fixture(scope="session")
def steps(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The workflow's aot and jit steps, run once for the test run: their output in
    ``<folder>/<step>.out``, exit status in ``<step>.rc``, the stand-in's log tagged by step."""

    def make(folder: Path) -> None:
        for run in workflow_runs()[1:3]:
            argv = [*_script_argv(run), *FAST, "--work", str(folder / "work")]
            step = argv[2]
            log = str(folder / "standin.log")
            done = _run(argv, _env(_standin_path(), METAL_STANDIN_LOG=log, METAL_STANDIN_TAG=step))
            (folder / f"{step}.out").write_text(done.stdout + done.stderr, encoding="utf-8")
            (folder / f"{step}.rc").write_text(str(done.returncode), encoding="utf-8")

    return shared_folder(tmp_path_factory, "macos-checks", make)


def _step(folder: Path, step: str) -> dict[str, Any]:
    out = (folder / f"{step}.out").read_text(encoding="utf-8")
    assert (folder / f"{step}.rc").read_text() == "0", out
    assert f"{step}: Metal compiler metallib-builder stand-in metal" in out
    report: dict[str, Any] = json.loads((folder / "work" / f"{step}.json").read_text("utf-8"))
    assert report["ok"] is True and report["step"] == step
    return report


def _calls(folder: Path, step: str, mode: str) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in (folder / "standin.log").read_text().splitlines()]
    return [r for r in rows if r["tag"] == step and r["mode"] == mode]


def _manifest(build_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((build_dir / "manifest.json").read_text("utf-8"))
    return data


def test_aot_step_builds_both_trees_with_the_compiler_xcrun_finds(steps: Path) -> None:
    report = _step(steps, "aot")
    by_tree = {r["tree"]: r for r in report["results"]}
    assert sorted(by_tree) == ["metal_src", "mlx_shaped"]
    work = steps / "work"
    from builder.metallib import open_metallib

    with open_metallib(work / "aot-mlx_shaped/mlx.metallib") as library:
        assert {f.name for f in library.functions} == _mlx_shaped_kernels()
    assert by_tree["mlx_shaped"]["kernels"] == len(_mlx_shaped_kernels()) == 35
    catalog = _manifest(work / "aot-metal_src")
    assert [u["name"] for u in catalog["units"]] == ["unary", "arange"]
    assert by_tree["metal_src"]["kernels"] == sum(len(u["host_names"]) for u in catalog["units"])
    compiles = _calls(steps, "aot", "compile")
    shaped = sorted(Path(c["source"]).name for c in compiles if "mlx_shaped" in c["source"])
    assert shaped == ["arange.metal", "binary.metal", "random.metal", "unary.metal"]
    assert {c["sdk"] for c in compiles} == {"macosx"}  # run as xcrun -sdk macosx metal
    assert len(_calls(steps, "aot", "link")) == 2


def test_jit_step_compiles_every_run_time_source_the_host_library_returns(steps: Path) -> None:
    report = _step(steps, "jit")
    work = steps / "work"
    results = {(r["tree"], r["name"]): r for r in report["results"]}
    shaped = {n: r["kind"] for (t, n), r in results.items() if t == "mlx_shaped"}
    headers = ["utils", "unary_ops", "unary", "binary_ops", "binary", "arange"]
    assert shaped == {
        **dict.fromkeys(headers, "preamble"),
        "scatter_rows": "preamble",  # run-time only: in every JIT build
        "random": "whole-file",
    }
    catalog = _manifest(work / "jit-metal_src")
    families = {u["name"]: u["host_names"] for u in catalog["units"]}
    assert (
        sorted(n for t, n in results if t == "metal_src") == sorted(families) == ["arange", "unary"]
    )

    # the files are the host library's own texts: read again through its C API
    sources = work / "jit-metal_src-sources"
    library = JitLibrary(work / "jit-metal_src" / catalog["host_library"])
    for family, names in families.items():
        preamble = library.preamble(family)
        lines = [library.source(n)[len(preamble) :] for n in library.names() if n in names]
        assert (sources / f"{family}.metal").read_text("utf-8") == preamble + "".join(lines)
        assert results[("metal_src", family)]["kernels"] == len(names)
    shaped_dir = work / "jit-mlx_shaped-sources"
    dirs = [INCLUDE_ROOT, KERNELS]
    for name, file in (("random", "random.metal"), ("utils", "utils.h"), ("unary", "unary.h")):
        text = (shaped_dir / f"{name}.metal").read_text("utf-8")
        assert text == reference_preamble(KERNELS / file, dirs, False), name

    # one compile per file, alone, with a depfile naming no project file; linked when it
    # defines kernels, and then holding exactly the recorded ones
    compiles = {Path(c["source"]): c for c in _calls(steps, "jit", "compile")}
    written = sorted([*sources.glob("*.metal"), *shaped_dir.glob("*.metal")])
    assert sorted(compiles) == [p.resolve() for p in written]
    assert all(
        c["argv"][:3] == ["-x", "metal", "-c"] and "-MMD" in c["argv"] for c in compiles.values()
    )
    assert all(c["headers"] == [] for c in compiles.values())
    assert sorted(compiles[(sources / "unary.metal").resolve()]["kernels"]) == sorted(
        families["unary"]
    )
    assert compiles[(shaped_dir / "random.metal").resolve()]["kernels"] == ["rbits", "rbits_fill"]
    assert compiles[(shaped_dir / "binary.metal").resolve()]["kernels"] == []  # templates only
    linked = sorted(Path(c["output"]).name for c in _calls(steps, "jit", "link"))
    assert linked == ["arange.metallib", "random.metallib", "unary.metallib"]
    assert results[("mlx_shaped", "random")]["kernels"] == 2


def test_a_source_the_compiler_rejects_fails_the_step_naming_it(tmp_path: Path) -> None:
    """An ``xcrun`` that runs the stand-in but rejects one run-time source, as Apple's compiler
    would reject Metal it cannot compile: the step exits 1, names the source and the compiler's
    message, and still checks the rest."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    xcrun = bin_dir / "xcrun"
    xcrun.write_text(
        f"#!{sys.executable}\nimport os, sys\nargs = sys.argv[1:]\n"
        "if '-c' in args and 'scatter_rows' in open(args[args.index('-c') + 1]).read():\n"
        "    sys.exit('error: rejected by this compiler')\n"
        f"os.execv(sys.executable, [sys.executable, {str(XCRUN_DIR / 'xcrun')!r}, *args])\n"
    )
    xcrun.chmod(0o755)
    run = workflow_runs()[2]
    argv = [*_script_argv(run), "--tree", "mlx_shaped", "--work", str(tmp_path / "work")]
    done = _run(argv, _env(f"{bin_dir}{os.pathsep}{os.environ['PATH']}"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAIL jit mlx_shaped scatter_rows (preamble)" in done.stdout
    assert "metal -c failed (exit 1): error: rejected by this compiler" in done.stdout
    assert "jit: 8 checks, 1 failed" in done.stdout
    report = json.loads((tmp_path / "work/jit.json").read_text("utf-8"))
    failed = [r["name"] for r in report["results"] if r["findings"]]
    assert report["ok"] is False and failed == ["scatter_rows"]


def test_without_a_metal_compiler_the_step_says_what_is_missing(tmp_path: Path) -> None:
    path = os.pathsep.join(
        p for p in os.environ["PATH"].split(os.pathsep) if not (Path(p) / "xcrun").exists()
    )
    done = _run([*_script_argv(workflow_runs()[1]), "--work", str(tmp_path)], _env(path))
    assert done.returncode == 1
    assert "AOT build needs Apple's Metal compiler" in done.stderr
    assert "xcodebuild -downloadComponent MetalToolchain" in done.stderr
    assert not (tmp_path / "aot.json").exists()


def test_tests_step_runs_pytest_in_the_checkout_and_passes_its_exit_status() -> None:
    argv = _script_argv(workflow_runs()[3])
    node = "tests/test_resources.py::test_checkout_holding_the_working_directory_wins"
    done = _run([*argv, node, "-n0", "-q", "-p", "no:cacheprovider"], _env(os.environ["PATH"]))
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout + done.stderr
    done = _run([*argv, "--no-such-option"], _env(os.environ["PATH"]))
    assert done.returncode == 4, done.stdout  # pytest's usage error, passed on
    assert "unrecognized arguments: --no-such-option" in done.stderr


def _script_module() -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("macos_checks", ROOT / SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_library_is_compared_with_the_recorded_names_exactly() -> None:
    compare = _script_module().compare
    assert compare(["a", "b"], ["b", "a"]) == []
    assert compare(["a", "b", "b", "x"], ["a", "b", "c"]) == [
        "1 recorded kernels missing, e.g. ['c']",
        "1 functions the build did not record, e.g. ['x']",
        "a function name appears twice",
    ]


def test_a_depfile_naming_a_project_file_is_a_finding(tmp_path: Path) -> None:
    """Only files of the checkout count (Apple's own headers are no project files), and the
    compiled source itself does not."""
    reads = _script_module().project_reads
    source = tmp_path / "unary.metal"
    header = KERNELS / "utils.h"
    dep = tmp_path / "unary.d"
    dep.write_text(f"{tmp_path}/unary.air: {source} \\\n  /usr/include/metal/metal_stdlib\n")
    assert reads(dep, source) == []
    spaced = tmp_path / "a dir" / "x.metal"
    dep.write_text(f"x.air: {str(spaced).replace(' ', chr(92) + ' ')} \\\n  {header}\n")
    assert reads(dep, spaced) == [str(header)]
