"""``report WHEEL --member BINARY``: a wheel's binary member that holds no metallib reported as
a host library, exactly as the binary given itself (issue 26: no ``unzip`` first).

The independent side: the member read out of the wheel with ``zipfile``
(``support.llvm_strings.wheel_member``) and its strings extracted with LLVM's tools, each named
by the header its first lines name, as in tests/size/test_host_sources.py.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from binaries import nm_addresses
from clirun import run_cli
from support.llvm_strings import independent_sources, wheel_member

from builder.inputs import wheels

MLX_HEADER = re.compile(rb"// Auto generated source for (\S+)")
SPEC = "mlx-metal==0.32.1"
MEMBER = "mlx/lib/libmlx.dylib"

pytestmark = pytest.mark.realdata


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    code, out, err = run_cli([*args, "--format", "json"], capsys)
    assert code == 0, err
    doc: dict[str, object] = json.loads(out)
    return doc


def _rows(doc: dict[str, object]) -> dict[str, int]:
    units = doc["jit_units"]
    assert isinstance(units, list)
    return {u["name"]: u["host_bytes"] for u in units}


def test_a_wheel_member_reads_as_the_binary_itself(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], mlx_style: Path, mlx_headers: Path
) -> None:
    """``--member mlx/lib/libmlx.dylib`` of the spec and of the ``.whl``: the rows of ``report``
    of the unzipped dylib, the 12 preambles LLVM finds named by their headers, and a source
    that names the wheel and the member."""
    dylib = wheel_member("mlx-metal", "0.32.1", "libmlx.dylib", tmp_path)
    names = {a: n for n, a in nm_addresses(dylib).items()}
    metal = {a: n for a, n in names.items() if re.fullmatch(r"__ZN3mlx4core5metal\d+\w+Ev", n)}
    wanted: dict[str, int] = {}
    for _, _, raw in independent_sources(dylib, None, metal).values():
        header = MLX_HEADER.search(raw[:4096])
        if b"\n" in raw and header is not None:
            wanted[header.group(1).decode()] = len(raw)
    assert (len(wanted), sum(wanted.values()) - len(wanted)) == (12, 123_132)
    tree = ("--source-dir", str(mlx_style), "-I", str(mlx_headers))
    direct = _json(capsys, "report", str(dylib), *tree)
    host = direct["host_library"]
    assert isinstance(host, dict) and host["file_size"] == dylib.stat().st_size
    wheel = wheels.download_wheel("mlx-metal", "0.32.1", "macosx_14_0_arm64")
    for target in (SPEC, str(wheel)):
        doc = _json(capsys, "report", target, "--member", MEMBER, *tree)
        assert doc["jit_units"] == direct["jit_units"]
        assert {name: _rows(doc)[name] for name in wanted} == wanted
        assert doc["source"] == {
            "path": None,
            "target": target,
            "kind": "spec" if target == SPEC else "wheel",
            "wheel": str(wheel),
            "manifest": None,
            "member": MEMBER,
            "identity": None,
        }
        measured = doc["host_library"]
        assert isinstance(measured, dict) and measured == {**host, "path": measured["path"]}
    # compare takes --member for both sides: one host library each, paired, no change
    doc = _json(capsys, "compare", SPEC, str(wheel), "--member", MEMBER, *tree)
    jit = doc["jit"]
    assert isinstance(jit, dict) and jit["base_bytes"] == jit["head_bytes"] == host["file_size"]
    rest = {"[rest of the host library]": host["unattributed_bytes"]}
    assert {u["name"]: u["head_bytes"] for u in jit["units"]} == {**_rows(direct), **rest}
    assert {u["delta_bytes"] for u in jit["units"]} == {0}


def test_members_that_are_no_host_library(capsys: pytest.CaptureFixture[str]) -> None:
    """A member holding neither a metallib nor a source says so as the binary itself would,
    naming the member; a binary member is named by its path or its unique base name; a name
    the wheel lacks lists what it holds; the metallib member is chosen as ``list --member``
    chooses it; without ``--member`` the wheel's report is its metallib alone."""
    code, out, err = run_cli(["report", SPEC, "--member", "mlx/lib/libjaccl.dylib"], capsys)
    assert code == 2 and out == "" and "Traceback" not in err
    assert f"{SPEC}:mlx/lib/libjaccl.dylib: a Mach-O binary that holds no metallib" in err
    assert "nor run-time source" in err
    by_name = _json(capsys, "report", SPEC, "--member", "libmlx.dylib")
    assert by_name == _json(capsys, "report", SPEC, "--member", MEMBER)
    source = by_name["source"]
    assert isinstance(source, dict) and source["member"] == MEMBER and by_name["host_library"]
    code, out, err = run_cli(["report", SPEC, "--member", "libnone.dylib"], capsys)
    assert code == 2 and "no metallib 'libnone.dylib' (it holds: mlx/lib/mlx.metallib)" in err
    whole = _json(capsys, "report", SPEC)
    source = whole["source"]
    assert isinstance(source, dict) and source["member"] == "mlx/lib/mlx.metallib"
    for member in ("mlx.metallib", "mlx/lib/mlx.metallib"):
        chosen = _json(capsys, "report", SPEC, "--member", member)
        assert chosen == whole and whole["jit_units"] == [] and "host_library" not in whole


def test_a_budget_names_the_member(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``member`` in a budget table: the wheel's host library is what the budget measures, its
    whole file counted by ``max-total-size`` (the bytes ``zipfile`` reads out of the wheel)."""
    size = wheel_member("mlx-metal", "0.32.1", "libmlx.dylib", tmp_path).stat().st_size
    for limit, code_wanted in ((size, 0), (size - 1, 1)):
        budget = tmp_path / "metallib-size.toml"
        budget.write_text(
            f'[[budget]]\ntarget = "{SPEC}"\nmember = "{MEMBER}"\nmax-total-size = {limit}\n'
        )
        code, out, err = run_cli(["budget", str(budget), "--format", "json"], capsys)
        assert code == code_wanted, err
        (check,) = json.loads(out)["verdicts"]
        assert check["value"] == size
