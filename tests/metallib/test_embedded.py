"""Metallibs inside real Mach-O (thin and fat) and ELF binaries, built here with clang and lld:
found by their own header, proven by parsing them whole, located as LLVM's readers locate them."""

from __future__ import annotations

import os
import random
import struct
from pathlib import Path

import pytest
from binaries import elf_sections, link_dylib, link_elf, lipo, macho_sections, nm_addresses
from hypothesis import given, settings
from support.metallib_headers import GOOD, header, headers, reference

from builder.metallib import Metallib, MetallibFormatError, embedded, open_metallib, verify
from builder.metallib.binary_sections import read_layout
from builder.metallib.embedded import find_metallibs, plausible_header
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
    """The broken copy parses whole (magic, size, every span and piece are right), so it is a
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
        assert verify(inner).ok and inner.file_spans([0])[1] == [second.span.offset]
        assert inner.find(b"ENDT", 0, inner.file_size) == alone.find(b"ENDT", 0, alone.file_size)


def test_magic_alone_is_not_a_library(tmp_path: Path, libs: dict[str, Path]) -> None:
    """A header whose size fits but whose contents are not a library, and text hits of MTLB."""
    real = libs["real"].read_bytes()
    fake = real[:88] + os.urandom(len(real) - 88)
    path = tmp_path / "blob.bin"
    path.write_bytes(b"MTLBinaryArchive\0" * 40 + fake + b"MTLB" + real)
    [only] = find_metallibs(path)
    assert only.span == Span(17 * 40 + len(fake) + 4, len(real)) and only.location is None


@settings(max_examples=400, deadline=None)
@given(head=headers())
def test_header_checks_are_the_reference(head: bytes) -> None:
    """The header checks against a reference written from the format notes, on headers at and
    around where each check turns; a header cut by the end of the file (at least its first 32
    bytes: magic, version, size, the function list's offset) is judged on what is there."""
    assert plausible_header(head) == reference(head)
    fixed = reference(head[:32] + header(GOOD)[32:]) and struct.unpack_from("<Q", head, 16)[0] >= 96
    assert plausible_header(head[:32]) == plausible_header(head[:87]) == fixed
    assert not plausible_header(head[:31])


def _fields(library: bytes) -> list[int]:
    """A library's header fields as ``header`` takes them: version, size, the four regions."""
    return [*struct.unpack_from("<HH", library, 6), *struct.unpack_from("<9Q", library, 16)]


def _count_proofs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The offsets of the candidates ``find_metallibs`` parses whole, from now on."""
    proofs: list[int] = []
    prove = embedded._prove

    def counted(name: str, offset: int, size: int) -> tuple[str, int] | None:
        proofs.append(offset)
        return prove(name, offset, size)

    monkeypatch.setattr(embedded, "_prove", counted)
    return proofs


def test_header_checks_keep_candidates_from_the_whole_parse(
    tmp_path: Path, libs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Copies of a real header with one field wrong (so each check is tried on its own; the size
    fits the file, so the search before the checks parsed them whole), magics back to back, a
    magic before random bytes and text hits never reach the whole parse: it runs once per
    library."""
    proofs = _count_proofs(monkeypatch)
    real, other = libs["real"].read_bytes(), libs["other"].read_bytes()
    good = _fields(real)
    assert plausible_header(header(tuple(good)))
    rng = random.Random(8)
    misses = []
    for index, value in ((0, 0), (0, 10), (1, 100), (3, 89), (4, good[5] - 95), (6, good[5] - 1)):
        fields = list(good)
        fields[index] = value
        misses.append(header(tuple(fields)) + real[88:])
    for index in (7, 9):  # private metadata, bitcode: start one byte before the region ahead ends
        fields = list(good)
        fields[index] = fields[index - 2] + fields[index - 1] - 1
        misses.append(header(tuple(fields)) + real[88:])
    fields = list(good)
    fields[10] = fields[2] - fields[9] + 1  # the bitcode runs one byte past the declared end
    misses.append(header(tuple(fields)) + real[88:])
    noise = b"".join(misses) + b"MTLB" * 1000 + b"MTLBinaryArchive\0" * 40
    noise += b"".join(b"MTLB" + rng.randbytes(rng.randrange(4, 90)) for _ in range(1000))
    path = tmp_path / "noise.bin"
    path.write_bytes(noise + real + noise + other + noise)
    found = find_metallibs(path)
    assert [e.span for e in found] == [
        Span(len(noise), len(real)),
        Span(2 * len(noise) + len(real), len(other)),
    ]
    assert proofs == [e.span.offset for e in found]


def test_headers_that_do_not_parse_are_bounded(
    tmp_path: Path, libs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real header before random bytes passes the checks and fails the whole parse: 16 of
    them are parsed and skipped, the 17th stops the search with one line naming the limit and
    its variable."""
    proofs = _count_proofs(monkeypatch)
    real = libs["real"].read_bytes()
    rng = random.Random(3)
    fakes = [real[:88] + rng.randbytes(len(real) - 88) for _ in range(17)]
    path = tmp_path / "fakes.bin"
    path.write_bytes(b"".join(fakes[:16]) + real)
    [found] = find_metallibs(path)
    assert found.span == Span(16 * len(real), len(real)) and len(proofs) == 17
    path.write_bytes(b"".join(fakes) + real)
    proofs.clear()
    with pytest.raises(MetallibFormatError) as caught:
        find_metallibs(path)
    assert len(proofs) == 17 and caught.value.offset == 16 * len(real)
    message = str(caught.value)
    assert message.startswith(f"{path}: byte offset {16 * len(real)}") and "\n" not in message
    assert "this metallib header and 16 before it" in message
    assert "set METALLIB_BUILDER_MAX_BAD_HEADERS to allow more than 16" in message
    monkeypatch.setenv("METALLIB_BUILDER_MAX_BAD_HEADERS", "17")
    [found] = find_metallibs(path)
    assert found.span == Span(17 * len(real), len(real))


def test_a_library_cut_by_the_end_of_the_file(tmp_path: Path, libs: dict[str, Path]) -> None:
    """A library whose header passes but whose declared size runs past the end of the file
    refuses the file, naming where it starts, its declared end and the file's size, whether a
    library before it was found or not; cut inside the header's first 32 bytes, it is not known
    for a library, and the one before it is all there is."""
    real, other = libs["real"].read_bytes(), libs["other"].read_bytes()
    data = b"\7" * 100 + other + b"\7" * 50 + real
    start = 100 + len(other) + 50
    path = tmp_path / "cut.bin"
    for keep in (len(data) - 1, start + 1000, start + 88, start + 87, start + 32):
        path.write_bytes(data[:keep])
        with pytest.raises(MetallibFormatError) as caught:
            find_metallibs(path)
        assert caught.value.offset == start
        assert str(caught.value) == (
            f"{path}: byte offset {start} (0x{start:x}): truncated: the metallib here declares "
            f"{len(real)} bytes, to byte {start + len(real)}, but the file ends at {keep}"
        )
        path.write_bytes(data[start:keep])  # no library before it
        with pytest.raises(MetallibFormatError, match="truncated"):
            find_metallibs(path)
    path.write_bytes(data[: start + 31])
    assert [e.span for e in find_metallibs(path)] == [Span(100, len(other))]
    path.write_bytes(data)
    assert len(find_metallibs(path)) == 2


def _damaged(library: bytes, how: str) -> bytes:
    """``library`` with one thing wrong that the reader lets through and ``verify`` (without
    hashes) does not: a module wrapper's magic, a metadata piece's ENDT, bytes after the last
    section (the declared size grown to hold them)."""
    data = bytearray(library)
    with Metallib(bytes(library)) as lib:
        table = lib.columns()
        if how == "module wrapper":
            data[table.module_offsets[1]] ^= 0xFF
        elif how == "metadata piece":
            at = table.public_md_offsets[2]
            data[at + 4 : at + 8] = b"ENDX"
        else:
            data += bytes(16)
            struct.pack_into("<Q", data, 16, len(data))
    return bytes(data)


def test_a_library_that_parses_but_fails_verify_is_not_found(
    tmp_path: Path, libs: dict[str, Path]
) -> None:
    """Each damaged copy opens as a library (the reader's checks pass) but fails ``verify``
    without hashes; inside a dylib beside a good library, only the good one is found."""
    good = libs["other"].read_bytes()
    blobs: list[tuple[str, str | None, Path]] = []
    for number, how in enumerate(("module wrapper", "metadata piece", "trailing bytes")):
        bad = _damaged(good, how)
        path = tmp_path / f"bad{number}.metallib"
        path.write_bytes(bad)
        with open_metallib(path) as lib:
            assert len(lib.columns()) == 7
            assert not verify(lib, hashes=False).ok, how
        blobs.append(("__TEXT,__const", f"_bad{number}", path))
    dylib = link_dylib(
        tmp_path / "libmixed.dylib", [*blobs, ("__TEXT,__const", "_good", libs["other"])]
    )
    [found] = find_metallibs(dylib)
    assert found.span.offset == nm_addresses(dylib)["_good"] and found.span.size == len(good)
    assert found.location is not None and found.location.symbol == "_good"
