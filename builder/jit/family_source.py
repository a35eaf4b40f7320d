"""A catalog family's generated translation unit (the registry entry of the host JIT library),
its facts and their merge into embed.json, and its ``check`` chunk.

CMake runs these at build time through ``python -m builder.jit family`` and ``merge`` (see
``cmake/MetalJit.cmake``). Only the standard library and ``builder.kernels``/``builder.errors``
are imported, because scikit-build-core runs the generator in an isolated build environment
without click or rich.

The family's preamble is stored as the one writer's pieces (``builder.jit.writer``); two storage
choices are measured by ``benchmarks/bench_jit.py``:

- **dedup** (default): a piece is a C++17 ``inline`` variable named after a hash of its text.
  Every family translation unit defines the pieces it uses; identical pieces (a shared header
  such as ``common/types.h``) have identical names and definitions, and the linker keeps one
  copy. Each family stays its own generated file (touching ``unary/unary_ops.h`` regenerates
  and recompiles only ``unary.cpp``) and the library still stores a shared header once.
- **no dedup**: a family's whole preamble is cut into pieces with internal linkage, so
  each family carries its own copy of every header it includes.

A family's registry strings (``host_name\\0args\\0`` per kernel, catalog order) are stored the
same way, as one more list of pieces; no per-kernel table is emitted (the registry derives
offsets and the by-name order on first use), so a kernel costs only its compressible text.

Every output is written atomically and only when its bytes change, so a regenerated but
identical file does not trigger a recompile (Ninja ``restat``). A family's depfile
(``builder.files.atomic``) lists the catalog, the headers and the generator's own modules, so
touching a header regenerates only the families that embed it.

For ``check``, a run-time source is a family preamble followed by one instantiation line, so
the family's preamble followed by *all* its lines is a single translation unit that compiles if
and only if every one of those sources does (:func:`jit_check_chunks`: one chunk per JIT unit).
"""

from __future__ import annotations

import json
import os
import re
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from builder.errors import UsageError
from builder.files.atomic import own_modules, write_depfile, write_if_changed
from builder.jit.literals import LITERAL_LIMIT, comment_text, cxx_string, piece_name, unit_namespace
from builder.jit.preamble import Preamble, inline_preamble
from builder.jit.writer import ZLIB_LEVEL, StoredPiece, stored_pieces
from builder.records.manifest import embed_facts
from builder.settings.checks import CXX_IDENTIFIER

if TYPE_CHECKING:
    from builder.kernels.catalog import Catalog
    from builder.kernels.check import CheckChunk

__all__ = [
    "FACTS_SCHEMA",
    "FamilySource",
    "Kernel",
    "anchor_line_markers",
    "family_source",
    "jit_check_chunks",
    "merge_facts",
    "pool_pieces",
    "pool_text",
    "render_family",
    "write_family",
]


@dataclass(frozen=True)
class Kernel:
    """One registry entry: the host name and the rest of its instantiation line."""

    host_name: str
    args: str  # the line is  <macro>("<host_name>", <args>)


def pool_text(kernels: Sequence[Kernel]) -> tuple[str, list[int]]:
    """The registry strings ``name\\0args\\0`` of every kernel, and each name's offset."""
    offsets, parts, used = [], [], 0
    for kernel in kernels:
        entry = f"{kernel.host_name}\0{kernel.args}\0"
        offsets.append(used)
        parts.append(entry)
        used += len(entry.encode("utf-8"))
    return "".join(parts), offsets


def pool_pieces(
    kernels: Sequence[Kernel], *, compress: bool, limit: int = LITERAL_LIMIT
) -> list[StoredPiece]:
    """The registry strings as stored pieces: plain literals cut after a NUL (under the
    literal limit), or one zlib stream (names compress well: they share long prefixes)."""
    text, _ = pool_text(kernels)
    if not text:
        return []
    parts: list[str] = []
    if compress:
        parts = [text]
    else:
        current: list[str] = []
        size = 0
        for entry in re.findall(r"[^\0]*\0", text):
            n = len(entry.encode("utf-8"))
            if n > limit:
                raise ValueError(f"registry string of {n} bytes exceeds the literal limit")
            if size + n > limit:
                parts.append("".join(current))
                current, size = [], 0
            current.append(entry)
            size += n
        parts.append("".join(current))
    pieces = []
    for part in parts:
        raw = part.encode("utf-8")
        data = zlib.compress(raw, ZLIB_LEVEL) if compress else raw + b"\0"
        name = piece_name(part, compress).replace("mbjit_", "mbjit_s", 1)
        pieces.append(StoredPiece(name, part, data, compress, shared=False))
    return pieces


