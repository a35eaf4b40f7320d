"""The gates on what a library holds, on mlx-metal 0.32.1's two libraries as a user runs them
(issue 35): the macOS 26 library holds the NAX kernels, the macOS 14 one none, and every
maximum-size gate passes the change because the library got smaller. Each verdict is held
against a reference reading of the files (``content_reference``: names, VERS, the header's
deployment target) and against ``slim``'s copy of the macOS 26 library without its NAX
functions, made here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

import pytest
from clirun import run_cli
from support.content_reference import Held, held
from support.real_wheels import libraries_or_skip

from builder.cli.group import main

pytestmark = pytest.mark.realdata

NAX = "*_nax*"


class Mlx(NamedTuple):
    new: Path
    """The macOS 26 library (base of the NAX case)."""
    old: Path
    """The macOS 14 library."""
    slim: Path
    """``slim`` of ``new`` without its NAX functions."""
    ref_new: Held
    ref_old: Held
    ref_slim: Held


@pytest.fixture(scope="module")
def mlx(tmp_path_factory: pytest.TempPathFactory) -> Mlx:
    paths = []
    for platform in ("macosx_26_0_arm64", "macosx_14_0_arm64"):
        (lib,) = libraries_or_skip("mlx-metal==0.32.1", platform)
        assert lib.path is not None
        paths.append(lib.path)
    slim = tmp_path_factory.mktemp("nax") / "no_nax.metallib"
    assert main(["slim", str(paths[0]), "--drop", NAX, "-o", str(slim)]) in (0, None)
    return Mlx(paths[0], paths[1], slim, held(paths[0]), held(paths[1]), held(slim))


def _gates(path: Path) -> dict[str, dict[str, object]]:
    return {g["name"]: g for g in json.loads(path.read_text())["gates"]}


def test_the_nax_case_fails_require_and_passes_the_growth_gates(
    mlx: Mlx, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nax = len(mlx.ref_new.matching(NAX))
    assert nax > 800 and not mlx.ref_old.matching(NAX)  # the reference: NAX in 26 only
    growth = ["--max-growth", "1%", "--fail-on-new-group"]
    code, _, err = run_cli(["compare", str(mlx.new), str(mlx.old), *growth], capsys)
    assert code == 0, err  # the point of the issue: every size gate passes it
    md, js = tmp_path / "size.md", tmp_path / "size.json"
    args = ["compare", str(mlx.new), str(mlx.old), *growth, "--require", f"{NAX}>=1"]
    code, _, err = run_cli([*args, "-o", str(md), "-o", str(js)], capsys)
    assert code == 1
    assert f"--require '{NAX}>=1': " in err
    assert f"holds 0 functions matching '{NAX}' (base: {nax:,}; head lacks '" in err
    lines = md.read_text().splitlines()
    assert lines[:3] == ["<!-- metallib-builder:size-comment -->", "### Metallib size", ""]
    assert lines[3] == f"❌ head holds 0 functions matching `{NAX}` (base: {nax:,})"
    gate = _gates(js)["--require"]
    assert (gate["passed"], gate["value"], gate["limit"], gate["base_value"]) == (False, 0, 1, nax)
    assert (gate["pattern"], gate["at_least"]) == (NAX, True)
    # the NAX functions head left out, named: every one the reference finds in base alone
    lacked = gate["names"]
    assert isinstance(lacked, list) and len(lacked) == nax
    assert set(lacked) == mlx.ref_new.matching(NAX) - set(mlx.ref_old.names)
    first = [n for n in mlx.ref_new.names if n in set(lacked)][:3]
    assert ", ".join(f"'{n}'" for n in first) in err


def test_fail_on_removed_names_every_function_base_had(
    mlx: Mlx, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gone = mlx.ref_new.matching(NAX) - set(mlx.ref_old.names)
    every = set(mlx.ref_new.names) - set(mlx.ref_old.names)  # NAX and the rest
    js, md = tmp_path / "c.json", tmp_path / "c.md"
    args = ["compare", str(mlx.new), str(mlx.old), "--fail-on-removed", NAX]
    code, _, err = run_cli([*args, "-o", str(js), "-o", str(md)], capsys)
    assert code == 1
    gate = _gates(js)["--fail-on-removed"]
    names = gate["names"]
    assert isinstance(names, list) and set(names) == gone and gate["value"] == len(gone)
    # their bytes: the base's own report of each (attribution is held to references elsewhere)
    code, out, _ = run_cli(["report", str(mlx.new), "--format", "json", "--by", "function"], capsys)
    rows = {f["name"]: f["bytes"] for f in json.loads(out)["functions"]}
    assert code == 0 and gate["base_value"] == sum(rows[n] for n in gone)
    assert names == sorted(gone, key=lambda n: (-rows[n], n))  # largest first
    first = ", ".join(f"'{n}'" for n in names[:3])
    assert f"{len(gone):,} '{NAX}' functions removed (" in err
    assert f"): {first} and {len(gone) - 3:,} more" in err
    first_line = md.read_text().splitlines()[3]
    assert first_line.startswith(f"❌ {len(gone):,} `{NAX}` functions removed (")
    # without a glob (after the targets): every function of base that head lacks
    code, out, _ = run_cli(
        ["compare", str(mlx.new), str(mlx.old), "--format", "json", "--fail-on-removed"], capsys
    )
    gate = {g["name"]: g for g in json.loads(out)["gates"]}["--fail-on-removed"]
    assert code == 1 and set(gate["names"]) == every and gate["pattern"] == "*"


def test_platform_gates_on_the_two_libraries(
    mlx: Mlx, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    new, old = mlx.ref_new, mlx.ref_old
    (metal_new,), (metal_old,) = new.metal, old.metal  # one version each, from VERS
    (air_new,), (air_old,) = new.air, old.air
    limits = ["--max-deployment-target", old.deployment_target, "--max-metal-version", metal_old]
    js = tmp_path / "p.json"
    args = ["compare", str(mlx.new), str(mlx.old), *limits, "--fail-on-platform-change"]
    code, _, err = run_cli([*args, "-o", str(js)], capsys)
    gates = _gates(js)
    assert code == 1  # head (macOS 14) holds to 14.0 and Metal 3.1; its platform changed
    assert gates["--max-deployment-target"]["passed"] is True
    assert gates["--max-metal-version"]["passed"] is True
    change = gates["--fail-on-platform-change"]
    assert change["passed"] is False
    assert change["names"] == [
        f"deployment target macOS {new.deployment_target} → {old.deployment_target}",
        f"Metal {metal_new} → {metal_old}",
        f"AIR {air_new} → {air_old}",
    ]
    assert "'s platform changed: deployment target macOS 26.2 → 14.0; " in err
    # the other way round: head (macOS 26) is above both limits
    code, _, err = run_cli(["compare", str(mlx.old), str(mlx.new), *limits], capsys)
    assert code == 1
    assert f"deployment target {new.deployment_target} is above {old.deployment_target}" in err
    assert f"states Metal language {metal_new}, above {metal_old}" in err


def test_a_slim_copy_without_nax_keeps_its_platform_and_fails_require(
    mlx: Mlx, capsys: pytest.CaptureFixture[str]
) -> None:
    nax = mlx.ref_new.matching(NAX)
    assert set(mlx.ref_slim.names) == set(mlx.ref_new.names) - nax  # slim did what it says
    args = ["compare", str(mlx.new), str(mlx.slim), "--format", "json", "--fail-on-removed"]
    code, out, _ = run_cli(
        [*args, "--require", NAX, "--fail-on-platform-change", "--max-growth", "0"], capsys
    )
    gates = {g["name"]: g for g in json.loads(out)["gates"]}
    assert code == 1
    assert gates["--max-growth"]["passed"] is True  # it shrank
    assert gates["--fail-on-platform-change"]["passed"] is True  # same header, same VERS
    assert (gates["--require"]["value"], gates["--require"]["base_value"]) == (0, len(nax))
    assert set(gates["--fail-on-removed"]["names"]) == nax


def test_budget_keys_check_what_compare_checks(
    mlx: Mlx, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nax = len(mlx.ref_new.matching(NAX))
    budget = tmp_path / "metallib-size.toml"
    budget.write_text(
        f"""[[budget]]
