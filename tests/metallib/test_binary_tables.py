"""Symbol tables, debug entries, fat slices and function starts, read within the file (issue 33
items 7, 9 and 18).

Each hostile file is a real one made here with clang and lld, with one field changed by
``struct.pack_into`` at the place LLVM's readers give (``llvm-objdump --private-headers``,
``llvm-readelf -h``/``-S``, ``llvm-nm -p``). Fuzzing found tracebacks (exit 1) in the symbol
reads after the layout pass: ``LC_SYMTAB nsyms = 0xFFFFFFFF`` (MemoryError), an ELF table at
offset 2^63 (ValueError), a section address of 2^64-1 (struct.error). Each is now one line and
exit 2, or, where only the decoration is wrong, a library found without the symbol."""

from __future__ import annotations

import random
import struct
import subprocess
from pathlib import Path

import pytest
from binaries import (
    cxx_dylib,
    elf_header,
    elf_section_numbers,
    elf_sections,
    fat_slices,
    llvm_refusal,
    load_commands,
    macho_sections,
    nm_addresses,
    tool,
)
from clirun import run_cli
from support.llvm_strings import function_starts

from builder.errors import BinaryFormatError
from builder.metallib.binary_sections import read_layout
from builder.metallib.embedded import find_metallibs


@pytest.fixture(scope="module")
def libs(linked_binaries: dict[str, Path]) -> dict[str, Path]:
    """conftest's linked binaries: a dylib with two metallibs, a plain one, fat files of the
    two in both orders, an ELF file."""
    return linked_binaries


def _patched(binary: Path, folder: Path, *edits: tuple[str, int, int]) -> Path:
    """A copy of ``binary`` with each (struct format, offset, value) packed in."""
    data = bytearray(binary.read_bytes())
    for fmt, offset, value in edits:
        struct.pack_into(fmt, data, offset, value)
    path = folder / f"patched-{binary.name}"
    path.write_bytes(bytes(data))
    return path


def _elf_field(elf: Path, section: str, at: int) -> int:
    """File offset of the field ``at`` bytes into ``section``'s 64-bit section header."""
    header = elf_header(elf)
    number = elf_section_numbers(elf)[section]
    return header["Start of section headers"] + number * header["Size of section headers"] + at


