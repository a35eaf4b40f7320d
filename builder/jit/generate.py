"""The JIT generator's actions: one family's source, the target's embed.json, ``embed``.

CMake runs these at build time through ``python -m builder.jit`` (see ``cmake/MetalJit.cmake``
and ``cmake/MetallibEmbed.cmake``); ``metallib-builder embed`` calls :func:`write_embed`. Only the
standard library and ``builder.kernels``/``builder.errors`` are imported, because
scikit-build-core runs the generator in an isolated build environment without click or rich.

Every output is written atomically and only when its bytes change, so a regenerated but
identical file does not trigger a recompile (Ninja ``restat``). Depfiles (``builder.jit.depfile``)
list every file the output was made from (a family's: catalog, headers, the generator's own
modules; embed's: the headers inlined), so touching a header regenerates only what embeds it.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from builder.errors import UsageError
from builder.files.atomic import check_not_an_input, write_if_changed
from builder.jit.codegen import (
    Kernel,
    StoredPiece,
    family_pieces,
    pool_pieces,
    render_family,
    render_standalone,
    valid_namespace,
)
from builder.jit.cxx_keywords import CXX_KEYWORDS
from builder.jit.depfile import write_depfile
from builder.jit.embed_facts import embed_facts
from builder.jit.preamble import Preamble, inline_preamble
from builder.kernels.runtime_sources import APIS

__all__ = [
    "EMBED_APIS",
    "FACTS_SCHEMA",
    "FamilySource",
    "Named",
    "embed_headers",
    "family_source",
    "function_names",
    "merge_facts",
    "named_preambles",
    "root_names",
    "write_embed",
    "write_family",
]

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
    pieces = family_pieces(preamble, dedup=dedup, compress=compress)
    pool = pool_pieces(kernels, compress=compress)
    origin = f"{catalog.path.name} and {spec.header}"
    cpp = render_family(family, preamble, pieces, kernels, pool, head, origin)
    return FamilySource(
        family, preamble, tuple(pieces), tuple(kernels), tuple(pool), tuple(lines), cpp
    )


def _generator_files() -> list[Path]:
    """The modules whose code shapes the output: a change to them must regenerate."""
    names = (
        "builder.jit.preamble",
        "builder.jit.lexing",
        "builder.jit.literals",
        "builder.jit.codegen",
        "builder.jit.generate",
        "builder.kernels.catalog",
        "builder.kernels.naming",
        "builder.kernels.dtypes",
    )
    return [Path(os.path.realpath(sys.modules[n].__file__ or "")) for n in names]


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
        deps = [catalog, *generated.preamble.files, *_generator_files()]
        write_depfile(depfile, os.path.abspath(cpp_path), deps)
    return generated


def merge_facts(
    target: str,
    compressed: bool,
    dedup: bool,
    family_facts: Sequence[Mapping[str, Any]],
    stripped: bool = False,
) -> dict[str, Any]:
    """embed.json (``builder.jit.embed_facts``): per family what it embeds, with pieces shared by
    families counted once.

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
        "catalog_family",
        families,
        shared_list,
        sum(int(s["bytes"]) for s in shared_list),
        compressed=compressed,
        extra=extra,
    )


def cxx_identifier(text: str) -> str:
    """``text`` as a C++ identifier: other characters than ``[A-Za-z0-9_]`` become ``_``, a
    leading digit gets a ``_`` before it and a C++ keyword one after it."""
    out = re.sub(r"[^A-Za-z0-9_]", "_", text)
    out = out if not out[:1].isdigit() else f"_{out}"
    return f"{out}_" if out in CXX_KEYWORDS else out


def function_names(names: Sequence[str]) -> list[str]:
    """C++ function names for preambles: the header's stem; its path without the suffix when
    stems clash (``a/util.h``, ``b/util.h``); its whole path when those clash too (``fft.h``,
    ``fft.metal``).

    Any other character than ``[A-Za-z0-9_]`` becomes ``_``, a leading digit gets a ``_``
    before it and a C++ keyword one after it; names that still coincide (``a-b.h``, ``a_b.h``)
    get ``_2``, ``_3``, ... in order, so every function is defined once.
    """

    ident = cxx_identifier
    stems = [ident(Path(n).stem) for n in names]
    full = [ident(str(Path(n).with_suffix(""))) for n in names]
    whole = [ident(str(n)) for n in names]
    chosen = [
        s if stems.count(s) == 1 else f if full.count(f) == 1 else w
        for s, f, w in zip(stems, full, whole)
    ]
    taken: set[str] = set()
    out = []
    for name in chosen:
        unique, k = name, 1
        while unique in taken:
            k += 1
            unique = f"{name}_{k}"
        taken.add(unique)
        out.append(unique)
    return out


EMBED_APIS = APIS
"""What each embedded preamble's function returns: ``string`` gives ``const std::string& name()``
(the default; pieces shared between preambles stored once), ``cstring`` gives
``const char* name()``, the interface MLX's ``jit/includes.h`` declares (each preamble's whole
text one literal, as MLX stores it). Both keep their text for the whole program (see
``codegen.render_standalone``)."""


Named = Sequence[tuple[str, Sequence[str | os.PathLike[str]]]]
"""Preambles given a function name: ``(function, headers)``, the headers inlined in order into
one preamble (``embed --preamble NAME=HEADER``, a tree's ``[build.preambles]``)."""


