"""Real macOS wheels whose metallibs live inside Mach-O binaries (torch, metal-flash-sdpa,
metal-linalg) and gpt4all's standalone format-2.6 library: downloaded once, cached. Every number
checked here is read independently: section offsets by llvm-objdump, symbols by llvm-nm, and a
library's size, format and function count from its own header with ``struct``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from binaries import llvm_refusal, macho_sections, nm_addresses, own_header
from clirun import run_cli as run
from support.real_wheels import libraries_or_skip

from builder.metallib import MetallibFormatError
from builder.metallib.embedded import find_metallibs
from builder.size.attribution import NO_SECTION

pytestmark = [pytest.mark.realdata, pytest.mark.slow]


def test_torch_libtorch_cpu_holds_two_libraries_in_their_own_sections() -> None:
    libs = libraries_or_skip("torch==2.14.1", "macosx_14_0_arm64")
    # no symbol starts either library: each is named by the section that holds it alone
    assert [lib.member for lib in libs] == [
        "torch/lib/libtorch_cpu.dylib#__TEXT,metal_basic",
        "torch/lib/libtorch_cpu.dylib#__TEXT,metal_40",
    ]
    dylib = libs[0].path
    assert dylib is not None
    sections = macho_sections(dylib)
    for lib, section, version, functions in (
        (libs[0], "metal_basic", "2.7", 16024),
        (libs[1], "metal_40", "2.9", 16653),
    ):
        assert lib.window is not None and lib.location is not None
        # each library is a whole section of __TEXT
        assert (lib.window.offset, lib.window.size) == sections[("", "__TEXT", section)]
        assert (lib.location.segment, lib.location.section) == ("__TEXT", section)
        assert own_header(dylib, lib.window.offset) == (version, lib.window.size, functions)


def test_metal_flash_sdpa_through_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    [lib] = libraries_or_skip("metal-flash-sdpa==0.1.2", "macosx_11_0_arm64")
    assert lib.path is not None and lib.window is not None and lib.location is not None
    version, size, functions = own_header(lib.path, lib.window.offset)
    symbols = nm_addresses(lib.path)
    assert symbols[lib.location.symbol or ""] == lib.window.offset  # a dylib linked at 0
    [named] = [name for name, address in symbols.items() if address == lib.window.offset]
    code, out, err = run(
        [
            "report",
            "metal-flash-sdpa==0.1.2",
            "--platform",
            "macosx_11_0_arm64",
            "--format",
            "json",
        ],
        capsys,
    )
    assert code == 0, err
    doc = json.loads(out)
    assert (doc["file_size"], doc["function_count"], doc["format_version"]) == (
        size,
        functions,
        version,
    )
    assert doc["source"]["member"] == f"metal_flash_sdpa/_C.cpython-312-darwin.so#{named}"
    assert doc["source"]["identity"] == named
    assert doc["source"]["embedded"]["offset"] == lib.window.offset


def test_metal_linalg_thirteen_libraries_each_named_by_its_symbol() -> None:
    libs = libraries_or_skip("metal-linalg==2.19.0", "macosx_14_0_arm64")
    assert len(libs) == 13
    path = libs[0].path
    assert path is not None
    symbols = nm_addresses(path)
    offsets = [lib.window.offset for lib in libs if lib.window]
    assert offsets == sorted(offsets) and len(offsets) == 13
    for lib in libs:
        assert lib.window is not None and lib.location is not None
        name = lib.location.symbol
        assert name is not None and name.endswith("_metallib")
        assert symbols[name] == lib.window.offset
        # the binary's own length symbol agrees with the library's header
        length_at = symbols[name + "_len"]
        with open(path, "rb") as handle:
            handle.seek(length_at)
            stated = int.from_bytes(handle.read(8), "little")
        assert stated == lib.window.size == own_header(path, lib.window.offset)[1]


def test_gpt4all_standalone_format_2_6(capsys: pytest.CaptureFixture[str]) -> None:
    [lib] = libraries_or_skip("gpt4all==2.8.2", "macosx_10_15_universal2")
    assert lib.path is not None and lib.path.name == "default.metallib" and lib.window is None
    version, size, functions = own_header(lib.path, 0)
    assert version == "2.6" and size == lib.path.stat().st_size
    code, out, err = run(["verify", str(lib.path), "--format", "json"], capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["ok"] and doc["function_count"] == functions and doc["format_version"] == "2.6"


@pytest.mark.parametrize(
    ("spec", "platform"),
    [("torch==2.14.1", "macosx_14_0_arm64"), ("metal-linalg==2.19.0", "macosx_14_0_arm64")],
)
def test_a_binarys_report_accounts_for_every_byte(
    spec: str, platform: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 26 item 3: the parts add up to the file's size; each library part is its own
    header's size; each section part is llvm-objdump's section size less the library bytes
    in it, and the bytes in no section are the file less llvm-objdump's sections."""
    libs = libraries_or_skip(spec, platform)
    code, out, err = run(["report", spec, "--platform", platform, "--format", "json"], capsys)
    assert code == 0, err
    [binary] = json.loads(out)["binaries"]
    path = Path(binary["path"])
    assert binary["file_size"] == path.stat().st_size == sum(p["bytes"] for p in binary["parts"])
    windows = sorted((lib.window.offset, lib.window.size) for lib in libs if lib.window)
    library_parts = [p for p in binary["parts"] if p["library"]]
    assert [p["bytes"] for p in library_parts] == [size for _, size in windows]
    assert [own_header(path, offset)[1] for offset, _ in windows] == [s for _, s in windows]
    # zero-fill sections (__bss, __thread_bss) take no bytes of the file: offset 0 in objdump
    sections = {k: v for k, v in macho_sections(path).items() if v[0] != 0}
    by_name = {p["name"]: p["bytes"] for p in binary["parts"] if not p["library"]}
    for (_, segment, section), (offset, size) in sections.items():
        inside = sum(max(0, min(offset + size, o + s) - max(offset, o)) for o, s in windows)
        assert by_name.get(f"{segment},{section}", 0) == size - inside, (segment, section)
    in_sections = sum(size for _, size in sections.values())
    assert by_name[NO_SECTION] == binary["file_size"] - in_sections


