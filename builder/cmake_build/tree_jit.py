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
(the plan's ``jit_namespace``, ``jit_api``, ``jit_lookup``: ``[build] jit-namespace``, ``jit-api``,
``jit-lookup``; ``builder.kernels.runtime_sources``): ``const std::string& <function>()`` in
``metal_jit`` by default, its text stored as pieces shared where they can be; with ``cstring``
``const char* <function>()``, each function's whole text one array of its own (nothing shared
between units; in an entry file's source it is the array named after the function, in the shared
source a literal); without lookup no ``unit_source``. embed.json says which storage (``storage``:
``deduplicated`` or ``separate``). Every output is rewritten only when its bytes change. Standard
library and ``builder`` only."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from builder.cmake_build.plan_model import BuildPlan
from builder.errors import BuilderError, step_exit
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


def _pieces(preambles: Sequence[tuple[str, Preamble]]) -> dict[str, StoredPiece]:
    """Name -> StoredPiece of every piece ``preambles`` are stored in (as ``preamble_code``)."""
    from builder.jit.writer import stored_pieces

    return {
        piece.name: piece
        for _, preamble in preambles
        for piece in stored_pieces(preamble, dedup=True, compress=False)
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
    """An entry file's arrays: its own pieces (``string``), or each of its own preambles' whole
    text (``cstring``)."""
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
) -> tuple[str, int]:
    """The runtime part: every preamble's function (``entries`` = (function, Preamble)), the
    text no single entry file stores (defined here), the declarations of what the entry files
    ``stored``, and the ``lookup`` lines. Returns its text and the bytes it stores itself."""
    from builder.jit.writer import preamble_code

    where = {name: s.scope for s in stored for name in s.names}
    listed = [(", ".join(p.headers[:1]), f, p) for f, p in entries]
    code = preamble_code(listed, api=api, stored_in=where)
    declared: list[str] = []
    for unit in stored:
        if unit.names:
            declared += [f"namespace {unit.scope} {{", *unit.declarations]
            declared += [f"}}  // namespace {unit.scope}"]
    heads = ["#include <cstddef>", "#include <initializer_list>", "#include <string>"]
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
        f"}}  // namespace {namespace}",
        "",
    ]
    return "\n".join(lines), code.stored_bytes


def _holders(
    per_unit: Sequence[Sequence[tuple[str, Preamble]]], shared: Sequence[tuple[str, Preamble]]
) -> dict[str, list[int]]:
    """Piece name -> which sources hold it: each JIT entry file's own preambles by index, the
    shared preambles as -1. A piece more than one holds is stored once, in the shared source."""
    held: dict[str, list[int]] = {}
    for index, own in [*enumerate(per_unit), (-1, shared)]:
        for name in _pieces(own):
            held.setdefault(name, []).append(index)
    return held


def _shared_entries(
    plan: BuildPlan,
    jit_units: Sequence[Unit],
    per_unit: Sequence[Sequence[tuple[str, Preamble]]],
    shared: Sequence[tuple[str, Preamble]],
    held: dict[str, list[int]],
) -> list[dict[str, object]]:
    """embed.json's ``shared``: each shared preamble with its entry files, then each piece the
    own sources of an entry file and another source hold, with the entry files using it."""
    users = {p.function: p.entries for p in plan.preambles}
    in_shared: dict[str, list[str]] = {}  # piece -> entry files of the shared preambles using it
    for function, preamble in shared:
        for name in _pieces([(function, preamble)]):
            in_shared.setdefault(name, []).extend(users[function])
    found: list[dict[str, object]] = [{"name": f, "units": users[f]} for f, _ in shared]
    for name, piece in _pieces([e for own in per_unit for e in own]).items():
        if len(held.get(name, ())) > 1:
            using = [*(jit_units[i].name for i in held[name] if i >= 0), *in_shared.get(name, [])]
            found.append(
                {"name": name, "units": list(dict.fromkeys(using)), "bytes": piece.stored_bytes}
            )
    return found


def generate(
    plan: BuildPlan, out_dir: Path, namespace: str | None = None
) -> tuple[dict[str, Any], list[Path]]:
    """Write the sources for ``plan``'s JIT entry files; return embed.json's content and every
    file read. ``namespace`` (CMake's NAMESPACE) wins over the plan's."""
    from builder.jit.literals import unit_namespace
    from builder.jit.preamble import inline_preamble
    from builder.settings.declared import setting

    namespace = namespace or plan.jit_namespace or DEFAULT_NAMESPACE
    api = plan.jit_api or APIS[0]
    lookup = plan.jit_lookup is not False
    setting("jit_namespace").read(namespace, "NAMESPACE", error=BuilderError)
    include_dirs = list(plan.include_dirs)
    jit_units = [u for u in plan.units if u.mode == "jit"]
    inlined = {p.function: inline_preamble(p.headers, include_dirs) for p in plan.preambles}
    owner = {p.function: p.entries[0] for p in plan.preambles if len(p.entries) == 1}
    whole = [(p.entries[0], p.function) for p in plan.preambles if p.embedding == "whole-file"]
    per_unit = [
        [(f, inlined[f]) for f in unit.preambles if owner.get(f) == unit.name] for unit in jit_units
    ]
    shared = [(p.function, inlined[p.function]) for p in plan.preambles if p.function not in owner]
    # cstring stores each function's text on its own: nothing is held by two sources
    held = _holders(per_unit, shared) if api == "string" else {}
    units: list[dict[str, object]] = []
    stored: list[_Stored] = []
    for index, (unit, own) in enumerate(zip(jit_units, per_unit)):
        title = (
            f"the whole text of {unit.name}, its quoted includes inlined"
            if unit.embedding == "whole-file"
            else f"run-time preambles only {unit.name} needs"
        )
        pieces = [p for n, p in _pieces(own).items() if held.get(n) == [index]]
        data = _stored(unit_namespace(unit.name), own, pieces, api)
        stored.append(data)
        text = _unit_text(title, namespace, data.scope, data.definitions)
        write_if_changed(unit_source(out_dir, unit.name), text)
        units.append(
            {
                "name": unit.name,
                "embedding": unit.embedding or "preamble",
                "preambles": [f for f, _ in own],
                "headers": list(dict.fromkeys(h for _, p in own for h in p.headers)),
                "source_bytes": sum(len(p.text.encode("utf-8")) for _, p in own),
                "embedded_bytes": data.stored_bytes,
            }
        )
    entries = [*shared, *(e for own in per_unit for e in own)]
    found = _lookup(whole) if lookup else []
    text, shared_bytes = _shared_text(namespace, entries, stored, found, api)
    write_if_changed(out_dir / SHARED_SOURCE, text)
    shared_list = _shared_entries(plan, jit_units, per_unit, shared, held)
    storage = {"storage": RuntimeSources(api=api).storage}
    facts = embed_facts(
        "discovered", units, shared_list, shared_bytes, compressed=False, extra=storage
    )
    files = list(dict.fromkeys(f for p in inlined.values() for f in p.files))
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
    args = parser.parse_args(argv)

    def step() -> None:
        plan = BuildPlan.read(args.plan)
        facts, files = generate(plan, args.out_dir, args.jit_namespace)
        embed = args.out_dir / "embed.json"
        write_embed_facts(embed, facts)
        if args.depfile is not None:
            from builder.files.atomic import own_modules, write_depfile

            deps = [args.plan.resolve(), *files, *own_modules()]
            write_depfile(args.depfile, embed.resolve(), deps)

    return step_exit(step)


if __name__ == "__main__":
    raise SystemExit(main())
