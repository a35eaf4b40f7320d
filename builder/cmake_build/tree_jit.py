"""``python -m builder.cmake_build.tree_jit``: a discovered tree's run-time preambles as C++
sources.

A JIT entry file of a kernel tree without a catalog is not compiled: the host compiles its
kernels at run time from preambles, each a header with its quoted includes inlined
(``builder.jit.tree_preambles`` says which, under which function names). CMake runs this at
build time (``metallib_add_tree_jit_library`` in cmake/MetalJit.cmake) and compiles the outputs
into the host library:

* ``<out>/<entry file>.cpp`` for each JIT entry file: the text pieces only it stores (of the
  preambles only it needs), as ``const char`` arrays in the unit's own namespace
  (``builder.jit.literals.unit_namespace``) and nothing else: no function and no
  ``#include``, so the file compiles for any target, and every symbol it defines names its
  unit;
* ``<out>/_shared_preambles.cpp``: the runtime part. The preambles several JIT entry files need,
  the text pieces several entry files' own sources hold (a header that entry files embedded
  whole all inline, such as ggml's ``ggml-common.h``: stored once), each preamble's function
  (``const std::string& <function>()`` in the given namespace, as ``embed`` writes it, built on
  first use from the pieces, those of an entry file by their qualified name), and the lookup
  ``std::string_view unit_source(std::string_view unit)``: the whole text of a JIT entry file
  embedded whole (``KernelTree.embeddings``) by its name (``"ggml-metal.metal"``), ``""``
  for any other name;
* ``<out>/embed.json`` (``builder.records.manifest.embed_facts``): per entry file the bytes it
  stores alone, and the shared bytes once (the build manifest reads it);
* a depfile naming every file read, so touching a header regenerates the sources.

Why the split: the size report measures a unit by the symbols that name it
(``builder.size.jit_sizes``), in an ELF ``.so`` and a Mach-O ``.dylib`` alike, and a unit's
symbols are then exactly its arrays: its host bytes are its embedded bytes (in ELF; a Mach-O
symbol also holds the alignment padding after it). The arrays have external linkage, hidden (no
export: both linkers make them local symbols of the library).

Each preamble is written as ``embed`` writes it, in the interface the tree's metallib.toml names
(the plan's ``run_time``: ``[build] jit-namespace``, ``jit-api``, ``jit-lookup``;
``builder.kernels.runtime_sources``): ``const std::string& <function>()`` in ``metal_jit`` by
default, its text stored as pieces shared where they can be; with ``cstring``
``const char* <function>()``, each function's whole text one array of its own (nothing shared
between units; in an entry file's source it is the array named after the function, in the
shared source a literal); without lookup no ``unit_source``. embed.json says which storage
(``storage``: ``deduplicated`` or ``separate``). Every output is rewritten only when its bytes
change. Standard library and ``builder`` only.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from builder.cmake_build.plan_model import BuildPlan
from builder.errors import BuilderError
from builder.files.atomic import write_if_changed
from builder.jit.tree_preambles import UNIT_LOOKUP
from builder.kernels.runtime_sources import APIS, DEFAULT_NAMESPACE, RuntimeSources
from builder.records.manifest import embed_facts, write_embed_facts

if TYPE_CHECKING:
    from builder.cmake_build.plan_model import Unit
    from builder.jit.preamble import Preamble
    from builder.jit.writer import StoredPiece

__all__ = ["LOOKUP", "SHARED_SOURCE", "generate", "main", "unit_source"]

SHARED_SOURCE = "_shared_preambles.cpp"
LOOKUP = UNIT_LOOKUP
"""The host library's lookup of a whole-file unit's text by the unit's name."""


def unit_source(out_dir: Path, unit: str) -> Path:
    """The generated source of a JIT entry file (``tiles/x.metal`` ->
    ``<out>/tiles/x.metal.cpp``)."""
    return out_dir / f"{unit}.cpp"


def _lookup(whole: Sequence[tuple[str, str]]) -> list[str]:
    """``unit_source(unit)`` over the whole-file units (unit, function), whose functions come
    before it in the same translation unit."""
    from builder.jit.literals import cxx_string

    return [
        '// The whole text of a JIT entry file embedded whole, by its name; "" for any other.',
        f"std::string_view {LOOKUP}(std::string_view unit) {{",
        *(f"  if (unit == {cxx_string(unit)}) return {function}();" for unit, function in whole),
        '  return "";  // not null: a host may hand data() to a C API',
        "}",
        "",
    ]


class _Storage(NamedTuple):
    """How preamble text is stored (``builder.jit.writer.stored_pieces``); a catalog tree's
    library may compress it (``METALLIB_JIT_COMPRESS``) or, to measure dedup, not share it."""

    dedup: bool = True
    compress: bool = False


