"""Incremental builds: an appended instantiation recompiles one AOT unit; the CLI's two entry points
share a configured tree; a new entry file is noticed; plan.json is rewritten only on change."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from builder.kernels import load_catalog

from .conftest import METAL, ROOT, ninja_exe

pytestmark = pytest.mark.cmake


def _edit_catalog(tree: Path, edit) -> None:  # type: ignore[no-untyped-def]
    path = tree / "catalog.json"
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data, indent=1))


def _sources(build) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {p.name: p.read_text() for p in build.generated_sources()}


def _rebuild_after(build, edit) -> tuple[set[str], set[str], set[str]]:  # type: ignore[no-untyped-def]
    """Edit the catalog, let Ninja reconfigure and build; (recompiled sources that existed,
    recompiled new sources, sources whose text changed or that are new)."""
    before = _sources(build)
    _edit_catalog(build.kernel_dir, edit)
    build.reset_log()
    build.ninja()
    after = _sources(build)
    compiled = build.compiled_sources()
    changed = {n for n, text in after.items() if before.get(n) != text}
    return compiled & set(before), compiled - set(before), changed


def test_an_appended_op_recompiles_one_unit_of_the_family(standin_build) -> None:  # type: ignore[no-untyped-def]
    standin_build.defines = {"METALLIB_KERNELS": "binary", "METALLIB_AOT_CHUNK_SIZE": "40"}
    standin_build.configure()
    standin_build.ninja()
    units = len(standin_build.generated_sources())
    assert units > 20  # binary's 1,848 instantiations in many units

    def append_op(data) -> None:  # type: ignore[no-untyped-def]
        data["families"]["binary"]["ops"]["hypot"] = {"functor": "Hypot", "dtypes": ["float"]}

    old, new, changed = _rebuild_after(standin_build, append_op)
    assert len(old) == 1, old  # one existing unit, not the whole family
    assert changed == old | new
    added = {
        i.host_name
        for i in load_catalog(standin_build.kernel_dir).expand(["binary"])
        if "_hypot_" in i.host_name
    }
    texts = _sources(standin_build)
    assert all(any(f'"{n}"' in texts[s] for n in added) for s in old)
    # a new unit (the 24 instantiations may cross a cut) holds nothing but new instantiations
    for source in new:
        held = [line for line in texts[source].splitlines() if line.startswith("instantiate")]
        assert held and all("_hypot_" in line for line in held)
    assert len(standin_build.calls("link")) == 1
    fam = standin_build.manifest()["units"][0]
    assert added <= set(fam["host_names"]) and len(fam["host_names"]) == 1848 + len(added)


def test_one_instantiation_inserted_mid_family_recompiles_one_unit(standin_build) -> None:  # type: ignore[no-untyped-def]
    standin_build.defines = {"METALLIB_KERNELS": "arange", "METALLIB_AOT_CHUNK_SIZE": "5"}
    standin_build.configure()
    standin_build.ninja()
    assert len(standin_build.generated_sources()) >= 3

    def insert_dtype(data) -> None:  # type: ignore[no-untyped-def]
        numeric = data["dtype_sets"]["numeric"]
        data["dtype_sets"]["arange_types"] = [*numeric[:3], "bool", *numeric[3:]]
        data["families"]["arange"]["dtypes"] = ["arange_types"]

    old, new, changed = _rebuild_after(standin_build, insert_dtype)
    assert len(old) == 1 and not new and changed == old, (old, new, changed)
    names = [i.host_name for i in load_catalog(standin_build.kernel_dir).expand(["arange"])]
    assert len(names) == 12 and "arange_v_bool" in names
    with_bool = [n for n, t in _sources(standin_build).items() if '"arange_v_bool"' in t]
    assert with_bool == sorted(old)


def _cli(*args: str, env: dict[str, str], program: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*program, "build", *args], cwd=ROOT, capture_output=True, text=True, check=False, env=env
    )


def test_alternating_entry_points_do_not_reconfigure(mlx_tree: Path, tmp_path: Path) -> None:
    env = {**os.environ, "NO_COLOR": "1", "METAL_STANDIN_LOG": str(tmp_path / "log")}
    args = (
        "--source-dir",
        str(mlx_tree),
        "--build-dir",
        str(tmp_path / "b"),
        "--metal-compiler",
        str(METAL),
    )
    script = shutil.which("metallib-builder")
    assert script is not None
    python3 = Path(sys.executable).with_name("python3")
    runs = [[script], [sys.executable, "-m", "builder"], [str(python3), "-m", "builder"], [script]]
    first = _cli(*args, env=env, program=runs[0])
    assert first.returncode == 0 and "Configuring" in first.stderr, first.stderr
    marker = tmp_path / "b" / "metallib-builder-settings.json"
    stamp = marker.stat().st_mtime_ns
    for program in runs[1:]:
        again = _cli(*args, env=env, program=program)
        assert again.returncode == 0, again.stderr
        assert "Configuring" not in again.stderr and "(0 build steps)" in again.stderr, program
    assert marker.stat().st_mtime_ns == stamp


def test_a_new_entry_file_is_noticed_and_compiled_alone(mlx_tree: Path, tmp_path: Path) -> None:
    log = tmp_path / "log"
    env = {**os.environ, "NO_COLOR": "1", "METAL_STANDIN_LOG": str(log)}
    args = (
        "--source-dir",
        str(mlx_tree),
        "--build-dir",
        str(tmp_path / "b"),
        "--metal-compiler",
        str(METAL),
    )
    program = [sys.executable, "-m", "builder"]
    assert _cli(*args, env=env, program=program).returncode == 0
    plan = tmp_path / "b" / "metal_plan" / "plan.json"
    stamp = plan.stat().st_mtime_ns
    (mlx_tree / "added.metal").write_text(
        "kernel void added_kernel(device float* x [[buffer(0)]]) { x[0] = 1.0f; }\n"
    )
    log.unlink()
    done = _cli(*args, env=env, program=program)
    assert done.returncode == 0 and "Configuring" in done.stderr, done.stderr
    compiled = [json.loads(line) for line in log.read_text().splitlines()]
    assert [Path(c["source"]).name for c in compiled if c["mode"] == "compile"] == ["added.metal"]
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert {"name": "added.metal", "host_names": ["added_kernel"]}.items() <= {
        "name": "added.metal",
        "host_names": next(
            f["host_names"] for f in manifest["units"] if f["name"] == "added.metal"
        ),
    }.items()
    assert plan.stat().st_mtime_ns != stamp
    stamp = plan.stat().st_mtime_ns
    # reconfiguring with nothing changed leaves the plan (and everything after it) alone
    subprocess.run(["cmake", str(tmp_path / "b")], env=env, capture_output=True, check=True)
    assert plan.stat().st_mtime_ns == stamp


def test_a_plain_configure_depends_on_the_modules_its_planner_ran(standin_build) -> None:  # type: ignore[no-untyped-def]
    """No hand-kept list: the planner names the package modules it ran (planner_modules.txt)
    and Ninja re-runs CMake when one changes. They include every module the plan is made by."""
    from builder.cmake_build import plan

    standin_build.defines = {"METALLIB_KERNELS": "arange"}
    standin_build.configure()
    listed = (standin_build.build_dir / "metal_plan" / plan.PLANNER_MODULES).read_text().split()
    package = Path(plan.__file__).resolve().parents[1]
    assert listed == sorted(listed) and all(Path(m).is_file() for m in listed)
    assert all(Path(m).is_relative_to(package) for m in listed)
    made_by = ["cmake_build/plan.py", "cmake_build/plan_model.py"]
    made_by += ["kernels/catalog_tree.py", "kernels/catalog.py"]
    assert {(package / m).as_posix() for m in made_by} <= set(listed)
    query = subprocess.run(
        [
            ninja_exe(),
            "-C",
            str(standin_build.build_dir),
            "-t",
            "query",
            "build.ninja",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    inputs = {line.strip().removeprefix("| ") for line in query.splitlines()}
    assert set(listed) <= inputs