def render_family(
    family: str,
    preamble: Preamble,
    pieces: Sequence[StoredPiece],
    kernels: Sequence[Kernel],
    pool: Sequence[StoredPiece],
    line_head: str,
    origin: str,
) -> str:
    """The generated translation unit of one family of the host JIT library.

    Defines ``family_<name>`` (a ``metal_jit::detail::Family``, see
    ``metal_src/host/include/metal_jit/embedded.h``, which includes no header) in the namespace
    chosen at build time. The arrays only this family stores (its registry strings, their
    tables, pieces without dedup) are in the family's own namespace
    (``builder.jit.literals.unit_namespace``), so each symbol names its unit in ELF and Mach-O
    alike; pieces stored once for several families (dedup) are named after their text, outside
    it.
    Family sources may also be compiled together as one translation unit (a unity build): each
    piece's definition is guarded by a macro named after the piece (equal names hold equal
    text) and, inside the family's namespace, after the family too.
    """
    if re.fullmatch(CXX_IDENTIFIER, family) is None:
        raise ValueError(f"family name {family!r} is not a C++ identifier")
    comment = comment_text(origin)
    scope = unit_namespace(family)
    out = [
        f"// Generated by metallib-builder (python -m builder.jit family) from {comment}.",
        "// Do not edit. Family: " + family,
        "// Headers (inclusion order): " + ", ".join(map(comment_text, preamble.headers)),
        '#include "metal_jit/embedded.h"',
        "",
        "namespace METAL_JIT_NAMESPACE {",
        "namespace detail {",
        "",
    ]
    defined: set[str] = set()
    for piece in pieces:
        if piece.name in defined or not piece.shared:
            continue
        defined.add(piece.name)
        out += _guarded(piece)
    out += ["", "namespace {", f"namespace {scope} {{", ""]
    for piece in [*pieces, *(pool if kernels else ())]:
        if piece.name in defined:
            continue
        defined.add(piece.name)
        out += _guarded(piece, scope)
    table, pool_table = f"family_{family}_pieces", f"family_{family}_pool"
    out.append(f"constexpr Piece {table}[] = {{")
    out += [f"    {_piece_entry(p)}," for p in pieces]
    out.append("};")
    if kernels:
        out.append(f"constexpr Piece {pool_table}[] = {{")
        out += [f"    {_piece_entry(p)}," for p in pool]
        out.append("};")
    preamble_bytes = len(preamble.text.encode("utf-8"))
    pool_bytes = sum(p.raw_bytes for p in pool)
    out += [
        "",
        f"}}  // namespace {scope}",
        "}  // namespace",
        "",
        f"extern const Family family_{family};",
        f"const Family family_{family} = {{",
        f"    {cxx_string(family)}, {cxx_string(line_head)},",
        f"    {scope}::{table}, {len(pieces)}u, {preamble_bytes}u,",
        (
            f"    {f'{scope}::{pool_table}' if kernels else 'nullptr'}, {len(pool)}u, "
            f"{pool_bytes}u, {len(kernels)}u}};"
        ),
        "",
        "}  // namespace detail",
        "}  // namespace METAL_JIT_NAMESPACE",
    ]
    return "\n".join(out) + "\n"


def _guarded(piece: StoredPiece, scope: str = "") -> list[str]:
    """A piece's definition, skipped when the translation unit already holds it (in ``scope``,
    a family's namespace, when given)."""
    macro = f"MBJIT_DEFINED_{piece.name}" + (f"_IN_{scope}" if scope else "")
    return [f"#ifndef {macro}", f"#define {macro}", piece.definition(), "#endif"]


