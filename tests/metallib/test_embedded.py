"""Metallibs inside real Mach-O (thin and fat) and ELF binaries, built here with clang and lld:
found by their own header, proven by parsing them whole, located as LLVM's readers locate them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from binaries import elf_sections, link_dylib, link_elf, lipo, macho_sections, nm_addresses

from builder.metallib import open_metallib, verify
from builder.metallib.binary_sections import read_layout
from builder.metallib.embedded import find_metallibs
from builder.metallib.structs import Span


@pytest.fixture(scope="module")
def libs(small_real_metallib: bytes, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two metallibs (a real cut of mlx-metal 0.32.0 and a synthetic format-2.9 one), a copy
    of the real one with one module byte changed (its hash no longer matches), and binaries."""
    from synthetic import synthetic_parts

    from builder.metallib import library_bytes

    folder = tmp_path_factory.mktemp("binaries")
    real = folder / "real.metallib"
    real.write_bytes(small_real_metallib)
    other = folder / "other.metallib"
    other.write_bytes(library_bytes(synthetic_parts(7, seed=2, dynamic=True)))
    broken = bytearray(small_real_metallib)
    with open_metallib(real) as lib:
        broken[lib.columns().module_offsets[0] + 40] ^= 0xFF
    bad = folder / "bad.metallib"
    bad.write_bytes(bytes(broken))
    dylib = link_dylib(
        folder / "libtwo.dylib",
        [
            ("__TEXT,metal_basic", None, real),
            ("__TEXT,__const", "_broken_metallib", bad),
            ("__TEXT,__const", "_second_metallib", other),
        ],
    )
    x86 = link_dylib(
        folder / "libx86.dylib", [("__TEXT,__const", "_x86_metallib", other)], arch="x86_64"
    )
    fat = lipo(folder / "libfat.dylib", [x86, dylib])
    elf = link_elf(folder / "libelf.so", [(".rodata", "elf_metallib", real)])
    return {"real": real, "other": other, "dylib": dylib, "fat": fat, "elf": elf}


def test_thin_dylib_libraries_where_llvm_objdump_puts_them(libs: dict[str, Path]) -> None:
    found = find_metallibs(libs["dylib"])
    sections = macho_sections(libs["dylib"])
    symbols = nm_addresses(libs["dylib"])
    assert [e.number for e in found] == [1, 2, 3]
    first, broken, second = found
    assert first.span == Span(*sections[("", "__TEXT", "metal_basic")])  # the whole section
    assert first.location is not None and first.location.section == "metal_basic"
    assert first.location.segment == "__TEXT" and first.location.section_offset == 0
    const_offset, _ = sections[("", "__TEXT", "__const")]
    # in a thin dylib linked at address 0, a symbol's address is its file offset
    assert second.span.offset == symbols["_second_metallib"] != const_offset
    assert second.location is not None and second.location.symbol == "_second_metallib"
    assert second.location.section_offset == second.span.offset - const_offset
    data = libs["dylib"].read_bytes()
    assert data[first.span.offset : first.span.end] == libs["real"].read_bytes()
    assert data[second.span.offset : second.span.end] == libs["other"].read_bytes()
    with open_metallib(libs["real"]) as lib:
        assert first.function_count == len(lib.columns()) and first.format_version == "2.7"
    assert second.format_version == "2.9"
    assert broken.location is not None and broken.location.symbol == "_broken_metallib"


def test_a_damaged_module_is_found_and_verify_names_it(libs: dict[str, Path]) -> None:
    """The broken copy parses whole (magic, size, every span and chunk are right), so it is a
    library, found and numbered; finding does not hash modules (a report never reads them), so
    its one changed module byte is left to verify, which names that function and only it."""
    [_, broken, _] = find_metallibs(libs["dylib"])
    with open_metallib(libs["dylib"], broken.span) as inner:
        table = inner.columns()
        report = verify(inner)
        assert not report.ok and report.bad_functions == [table.names[0]]
        [problem] = report.problems
        assert problem.message == "module SHA-256 does not match its HASH tag"
        assert problem.offset == table.module_offsets[0]
        assert verify(inner, hashes=False).ok  # what the finder checks
    data = libs["dylib"].read_bytes()[broken.span.offset : broken.span.end]
    assert data != libs["real"].read_bytes() and len(data) == libs["real"].stat().st_size