def _refused(path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    code, out, err = run_cli(["list", str(path)], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    return err


# item 7: every hostile table ends in one line and exit 2, or a clean absence


def test_a_symbol_count_of_2_to_the_32_is_refused(
    libs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dylib = libs["dylib"]
    [symtab] = [c for c in load_commands(dylib) if c.cmd == "LC_SYMTAB"]
    path = _patched(dylib, tmp_path, ("<I", symtab.offset + 12, 0xFFFFFFFF))  # nsyms
    assert "truncated or malformed" in llvm_refusal(path)
    start = symtab.fields["symoff"]
    end = start + 16 * 0xFFFFFFFF
    assert _refused(path, capsys) == (
        f"error: {path}: byte offset {end} (0x{end:x}): truncated: the symbol table (LC_SYMTAB, "
        f"4294967295 entries), from byte {start}, would end here, past the end of the file "
        f"({dylib.stat().st_size} bytes)\n"
    )


def test_a_string_table_past_the_file_is_refused(
    libs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dylib = libs["dylib"]
    [symtab] = [c for c in load_commands(dylib) if c.cmd == "LC_SYMTAB"]
    far = 0xFFFFFF00
    path = _patched(dylib, tmp_path, ("<I", symtab.offset + 16, far))  # stroff
    assert "truncated or malformed" in llvm_refusal(path)
    err = _refused(path, capsys)
    assert f"byte offset {far} (0x{far:x}): truncated or malformed: the string table" in err


@pytest.mark.parametrize("section", [".symtab", ".strtab"])
def test_an_elf_table_at_offset_2_to_the_63_is_refused(
    section: str, libs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    elf = libs["elf"]
    path = _patched(elf, tmp_path, ("<Q", _elf_field(elf, section, 24), 1 << 63))  # sh_offset
    assert llvm_refusal(path)
    size = elf_sections(elf)[section][1]
    assert _refused(path, capsys).endswith(
        f"byte offset {1 << 63} (0x{1 << 63:x}): truncated or malformed: section {section}, "
        f"{size} bytes, would start here, at or past the end of the file "
        f"({elf.stat().st_size} bytes)\n"
    )


@pytest.mark.parametrize("offset", [1 << 63, 2**64 - 1])
def test_an_elf_section_name_table_past_the_file_is_refused_by_its_number(
    offset: int, libs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The section name table is read for the names the checks give: at 2^64-1 it was read
    before being checked (OverflowError, a traceback: the fuzz sample's input 2033:17). With no
    names to give, the sections' check refuses it by its number, as llvm-readelf numbers it."""
    elf = libs["elf"]
    number = elf_section_numbers(elf)[".shstrtab"]
    path = _patched(elf, tmp_path, ("<Q", _elf_field(elf, ".shstrtab", 24), offset))
    assert llvm_refusal(path)
    size = elf_sections(elf)[".shstrtab"][1]
    assert _refused(path, capsys).endswith(
        f"byte offset {offset} (0x{offset:x}): truncated or malformed: section {number}, "
        f"{size} bytes, would start here, at or past the end of the file "
        f"({elf.stat().st_size} bytes)\n"
    )


def test_a_section_address_at_the_top_of_memory_loses_only_the_symbol(
    libs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``__const`` (Mach-O) and ``.rodata`` (ELF) moved to address 2^64-1: their bytes stay
    where they were, so the libraries are found where LLVM puts the sections; the symbol no
    longer falls in its section and is not named (struct.error before)."""
    dylib, elf = libs["dylib"], libs["elf"]
    [text] = [c for c in load_commands(dylib) if c.segname == "__TEXT"]
    addr = text.offset + 72 + 80 * text.sectnames.index("__const") + 32  # section_64.addr
    for binary, edit in ((dylib, ("<Q", addr, 2**64 - 1)),
                         (elf, ("<Q", _elf_field(elf, ".rodata", 16), 2**64 - 1))):  # fmt: skip
        path = _patched(binary, tmp_path, edit)
        assert llvm_refusal(path) == ""
        found, whole = find_metallibs(path), find_metallibs(binary)
        assert [e.span for e in found] == [e.span for e in whole]
        assert [e.location.symbol for e in whole if e.location] in (
            [None, "_second_metallib"],
            ["elf_metallib"],
        )
        assert [e.location.symbol for e in found if e.location] in ([None, None], [None])
        code, _, err = run_cli(["list", str(path), "--member", "#1"], capsys)
        assert code == 0, err


def test_load_commands_that_do_not_parse_are_refused(
    libs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A command of no size (a loader would loop on it) and a segment whose section count
    disagrees with its size: both named, each as LLVM refuses it."""
    dylib = libs["dylib"]
    commands = load_commands(dylib)
    number, uuid = next((n, c) for n, c in enumerate(commands) if c.cmd == "LC_UUID")
    path = _patched(dylib, tmp_path, ("<I", uuid.offset + 4, 0))  # cmdsize
    assert f"load command {number} with size less than 8 bytes" in llvm_refusal(path)
    space = sum(c.fields["cmdsize"] for c in commands)
    assert _refused(path, capsys) == (
        f"error: {path}: byte offset {uuid.offset} (0x{uuid.offset:x}): malformed: load "
        f"command {number} (cmdsize 0) does not fit in the {space} bytes of load commands the "
        "header gives\n"
    )
    [text] = [c for c in commands if c.segname == "__TEXT"]
    path = _patched(dylib, tmp_path, ("<I", text.offset + 64, text.fields["nsects"] + 1))
    assert "inconsistent cmdsize" in llvm_refusal(path), llvm_refusal(path)
    assert _refused(path, capsys).endswith(
        ": byte offset 0 (0x0): malformed: the load commands do not parse (Segment size mismatch)\n"
    )


def test_an_elf_class_that_is_neither_32_nor_64_bit_is_refused(
    libs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _patched(libs["elf"], tmp_path, ("B", 4, 3))  # EI_CLASS
    assert "class" in llvm_refusal(path).lower()
    assert _refused(path, capsys) == (
        f"error: {path}: byte offset 4 (0x4): malformed: ELF class 3 and data encoding 1 "
        "(1 or 2 each)\n"
    )


@pytest.mark.parametrize("binary", ["dylib", "elf", "fat, second slice"])
def test_seeded_header_mutations_end_in_a_result_or_one_error(
    binary: str, libs: dict[str, Path], tmp_path: Path
) -> None:
    """300 copies with one to three 32-bit words of the headers, load commands or section
    headers and the symbol tables replaced (0, all ones, a random word): each is read whole,
    sections, symbols and function starts, or refused with the binary layer's error."""
    path = libs[binary]
    data = path.read_bytes()
    if binary == "elf":
        header = elf_header(path)
        table = header["Start of section headers"]
        spans = [(0, 64), (table, header["Number of section headers"] * 64)]
        spans.append(elf_sections(path)[".symtab"][:2])
    else:
        commands = load_commands(path, "arm64" if "fat" in binary else None)
        base = fat_slices(path).get("arm64", (0, 0))[0]
        last = commands[-1]
        spans = [(0, 64), (base, last.offset + last.fields["cmdsize"])]
        [symtab] = [c.fields for c in commands if c.cmd == "LC_SYMTAB"]
        spans.append((base + symtab["symoff"], 16 * symtab["nsyms"]))
    rng = random.Random(33)
    refused = 0
    for _ in range(300):
        copy = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            start, size = rng.choice(spans)
            at = start + rng.randrange(0, max(1, size - 4)) // 4 * 4
            word = rng.choice([0, 0xFFFFFFFF, rng.getrandbits(32)])
            struct.pack_into("<I", copy, at, word)
        mutant = tmp_path / f"mutant-{path.name}"
        mutant.write_bytes(bytes(copy))
        try:
            layout = read_layout(mutant)
            if layout is None:  # the magic (or a fat file's slice count) changed: no binary
                assert copy[:8] != data[:8]
                continue
            for image in layout.images:
                symbols = image.symbols()
                image.names_at(s.offset for s in symbols[:50])
                assert sum(1 for _ in image.function_starts()) <= image.size
        except BinaryFormatError as exc:
            assert "\n" not in str(exc)
            refused += 1
    assert 0 < refused < 300  # the mutations reach both outcomes


# item 18: a fat file with one slice of libraries; debug (stab) entries are no symbols


@pytest.mark.parametrize("fat", ["fat, second slice", "fat, first slice"])
def test_a_universal_binary_where_one_slice_holds_the_libraries(
    fat: str, libs: dict[str, Path]
) -> None:
    path = libs[fat]
    slices = fat_slices(path)
    sections = macho_sections(path)
    found = find_metallibs(path)
    assert [(e.location.kind, e.location.arch) for e in found if e.location] == [
        ("fat Mach-O", "arm64"),
        ("fat Mach-O", "arm64"),
    ]
    assert found[0].span.offset == sections[("arm64", "__TEXT", "metal_basic")][0]
    # a dylib linked at address 0: a symbol's address is its offset in the slice
    second = slices["arm64"][0] + nm_addresses(path, "arm64")["_second_metallib"]
    assert found[1].span.offset == second
    assert found[1].location is not None and found[1].location.symbol == "_second_metallib"
    layout = read_layout(path)
    assert layout is not None
    x86 = next(i for i in layout.images if i.arch == "x86_64")
    answer = slices["x86_64"][0] + nm_addresses(path, "x86_64")["_answer"]
    assert x86.names_at([answer]) == {answer: "_answer"}
    assert layout.names_at([answer, second]) == {answer: "_answer", second: "_second_metallib"}


def test_debug_entries_of_a_g_build_are_not_symbols(tmp_path: Path) -> None:
    """Compiled with ``-g``, ld64.lld writes stab entries (SO, OSO, FUN, GSYM) beside the
    symbols; the symbols are llvm-nm's defined ones, the stabs llvm-nm -a adds are not."""
    source = tmp_path / "debug.cpp"
    source.write_text(
        'extern "C" { int table[64] = {1, 2, 3};\n'
        "int answer(int x) { return table[x & 63] * 3; }\n"
        "static int helper(int x) { return answer(x) + 1; }\n"
        "int use(int x) { return helper(x) * 2; } }\n"
    )
    dylib = cxx_dylib(tmp_path / "libdebug.dylib", [source], flags=("-g",))
    listing = subprocess.run(
        [tool("llvm-nm"), "-a", str(dylib)], capture_output=True, text=True, check=True
    ).stdout
    assert {"SO", "OSO", "FUN"} <= set(listing.split())  # the file has stab entries
    layout = read_layout(dylib)
    assert layout is not None
    [image] = layout.images
    assert sorted(s.name for s in image.symbols()) == sorted(nm_addresses(dylib))


def test_a_stab_entry_that_reads_as_a_section_symbol_names_nothing(
    libs: dict[str, Path], tmp_path: Path
) -> None:
    """``_second_metallib``'s nlist entry made an ``N_BNSYM`` stab (0x2e, whose low bits read
    as N_SECT): llvm-nm -a shows it as a debug entry and llvm-nm no longer lists it, so the
    library is found without a symbol."""
    dylib = libs["dylib"]
    listing = subprocess.run(
        [tool("llvm-nm"), "-a", "-p", str(dylib)], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    index = next(i for i, line in enumerate(listing) if line.endswith(" _second_metallib"))
    [symtab] = [c.fields for c in load_commands(dylib) if c.cmd == "LC_SYMTAB"]
    path = _patched(dylib, tmp_path, ("B", symtab["symoff"] + 16 * index + 4, 0x2E))  # n_type
    debug = subprocess.run(
        [tool("llvm-nm"), "-a", str(path)], capture_output=True, text=True, check=True
    ).stdout
    assert "BNSYM _second_metallib" in " ".join(debug.split())
    assert "_second_metallib" not in nm_addresses(path)
    found = find_metallibs(path)
    assert [e.location.symbol for e in found if e.location] == [None, None]
    layout = read_layout(path)
    assert layout is not None
    assert "_second_metallib" not in {s.name for s in layout.images[0].symbols()}


# item 9: function starts decoded as they are used, bounded by the __TEXT segment


def test_function_starts_are_llvms(tmp_path: Path) -> None:
    source = tmp_path / "starts.cpp"
    source.write_text(
        "".join(f'extern "C" int f{n}(int x) {{ return x * {n + 2} + {n}; }}\n' for n in range(9))
    )
    dylib = cxx_dylib(tmp_path / "libstarts.dylib", [source])
    layout = read_layout(dylib)
    assert layout is not None
    starts = list(layout.images[0].function_starts())
    assert len(starts) == 9 and starts == function_starts(dylib)  # __TEXT at 0: address = offset


def _with_starts(dylib: Path, folder: Path, data: bytes, *, in_linkedit: bool = True) -> Path:
    """``dylib`` with ``LC_FUNCTION_STARTS`` pointing at ``data``, appended to the file and to
    ``__LINKEDIT`` (or left outside it, with ``in_linkedit`` False)."""
    commands = load_commands(dylib)
    [linkedit] = [c for c in commands if c.segname == "__LINKEDIT"]
    [starts] = [c for c in commands if c.cmd == "LC_FUNCTION_STARTS"]
    size = dylib.stat().st_size
    grown = linkedit.fields["filesize"] + (len(data) if in_linkedit else 0)
    path = folder / f"starts-{dylib.name}"
    path.write_bytes(dylib.read_bytes() + data)
    patched = _patched(
        path,
        folder,
        ("<Q", linkedit.offset + 32, grown),  # vmsize
        ("<Q", linkedit.offset + 48, grown),  # filesize
        ("<I", starts.offset + 8, size),  # dataoff
        ("<I", starts.offset + 12, len(data)),  # datasize
    )
    return patched


def test_function_starts_stop_at_the_end_of_the_text_segment(
    libs: dict[str, Path], tmp_path: Path
) -> None:
    """1 MiB of deltas of 1: one start per byte of ``__TEXT`` after its first, then the deltas
    leave the segment and decoding stops there (1.7 GB of Python integers for 42 MB before)."""
    dylib = libs["dylib"]
    [text] = [c.fields for c in load_commands(dylib) if c.segname == "__TEXT"]
    end = text["fileoff"] + text["filesize"]
    assert end < 1 << 20
    path = _with_starts(dylib, tmp_path, b"\x01" * (1 << 20))
    assert llvm_refusal(path) == ""
    layout = read_layout(path)
    assert layout is not None
    starts = layout.images[0].function_starts()
    assert list(starts) == list(range(text["fileoff"] + 1, end))


@pytest.mark.parametrize(
    ("data", "in_linkedit"),
    [(b"\xff" * 4096, True), (b"\x80" * 9 + b"\x01", True), (b"\x04" * 64, False)],
    ids=["endless ULEB128", "a delta of 2^63", "outside __LINKEDIT"],
)
def test_function_starts_that_cannot_be_starts_give_none(
    data: bytes, in_linkedit: bool, libs: dict[str, Path], tmp_path: Path
) -> None:
    path = _with_starts(libs["dylib"], tmp_path, data, in_linkedit=in_linkedit)
    layout = read_layout(path)
    assert layout is not None
    assert list(layout.images[0].function_starts()) == []
