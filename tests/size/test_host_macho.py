"""JIT sizes per unit measured in a Mach-O host library, as in an ELF one (issue 26, item 4).

The host library is this tool's own generated sources, compiled on Linux by Debian's clang for
``arm64-apple-macos14`` (and x86-64) and linked by ``ld64.lld`` into a real ``.dylib``. No Apple
SDK exists here, so only sources that include no standard header compile: a discovered tree's
unit sources (data only) and a catalog family's sources (``metal_jit/embedded.h`` includes
nothing). The runtime part (the preambles' functions, the registry) needs the C++ library and is
left out; the units' sizes do not depend on it.

The reference is read here without the tool: each symbol's address and section from
``llvm-objdump -t``, the sections from ``--private-headers``, the extent of a symbol up to the
next one of its section, names demangled by ``llvm-cxxfilt``, and a unit's namespace as its
generated source declares it.
"""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from binaries import cxx_dylib, lipo, macho_sections, macho_symbols
from clirun import run_cli
from support.whole_file_trees import SHAPES

from builder.cmake_build.plan import make_plan
from builder.cmake_build.plan_model import BuildRequest
from builder.cmake_build.tree_jit import SHARED_SOURCE, generate, unit_source
from builder.jit.preamble import inline_preamble
from builder.jit.writer import stored_pieces, unit_piece
from builder.size.jit_sizes import (
    MACHO_METHOD,
    OTHER,
    JitUnit,
    measure_host,
    symbol_sizes,
    unattributed_bytes,
)


def _scopes(sources: dict[str, Path]) -> dict[str, str]:
    """Namespace -> unit, as each unit's generated source declares it (one namespace each)."""
    found = {}
    for unit, path in sources.items():
        declared = set(
            re.findall(r"^namespace (mbjit_unit_\w+) \{", path.read_text(), re.MULTILINE)
        )
        assert len(declared) == 1, (unit, declared)
        found[declared.pop()] = unit
    return found


def _reference(dylib: Path, sources: dict[str, Path], arch: str | None = None) -> dict[str, int]:
    """Bytes per unit (and "other") by llvm-objdump: a symbol is a unit's when a part of its
    demangled name is the unit's namespace."""
    scopes = _scopes(sources)
    sizes = dict.fromkeys([*sources, "other"], 0)
    for symbol in macho_symbols(dylib, arch):
        parts = symbol.name.split("::")
        owner = next((scopes[p] for p in parts if p in scopes), None)
        sizes[owner or "other"] += symbol.size
    return sizes


def _tree_units(
    tmp_path: Path, shapes: Sequence[str], settings: str = ""
) -> tuple[dict[str, Path], dict[str, int]]:
    """The unit sources of discovered trees (every entry file JIT), generated as the build
    does, keyed ``shape:unit``, and the bytes each embeds (embed.json). Each tree's sources are
    in a namespace of their own (two trees may have units of one name)."""
    sources: dict[str, Path] = {}
    embedded: dict[str, int] = {}
    for shape in shapes:
        root, include_dirs, _ = SHAPES[shape](tmp_path / shape)
        if settings:  # metallib.toml: the interface of the run-time sources
            (root / "metallib.toml").write_text(settings)
        request = BuildRequest().replace(source_dir=root, include_dirs=include_dirs, jit=("*",))
        out = tmp_path / f"gen-{shape}"
        facts, _ = generate(make_plan(request), out, f"metal_jit_{shape}")
        assert (out / SHARED_SOURCE).is_file()  # the runtime part, left out here
        for unit in facts["units"]:
            sources[f"{shape}:{unit['name']}"] = unit_source(out, unit["name"])
            embedded[f"{shape}:{unit['name']}"] = unit["embedded_bytes"]
    return sources, embedded


def _measured(dylib: Path, sources: dict[str, Path]) -> dict[str, int]:
    """The tool's bytes per ``shape:unit``, each tree's units measured under their names."""
    found: dict[str, int] = {}
    for shape in {key.split(":")[0] for key in sources}:
        mine = {key.split(":", 1)[1]: key for key in sources if key.startswith(f"{shape}:")}
        sizes = symbol_sizes(dylib, list(mine))
        assert sizes is not None and sizes.method == MACHO_METHOD
        found.update((key, sizes.by_unit[unit]) for unit, key in mine.items())
    return found