def _piece_entry(piece: StoredPiece) -> str:
    flag = "true" if piece.compressed else "false"
    return f"{{{piece.name}, {piece.stored_bytes}u, {piece.raw_bytes}u, {flag}}}"


FACTS_SCHEMA = 1
"""Of one family's facts file (``<family>.json``), which :func:`merge_facts` reads."""


@dataclass(frozen=True)
class FamilySource:
    """A family's generated translation unit and the facts measured from it."""

    family: str
    preamble: Preamble
    pieces: tuple[StoredPiece, ...]
    kernels: tuple[Kernel, ...]
    pool: tuple[StoredPiece, ...]  # the registry strings (names, arguments) as stored
    lines: tuple[str, ...]  # the instantiation lines, catalog order
    cpp: str

    @property
    def registry_bytes(self) -> int:
        """Stored bytes of the registry strings (host names and arguments)."""
        return sum(p.stored_bytes for p in self.pool)

    def facts(self) -> dict[str, object]:
        """Per-family record that :func:`merge_facts` turns into embed.json."""
        return {
            "schema": FACTS_SCHEMA,
            "name": self.family,
            "headers": list(self.preamble.headers),
            "host_names": [k.host_name for k in self.kernels],
            "source_bytes": len(self.preamble.text.encode("utf-8")),
            "registry_bytes": self.registry_bytes,
            "pieces": [
                {
                    "name": p.name,
                    "bytes": p.stored_bytes,
                    "raw_bytes": p.raw_bytes,
                    "shared": p.shared,
                }
                for p in self.pieces
            ],
        }


def family_source(
    source_dir: Path,
    family: str,
    dtypes: Sequence[str] | None = None,
    *,
    compress: bool = False,
    dedup: bool = True,
    strip: bool = False,
) -> FamilySource:
    """Inline a catalog family's header and render its translation unit (nothing written)."""
    from builder.kernels.catalog import INSTANTIATE_MACRO, load_catalog

    catalog = load_catalog(source_dir)
    items = catalog.expand([family], dtypes)
    spec = catalog.families[family]
    preamble = inline_preamble(
        [catalog.source_dir / spec.header], [catalog.source_dir], strip=strip
    )
    head = f'{INSTANTIATE_MACRO}("'
    kernels, lines = [], []
    for inst in items:
        line = inst.instantiation_line()
        prefix = f'{head}{inst.host_name}", '
        if not (line.startswith(prefix) and line.endswith(")")):
            raise UsageError(f"{family}: unexpected instantiation line {line!r}")
        kernels.append(Kernel(inst.host_name, line[len(prefix) : -1]))
        lines.append(line)
    pieces = stored_pieces(preamble, dedup=dedup, compress=compress)
    pool = pool_pieces(kernels, compress=compress)
    origin = f"{catalog.path.name} and {spec.header}"
    cpp = render_family(family, preamble, pieces, kernels, pool, head, origin)
    return FamilySource(
        family, preamble, tuple(pieces), tuple(kernels), tuple(pool), tuple(lines), cpp
    )


def write_family(
    source_dir: Path,
    family: str,
    out_dir: Path,
    dtypes: Sequence[str] | None = None,
    *,
    compress: bool = False,
    dedup: bool = True,
    strip: bool = False,
    depfile: Path | None = None,
) -> FamilySource:
    """Write ``<out_dir>/<family>.cpp`` and ``<family>.json`` (+ depfile) for the CMake build."""
    generated = family_source(
        source_dir, family, dtypes, compress=compress, dedup=dedup, strip=strip
    )
    cpp_path = out_dir / f"{family}.cpp"
    write_if_changed(cpp_path, generated.cpp)
    facts = json.dumps(generated.facts(), indent=1, sort_keys=True) + "\n"
    write_if_changed(out_dir / f"{family}.json", facts)
    if depfile is not None:
        catalog = Path(os.path.realpath(Path(source_dir) / "catalog.json"))
        deps = [catalog, *generated.preamble.files, *own_modules()]
        write_depfile(depfile, os.path.abspath(cpp_path), deps)
    return generated


