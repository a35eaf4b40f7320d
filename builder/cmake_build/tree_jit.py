"""``python -m builder.cmake_build.tree_jit``: a discovered tree's run-time preambles as C++
sources.

A JIT entry file of a kernel tree without a catalog is not compiled: the host compiles its
kernels at run time from preambles, each a header with its quoted includes inlined
(``builder.jit.tree_preambles`` says which, under which function names). CMake runs this at
build time (``metallib_add_tree_jit_library`` in cmake/MetalJit.cmake) and compiles the outputs
into the host library:

* ``<out>/<entry file>.cpp`` for each JIT entry file: the preambles only it needs;
* ``<out>/_shared_preambles.cpp``: the preambles several JIT entry files need, the text pieces
  several entry files' own sources hold (a header that entry files embedded whole all inline,
  such as ggml's ``ggml-common.h``: stored once, with external linkage, declared where used), and
  the lookup
  ``std::string_view unit_source(std::string_view unit)``: the whole text of a JIT entry file
  embedded whole (``builder.kernels.embedding``) by its name (``"ggml-metal.metal"``), ``""``
  for any other name;
* ``<out>/embed.json`` (``builder.jit.embed_facts``): per entry file the bytes it embeds alone,
  and the shared bytes once (the build manifest reads it);
* a depfile naming every file read, so touching a header regenerates the sources.

One file per entry keeps the size report exact: the host library's local symbols of
``unary.metal.cpp`` are what ``unary.metal`` costs (``builder.size.host_symbols``). Each
preamble is written as ``embed`` writes it, in the interface the tree's metallib.toml names
(the plan's ``run_time``: ``[build] jit-namespace``, ``jit-api``, ``jit-lookup``;
``builder.kernels.runtime_sources``): ``const std::string& <function>()`` in ``metal_jit`` by
default; with ``cstring`` ``const char* <function>()``, each function's whole text one literal
(nothing shared between units, and string literals carry no symbol, so the size report counts
them as the library's other bytes); without lookup no ``unit_source``. embed.json says which
storage (``storage``: ``deduplicated`` or ``separate``). Every output is rewritten only when its
bytes change. Standard library and ``builder`` only.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from builder.cmake_build.plan_model import BuildPlan
from builder.errors import BuilderError
from builder.files.atomic import write_if_changed
from builder.jit.embed_facts import embed_facts, write_embed_facts
from builder.jit.tree_preambles import UNIT_LOOKUP

if TYPE_CHECKING:
    from builder.jit.codegen import StoredPiece
    from builder.jit.preamble import Preamble

__all__ = ["LOOKUP", "SHARED_SOURCE", "generate", "main", "unit_source"]

SHARED_SOURCE = "_shared_preambles.cpp"
LOOKUP = UNIT_LOOKUP
"""The host library's lookup of a whole-file unit's text by the unit's name."""


def unit_source(out_dir: Path, unit: str) -> Path:
    """The generated source of a JIT entry file (``tiles/x.metal`` ->
    ``<out>/tiles/x.metal.cpp``)."""
    return out_dir / f"{unit}.cpp"


def _lookup(whole: Sequence[tuple[str, str]], api: str = "string") -> list[str]:
    """``unit_source(unit)`` over the whole-file units (unit, function), defined in their own
    translation units."""
    from builder.jit.literals import cxx_string

    returns = "const char*" if api == "cstring" else "const std::string&"
    lines = [f"{returns} {function}();" for _, function in whole]
    lines += [
        "",
        '// The whole text of a JIT entry file embedded whole, by its name; "" for any other.',
        f"std::string_view {LOOKUP}(std::string_view unit) {{",
        *(f"  if (unit == {cxx_string(unit)}) return {function}();" for unit, function in whole),
        '  return "";  // not null: a host may hand data() to a C API',
        "}",
        "",
    ]
    return lines


def _pieces(preambles: Sequence[tuple[str, Preamble]]) -> dict[str, StoredPiece]:
    """Name -> StoredPiece of every piece ``preambles`` are stored in (as ``preamble_code``)."""
    from builder.jit.codegen import family_pieces

    return {
        piece.name: piece
        for _, preamble in preambles
        for piece in family_pieces(preamble, dedup=True, compress=False)
    }


def _common(
    per_unit: Sequence[Sequence[tuple[str, Preamble]]],
) -> dict[str, tuple[StoredPiece, list[int]]]:
    """Pieces the own sources of several JIT entry files hold (ggml's ggml-common.h, inlined into
    each entry file embedded whole): name -> (piece, the indices of those units)."""
    users: dict[str, tuple[StoredPiece, list[int]]] = {}
    for index, own in enumerate(per_unit):
        for name, piece in _pieces(own).items():
            users.setdefault(name, (piece, []))[1].append(index)
    return {name: used for name, used in users.items() if len(used[1]) > 1}


