"""Libraries are paired by identity: two releases that reorder, add and remove libraries pair
each library with itself and report the others as added or removed, in every format and in the
gates; the same libraries under another file name pair; a report saved before identities
pairs by the place it recorded; a budget's base gives the same library. Expected pairs come
from ``identity_releases.reference`` (llvm-nm, llvm-objdump) and the libraries' own sizes."""

from __future__ import annotations

import json
import re
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest
from clirun import run_cli as run

from .identity_releases import SPECS, cli_json, reference

pytestmark = pytest.mark.both_container_codes  # reads containers: both codes


def test_compare_pairs_by_identity_and_reports_added_and_removed(
    made: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    size = {name: made[name].stat().st_size for name in SPECS}
    doc = cli_json(["compare", str(made["r1"]), str(made["r2"])], capsys)
    pairs = doc["libraries"]
    assert isinstance(pairs, list)
    by = {
        (p["change"], (p["head"] or p["base"])["identity"]): p
        for p in pairs  # the side that holds the library names it
    }
    assert sorted(by) == [
        ("added", "_k_gamma_metallib"),
        ("paired", "__TEXT,metal_basic"),
        ("paired", "_k_beta_metallib"),
        ("removed", "_k_alpha_metallib"),
    ]
    beta = by["paired", "_k_beta_metallib"]
    assert (beta["base"]["file_size"], beta["head"]["file_size"]) == (size["beta1"], size["beta2"])
    assert beta["delta_bytes"] == size["beta2"] - size["beta1"]
    assert [f["name"] for f in beta["added"]["largest"]] == ["beta_c"]
    assert by["paired", "__TEXT,metal_basic"]["delta_bytes"] == 0
    gamma = by["added", "_k_gamma_metallib"]
    assert gamma["base"] is None and gamma["delta_bytes"] == size["gamma"]
    assert gamma["added"]["count"] == 2  # both its functions are new
    alpha = by["removed", "_k_alpha_metallib"]
    assert alpha["head"] is None and alpha["delta_bytes"] == -size["alpha"]

    code, out, err = run(["compare", str(made["r1"]), str(made["r2"])], capsys)
    assert code == 0, err
    assert out.splitlines()[0] == (
        f"libraries: 2 paired, 1 added ({made['r2']}#_k_gamma_metallib), "
        f"1 removed ({made['r1']}#_k_alpha_metallib)"
    )
    code, out, err = run(["compare", str(made["r1"]), str(made["r2"]), "--format", "csv"], capsys)
    assert code == 0, err
    rows = [line.split(",") for line in out.splitlines()]
    assert rows[0][:3] == ["library", "change", "group"]
    changes = {(row[0], row[1]) for row in rows[1:]}
    assert ("libk.dylib#_k_gamma_metallib", "added") in changes
    assert ("libk.dylib#_k_alpha_metallib", "removed") in changes
    code, out, err = run(
        ["compare", str(made["r1"]), str(made["r2"]), "--format", "markdown"], capsys
    )
    assert code == 0, err
    assert "Libraries: 2 paired, 1 added (" in out
    assert "#_k_gamma_metallib` (added library)" in out
    assert "#_k_alpha_metallib` (removed library)" in out


def test_growth_gates_count_an_added_library(
    made: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """A growth limit that beta's growth fits: the added library's bytes exceed it, the removed
    one shrank by all of its own; a size limit is not checked for a library head lacks."""
    size = {name: made[name].stat().st_size for name in SPECS}
    allowed = size["beta2"] - size["beta1"] + 1
    assert size["gamma"] > allowed
    args = ["compare", str(made["r1"]), str(made["r2"]), "--max-growth", str(allowed)]
    code, out, err = run([*args, "--max-size", "10MB", "--format", "json"], capsys)
    assert code == 1, err
    pairs = {p["change"]: p for p in json.loads(out)["libraries"]}
    gates = {
        (change, g["name"]): (g["passed"], g["message"])
        for change, p in pairs.items()
        for g in p["gates"]
    }
    assert (
        gates["added", "--max-growth"][0] is False
        and pairs["added"]["delta_bytes"] == (size["gamma"])
    )
    assert "_k_gamma_metallib (added library) grew by +" in gates["added", "--max-growth"][1]
    assert gates["removed", "--max-growth"][0] is True and pairs["removed"]["delta_bytes"] == (
        -size["alpha"]
    )
    assert "_k_alpha_metallib (removed library) grew by -" in gates["removed", "--max-growth"][1]
    assert ("removed", "--max-size") not in gates and gates["added", "--max-size"][0] is True
    paired = [
        g for p in json.loads(out)["libraries"] if p["change"] == "paired" for g in p["gates"]
    ]
    assert len(paired) == 4 and all(g["passed"] for g in paired)
    assert "_k_gamma_metallib (added library)" in err and "size gate failed" in err


def test_the_same_libraries_under_another_file_name_pair(
    made: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / "renamed.dylib"
    shutil.copyfile(made["r1"], copy)
    doc = cli_json(["compare", str(made["r1"]), str(copy)], capsys)
    pairs = doc["libraries"]
    assert isinstance(pairs, list)
    assert [p["change"] for p in pairs] == ["paired"] * 3
    assert [(p["base"]["member"], p["head"]["member"]) for p in pairs] == [
        (f"libk.dylib#{i}", f"renamed.dylib#{i}")
        for _, i in reference(copy, [made[b] for b in ("alpha", "beta1", "basic")])
    ]
    assert all(p["delta_bytes"] == 0 for p in pairs)
    # in wheels too: the dylib renamed between two releases of a package
    wheels = []
    for version, release, name in ((1, "r1", "libk.dylib"), (2, "r2", "libk_v2.dylib")):
        wheel = tmp_path / f"k-{version}.0-cp312-cp312-macosx_14_0_arm64.whl"
        with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.write(made[release], f"k/lib/{name}")
        wheels.append(str(wheel))
    pairs = cli_json(["compare", *wheels], capsys)["libraries"]
    assert isinstance(pairs, list)
    assert [(p["change"], (p["head"] or p["base"])["member"]) for p in pairs] == [
        ("paired", "k/lib/libk_v2.dylib#_k_beta_metallib"),
        ("paired", "k/lib/libk_v2.dylib#__TEXT,metal_basic"),
        ("added", "k/lib/libk_v2.dylib#_k_gamma_metallib"),
        ("removed", "k/lib/libk.dylib#_k_alpha_metallib"),
    ]


def test_a_report_saved_before_identities_pairs_by_them(
    made: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A schema-2 report saved before identities named libraries ``BINARY#N``: its libraries
    get their identity from the place they recorded (symbol, section), so release 2 pairs
    with it as with release 1 itself."""
    saved = cli_json(["report", str(made["r1"])], capsys)
    libraries = saved["libraries"]
    assert isinstance(libraries, list)
    for number, lib in enumerate(libraries, 1):
        del lib["source"]["identity"], lib["source"]["embedded"]["ordinal"]
        lib["source"]["member"] = f"libk.dylib#{number}"
    old = tmp_path / "old.json"
    old.write_text(json.dumps(saved))
    fresh = cli_json(["compare", str(made["r1"]), str(made["r2"])], capsys)
    legacy = cli_json(["compare", str(old), str(made["r2"])], capsys)
    assert isinstance(fresh["libraries"], list) and isinstance(legacy["libraries"], list)

    def summary(doc: list[dict[str, Any]]) -> list[tuple[object, ...]]:
        return [(p["change"], p["delta_bytes"], (p["head"] or p["base"])["identity"]) for p in doc]

    assert summary(legacy["libraries"]) == summary(fresh["libraries"])
    assert legacy["libraries"][0]["base"]["member"] == "libk.dylib#_k_beta_metallib"


def test_budget_measures_growth_against_the_same_library_of_the_base(
    made: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``member`` with a ``base`` that holds several libraries: growth is against its partner
    (the whole base would make any library look smaller), and all of a library the base lacks."""
    size = {name: made[name].stat().st_size for name in SPECS}
    grown = size["beta2"] - size["beta1"]
    budget = tmp_path / "metallib-size.toml"

    def check(member: str, limit: int) -> tuple[int, str]:
        budget.write_text(
            f'[[budget]]\ntarget = "{made["r2"]}"\nmember = "{member}"\n'
            f'base = "{made["r1"]}"\nmax-growth = "{limit}"\n'
        )
        code, out, err = run(["budget", str(budget), "--format", "json"], capsys)
        assert code in (0, 1), err
        [check] = json.loads(out)["verdicts"]
        assert check["value"] == (grown if member.endswith("beta_metallib") else size["gamma"])
        return code, out

    assert check("_k_beta_metallib", grown)[0] == 0
    assert check("_k_beta_metallib", grown - 1)[0] == 1
    assert check("_k_gamma_metallib", size["gamma"] - 1)[0] == 1


def test_the_html_page_says_which_library_is_on_one_side_only(
    made: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "diff.html"
    code, _, err = run(["compare", str(made["r1"]), str(made["r2"]), "-o", str(page)], capsys)
    assert code == 0, err
    found = re.search(
        r'<script type="application/json" id="report-data">(.*?)</script>',
        page.read_text(encoding="utf-8"),
        re.DOTALL,
    )
    assert found is not None
    libraries = json.loads(found.group(1))["libraries"]
    one_side = {lib["change"]: lib for lib in libraries if lib["change"] != "paired"}
    added, removed = one_side["added"], one_side["removed"]
    assert added["title"] == f"{made['r2']}#_k_gamma_metallib (added library)"
    assert added["base"]["label"] == "(not in base)" and added["base"]["file_size"] == 0
    assert added["base"]["origin"]["metallib"] is None
    assert removed["label"] == "(not in head)" and removed["file_size"] == 0
    assert removed["base"]["label"] == f"{made['r1']}#_k_alpha_metallib"
    assert removed["fn"]["bytes"] == [-1]  # its one function: absent in head