def merge_facts(
    target: str,
    compressed: bool,
    dedup: bool,
    family_facts: Sequence[Mapping[str, Any]],
    stripped: bool = False,
) -> dict[str, Any]:
    """embed.json (``builder.records.manifest.embed_facts``): per family what it embeds, with
    pieces shared by families counted once.

    Per family: ``source_bytes`` (its preamble's text), ``preamble_bytes`` (stored preamble
    pieces only it uses), ``shared_bytes`` (stored pieces it uses with other families),
    ``registry_bytes`` (its host-name/argument strings) and ``embedded_bytes`` = preamble_bytes +
    registry_bytes. Shared pieces are listed under ``shared`` and counted once in the top-level
    ``embedded_bytes``, which is then all the string data of the library.
    """
    users: dict[str, list[str]] = {}
    sizes: dict[str, int] = {}
    for facts in family_facts:
        for piece in facts["pieces"]:
            if piece["shared"]:
                names = users.setdefault(piece["name"], [])
                if facts["name"] not in names:
                    names.append(str(facts["name"]))
                sizes[piece["name"]] = int(piece["bytes"])
    shared = {name for name, fams in users.items() if len(fams) > 1}
    families: list[dict[str, Any]] = []
    for facts in family_facts:
        pieces = facts["pieces"]
        own: dict[str, int] = {}
        common: dict[str, int] = {}
        for index, piece in enumerate(pieces):
            key = str(piece["name"]) if piece["shared"] else f"#{index}"
            (common if piece["name"] in shared else own)[key] = int(piece["bytes"])
        registry = int(facts["registry_bytes"])
        families.append(
            {
                "name": facts["name"],
                "headers": facts["headers"],
                "host_names": facts["host_names"],
                "source_bytes": facts["source_bytes"],
                "embedded_bytes": sum(own.values()) + registry,
                "preamble_bytes": sum(own.values()),
                "shared_bytes": sum(common.values()),
                "registry_bytes": registry,
            }
        )
    shared_list: list[dict[str, Any]] = [
        {"name": name, "units": users[name], "bytes": sizes[name]} for name in sorted(shared)
    ]
    extra = {
        "target": target,
        "dedup": dedup,
        "stripped": stripped,
        "registry_bytes": sum(int(f["registry_bytes"]) for f in families),
    }
    return embed_facts(
        "catalog",
        families,
        shared_list,
        sum(int(s["bytes"]) for s in shared_list),
        compressed=compressed,
        extra=extra,
    )


_MARKER = re.compile(r'^#line (\d+) "((?:[^"\\/]|\\.)(?:[^"\\]|\\.)*)"$', re.MULTILINE)


def anchor_line_markers(text: str, source_dir: Path) -> str:
    """``#line N "rel/path"`` -> ``#line N "<source_dir>/rel/path"`` (absolute ones unchanged).

    The path in a marker is a C string literal (escapes included); the folder is written as one
    too and the two literals' contents joined, so escaped names stay exactly what they were."""
    root = cxx_string(Path(source_dir).resolve().as_posix() + "/")[:-1]  # without its closing "
    return _MARKER.sub(lambda m: f'#line {m.group(1)} {root}{m.group(2)}"', text)


def jit_check_chunks(
    catalog: Catalog,
    preambles: Mapping[str, str],
    families: Iterable[str] | None = None,
    dtypes: Iterable[str] | None = None,
) -> list[CheckChunk]:
    """One chunk per catalog family built JIT: its preamble (as given, e.g. read back from a
    built library) plus every selected instantiation line of the family."""
    lines: dict[str, list[str]] = {}
    for inst in catalog.expand(families, dtypes):
        lines.setdefault(inst.family, []).append(inst.instantiation_line())
    chunks = []
    from builder.kernels.check import CheckChunk

    for family, family_lines in lines.items():
        text = anchor_line_markers(preambles[family], catalog.source_dir)
        chunks.append(CheckChunk(f"jit.{family}", text + "\n".join(family_lines) + "\n", family))
    return chunks