name = "macOS 14"
target = "{mlx.old}"
base = "{mlx.new}"
require = ["{NAX}>=1", "steel_gemm*>=100"]
fail-on-removed = "{NAX}"
max-deployment-target = "14.0"
max-metal-version = "3.1"

[[budget]]
name = "macOS 26"
target = "{mlx.new}"
require = ["{NAX}>={nax}"]
min-functions = {len(mlx.ref_new.names)}
max-deployment-target = "14.0"
"""
    )
    code, out, err = run_cli(["budget", str(budget), "--format", "json"], capsys)
    assert code == 1
    rows = {(r["budget"], r["key"], r.get("pattern")): r for r in json.loads(out)["verdicts"]}
    assert json.loads(out)["schema"] == 3
    assert rows["macOS 14", "require", NAX]["value"] == 0
    assert rows["macOS 14", "require", NAX]["base_value"] == nax
    steel = len(mlx.ref_old.matching("steel_gemm*"))
    assert rows["macOS 14", "require", "steel_gemm*"]["value"] == steel >= 100
    assert rows["macOS 14", "require", "steel_gemm*"]["passed"] is True
    assert rows["macOS 14", "fail-on-removed", NAX]["value"] == nax
    assert rows["macOS 14", "max-deployment-target", None]["passed"] is True
    assert rows["macOS 14", "max-metal-version", None]["passed"] is True
    assert rows["macOS 26", "require", NAX]["passed"] is True  # exactly its count
    assert rows["macOS 26", "min-functions", None]["passed"] is True
    dt = rows["macOS 26", "max-deployment-target", None]
    assert (dt["passed"], dt["value_text"], dt["limit_text"]) == (False, "26.2", "14.0")
    assert f"macOS 14 holds 0 functions matching '{NAX}' (base: {nax:,}; head lacks '" in err
    assert "macOS 26's deployment target 26.2 is above 14.0" in err