def _render(
    title: str,
    namespace: str,
    preambles: Sequence[tuple[str, Preamble]],
    extra: Sequence[str] = (),
    *,
    common: Mapping[str, StoredPiece] | None = None,
    define_common: bool = False,
    api: str = "string",
) -> tuple[str, int]:
    """One translation unit defining ``preambles`` = (function, Preamble) as ``embed`` writes
    them (``builder.jit.codegen.preamble_code``), then ``extra`` lines; returns its text and the
    bytes its arrays store (pieces shared by its preambles once). ``common`` pieces are stored
    once for the library: defined here with ``define_common`` (all of them), else declared
    (those used here) and not counted."""
    from builder.jit.codegen import exported_piece, preamble_code
    from builder.jit.literals import comment_text

    common = common or {}
    entries = [(", ".join(p.headers[:1]), f, p) for f, p in preambles]
    code = preamble_code(entries, elsewhere=common, api=api)
    here = _pieces(preambles)
    shown = [p for n, p in common.items() if define_common or n in here]
    exported = [exported_piece(p, define=define_common) for p in shown]
    stored = code.stored_bytes + (sum(p.stored_bytes for p in shown) if define_common else 0)
    heads = (
        ["#include <cstddef>", "#include <initializer_list>", "#include <string>"]
        if api == "string"
        else []
    )
    lines = [
        f"// Generated by metallib-builder: {comment_text(title)}. Do not edit.",
        *heads,
        *(["#include <string_view>"] if api == "string" or extra else []),
        "",
        f"namespace {namespace} {{",
        *exported,
        *(
            ["namespace {", "", *code.definitions, "", "}  // namespace", ""]
            if code.definitions
            else []
        ),
        *code.functions,
        *extra,
        f"}}  // namespace {namespace}",
        "",
    ]
    return "\n".join(lines), stored


def generate(
    plan: BuildPlan, out_dir: Path, namespace: str | None = None
) -> tuple[dict[str, object], list[Path]]:
    """Write the sources for ``plan``'s JIT entry files; return embed.json's content and every
    file read. ``namespace`` (CMake's NAMESPACE) wins over the plan's."""
    from builder.jit.codegen import valid_namespace
    from builder.jit.preamble import inline_preamble

    settings = plan.run_time
    namespace = namespace or str(settings.get("namespace") or "metal_jit")
    api = str(settings.get("api") or "string")
    lookup = bool(settings.get("lookup", True))
    if api not in ("string", "cstring"):
        raise BuilderError(f"api {api!r} is neither string nor cstring")
    if not valid_namespace(namespace):
        raise BuilderError(f"NAMESPACE {namespace!r} is not a C++ namespace")
    include_dirs = list(plan.include_dirs)
    jit_units = [u for u in plan.units if u.mode == "jit"]
    inlined = {p["function"]: inline_preamble(p["headers"], include_dirs) for p in plan.preambles}
    owner = {p["function"]: p["entries"][0] for p in plan.preambles if len(p["entries"]) == 1}
    whole = [
        (p["entries"][0], p["function"]) for p in plan.preambles if p["embedding"] == "whole-file"
    ]
    units: list[dict[str, object]] = []
    per_unit = [
        [(f, inlined[f]) for f in unit.preambles if owner.get(f) == unit.name] for unit in jit_units
    ]
    common = _common(per_unit) if api == "string" else {}  # cstring: nothing is shared
    pieces = {name: piece for name, (piece, _) in common.items()}
    for unit, own in zip(jit_units, per_unit):
        title = (
            f"the whole text of {unit.name}, its quoted includes inlined"
            if unit.embedding == "whole-file"
            else f"run-time preambles only {unit.name} needs"
        )
        text, stored = _render(title, namespace, own, common=pieces, api=api)
        write_if_changed(unit_source(out_dir, unit.name), text)
        units.append(
            {
                "name": unit.name,
                "embedding": unit.embedding or "preamble",
                "preambles": [f for f, _ in own],
                "headers": list(dict.fromkeys(h for _, p in own for h in p.headers)),
                "source_bytes": sum(len(p.text.encode("utf-8")) for _, p in own),
                "embedded_bytes": stored,
            }
        )
    shared = [
        (p["function"], inlined[p["function"]])
        for p in plan.preambles
        if p["function"] not in owner
    ]
    text, shared_bytes = _render(
        "run-time preambles several entry files need, and the text their own sources share",
        namespace,
        shared,
        _lookup(whole, api) if lookup else [],
        common=pieces,
        define_common=True,
        api=api,
    )
    write_if_changed(out_dir / SHARED_SOURCE, text)
    entries = {p["function"]: p["entries"] for p in plan.preambles}
    facts = embed_facts(
        "entry_file",
        units,
        [
            *({"name": f, "units": entries[f]} for f, _ in shared),
            *(
                {
                    "name": name,
                    "units": [jit_units[i].name for i in used],
                    "bytes": piece.stored_bytes,
                }
                for name, (piece, used) in common.items()
            ),
        ],
        shared_bytes,
        compressed=False,
        extra={"storage": "separate" if api == "cstring" else "deduplicated"},
    )
    files = list(dict.fromkeys(f for p in inlined.values() for f in p.files))
    return facts, files


def _generator_files() -> list[Path]:
    names = (
        "builder.jit.preamble",
        "builder.jit.lexing",
        "builder.jit.literals",
        "builder.jit.codegen",
    )
    here = Path(os.path.realpath(__file__))
    return [here, *(Path(os.path.realpath(sys.modules[n].__file__ or "")) for n in names)]


def main(argv: Sequence[str] | None = None) -> int:
    """Generate; exit 2 with one line for an unusable tree (a missing include)."""
    parser = argparse.ArgumentParser(
        prog="python -m builder.cmake_build.tree_jit", allow_abbrev=False
    )
    parser.add_argument("--plan", type=Path, required=True)
    parser.add_argument("--out-dir", type=Path, required=True)
    parser.add_argument("--namespace", default=None, help="default: the plan's, else metal_jit")
    parser.add_argument("--depfile", type=Path)
    args = parser.parse_args(argv)
    try:
        plan = BuildPlan.read(args.plan)
        facts, files = generate(plan, args.out_dir, args.namespace)
        embed = args.out_dir / "embed.json"
        write_embed_facts(embed, facts)
        if args.depfile is not None:
            from builder.jit.depfile import write_depfile

            deps = [args.plan.resolve(), *files, *_generator_files()]
            write_depfile(args.depfile, embed.resolve(), deps)
    except BuilderError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