@pytest.mark.parametrize("api", ["string", "cstring"])
def test_tree_units_in_an_arm64_dylib_measure_their_embedded_bytes(
    tmp_path: Path, api: str
) -> None:
    """A discovered tree's unit sources compile and link for arm64 macOS with no SDK, and each
    unit's bytes in the dylib are what llvm-objdump gives and exactly the bytes it embeds
    (arm64 packs char arrays); the sources define nothing else. With ``jit-api = "cstring"``
    a unit stores each of its functions' whole text, as one array named after the function."""
    settings = '[build]\njit-api = "cstring"\n' if api == "cstring" else ""
    sources, embedded = _tree_units(tmp_path, ["llama"], settings)
    if api == "cstring":
        assert "extern const char norm[] =" in sources["llama:kernels/norm.metal"].read_text()
    dylib = cxx_dylib(tmp_path / "libunits.dylib", list(sources.values()))
    sizes = symbol_sizes(dylib, [key.removeprefix("llama:") for key in sources])
    assert sizes is not None and sizes.method == MACHO_METHOD
    reference = _reference(dylib, sources)
    assert {f"llama:{u}": b for u, b in sizes.by_unit.items() if u != OTHER} == embedded
    assert {k: v for k, v in reference.items() if k != "other"} == embedded
    assert sum(embedded.values()) > 0 and sizes.by_unit[OTHER] == reference["other"] == 0


def test_several_trees_and_x86_64_and_fat(tmp_path: Path) -> None:
    """x86-64 aligns arrays of 16 bytes or more to 16: a unit's symbols then also hold the
    padding after them, as llvm-objdump's addresses imply, never less than it embeds. A fat
    file holds every slice; each slice is counted."""
    sources, embedded = _tree_units(tmp_path, sorted(SHAPES))
    files = list(sources.values())
    thin = {a: cxx_dylib(tmp_path / f"lib.{a}.dylib", files, arch=a) for a in ("x86_64", "arm64")}
    assert _measured(thin["arm64"], sources) == embedded
    x86 = _measured(thin["x86_64"], sources)
    assert x86 == {k: v for k, v in _reference(thin["x86_64"], sources).items() if k != "other"}
    assert all(x86[k] >= embedded[k] for k in sources) and x86 != embedded
    fat = lipo(tmp_path / "libunits.dylib", [thin["x86_64"], thin["arm64"]])
    assert _measured(fat, sources) == {k: x86[k] + embedded[k] for k in sources}
    for arch, wanted in (("x86_64", x86), ("arm64", embedded)):
        assert {k: v for k, v in _reference(fat, sources, arch).items() if k != "other"} == wanted


def _family_sources(tmp_path: Path, families: Sequence[str]) -> tuple[dict[str, Path], Path]:
    """A catalog selection's unit sources, generated by the one tree JIT path, and a source of
    the pieces several families share (the library's shared source stores them, beside the
    functions that need the C++ library; here they are data alone)."""
    request = BuildRequest().replace(
        kernels=tuple(families), dtypes=("float32", "float16"), jit=("*",), build_dir=tmp_path
    )
    plan = make_plan(request)
    out = tmp_path / "families"
    facts, _ = generate(plan, out)
    shared = {s["name"] for s in facts["shared"]}
    pieces = {
        piece.name: piece
        for p in plan.preambles
        for piece in stored_pieces(
            inline_preamble(p.headers, plan.include_dirs), dedup=True, compress=False
        )
        if piece.name in shared
    }
    data = tmp_path / "shared.cpp"
    data.write_text("\n".join(unit_piece(p, define=True) for p in pieces.values()) + "\n")
    return {f: unit_source(out, f) for f in families}, data


def test_catalog_families_in_an_arm64_dylib(tmp_path: Path) -> None:
    """A catalog family's unit source (the preamble pieces only it stores and its kernel-table
    strings, in its namespace) compiles for arm64 macOS with no header; the tool's bytes per
    family and the rest (the pieces stored once for all) equal llvm-objdump's, and with the
    file's bytes in no symbol they add up to the file size."""
    families = ["unary", "copy", "arange", "softmax"]
    sources, shared = _family_sources(tmp_path, families)
    dylib = cxx_dylib(tmp_path / "libfamilies.dylib", [*sources.values(), shared])
    reference = _reference(dylib, sources)
    units = [JitUnit(f, 0) for f in families]
    jit, host = measure_host(dylib, units)
    assert host is not None and host.measured_by == MACHO_METHOD
    assert {j.name: j.host_bytes for j in jit} == {f: reference[f] for f in families}
    assert host.shared_bytes == reference["other"] > 0  # the pieces stored once for all
    assert all(reference[f] > 0 for f in families)
    assert unattributed_bytes(host, jit) == dylib.stat().st_size - sum(reference.values()) > 0