def _pieces(
    preambles: Sequence[tuple[str, Preamble]], storage: _Storage | None = None
) -> dict[str, StoredPiece]:
    """Name -> StoredPiece of every piece ``preambles`` are stored in (as ``preamble_code``)."""
    from builder.jit.writer import stored_pieces

    dedup, compress = storage or _Storage()
    return {
        piece.name: piece
        for _, preamble in preambles
        for piece in stored_pieces(preamble, dedup=dedup, compress=compress)
    }


def _unit_text(title: str, namespace: str, scope: str, data: Sequence[str]) -> str:
    """A JIT entry file's translation unit: its arrays' definitions ``data`` in its
    namespace ``scope``."""
    from builder.jit.literals import comment_text

    lines = [
        f"// Generated by metallib-builder: {comment_text(title)}. Do not edit.",
        "// Data only, no #include: the text only this entry file stores, in its own namespace",
        f"// (each symbol names the unit); the functions returning it are in {SHARED_SOURCE}.",
        f"namespace {namespace} {{",
        f"namespace {scope} {{",
        "",
        *data,
        "",
        f"}}  // namespace {scope}",
        f"}}  // namespace {namespace}",
        "",
    ]
    return "\n".join(lines)


class _Stored(NamedTuple):
    """What one entry file's source stores: its namespace, the names used elsewhere (pieces, or
    with cstring the functions whose text it holds), and their definitions and declarations."""

    scope: str
    names: tuple[str, ...]
    definitions: tuple[str, ...]
    declarations: tuple[str, ...]
    stored_bytes: int


def _stored(
    scope: str, own: Sequence[tuple[str, Preamble]], pieces: Sequence[StoredPiece], api: str
) -> _Stored:
    """An entry file's arrays: its own pieces (``string``, kernel table strings included), or
    each of its own preambles' whole text (``cstring``)."""
    from builder.jit.writer import cstring_bytes, text_array, unit_piece

    if api == "cstring":
        return _Stored(
            scope,
            tuple(f for f, _ in own),
            tuple(text_array(f, p, define=True) for f, p in own),
            tuple(text_array(f, p, define=False) for f, p in own),
            sum(cstring_bytes(p) for _, p in own),
        )
    return _Stored(
        scope,
        tuple(p.name for p in pieces),
        tuple(unit_piece(p, define=True) for p in pieces),
        tuple(unit_piece(p, define=False) for p in pieces),
        sum(p.stored_bytes for p in pieces),
    )


def _shared_text(
    namespace: str,
    entries: Sequence[tuple[str, Preamble]],
    stored: Sequence[_Stored],
    lookup: Sequence[str],
    api: str,
    storage: _Storage,
    table: Sequence[str] = (),
) -> tuple[str, int]:
    """The runtime part: every preamble's function (``entries`` = (function, Preamble)), the
    text no single entry file stores (defined here), the declarations of what the entry files
    ``stored``, the ``lookup`` lines and the kernel ``table``. Returns its text and the bytes
    it stores itself."""
    from builder.jit.writer import preamble_code

    where = {name: s.scope for s in stored for name in s.names}
    listed = [(", ".join(p.headers[:1]), f, p) for f, p in entries]
    code = preamble_code(
        listed, api=api, stored_in=where, dedup=storage.dedup, compress=storage.compress
    )
    declared: list[str] = []
    for unit in stored:
        if unit.names:
            declared += [f"namespace {unit.scope} {{", *unit.declarations]
            declared += [f"}}  // namespace {unit.scope}"]
    heads = ["#include <cstddef>", "#include <initializer_list>", "#include <string>"]
    heads += ["#include <zlib.h>"] if storage.compress else []
    heads += ['#include "metal_jit/embedded.h"'] if table else []
    lines = [
        "// Generated by metallib-builder: run-time preambles several entry files need, the text",
        "// their own sources share, the function of every preamble, and the lookup of entry",
        "// files embedded whole. Do not edit.",
        *(heads if api == "string" else []),
        *(["#include <string_view>"] if api == "string" or lookup else []),
        "",
        f"namespace {namespace} {{",
        *declared,
        *(
            ["namespace {", "", *code.definitions, "", "}  // namespace", ""]
            if code.definitions
            else []
        ),
        *code.functions,
        *lookup,
        *table,
        f"}}  // namespace {namespace}",
        "",
    ]
    return "\n".join(lines), code.stored_bytes


def _holders(
    per_unit: Sequence[Sequence[tuple[str, Preamble]]],
    shared: Sequence[tuple[str, Preamble]],
    storage: _Storage,
) -> dict[str, list[int]]:
    """Piece name -> which sources hold it: each JIT entry file's own preambles by index, the
    shared preambles as -1. A piece more than one holds is stored once, in the shared source."""
    held: dict[str, list[int]] = {}
    for index, own in [*enumerate(per_unit), (-1, shared)]:
        for name in _pieces(own, storage):
            held.setdefault(name, []).append(index)
    return held