def embed_headers(
    headers: Sequence[str | os.PathLike[str]],
    include_dirs: Sequence[str | os.PathLike[str]],
    defines: Sequence[str] = (),
    namespace: str = "metal_jit",
    *,
    named: Named = (),
    strip: bool = False,
    api: str = "string",
    lookup: bool = True,
    allow_outside_includes: bool = False,
) -> tuple[str, list[Preamble]]:
    """A standalone C++ source with one preamble per header (``metallib-builder embed``), named
    by :func:`function_names`, then one per ``named`` entry under its own name.

    ``api`` is one of :data:`EMBED_APIS`. Raises UsageError (IncludeError) for an unresolvable
    quoted include, naming file and line, and for one resolving outside ``include_dirs`` and the
    headers' folders unless ``allow_outside_includes`` (``builder.jit.preamble``); for a name
    that is no C++ function name or names two preambles.
    """
    if not headers and not named:
        raise UsageError("embed needs at least one header (HEADER or --preamble NAME=HEADER)")
    if not valid_namespace(namespace):
        raise UsageError(f"--namespace {namespace!r} is not a C++ namespace name")
    if api not in EMBED_APIS:
        raise UsageError(f"--api {api!r}: choose one of {', '.join(EMBED_APIS)}")

    def inline(roots: Sequence[str | os.PathLike[str]]) -> Preamble:
        return inline_preamble(
            roots, include_dirs, defines, strip=strip, allow_outside_includes=allow_outside_includes
        )

    preambles = [inline([h]) for h in headers]
    names = [p.headers[0] for p in preambles]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise UsageError(f"header given twice: {', '.join(duplicates)}")
    funcs = function_names(names)
    for function, roots in named:
        if not function or cxx_identifier(function) != function:
            raise UsageError(f"--preamble {function}=...: {function!r} is not a C++ function name")
        if function in funcs:
            raise UsageError(f"--preamble {function}=...: {function!r} names two preambles")
        preamble = inline(roots)
        preambles.append(preamble)
        names.append(", ".join(root_names(preamble, roots)))
        funcs.append(function)
    if api == "cstring":
        for name, preamble in zip(names, preambles):
            if "\0" in preamble.text:  # a C string would end there
                raise UsageError(
                    f"{name}: the inlined text holds a NUL character; use --api string"
                )
    entries = list(zip(names, funcs, preambles))
    text = render_standalone(entries, namespace, ", ".join(names), api=api, lookup=lookup)
    return text, preambles


def named_preambles(values: Sequence[str]) -> list[tuple[str, list[Path]]]:
    """``--preamble NAME=HEADER`` values as :data:`Named` entries: each NAME once, in the order
    first given, with its headers in the order given."""
    named: dict[str, list[Path]] = {}
    for value in values:
        name, equals, header = value.partition("=")
        if not equals or not header:
            raise UsageError(f"--preamble {value!r}: expected NAME=HEADER")
        named.setdefault(name, []).append(Path(header))
    return list(named.items())


def root_names(preamble: Preamble, roots: Sequence[str | os.PathLike[str]]) -> list[str]:
    """How ``preamble`` names its root headers ``roots`` (its ``files`` and ``headers`` share
    one order)."""
    files = [os.path.realpath(f) for f in preamble.files]
    return [preamble.headers[files.index(os.path.realpath(root))] for root in roots]


def write_embed(
    headers: Sequence[str | os.PathLike[str]],
    include_dirs: Sequence[str | os.PathLike[str]],
    output: str | os.PathLike[str],
    defines: Sequence[str] = (),
    namespace: str = "metal_jit",
    *,
    strip: bool = False,
    api: str = "string",
    lookup: bool = True,
    depfile: str | os.PathLike[str] | None = None,
    allow_outside_includes: bool = False,
    named: Named = (),
) -> tuple[bool, list[Preamble]]:
    """:func:`embed_headers` written to ``output``, and a depfile naming every file inlined.

    Both files are written atomically and only when their bytes change (a no-op regeneration
    leaves timestamps alone, for Ninja's ``restat``). The depfile's target is ``output`` as given
    (as a compiler's ``-MD`` names its ``-o``); its prerequisites are the real paths of all files
    read, roots and includes, in inclusion order. Returns (output written, preambles).

    UsageError, before anything is written, when ``output`` or ``depfile`` is one of the files
    read, or both name the same file: an input is never written over.
    """
    text, preambles = embed_headers(
        headers,
        include_dirs,
        defines,
        namespace,
        named=named,
        strip=strip,
        api=api,
        lookup=lookup,
        allow_outside_includes=allow_outside_includes,
    )
    _refuse_overwriting([f for p in preambles for f in p.files], output, depfile)
    changed = write_if_changed(output, text)
    if depfile is not None:
        write_depfile(depfile, output, [f for p in preambles for f in p.files])
    return changed, preambles


def _refuse_overwriting(
    inputs: Sequence[Path],
    output: str | os.PathLike[str],
    depfile: str | os.PathLike[str] | None,
) -> None:
    """UsageError when an output would replace an input
    (``builder.files.atomic.check_not_an_input``),
    or the two outputs are one file."""
    check_not_an_input(output, inputs, hint="; choose another file")
    if depfile is not None:
        check_not_an_input(depfile, inputs, hint="; choose another file")
        if os.path.realpath(output) == os.path.realpath(depfile):
            raise UsageError(f"-o and --depfile name the same file ({os.fspath(output)})")