def test_torch_dylib_cut_at_230_mb_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 33 item 1: ``head -c 230000000 libtorch_cpu.dylib`` listed one library and
    verified OK (the cut had taken most of ``metal_40``). A copy of the first 230,000,000 bytes
    of the 386 MB file: llvm-objdump refuses it, and list, verify and report stop with exit 2
    naming the section llvm-objdump puts across the cut, where it would end and the size."""
    libs = libraries_or_skip("torch==2.14.1", "macosx_14_0_arm64")
    dylib = libs[0].path
    assert dylib is not None
    cut = 230_000_000
    [(label, start, end)] = [
        (f"{segment},{name}", offset, offset + size)
        for (_, segment, name), (offset, size) in macho_sections(dylib).items()
        if offset < cut < offset + size
    ]
    path = tmp_path / "libtorch_cpu.dylib"
    try:
        with open(dylib, "rb") as source, open(path, "wb") as copy:
            while copy.tell() < cut:
                copy.write(source.read(min(1 << 24, cut - copy.tell())))
        assert "truncated" in llvm_refusal(path)
        line = (
            f"error: {path}: byte offset {end} (0x{end:x}): truncated: section {label}, from "
            f"byte {start}, would end here, past the end of the file ({cut} bytes)\n"
        )
        for args in (["list"], ["verify", "--member", "#1"], ["report", "--format", "json"]):
            code, out, err = run([args[0], str(path), *args[1:]], capsys)
            assert (code, out, err) == (2, "", line)
    finally:
        path.unlink(missing_ok=True)


def test_metal_linalg_cut_inside_its_fifth_library_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 33 item 1 on a real binary: ``head -c`` through the fifth of metal-linalg's 13
    libraries. The four before it are whole and were found before; the file is refused, naming
    where the fifth starts and ends by its own header and where the file ends, not listed as
    four libraries. The Mach-O header's first 4 bytes are left out of the copy, so the file is
    no binary whose layout refuses it first (the layout's own refusal of a cut binary is the
    torch test above): the library's header alone says it was cut."""
    libs = libraries_or_skip("metal-linalg==2.19.0", "macosx_14_0_arm64")
    path, fifth = libs[0].path, libs[4].window
    assert path is not None and fifth is not None
    _, size, _ = own_header(path, fifth.offset)
    keep = fifth.offset + size // 2
    cut = tmp_path / "_core.bin"
    with open(path, "rb") as source:
        source.seek(4)
        cut.write_bytes(source.read(keep - 4))
    start, ends = fifth.offset - 4, keep - 4
    with pytest.raises(MetallibFormatError) as caught:
        find_metallibs(cut)
    assert caught.value.offset == start
    assert f"to byte {start + size}, but the file ends at {ends}" in str(caught.value)
    code, _, err = run(["list", str(cut), "--member", "#1"], capsys)
    assert code == 2 and err.count("\n") == 1 and str(ends) in err, err