def test_fat_binary_slices_in_file_order(libs: dict[str, Path]) -> None:
    found = find_metallibs(libs["fat"])
    sections = macho_sections(libs["fat"])
    assert [(e.location.arch, e.location.kind) for e in found if e.location] == [
        ("x86_64", "fat Mach-O"),
        ("arm64", "fat Mach-O"),
        ("arm64", "fat Mach-O"),
        ("arm64", "fat Mach-O"),
    ]
    assert found[1].span == Span(*sections[("arm64", "__TEXT", "metal_basic")])
    x86_const, _ = sections[("x86_64", "__TEXT", "__const")]
    assert found[0].span.offset == x86_const + 3  # after the 3 padding bytes
    assert found[0].location is not None and found[0].location.symbol == "_x86_metallib"
    assert found[3].location is not None and found[3].location.symbol == "_second_metallib"


def test_elf_rodata(libs: dict[str, Path]) -> None:
    [found] = find_metallibs(libs["elf"])
    offset, size, address = elf_sections(libs["elf"])[".rodata"]
    assert found.span.end <= offset + size
    symbol = nm_addresses(libs["elf"])["elf_metallib"]
    assert found.span.offset == offset + (symbol - address) == offset + 1
    assert found.span.size == libs["real"].stat().st_size
    assert found.location is not None and found.location.kind == "ELF"
    assert (found.location.segment, found.location.section) == (None, ".rodata")
    assert found.location.symbol == "elf_metallib"


def test_sections_and_symbols_match_llvm(libs: dict[str, Path]) -> None:
    """The section reader (for item 4's host libraries too) against llvm-objdump and llvm-nm."""
    layout = read_layout(libs["fat"])
    assert layout is not None and layout.kind == "fat Mach-O"
    expected = macho_sections(libs["fat"])
    got = {
        (image.arch, s.segment, s.name): (s.offset, s.size)
        for image in layout.images
        for s in image.sections
    }
    assert got == expected
    arm = layout.images[1]
    nm = nm_addresses(libs["fat"], "arm64")
    text = next(s for s in arm.sections if s.name == "__text")
    by_name = {s.name: s for s in arm.symbols()}
    for name, address in nm.items():
        section = next(s for s in arm.sections if s.address <= address < s.address + s.size)
        assert by_name[name].offset == section.offset + address - section.address
    assert by_name["_answer"].size == text.size  # the only symbol of its section
    elf = read_layout(libs["elf"])
    assert elf is not None
    assert {s.name: (s.offset, s.size, s.address) for s in elf.images[0].sections} == {
        name: value for name, value in elf_sections(libs["elf"]).items() if name != ".bss"
    }


def test_windowed_library_reads_as_the_file_does(libs: dict[str, Path]) -> None:
    """A library opened inside the binary lists and verifies as the same library on its own."""
    [_, _, second] = find_metallibs(libs["dylib"])
    with open_metallib(libs["dylib"], second.span) as inner, open_metallib(libs["other"]) as alone:
        assert inner.file_offset == second.span.offset and alone.file_offset == 0
        assert inner.columns().names == alone.columns().names
        assert inner.columns().hashes == alone.columns().hashes
        assert verify(inner).ok and inner.fileno() is None
        assert inner.find(b"ENDT", 0, inner.file_size) == alone.find(b"ENDT", 0, alone.file_size)


def test_magic_alone_is_not_a_library(tmp_path: Path, libs: dict[str, Path]) -> None:
    """A header whose size fits but whose contents are not a library, and text hits of MTLB."""
    real = libs["real"].read_bytes()
    fake = real[:88] + os.urandom(len(real) - 88)
    path = tmp_path / "blob.bin"
    path.write_bytes(b"MTLBinaryArchive\0" * 40 + fake + b"MTLB" + real)
    [only] = find_metallibs(path)
    assert only.span == Span(17 * 40 + len(fake) + 4, len(real)) and only.location is None