def test_a_metallib_incbin_in_the_host_dylib(
    tmp_path: Path, write_metallib: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """A host library that also ships an AOT metallib, put in with ``.incbin`` from inline
    assembly in a C++ source (no SDK needed): ``report`` finds the library where
    llvm-objdump's section is, byte for byte, and the units measure as without it."""
    sources, embedded = _tree_units(tmp_path, ["llama"])
    lib = write_metallib("kernels.metallib", [("kernel_norm", 300), ("kernel_fa_f16", 200)])
    blob = tmp_path / "blob.cpp"
    blob.write_text(
        'asm(".section __TEXT,__metallib\\n"\n'
        '    ".globl _mbjit_test_metallib\\n_mbjit_test_metallib:\\n"\n'
        f'    ".incbin \\"{lib}\\"\\n.text\\n");\n'
    )
    dylib = cxx_dylib(tmp_path / "libhost.dylib", [*sources.values(), blob])
    assert _measured(dylib, sources) == embedded
    sections = macho_sections(dylib)
    offset, size = sections[("", "__TEXT", "__metallib")]
    code, out, err = run_cli(["report", str(dylib), "--format", "json"], capsys)
    assert code == 0, err
    doc = json.loads(out)
    place = doc["source"]["embedded"]
    assert (place["offset"], place["size"]) == (offset, size) == (offset, lib.stat().st_size)
    assert place["section"] == "__metallib" and place["symbol"] == "_mbjit_test_metallib"
    assert dylib.read_bytes()[offset : offset + size] == lib.read_bytes()
    assert doc["function_count"] == 2
    [binary] = doc["binaries"]
    assert sum(p["bytes"] for p in binary["parts"]) == dylib.stat().st_size


def test_a_cut_or_hostile_host_library_is_refused_not_measured(tmp_path: Path) -> None:
    """Issue 33 items 1 and 7 on the host-library path: a dylib cut inside its symbol table, and
    an ELF file whose ``.symtab`` says offset 2^63 (pyelftools' ValueError, a traceback, before),
    are refused with the binary layer's one line; an ELF ``.symtab`` of entry size 0, which
    pyelftools refuses, is a clean absence (no symbol sizes)."""
    from binaries import elf_header, elf_section_numbers, link_elf, load_commands

    from builder.errors import BinaryFormatError, TruncatedBinaryError

    source = tmp_path / "unit.cpp"
    source.write_text(
        "namespace mbjit_unit_unary { extern const char a[64]; const char a[64] = {1}; }\n"
    )
    dylib = cxx_dylib(tmp_path / "libhost.dylib", [source])
    assert symbol_sizes(dylib, ["unary"]) is not None
    [symtab] = [c.fields for c in load_commands(dylib) if c.cmd == "LC_SYMTAB"]
    cut = tmp_path / "libcut.dylib"
    cut.write_bytes(dylib.read_bytes()[: symtab["symoff"] + 8])
    with pytest.raises(TruncatedBinaryError, match="truncated: the symbol table"):
        symbol_sizes(cut, ["unary"])
    (tmp_path / "blob.bin").write_bytes(bytes(64))
    unit = "_ZN16mbjit_unit_unary1aE"  # mbjit_unit_unary::a
    elf = link_elf(tmp_path / "libhost.so", [(".rodata", unit, tmp_path / "blob.bin")])
    measured = symbol_sizes(elf, ["unary"])
    assert measured is not None and measured.by_unit["unary"] == 64
    header, numbers = elf_header(elf), elf_section_numbers(elf)
    entry = (
        header["Start of section headers"] + numbers[".symtab"] * header["Size of section headers"]
    )
    for field, value, outcome in ((24, 1 << 63, "refused"), (56, 0, None)):  # sh_offset, sh_entsize
        data = bytearray(elf.read_bytes())
        struct.pack_into("<Q", data, entry + field, value)
        hostile = tmp_path / "libhostile.so"
        hostile.write_bytes(bytes(data))
        if outcome is None:
            assert symbol_sizes(hostile, ["unary"]) is None
        else:
            with pytest.raises(BinaryFormatError, match=r"malformed: section \.symtab, \d+ bytes"):
                symbol_sizes(hostile, ["unary"])
