"""Every library inside a binary has an identity that survives releases (its symbol, else its
section, else its number in file order), is named ``FILE#IDENTITY`` everywhere and is chosen
by ``--member`` in any of its forms; a wheel's members are named as ``unzip -l`` lists them.
Expected identities come from ``identity_releases.reference`` (llvm-nm, llvm-objdump)."""

from __future__ import annotations

import csv
import io
import zipfile
from pathlib import Path

import pytest
from binaries import link_dylib, link_elf, lipo, macho_sections
from clirun import run_cli as run

from builder.metallib.binary_sections import Place, identities

from .identity_releases import SPECS, cli_json, reference

pytestmark = pytest.mark.both_container_codes  # reads containers: both codes


def test_each_library_is_named_by_its_identity(
    made: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    for release, blobs in (
        ("r1", ("alpha", "beta1", "basic")),
        ("r2", ("gamma", "beta2", "basic")),
    ):
        expected = reference(made[release], [made[b] for b in blobs])
        libraries = cli_json(["report", str(made[release])], capsys)["libraries"]
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
        rows = list(csv.reader(io.StringIO(out)))[1:]
        named = {f"{made[release]}#{i}" for _, i in expected}
        assert {row[0] for row in rows if row[1] != "binary part"} == named
        # the binary's own account (its parts) names each library the same way
        parts = [row for row in rows if row[1] == "binary part"]
        assert {row[0] for row in parts} == {str(made[release])}
        assert {row[2] for row in parts if "#" in row[2]} == named


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
    listed = cli_json(["list", dylib, "--member", member], capsys)
    assert listed["source"] == f"{dylib}#_k_beta_metallib"
    assert [f["name"] for f in listed["functions"]] == [n for n, _ in SPECS["beta1"]]
    reports = cli_json(["report", dylib, "--member", member], capsys)
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
    doc = cli_json(["compare", base, head, "--member", "_k_gamma_metallib"], capsys)
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
    libraries = cli_json(["report", str(wheel)], capsys)["libraries"]
    assert isinstance(libraries, list)
    members = [lib["source"]["member"] for lib in libraries]
    assert members[:2] == listed[:2]
    assert members[2:] == [
        f"{listed[2]}#{i}"
        for _, i in reference(made["r1"], [made[b] for b in ("alpha", "beta1", "basic")])
    ]
    for member, spec in (
        ("a/metallibs/b/x.metallib", "alpha"),
        ("x.metallib", "alpha"),
        ("c/y.metallib", "gamma"),
        ("k/lib/libk.dylib#_k_beta_metallib", "beta1"),
        ("libk.dylib#_k_beta_metallib", "beta1"),
        ("k/lib/libk.dylib#3", "basic"),
    ):
        doc = cli_json(["list", str(wheel), "--member", member], capsys)
        assert [f["name"] for f in doc["functions"]] == [n for n, _ in SPECS[spec]], member
    one = tmp_path / "mlx-1.0-py3-none-macosx_14_0_arm64.whl"
    with zipfile.ZipFile(one, "w") as archive:
        archive.write(made["basic"], "mlx/lib/mlx.metallib")
    for member in ("mlx/lib/mlx.metallib", "mlx.metallib"):
        code, out, err = run(["verify", str(one), "--member", member], capsys)
        assert code == 0 and out.startswith("OK: "), err


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
    expected = reference(shared, [made[b] for b in ("alpha", "gamma", "basic")])
    assert [i for _, i in expected] == ["1", "2", "__TEXT,metal_one"]
    libraries = cli_json(["report", str(shared)], capsys)["libraries"]
    assert isinstance(libraries, list)
    assert [lib["source"]["identity"] for lib in libraries] == [i for _, i in expected]
    thin = [
        link_dylib(tmp_path / f"{arch}.dylib", [("__TEXT,metal", None, made["basic"])], arch=arch)
        for arch in ("arm64", "x86_64")
    ]
    fat = lipo(tmp_path / "fat.dylib", thin)
    slices = sorted(arch for (arch, seg, sect) in macho_sections(fat) if sect == "metal")
    libraries = cli_json(["report", str(fat)], capsys)["libraries"]
    assert isinstance(libraries, list)
    assert sorted(lib["source"]["identity"] for lib in libraries) == [
        f"__TEXT,metal@{arch}" for arch in slices
    ]
    elf = link_elf(tmp_path / "libk.so", [(".rodata", "k_alpha_metallib", made["alpha"])])
    doc = cli_json(["report", str(elf)], capsys)
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