def _shared_entries(
    plan: BuildPlan,
    jit_units: Sequence[Unit],
    per_unit: Sequence[Sequence[tuple[str, Preamble]]],
    shared: Sequence[tuple[str, Preamble]],
    held: dict[str, list[int]],
    storage: _Storage,
) -> list[dict[str, object]]:
    """embed.json's ``shared``: each shared preamble with its entry files, then each piece the
    own sources of an entry file and another source hold, with the entry files using it."""
    users = {p.function: p.entries for p in plan.preambles}
    in_shared: dict[str, list[str]] = {}  # piece -> entry files of the shared preambles using it
    for function, preamble in shared:
        for name in _pieces([(function, preamble)], storage):
            in_shared.setdefault(name, []).extend(users[function])
    found: list[dict[str, object]] = [{"name": f, "units": users[f]} for f, _ in shared]
    for name, piece in _pieces([e for own in per_unit for e in own], storage).items():
        if len(held.get(name, ())) > 1:
            using = [*(jit_units[i].name for i in held[name] if i >= 0), *in_shared.get(name, [])]
            found.append(
                {"name": name, "units": list(dict.fromkeys(using)), "bytes": piece.stored_bytes}
            )
    return found


def _kernels(plan: BuildPlan, units: Sequence[Unit]) -> dict[str, tuple[tuple[str, str], ...]]:
    """A catalog tree's kernel table: per JIT unit (a family) its kernels in catalog order, each
    the host name and the rest of its instantiation line; empty for any other tree."""
    if plan.kind != "catalog":
        return {}
    from builder.kernels.catalog import load_catalog

    catalog, dtypes = load_catalog(plan.source_dir), plan.request.selection.dtypes or None
    return {
        u.name: tuple((i.host_name, i.arguments) for i in catalog.expand([u.name], dtypes))
        for u in units
    }


