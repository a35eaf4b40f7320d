"""Every library inside a binary has an identity that survives releases (its symbol, else its
section, else its number in file order), is named ``FILE#IDENTITY`` everywhere, is chosen by
``--member`` in any of its forms, and is paired by it: two releases that reorder, add and remove
libraries pair each library with itself and report the others as added or removed.

The binaries are linked here (clang + ld64.lld, ``tests/binaries.py``); what each library's
identity must be is read independently: its offset by searching the binary for its bytes, the
symbol there by ``llvm-nm``, its section by ``llvm-objdump``."""

from __future__ import annotations

import csv
import io
import json
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest
from binaries import link_dylib, link_elf, lipo, macho_sections, nm_addresses
from clirun import run_cli as run
from synthetic import synthetic_bytes

from builder.metallib.identity import Place, identities

pytestmark = pytest.mark.both_container_codes  # reads containers: both codes

SPECS = {
    "alpha": [("alpha_k", 2000)],
    "beta1": [("beta_a", 3000), ("beta_b", 1000)],
    "beta2": [("beta_a", 3000), ("beta_b", 1000), ("beta_c", 1500)],
    "gamma": [("gamma_k", 4000), ("gamma_j", 700)],
    "basic": [("basic_k", 500)],
}


@pytest.fixture
def made(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Two releases of ``libk.dylib``: release 1 holds alpha, beta, basic; release 2 drops
    alpha, puts gamma first (so the first library of each release is another one) and beta
    gains a function. alpha, beta and gamma carry a symbol in ``__TEXT,__const``; basic is the
    whole of ``__TEXT,metal_basic``, with no symbol (as torch keeps its libraries)."""
    monkeypatch.setenv("METALLIB_BUILDER_CACHE", str(tmp_path / "cache"))
    files = {}
    for name, spec in SPECS.items():
        files[name] = tmp_path / f"{name}.metallib"
        files[name].write_bytes(synthetic_bytes(spec))
    for version, first, beta in ((1, "alpha", "beta1"), (2, "gamma", "beta2")):
        folder = tmp_path / f"r{version}"
        folder.mkdir()
        files[f"r{version}"] = link_dylib(
            folder / "libk.dylib",
            [
                ("__TEXT,__const", f"_k_{first}_metallib", files[first]),
                ("__TEXT,__const", "_k_beta_metallib", files[beta]),
                ("__TEXT,metal_basic", None, files["basic"]),
            ],
        )
    return files


def _reference(binary: Path, blobs: list[Path]) -> list[tuple[int, str]]:
    """(offset, identity) of each library, in file order, read without the tool: the offset is
    where its bytes are, the symbol the one llvm-nm puts at that address (a dylib is linked at
    0), the section llvm-objdump's that holds it; the rule is the documented one."""
    data = binary.read_bytes()
    offsets = sorted(data.find(blob.read_bytes()) for blob in blobs)
    at = {address: name for name, address in nm_addresses(binary).items()}
    sections = macho_sections(binary)

    def section_of(offset: int) -> str:
        return next(
            f"{seg},{sect}"
            for (_, seg, sect), (start, size) in sections.items()
            if start <= offset < start + size
        )

    holders = [section_of(o) for o in offsets]
    out = []
    for number, offset in enumerate(offsets, 1):
        if offset in at:
            out.append((offset, at[offset]))
        elif holders.count(section_of(offset)) == 1:
            out.append((offset, section_of(offset)))
        else:
            out.append((offset, str(number)))
    return out


def _json(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code, out, err = run([*args, "--format", "json"], capsys)
    assert code == 0, err
    doc: dict[str, Any] = json.loads(out)
    return doc


def test_each_library_is_named_by_its_identity(
    made: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    for release, blobs in (
        ("r1", ("alpha", "beta1", "basic")),
        ("r2", ("gamma", "beta2", "basic")),
    ):
        expected = _reference(made[release], [made[b] for b in blobs])
        libraries = _json(["report", str(made[release])], capsys)["libraries"]
        assert isinstance(libraries, list)
        sources = [lib["source"] for lib in libraries]
        assert [s["embedded"]["offset"] for s in sources] == [o for o, _ in expected]
        assert [s["identity"] for s in sources] == [i for _, i in expected]
        assert [s["member"] for s in sources] == [f"libk.dylib#{i}" for _, i in expected]
        assert [s["embedded"]["ordinal"] for s in sources] == [1, 2, 3]
        # what position would pair: the first library of each release is another one
        assert expected[0][1] == f"_k_{blobs[0]}_metallib"
        code, out, err = run(["report", str(made[release]), "--format", "csv"], capsys)
        assert code == 0, err
        files = {row[0] for row in list(csv.reader(io.StringIO(out)))[1:]}
        assert files == {f"{made[release]}#{i}" for _, i in expected}


def test_compare_pairs_by_identity_and_reports_added_and_removed(
    made: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    size = {name: made[name].stat().st_size for name in SPECS}
    doc = _json(["compare", str(made["r1"]), str(made["r2"])], capsys)
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
    doc = _json(["compare", str(made["r1"]), str(copy)], capsys)
    pairs = doc["libraries"]
    assert isinstance(pairs, list)
    assert [p["change"] for p in pairs] == ["paired"] * 3
    assert [(p["base"]["member"], p["head"]["member"]) for p in pairs] == [
        (f"libk.dylib#{i}", f"renamed.dylib#{i}")
        for _, i in _reference(copy, [made[b] for b in ("alpha", "beta1", "basic")])
    ]
    assert all(p["delta_bytes"] == 0 for p in pairs)
    # in wheels too: the dylib renamed between two releases of a package
    wheels = []
    for version, release, name in ((1, "r1", "libk.dylib"), (2, "r2", "libk_v2.dylib")):
        wheel = tmp_path / f"k-{version}.0-cp312-cp312-macosx_14_0_arm64.whl"
        with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.write(made[release], f"k/lib/{name}")
        wheels.append(str(wheel))
    pairs = _json(["compare", *wheels], capsys)["libraries"]
    assert isinstance(pairs, list)
    assert [(p["change"], (p["head"] or p["base"])["member"]) for p in pairs] == [
        ("paired", "k/lib/libk_v2.dylib#_k_beta_metallib"),
        ("paired", "k/lib/libk_v2.dylib#__TEXT,metal_basic"),
        ("added", "k/lib/libk_v2.dylib#_k_gamma_metallib"),
        ("removed", "k/lib/libk.dylib#_k_alpha_metallib"),
    ]


@pytest.mark.parametrize(
    "member",
    [
        "libk.dylib#_k_beta_metallib",
        "_k_beta_metallib",
        "k_beta_metallib",  # the C name: Mach-O's leading underscore left out
        "#_k_beta_metallib",
        "#2",
        "libk.dylib#2",
    ],
)
def test_member_takes_every_form_of_a_name(
    made: dict[str, Path], member: str, capsys: pytest.CaptureFixture[str]
) -> None:
    dylib = str(made["r1"])
    listed = _json(["list", dylib, "--member", member], capsys)
    assert listed["source"] == f"{dylib}#_k_beta_metallib"
    assert [f["name"] for f in listed["functions"]] == [n for n, _ in SPECS["beta1"]]
    reports = _json(["report", dylib, "--member", member], capsys)
    assert reports["source"]["identity"] == "_k_beta_metallib"


def test_member_refuses_what_names_several_or_none(
    made: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    dylib = str(made["r1"])
    code, _, err = run(["list", dylib, "--member", "libk.dylib"], capsys)
    assert code == 2 and err.count("\n") == 1
    assert "'libk.dylib' names 3 metallibs; give the whole name" in err
    assert "libk.dylib#__TEXT,metal_basic" in err
    code, _, err = run(["report", dylib, "--member", "_k_gamma_metallib"], capsys)
    assert code == 2 and err.count("\n") == 1
    assert "no metallib '_k_gamma_metallib' (it holds: libk.dylib#_k_alpha_metallib, " in err
    # compare: a library one side lacks is added or removed; neither side has it: an error
    base, head = str(made["r1"]), str(made["r2"])
    doc = _json(["compare", base, head, "--member", "_k_gamma_metallib"], capsys)
    assert doc["change"] == "added" and doc["base"] is None
    code, _, err = run(["compare", base, head, "--member", "_k_delta_metallib"], capsys)
    assert code == 2 and "no metallib '_k_delta_metallib' in" in err


def test_wheel_members_are_named_as_unzip_lists_them(
    made: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder called ``metallibs`` inside the wheel is only a folder; a ``.metallib`` member is
    chosen by its path or its unique base name, a binary's library by ``PATH#IDENTITY`` or the
    binary's base name with it; a wheel holding one metallib takes its path too."""
    wheel = tmp_path / "w-1.0-cp312-cp312-macosx_14_0_arm64.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.write(made["alpha"], "a/metallibs/b/x.metallib")
        archive.write(made["gamma"], "c/y.metallib")
        archive.write(made["r1"], "k/lib/libk.dylib")
        archive.writestr("a/__init__.py", "")
    listed = [n for n in zipfile.ZipFile(wheel).namelist() if n.endswith((".metallib", ".dylib"))]
    libraries = _json(["report", str(wheel)], capsys)["libraries"]
    assert isinstance(libraries, list)
    members = [lib["source"]["member"] for lib in libraries]
    assert members[:2] == listed[:2]
    assert members[2:] == [
        f"{listed[2]}#{i}"
        for _, i in _reference(made["r1"], [made[b] for b in ("alpha", "beta1", "basic")])
    ]
    for member, spec in (
        ("a/metallibs/b/x.metallib", "alpha"),
        ("x.metallib", "alpha"),
        ("c/y.metallib", "gamma"),
        ("k/lib/libk.dylib#_k_beta_metallib", "beta1"),
        ("libk.dylib#_k_beta_metallib", "beta1"),
        ("k/lib/libk.dylib#3", "basic"),
    ):
        doc = _json(["list", str(wheel), "--member", member], capsys)
        assert [f["name"] for f in doc["functions"]] == [n for n, _ in SPECS[spec]], member
    one = tmp_path / "mlx-1.0-py3-none-macosx_14_0_arm64.whl"
    with zipfile.ZipFile(one, "w") as archive:
        archive.write(made["basic"], "mlx/lib/mlx.metallib")
    for member in ("mlx/lib/mlx.metallib", "mlx.metallib"):
        code, out, err = run(["verify", str(one), "--member", member], capsys)
        assert code == 0 and out.startswith("OK: "), err


def test_a_report_saved_before_identities_pairs_by_them(
    made: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A schema-2 report saved before identities named libraries ``BINARY#N``: its libraries
    get their identity from the place they recorded (symbol, section), so release 2 pairs
    with it as with release 1 itself."""
    saved = _json(["report", str(made["r1"])], capsys)
    libraries = saved["libraries"]
    assert isinstance(libraries, list)
    for number, lib in enumerate(libraries, 1):
        del lib["source"]["identity"], lib["source"]["embedded"]["ordinal"]
        lib["source"]["member"] = f"libk.dylib#{number}"
    old = tmp_path / "old.json"
    old.write_text(json.dumps(saved))
    fresh = _json(["compare", str(made["r1"]), str(made["r2"])], capsys)
    legacy = _json(["compare", str(old), str(made["r2"])], capsys)
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
        [check] = json.loads(out)["checks"]
        assert check["value"] == (grown if member.endswith("beta_metallib") else size["gamma"])
        return code, out

    assert check("_k_beta_metallib", grown)[0] == 0
    assert check("_k_beta_metallib", grown - 1)[0] == 1
    assert check("_k_gamma_metallib", size["gamma"] - 1)[0] == 1


def test_shared_sections_fat_slices_and_elf(
    made: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two unnamed libraries in one section are named by their number; a section that holds
    one library in each slice of a fat binary is qualified by the slice's architecture; an ELF
    library by its symbol."""
    shared = link_dylib(
        tmp_path / "libshared.dylib",
        [
            ("__TEXT,__const", None, made["alpha"]),
            ("__TEXT,__const", None, made["gamma"]),
            ("__TEXT,metal_one", None, made["basic"]),
        ],
    )
    expected = _reference(shared, [made[b] for b in ("alpha", "gamma", "basic")])
    assert [i for _, i in expected] == ["1", "2", "__TEXT,metal_one"]
    libraries = _json(["report", str(shared)], capsys)["libraries"]
    assert isinstance(libraries, list)
    assert [lib["source"]["identity"] for lib in libraries] == [i for _, i in expected]
    thin = [
        link_dylib(tmp_path / f"{arch}.dylib", [("__TEXT,metal", None, made["basic"])], arch=arch)
        for arch in ("arm64", "x86_64")
    ]
    fat = lipo(tmp_path / "fat.dylib", thin)
    slices = sorted(arch for (arch, seg, sect) in macho_sections(fat) if sect == "metal")
    libraries = _json(["report", str(fat)], capsys)["libraries"]
    assert isinstance(libraries, list)
    assert sorted(lib["source"]["identity"] for lib in libraries) == [
        f"__TEXT,metal@{arch}" for arch in slices
    ]
    elf = link_elf(tmp_path / "libk.so", [(".rodata", "k_alpha_metallib", made["alpha"])])
    doc = _json(["report", str(elf)], capsys)
    assert doc["source"]["member"] == "libk.so#k_alpha_metallib"


def test_identity_rule() -> None:
    """The rule on places as binaries report them: a symbol names one library alone, else its
    section, else its number; a name the assembler made, or one that would read as a number or
    hold ``#``, names nothing."""
    assert identities(
        [
            Place("arm64", "_a", "__TEXT,__const"),
            Place("arm64", "_dup", "__TEXT,s1"),
            Place("arm64", "_dup", "__TEXT,s2"),
            Place("arm64", "ltmp3", "__TEXT,s3"),
            Place("arm64", "$d.1", "__TEXT,__const"),
            Place("arm64", "12", "__TEXT,s4"),
            Place("arm64", "x#y", "__TEXT,__const"),
            Place(None, None, None),
        ]
    ) == ["_a", "__TEXT,s1", "__TEXT,s2", "__TEXT,s3", "5", "__TEXT,s4", "7", "8"]
    assert identities([Place("arm64", "_k", None), Place("x86_64", "_k", None)]) == [
        "_k@arm64",
        "_k@x86_64",
    ]


def test_the_html_page_says_which_library_is_on_one_side_only(
    made: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import re

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
