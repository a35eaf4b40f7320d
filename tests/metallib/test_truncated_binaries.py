"""A binary cut short is refused, naming the part the cut goes through (issue 33 item 1).

Real Mach-O (thin and fat) and ELF files are made here with clang and lld, then cut at a place
LLVM's own readers locate (``llvm-objdump``, ``llvm-readelf``): inside the section holding a
metallib, inside the load commands, inside a section after the metallib, inside the symbol
table, inside a fat file's second slice, inside an ELF file. LLVM refuses each cut copy as
truncated; so must the finder, and every command that reads a binary, with one line and exit 2
that name the part, where it would end and the file's size. The uncut files are read whole by
both."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from binaries import (
    elf_header,
    elf_sections,
    fat_slices,
    llvm_refusal,
    load_commands,
    macho_sections,
)
from clirun import run_cli

from builder.errors import BinaryFormatError, TruncatedBinaryError
from builder.metallib.binary_sections import check_complete, read_layout
from builder.metallib.embedded import find_metallibs


@pytest.fixture(scope="module")
def libs(linked_binaries: dict[str, Path]) -> dict[str, Path]:
    """conftest's linked binaries: a thin arm64 dylib holding a real metallib as its own section
    and a synthetic one in ``__const`` behind a symbol; a fat file of an x86-64 dylib holding
    none and that one; an x86-64 ELF file holding the real one in ``.rodata``."""
    return {
        "dylib": linked_binaries["dylib"],
        "fat": linked_binaries["fat, second slice"],
        "elf": linked_binaries["elf"],
    }


CUTS = [
    "the metallib's section",
    "the load commands",
    "a section after the metallib",
    "the symbol table",
    "the fat file's second slice",
    "an ELF file",
]


def _cut(case: str, libs: dict[str, Path]) -> tuple[Path, int, str, int]:
    """(binary, where to cut it, the words naming the part the cut goes through, the byte offset
    the error gives: where that part ends, or where it starts when it starts past the cut), all
    from LLVM's readers of the whole file."""
    dylib = libs["dylib"]
    sections = macho_sections(dylib)
    basic_at, basic_size = sections[("", "__TEXT", "metal_basic")]
    if case == "the metallib's section":
        end = basic_at + basic_size
        return dylib, basic_at + basic_size // 2, "section __TEXT,metal_basic", end
    if case == "the load commands":
        last = load_commands(dylib)[-1]
        end = last.offset + last.fields["cmdsize"]
        return dylib, (32 + end) // 2, "the load commands", end
    if case == "a section after the metallib":
        at, size, label = max(
            (at, size, f"{segment},{name}")
            for (_, segment, name), (at, size) in sections.items()
            if at >= basic_at + basic_size and size > 1
        )
        return dylib, at + size // 2, f"section {label}", at + size
    if case == "the symbol table":
        [symtab] = [c.fields for c in load_commands(dylib) if c.cmd == "LC_SYMTAB"]
        what = f"the symbol table (LC_SYMTAB, {symtab['nsyms']} entries)"
        return dylib, symtab["symoff"] + 8, what, symtab["symoff"] + 16 * symtab["nsyms"]
    if case == "the fat file's second slice":
        at, size = macho_sections(libs["fat"])[("arm64", "__TEXT", "metal_basic")]
        what = "section __TEXT,metal_basic of the arm64 slice"
        return libs["fat"], at + size // 2, what, at + size
    assert case == "an ELF file"
    offset, size, _ = elf_sections(libs["elf"])[".rodata"]
    table_at = elf_header(libs["elf"])["Start of section headers"]
    return libs["elf"], offset + size // 2, "the section header table", table_at


def _write_cut(binary: Path, cut: int, folder: Path) -> Path:
    path = folder / binary.name
    path.write_bytes(binary.read_bytes()[:cut])
    return path


def test_whole_files_are_read_whole(libs: dict[str, Path]) -> None:
    """The uncut files: LLVM reads them, and so does this tool, with bytes appended too (only
    a part past the end of the file is refused, not bytes behind the last part)."""
    for binary in libs.values():
        assert llvm_refusal(binary) == ""
        check_complete(binary)
        assert find_metallibs(binary)
    longer = libs["dylib"].with_name("longer.dylib")
    longer.write_bytes(libs["dylib"].read_bytes() + bytes(4096))
    assert [e.span for e in find_metallibs(longer)] == [
        e.span for e in find_metallibs(libs["dylib"])
    ]