def generate(
    plan: BuildPlan,
    out_dir: Path,
    namespace: str | None = None,
    *,
    units: Sequence[str] | None = None,
    target: str | None = None,
    dedup: bool = True,
    strip: bool = False,
) -> tuple[dict[str, Any], list[Path]]:
    """Write the sources for ``plan``'s JIT entry files (``units``: these, in this order);
    return embed.json's content and every file read. ``namespace`` (CMake's NAMESPACE) wins
    over the plan's. A catalog tree's library adds the kernel table (``metal_jit/registry.h``
    serves it) and may compress its text (the request's ``compress``); ``dedup`` and ``strip``
    (comments left out) are for a catalog's ``metallib_add_jit_library``."""
    from builder.jit.literals import unit_namespace
    from builder.jit.preamble import inline_preamble
    from builder.jit.writer import TableUnit, kernel_table, table_pieces
    from builder.kernels.catalog import LINE_HEAD
    from builder.settings.declared import setting

    settings = plan.run_time
    namespace = namespace or str(settings.get("namespace") or DEFAULT_NAMESPACE)
    api = str(settings.get("api") or APIS[0])
    lookup = bool(settings.get("lookup", True))
    setting("jit_api").read(api, "the plan's run_time api", error=BuilderError)
    setting("jit_namespace").read(namespace, "NAMESPACE", error=BuilderError)
    storage = _Storage(dedup, plan.kind == "catalog" and plan.request.selection.compress)
    include_dirs = list(plan.include_dirs)
    jit_units = [u for u in plan.units if u.mode == "jit"]
    if units is not None:
        by_name = {u.name: u for u in jit_units}
        unknown = [n for n in units if n not in by_name]
        if unknown:
            raise BuilderError(f"not a JIT unit of the plan: {', '.join(unknown)}")
        jit_units = [by_name[n] for n in dict.fromkeys(units)]
    chosen = {u.name for u in jit_units}
    preambles = [p for p in plan.preambles if not p.entries or chosen.intersection(p.entries)]
    inlined = {p.function: inline_preamble(p.headers, include_dirs, strip=strip) for p in preambles}
    owner = {p.function: p.entries[0] for p in preambles if len(p.entries) == 1}
    whole = [(p.entries[0], p.function) for p in preambles if p.embedding == "whole-file"]
    per_unit = [
        [(f, inlined[f]) for f in unit.preambles if owner.get(f) == unit.name] for unit in jit_units
    ]
    shared = [(p.function, inlined[p.function]) for p in preambles if p.function not in owner]
    # cstring stores each function's text on its own: nothing is held by two sources
    held = _holders(per_unit, shared, storage) if api == "string" else {}
    kernels = _kernels(plan, jit_units)
    units_facts: list[dict[str, object]] = []
    stored: list[_Stored] = []
    table: list[tuple[TableUnit, str, list[StoredPiece]]] = []
    for index, (unit, own) in enumerate(zip(jit_units, per_unit)):
        title = (
            f"the whole text of {unit.name}, its quoted includes inlined"
            if unit.embedding == "whole-file"
            else f"run-time preambles only {unit.name} needs"
        )
        everything = _pieces(own, storage)
        pieces = [p for n, p in everything.items() if held.get(n) == [index]]
        extra: dict[str, object] = {}
        if unit.name in kernels:  # a catalog family: one preamble, and its kernels
            entry = TableUnit(unit.name, own[0][0], own[0][1], kernels[unit.name])
            strings = table_pieces(entry, compress=storage.compress)
            table.append((entry, unit_namespace(unit.name), strings))
            extra = {
                "host_names": [name for name, _ in entry.kernels],
                "preamble_bytes": sum(p.stored_bytes for p in pieces),
                "shared_bytes": sum(
                    p.stored_bytes for n, p in everything.items() if len(held.get(n, ())) > 1
                ),
                "registry_bytes": sum(p.stored_bytes for p in strings),
            }
            pieces += strings
        data = _stored(unit_namespace(unit.name), own, pieces, api)
        stored.append(data)
        text = _unit_text(title, namespace, data.scope, data.definitions)
        write_if_changed(unit_source(out_dir, unit.name), text)
        units_facts.append(
            {
                "name": unit.name,
                "embedding": unit.embedding or "preamble",
                "preambles": [f for f, _ in own],
                "headers": list(dict.fromkeys(h for _, p in own for h in p.headers)),
                "source_bytes": sum(len(p.text.encode("utf-8")) for _, p in own),
                "embedded_bytes": data.stored_bytes,
                **extra,
            }
        )
    entries = [*shared, *(e for own in per_unit for e in own)]
    found = _lookup(whole) if lookup else []
    rows = []
    if plan.kind == "catalog":
        rows = kernel_table(table, namespace, LINE_HEAD, compressed=storage.compress)
    text, shared_bytes = _shared_text(namespace, entries, stored, found, api, storage, rows)
    write_if_changed(out_dir / SHARED_SOURCE, text)
    shared_list = _shared_entries(plan, jit_units, per_unit, shared, held, storage)
    extra_facts: dict[str, object] = {"storage": RuntimeSources(api=api).storage}
    extra_facts.update(dedup=storage.dedup, stripped=strip)
    if target is not None:
        extra_facts["target"] = target
    if plan.kind == "catalog":
        extra_facts["registry_bytes"] = sum(p.stored_bytes for _, _, ps in table for p in ps)
    facts = embed_facts(
        plan.kind,
        units_facts,
        shared_list,
        shared_bytes,
        compressed=storage.compress,
        extra=extra_facts,
    )
    files = list(dict.fromkeys(f for p in inlined.values() for f in p.files))
    if plan.kind == "catalog":  # the kernel table's source
        files.append(plan.source_dir / "catalog.json")
    return facts, files


def main(argv: Sequence[str] | None = None) -> int:
    """Generate; exit 2 with one line for an unusable tree (a missing include)."""
    parser = argparse.ArgumentParser(
        prog="python -m builder.cmake_build.tree_jit", allow_abbrev=False
    )
    parser.add_argument("--plan", type=Path, required=True)
    parser.add_argument("--out-dir", type=Path, required=True)
    parser.add_argument("--jit-namespace", default=None, help="default: the plan's, else metal_jit")
    parser.add_argument("--depfile", type=Path)
    parser.add_argument("--units", default=None, help="the JIT units, ';'-separated, in order")
    parser.add_argument("--target", default=None, help="the CMake target (in embed.json)")
    parser.add_argument("--no-dedup", action="store_true", help="store no piece once for two")
    parser.add_argument("--strip-comments", action="store_true")
    args = parser.parse_args(argv)
    try:
        plan = BuildPlan.read(args.plan)
        units = None if args.units is None else [u for u in args.units.split(";") if u]
        facts, files = generate(
            plan,
            args.out_dir,
            args.jit_namespace,
            units=units,
            target=args.target,
            dedup=not args.no_dedup,
            strip=args.strip_comments,
        )
        embed = args.out_dir / "embed.json"
        write_embed_facts(embed, facts)
        if args.depfile is not None:
            from builder.files.atomic import own_modules, write_depfile

            deps = [args.plan.resolve(), *files, *own_modules()]
            write_depfile(args.depfile, embed.resolve(), deps)
    except BuilderError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
