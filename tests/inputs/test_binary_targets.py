"""A Mach-O or ELF binary is a TARGET: every command reads the metallibs inside it, named
``BINARY#IDENTITY`` (its symbol, else its section, else its number in file order), so
``compare`` pairs the same library across two releases."""

from __future__ import annotations

import json
import struct
import zipfile
from pathlib import Path

import pytest
from binaries import link_dylib, link_elf, macho_sections
from clirun import run_cli as run
from support.hostile import assert_one_error_line
from synthetic import synthetic_parts

from builder.metallib import library_bytes

pytestmark = pytest.mark.both_container_codes  # reads containers: both codes


def _library(path: Path, count: int, seed: int, *, dynamic: bool = False) -> Path:
    path.write_bytes(library_bytes(synthetic_parts(count, seed=seed, dynamic=dynamic)))
    return path


@pytest.fixture
def release(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Two releases of a dylib holding two metallibs; release 2's second one has 2 more
    functions. Also a wheel shipping release 1's dylib."""
    monkeypatch.setenv("METALLIB_BUILDER_CACHE", str(tmp_path / "cache"))
    made = {}
    for version, extra in ((1, 0), (2, 2)):
        folder = tmp_path / f"r{version}"
        folder.mkdir()
        first = _library(folder / "a.metallib", 5, 1)
        second = _library(folder / "b.metallib", 7 + extra, 2, dynamic=True)
        made[f"a{version}"], made[f"b{version}"] = first, second
        made[f"dylib{version}"] = link_dylib(
            folder / "libkernels.dylib",
            [("__TEXT,metal_basic", None, first), ("__TEXT,__const", "_second", second)],
        )
    wheel = tmp_path / "kern-1.0-cp312-cp312-macosx_14_0_arm64.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.write(made["dylib1"], "kern/lib/libkernels.dylib")
        archive.writestr("kern/__init__.py", "")
    made["wheel"] = wheel
    return made


def test_report_names_and_places_each_library(
    release: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(["report", str(release["dylib1"]), "--format", "json"], capsys)
    assert code == 0, err
    first, second = json.loads(out)["libraries"]
    # named by section (no symbol) and by symbol, as llvm-objdump and the assembly place them
    assert first["source"]["member"] == "libkernels.dylib#__TEXT,metal_basic"
    assert second["source"]["member"] == "libkernels.dylib#_second"
    assert (first["source"]["identity"], second["source"]["identity"]) == (
        "__TEXT,metal_basic",
        "_second",
    )
    assert [d["source"]["embedded"]["ordinal"] for d in (first, second)] == [1, 2]
    assert first["file_size"] == release["a1"].stat().st_size
    assert second["function_count"] == 7
    place = second["source"]["embedded"]
    data = release["dylib1"].read_bytes()
    assert data[place["offset"] : place["offset"] + place["size"]] == release["b1"].read_bytes()
    assert (place["format"], place["segment"], place["section"]) == ("Mach-O", "__TEXT", "__const")
    assert place["symbol"] == "_second"
    assert first["source"]["embedded"]["section"] == "metal_basic"
    code, out, _ = run(["report", str(release["dylib1"])], capsys)
    flat = "".join(out.split())  # the table wraps long lines anywhere
    assert code == 0 and "libkernels.dylib#_second:" in flat
    assert "in__TEXT,__const+3,symbol_second)" in flat and "in__TEXT,metal_basic)" in flat


def test_list_verify_and_slim_choose_with_member(
    release: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dylib = str(release["dylib1"])
    code, _, err = run(["slim", dylib, "--keep", "*", "-o", str(tmp_path / "x.metallib")], capsys)
    assert code == 2 and "--member" in err and "libkernels.dylib#_second" in err
    code, out, err = run(["list", dylib, "--member", "#2", "--format", "json"], capsys)
    assert code == 0, err
    listed = json.loads(out)
    assert listed["source"] == f"{dylib}#_second" and listed["function_count"] == 7
    code, out, _ = run(["verify", dylib, "--member", "libkernels.dylib#1"], capsys)
    assert code == 0 and out.startswith(f"OK: {dylib}#__TEXT,metal_basic: 5 functions")
    out_path = tmp_path / "cut.metallib"
    code, _, err = run(
        ["slim", dylib, "--member", "#2", "--keep", "*", "-o", str(out_path)], capsys
    )
    assert code == 0, err
    # keeping every function rewrites the library exactly: the bytes the binary holds
    assert out_path.read_bytes() == release["b1"].read_bytes()
    code, _, err = run(
        ["slim", dylib, "--member", "#2", "--keep", "kernel_0*", "-o", str(out_path)], capsys
    )
    assert code == 0, err
    code, out, _ = run(["verify", str(out_path)], capsys)
    assert code == 0 and "1 functions" in out


def test_compare_pairs_libraries_across_releases(
    release: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(
        ["compare", str(release["dylib1"]), str(release["dylib2"]), "--format", "json"], capsys
    )
    assert code == 0, err
    doc = json.loads(out)
    pairs = doc["libraries"]
    assert [p["base"]["member"] for p in pairs] == [
        "libkernels.dylib#__TEXT,metal_basic",
        "libkernels.dylib#_second",
    ]
    assert [p["change"] for p in pairs] == ["paired", "paired"]
    growth = [p["head"]["function_count"] - p["base"]["function_count"] for p in pairs]
    assert growth == [0, 2]


def test_wheel_finds_libraries_inside_its_binaries(
    release: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(["report", str(release["wheel"]), "--format", "json"], capsys)
    assert code == 0, err
    members = [lib["source"]["member"] for lib in json.loads(out)["libraries"]]
    assert members == [
        "kern/lib/libkernels.dylib#__TEXT,metal_basic",
        "kern/lib/libkernels.dylib#_second",
    ]
    code, out, err = run(
        ["report", str(release["wheel"]), "--download", "--format", "json"], capsys
    )
    assert code == 0, err
    for lib in json.loads(out)["libraries"]:
        assert 0 < lib["download_bytes"] < lib["file_size"]
        assert "download_member" not in lib  # the dylib is the wheel's file, not the metallib
        assert "kern/lib/libkernels.dylib" in [f["name"] for f in lib["wheel"]["files"]]


def test_budget_and_history_on_a_binary(
    release: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(
        ["history", str(release["dylib1"]), str(release["dylib2"]), "--format", "json"], capsys
    )
    assert code == 0, err
    # a history per library (never their sum: issue 33), each measured in its own library
    first, second = (h["points"] for h in json.loads(out)["libraries"])
    assert [p["bytes"] for p in first] == [release[f"a{n}"].stat().st_size for n in (1, 2)]
    assert [p["bytes"] for p in second] == [release[f"b{n}"].stat().st_size for n in (1, 2)]
    assert first[1]["measured_in"] == [f"{release['dylib2']}#__TEXT,metal_basic"]
    assert second[1]["measured_in"] == [f"{release['dylib2']}#_second"]
    budget = tmp_path / "metallib-size.toml"
    budget.write_text(f'[[budget]]\ntarget = "{release["dylib2"]}"\nmax-functions = 14\n')
    code, out, err = run(["budget", str(budget), "--format", "json"], capsys)
    assert code == 0, (out, err)  # its two libraries hold 5 + 9 functions
    budget.write_text(f'[[budget]]\ntarget = "{release["dylib2"]}"\nmax-functions = 13\n')
    code, out, err = run(["budget", str(budget)], capsys)
    assert code == 1, (out, err)


def test_a_damaged_module_is_reported_by_verify_not_hidden(
    release: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A library inside a binary whose one module byte changed still parses whole: it is found
    and numbered as its intact twin would be, and verify fails on it, naming the function,
    while the intact library beside it verifies."""
    from builder.metallib import open_metallib

    damaged = bytearray(release["b1"].read_bytes())
    with open_metallib(release["b1"]) as lib:
        name, offset = lib.columns().names[3], lib.columns().module_offsets[3]
    damaged[offset + 20] ^= 0xFF
    (tmp_path / "b.metallib").write_bytes(bytes(damaged))
    dylib = link_dylib(
        tmp_path / "libdamaged.dylib",
        [
            ("__TEXT,metal_basic", None, release["a1"]),
            ("__TEXT,__const", "_b", tmp_path / "b.metallib"),
        ],
    )
    code, out, err = run(["report", str(dylib), "--format", "json"], capsys)
    assert code == 0, err
    members = [lib["source"]["member"] for lib in json.loads(out)["libraries"]]
    assert members == ["libdamaged.dylib#__TEXT,metal_basic", "libdamaged.dylib#_b"]
    code, out, _ = run(["verify", str(dylib), "--member", "#1"], capsys)
    assert code == 0 and out.startswith(f"OK: {dylib}#__TEXT,metal_basic: 5 functions")
    code, out, err = run(["verify", str(dylib), "--member", "_b"], capsys)
    assert code == 1 and f"FAIL {name}: " in out and "does not match its HASH tag" in out
    assert out.count("FAIL ") == 1 and f"FAILED: {dylib}#_b: 7 functions" in out
    assert f"1 functions failed verification: {name}" in err


def test_a_binary_without_metallibs_says_what_it_is(
    tmp_path: Path, release: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    other = _library(tmp_path / "x.metallib", 2, 3)
    elf = link_elf(tmp_path / "libnone.so", [(".rodata", "blob", other)])
    data = bytearray(elf.read_bytes())
    data[data.find(b"MTLB") + 100] ^= 0xFF  # a tag size in the function list: it no longer parses
    elf.write_bytes(bytes(data))
    code, _, err = run(["report", str(elf)], capsys)
    assert code == 2 and err.count("\n") == 1
    assert "an ELF binary that holds no metallib" in err and "Traceback" not in err
    named = tmp_path / "renamed.metallib"
    named.write_bytes(release["dylib1"].read_bytes())
    code, _, err = run(["verify", str(named)], capsys)
    assert code == 2 and err.count("\n") == 1
    assert "cf fa ed fe" in err and "a Mach-O binary" in err and "\\\\" not in err


def test_a_library_for_ios_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = bytearray(library_bytes(synthetic_parts(3, seed=4)))
    struct.pack_into("<H", data, 4, 0x0001)  # no macOS flag
    data[11] = 0x82  # target OS: 0x80 | 2, iOS
    struct.pack_into("<HH", data, 12, 16, 0)  # deployment target 16.0
    path = tmp_path / "ios.metallib"
    path.write_bytes(bytes(data))
    code, out, _ = run(["report", str(path)], capsys)
    assert code == 0 and "deploymenttargetiOS16.0;" in "".join(out.split())
    code, out, _ = run(["report", str(path), "--format", "json"], capsys)
    assert json.loads(out)["provenance"]["library"]["platform"] == "iOS"


def test_an_elf_and_a_fat_binary_are_accounted_byte_for_byte(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The parts of each binary add up to its size: the library, then each section less the
    library bytes in it (llvm-readelf / llvm-objdump's sections), then the rest; a fat file's
    sections name their architecture."""
    from binaries import elf_sections, lipo, macho_sections

    from builder.size.attribution import NO_SECTION

    lib = _library(tmp_path / "a.metallib", 3, 1)
    elf = link_elf(tmp_path / "liba.so", [(".rodata", "blob", lib)])
    code, out, err = run(["report", str(elf), "--format", "json"], capsys)
    assert code == 0, err
    [binary] = json.loads(out)["binaries"]
    assert binary["kind"] == "ELF" and binary["binary"] == str(elf)
    assert sum(p["bytes"] for p in binary["parts"]) == elf.stat().st_size
    parts = {p["name"]: p["bytes"] for p in binary["parts"]}
    sections = elf_sections(elf)
    _, rodata_size, _ = sections[".rodata"]
    assert parts[".rodata"] == rodata_size - lib.stat().st_size
    assert parts[NO_SECTION] == elf.stat().st_size - sum(s for _, s, _ in sections.values())
    thin = [
        link_dylib(tmp_path / f"{a}.dylib", [("__TEXT,metal", None, lib)], arch=a)
        for a in ("arm64", "x86_64")
    ]
    fat = lipo(tmp_path / "fat.dylib", thin)
    code, out, err = run(["report", str(fat), "--format", "json"], capsys)
    assert code == 0, err
    [binary] = json.loads(out)["binaries"]
    assert binary["kind"] == "fat Mach-O"
    assert sum(p["bytes"] for p in binary["parts"]) == fat.stat().st_size
    assert [p["library"] for p in binary["parts"]].count(True) == 2
    names = {p["name"] for p in binary["parts"]}
    assert {"arm64 __TEXT,__text", "x86_64 __TEXT,__text"} <= names
    listed = {k: v for k, v in macho_sections(fat).items() if v[0] != 0}
    assert parts.keys() and len(listed) >= 4
    code, out, _ = run(["report", str(fat)], capsys)
    assert code == 0 and "fat Mach-O" in out and "the rest by section" in out


def test_a_cut_binary_is_refused_naming_where_its_library_ends(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 33 item 1, a library's own size: a binary cut inside a library (``head -c``) is
    refused by ``list``, ``verify`` and ``report`` with exit 2 and one line saying truncated,
    naming where the library starts, its declared end and the file's size, also when the cut
    library is the only one (not "holds no metallib"). The library first lies after the Mach-O's
    last section (appended: the load commands are whole), then in its own section, and the
    library on its own, cut, is refused the same way."""
    first = _library(tmp_path / "a.metallib", 5, 1)
    second = _library(tmp_path / "b.metallib", 7, 2, dynamic=True)
    dylib = link_dylib(tmp_path / "libone.dylib", [("__TEXT,__const", "_first", first)])
    whole = dylib.read_bytes() + second.read_bytes()
    start, end = dylib.stat().st_size, len(whole)
    cut = tmp_path / "cut.dylib"
    for keep in (end - 1, start + 100):
        cut.write_bytes(whole[:keep])  # head -c KEEP
        for command in ("list", "verify", "report"):
            code, _, err = run([command, str(cut), "--member", "#1"], capsys)
            line = assert_one_error_line(code, err, "truncated")
            assert f"byte offset {start} " in line and f"to byte {end}," in line
            assert line.endswith(f"the file ends at {keep}")
    alone = link_dylib(tmp_path / "libalone.dylib", [("__TEXT,metal_only", None, second)])
    (offset, size) = macho_sections(alone)[("", "__TEXT", "metal_only")]
    assert size == second.stat().st_size
    cut.write_bytes(alone.read_bytes()[: offset + size // 2])
    for command in ("list", "verify", "report"):
        code, _, err = run([command, str(cut)], capsys)
        line = assert_one_error_line(code, err, str(offset + size // 2))
        assert "holds no metallib" not in line
    cut_library = tmp_path / "cut.metallib"
    cut_library.write_bytes(second.read_bytes()[:500])
    for command in ("list", "verify", "report"):
        code, _, err = run([command, str(cut_library)], capsys)
        assert_one_error_line(code, err, "truncated", "500")