@pytest.mark.parametrize("case", CUTS)
def test_a_cut_binary_is_refused_naming_the_part_the_cut_goes_through(
    case: str, libs: dict[str, Path], tmp_path: Path
) -> None:
    binary, cut, what, offset = _cut(case, libs)
    assert 0 < cut < binary.stat().st_size
    path = _write_cut(binary, cut, tmp_path)
    said = llvm_refusal(path)
    assert "truncated" in said or "past the end of the file" in said, said
    with pytest.raises(TruncatedBinaryError) as caught:
        find_metallibs(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: byte offset {offset} (0x{offset:x}): truncated")
    assert f": {what}" in message and f"past the end of the file ({cut} bytes)" in message
    assert "\n" not in message


def test_a_cut_that_falls_between_parts_names_the_first_part_past_it(
    libs: dict[str, Path], tmp_path: Path
) -> None:
    """Cut exactly where ``__LINKEDIT`` starts: no part is cut through, the segment is gone."""
    dylib = libs["dylib"]
    [linkedit] = [c.fields for c in load_commands(dylib) if c.segname == "__LINKEDIT"]
    path = _write_cut(dylib, linkedit["fileoff"], tmp_path)
    assert "truncated" in llvm_refusal(path)
    with pytest.raises(TruncatedBinaryError) as caught:
        find_metallibs(path)
    assert str(caught.value) == (
        f"{path}: byte offset {linkedit['fileoff']} (0x{linkedit['fileoff']:x}): truncated or "
        f"malformed: segment __LINKEDIT, {linkedit['filesize']} bytes, would start here, at or "
        f"past the end of the file ({linkedit['fileoff']} bytes)"
    )


def test_a_slice_whose_parts_run_past_its_end_is_malformed(
    libs: dict[str, Path], tmp_path: Path
) -> None:
    """A fat header that gives the first slice fewer bytes than its segments hold, up to where
    its ``__LINKEDIT`` starts: the file is whole, the slice is not."""
    fat = libs["fat"]
    slices = fat_slices(fat)
    assert list(slices) == ["x86_64", "arm64"]
    [linkedit] = [c.fields for c in load_commands(fat, "x86_64") if c.segname == "__LINKEDIT"]
    data = bytearray(fat.read_bytes())
    assert struct.unpack_from(">II", data, 8 + 8) == slices["x86_64"]  # fat_arch offset, size
    struct.pack_into(">I", data, 8 + 12, linkedit["fileoff"])
    path = tmp_path / "short-slice.dylib"
    path.write_bytes(bytes(data))
    with pytest.raises(BinaryFormatError) as caught:
        read_layout(path)
    assert not isinstance(caught.value, TruncatedBinaryError)
    base = slices["x86_64"][0]
    start, end = base + linkedit["fileoff"], base + linkedit["fileoff"] + linkedit["filesize"]
    assert str(caught.value) == (
        f"{path}: byte offset {end} (0x{end:x}): malformed: segment __LINKEDIT of the x86_64 "
        f"slice, from byte {start}, ends here, past the end of its slice (byte {start})"
    )


@pytest.mark.parametrize(
    "command",
    [
        ["list", "{cut}"],
        ["verify", "{cut}", "--member", "#1"],
        ["report", "{cut}", "--format", "json"],
        ["compare", "{whole}", "{cut}"],
        ["budget"],
        ["slim", "{cut}", "--member", "#1", "--keep", "*", "-o", "{out}"],
        ["sources", "{cut}"],
    ],
)
def test_every_command_refuses_a_cut_binary(
    command: list[str],
    libs: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Cut inside the metallib's section, the file lists no library: each command stops with
    one line naming the section, where it would end, and the file's size, and exit 2 (budget
    says which budget file it reads first, as it always does)."""
    binary, cut, _, end = _cut("the metallib's section", libs)
    path = _write_cut(binary, cut, tmp_path)
    out_file = tmp_path / "out.metallib"
    (tmp_path / "pyproject.toml").write_text(
        f'[[tool.metallib-builder.budget]]\ntarget = "{path}"\nmax-size = "1GB"\n'
    )
    monkeypatch.chdir(tmp_path)
    args = [a.format(cut=path, whole=binary, out=out_file) for a in command]
    code, out, err = run_cli(args, capsys)
    start, _ = macho_sections(binary)[("", "__TEXT", "metal_basic")]
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 2 and out == "" and len(errors) == 1, err
    assert err.endswith(
        f"{path}: byte offset {end} (0x{end:x}): truncated: section __TEXT,metal_basic, from "
        f"byte {start}, would end here, past the end of the file ({cut} bytes)\n"
    )
    assert not out_file.exists()


def test_a_file_cut_before_any_library_says_truncated_not_empty(
    libs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Cut inside the header: nothing parses, and the line says the file was cut, not that it
    holds no metallib."""
    path = _write_cut(libs["elf"], 40, tmp_path)
    code, out, err = run_cli(["list", str(path)], capsys)
    assert code == 2 and out == ""
    assert "truncated: the ELF header, from byte 0, would end here" in err
    assert "holds no metallib" not in err
