"""What a split of a kernel tree embeds, and the coverage check: it loses no kernel.

A split (a variant of ``variants --from``, or a ``build`` with JIT entry files) ships every kernel
discovery finds either compiled, in its metallib, or as source, among its embedded run-time
preambles. So, for each kernel:

- its entry file is AOT, and the metallib holds it (a build compiles every AOT entry file; a
  variant is a subset of a library, and a kernel that library lacks is counted apart: no split
  could ship it); or
- its entry file is JIT, and the file its code is written in (``KernelTree.defined_in``: the
  header holding its template, or the function itself) is one of the files the run-time sources
  inline. An entry file embedded whole (``KernelTree.embeddings``) is its own run-time
  source, so it ships every kernel written in it or in what it quote-includes; only a kernel
  behind a computed include (``#include SOME_MACRO``, left to the run-time compiler) is lost.

And every run-time-only kernel template (``KernelTree.runtime_only``) has its header among them,
whatever is JIT. The files a preamble inlines are found as the inliner finds them
(``builder.jit.preamble.quoted_includes``, from each root header, each file once), without
making the text. A split that loses kernels is refused before anything is written:
``CheckFailed`` (exit 1) naming each entry file and how many of its kernels would be lost.

A variant's ``jit_sources.cpp`` (:func:`jit_sources`) is its JIT entry files' headers written by
``embed``'s writer: an entry file compiled at run time needs the headers it includes
(``builder.jit.tree_preambles``: its direct quoted includes, shared ones once); every variant,
``all-aot`` included, also carries the headers of the tree's run-time-only kernels and
``[build.preambles]`` extras. With ``preamble-set = "table"`` a variant with any JIT entry file also
carries every table function a JIT build of the tree needs (:func:`preamble_specs`), so it links
with host code that names them all. The C++ source is exactly what ``metallib-builder embed
HEADER... -I DIR...`` writes for those headers, with the tree's ``-I`` folders and then the tree
itself as include folders (discovery's search order), so a user can regenerate it with the command
the report prints. When a preamble's name is not the one ``embed`` would give (metallib.toml names
it in ``[build.preambles]``, perhaps for several headers, or the tree's naming settled a stem clash
over the whole tree that this variant's headers alone would not have) every preamble is given by
name, ``embed --preamble NAME=HEADER``, and the command says so. The interface is the tree's
(``[build]`` ``jit-namespace``, ``jit-api``, ``jit-lookup`` of metallib.toml,
``builder.kernels.runtime_sources``): a host such as MLX links the file as it is.

Measured on what is written, as the chosen API stores it (``storage``): with ``string`` the text
of every distinct piece the file stores (a header shared by several preambles once:
``deduplicated``), with ``cstring`` each function's whole text on its own (``separate``, as MLX
ships its preambles); no NUL terminators either way. ``compressed_bytes`` is those texts back to
back as one zlib stream at level 9, what an app storing them compressed would carry. The catalog
tree's JIT unit is the family header itself.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from builder.errors import CheckFailed
from builder.files.dataclass_json import field
from builder.jit.generate import cxx_identifier, embed_headers, function_names, root_names
from builder.jit.preamble import Preamble, inlined_files
from builder.jit.tree_preambles import PreambleSpec, split_preambles
from builder.jit.writer import ZLIB_LEVEL, stored_pieces
from builder.kernels.runtime_sources import RuntimeSources

if TYPE_CHECKING:
    from builder.kernels.kernel_tree import KernelTree

__all__ = [
    "COMPRESSION",
    "ZLIB_LEVEL",
    "Coverage",
    "JitSources",
    "Lost",
    "check_coverage",
    "include_dirs",
    "jit_sources",
    "preamble_specs",
    "require_coverage",
    "split_coverage",
    "whole_files",
]


@dataclass(frozen=True)
class Lost:
    """Kernels of one entry file (or run-time-only header) a split would ship nowhere."""

    source: str
    kernels: int
    written_in: tuple[str, ...]
    """The files holding their code, none of which the split embeds."""


@dataclass(frozen=True)
class Coverage:
    """How a split ships the tree's kernels."""

    kernels: int
    """Kernels discovery finds."""
    in_metallib: int
    in_sources: int
    absent: int = field(key="not_in_input", default=0)
    """Kernels of AOT entry files that the input library does not hold (another release)."""
    runtime_only: int = field(key="runtime_only_templates", default=0)
    """Run-time-only kernel templates, each with its header embedded."""
    lost: tuple[Lost, ...] = field(default=(), omit="empty")
    """Empty in a written variant (a split that loses kernels is not written): not recorded."""

    @property
    def complete(self) -> bool:
        return not self.lost


def _real(tree: KernelTree, name: str) -> Path:
    return Path(os.path.realpath(tree.root / name))


def check_coverage(
    tree: KernelTree,
    jit: Iterable[str],
    preambles: Sequence[PreambleSpec],
    include_dirs: Sequence[Path],
    *,
    in_metallib: Callable[[str], bool] | None = None,
) -> Coverage:
    """Where each kernel of ``tree`` ships when ``jit`` entry files are compiled at run time
    from ``preambles``; ``in_metallib(name)`` says whether the metallib holds a kernel of an AOT
    entry file (None: a build, which compiles every one)."""
    chosen = set(jit)
    embedded = {
        str(p) for p in inlined_files((h for spec in preambles for h in spec.headers), include_dirs)
    }
    missing: dict[str, list[str]] = {}
    in_lib = in_src = absent = 0
    if in_metallib is not None:
        for record in tree.kernels:
            if record.source not in chosen:
                if in_metallib(record.name):
                    in_lib += 1
                else:
                    absent += 1
    real: dict[str, str] = {}
    for (source, _, _), (where, count) in tree.code_sites.items():
        if source not in chosen:
            in_lib += count if in_metallib is None else 0
        elif (real.get(where) or real.setdefault(where, str(_real(tree, where)))) in embedded:
            in_src += count
        else:
            missing.setdefault(source, []).extend([where] * count)
    lost = [
        Lost(source, len(files), tuple(dict.fromkeys(files))) for source, files in missing.items()
    ]
    runtime_lost: dict[str, int] = {}
    for template in tree.runtime_only:
        if str(_real(tree, template.source)) not in embedded:
            runtime_lost[template.source] = runtime_lost.get(template.source, 0) + 1
    lost += [Lost(header, count, (header,)) for header, count in runtime_lost.items()]
    return Coverage(
        len(tree.kernels),
        in_lib,
        in_src,
        absent,
        len(tree.runtime_only) - sum(runtime_lost.values()),
        tuple(lost),
    )


def split_coverage(tree: KernelTree, jit: Sequence[str], kept: set[str], name: str) -> Coverage:
    """The coverage of variant ``name`` of ``tree``: ``jit`` entry files JIT, its metallib keeping
    the functions named ``kept``; CheckFailed (exit 1) when it would lose kernels."""
    preambles = preamble_specs(tree, jit)
    coverage = check_coverage(
        tree, jit, preambles, include_dirs(tree), in_metallib=kept.__contains__
    )
    require_coverage(coverage, f"variant {name}")
    return coverage


def whole_files(tree: KernelTree) -> tuple[str, ...]:
    """Entry files embedded whole when JIT (``KernelTree.embeddings``), in tree order."""
    if tree.kind == "catalog":
        return ()
    from builder.jit.tree_preambles import embedding_of

    return tuple(s for s, how in embedding_of(tree).items() if how == "whole-file")


def require_coverage(coverage: Coverage, split: str) -> None:
    """``CheckFailed`` (exit 1) when ``split`` (a variant's or build's name) loses kernels: one
    line naming every entry file with its count and where the code is written."""
    if coverage.complete:
        return
    parts = [
        f"{lost.source}: {lost.kernels:,} kernel(s), code in {', '.join(lost.written_in)}"
        for lost in coverage.lost
    ]
    total = sum(lost.kernels for lost in coverage.lost)
    raise CheckFailed(
        f"{split} would lose {total:,} kernel(s), in neither its metallib nor its embedded "
        f"sources ({'; '.join(parts)}); keep those entry files AOT or embed the files "
        "holding their code"
    )


COMPRESSION = f"zlib level {ZLIB_LEVEL}"


@dataclass(frozen=True)
class JitSources:
    """The generated source and what it embeds."""

    text: str
    preambles: tuple[str, ...]
    """The preambles' root headers as the file names them, in order."""
    files: int
    """Files inlined (headers and what they include), each once."""
    embedded_bytes: int
    compressed_bytes: int
    storage: str
    """How the API stores the texts: ``separate`` (``cstring``) or ``deduplicated``
    (``string``), ``builder.kernels.runtime_sources.RuntimeSources.storage``."""
    headers: tuple[Path, ...]
    """The root headers, absolute, in order (``embed``'s arguments when it wrote the file)."""
    embed_args: tuple[str, ...]
    """``embed`` arguments writing the same file (before ``-o``)."""
    stored: dict[str, str]
    """What the file stores, by key, in the file's order: with ``cstring`` each function's whole
    text (key: the function), with ``string`` each distinct piece (``builder.jit.writer``'s
    ``stored_pieces``; key: the piece's name, a hash of its text)."""
    texts: dict[str, str] = field(default_factory=dict)
    """Each function's whole text, by function, in the file's order."""
    users: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """The JIT entry files each function serves, by function (none: one every variant
    carries, or one the table fills in: :func:`preamble_specs`)."""


def include_dirs(tree: KernelTree) -> list[Path]:
    """Where quoted includes resolve: the tree's -I folders (a catalog tree has none), then the
    tree (as discovery)."""
    return [*tree.config.include_dirs, tree.root.resolve()]


def preamble_specs(
    tree: KernelTree, entries: Sequence[str], *, complete: bool = True
) -> list[PreambleSpec]:
    """The preambles a variant with ``entries`` JIT embeds (a catalog tree: each family header,
    under ``embed``'s name): ``builder.jit.tree_preambles.split_preambles``, the rule a build's
    plan takes too, ``complete`` included (with ``preamble-set = "table"``, every table function
    a JIT build of the tree needs, whichever entry files are AOT)."""
    if tree.kind == "catalog":
        names = function_names(list(entries))
        return [
            PreambleSpec(name, ((tree.root / entry).resolve(),), (entry,))
            for name, entry in zip(names, entries)
        ]
    return split_preambles(tree, entries, complete=complete)


def _render(
    roots: list[tuple[tuple[Path, ...], str]], dirs: list[Path], settings: RuntimeSources
) -> tuple[str, list[Preamble], tuple[str, ...]]:
    """The text, its preambles and the ``embed`` arguments (before ``-I``) that write it: each
    preamble one header under the name ``embed`` gives it, or else every one named with
    ``--preamble`` (a configured name, several headers, or a name the tree's naming settled);
    then the interface options that are not ``embed``'s defaults."""
    ns, api, lookup = settings.namespace, settings.api, settings.lookup
    default = RuntimeSources()
    options = (
        *([f"--jit-namespace={ns}"] if ns != default.namespace else []),
        *([f"--jit-api={api}"] if api != default.api else []),
        *([] if lookup else ["--no-jit-lookup"]),
    )
    if all(len(headers) == 1 for headers, _ in roots):
        firsts = [headers[0] for headers, _ in roots]
        text, preambles = embed_headers(firsts, dirs, namespace=ns, api=api, lookup=lookup)
        given = function_names([p.headers[0] for p in preambles])
        if all(function == name for (_, function), name in zip(roots, given)):
            return text, preambles, (*(str(headers[0]) for headers, _ in roots), *options)
    # only a discovered tree's names come here (a catalog tree's are embed's), all named
    named = [(function or cxx_identifier(hs[0].stem), hs) for hs, function in roots]
    text, preambles = embed_headers([], dirs, named=named, namespace=ns, api=api, lookup=lookup)
    args = tuple(f"--preamble={function}={h}" for function, hs in named for h in hs)
    return text, preambles, (*args, *options)


def jit_sources(
    tree: KernelTree, entries: Sequence[str], *, complete: bool = True
) -> JitSources | None:
    """The JIT source for ``entries`` (None when they include no header to embed), written by
    ``embed``'s writer (``builder.jit.generate.embed_headers``); ``complete``: as
    :func:`preamble_specs`."""
    specs = preamble_specs(tree, entries, complete=complete)
    roots = [(spec.headers, spec.function) for spec in specs]
    if not roots:
        return None
    dirs = include_dirs(tree)
    settings = tree.config.runtime
    text, preambles, given = _render(roots, dirs, settings)
    stored: dict[str, str] = {}
    for (_, function), preamble in zip(roots, preambles):
        if settings.storage == "separate":
            stored.setdefault(function, preamble.text)
            continue
        for piece in stored_pieces(preamble, dedup=True, compress=False):
            stored.setdefault(piece.name, piece.text)
    raw = "".join(stored.values()).encode("utf-8")
    args = ("embed", *given, *(a for d in dirs for a in ("-I", str(d))))
    return JitSources(
        text=text,
        preambles=tuple(", ".join(root_names(p, hs)) for p, (hs, _) in zip(preambles, roots)),
        files=len({f for p in preambles for f in p.files}),
        embedded_bytes=len(raw),
        compressed_bytes=len(zlib.compress(raw, ZLIB_LEVEL)),
        storage=settings.storage,
        headers=tuple(dict.fromkeys(h for hs, _ in roots for h in hs)),
        embed_args=args,
        stored=stored,
        texts={f: p.text for (_, f), p in zip(roots, preambles)},
        users={spec.function: spec.entries for spec in specs},
    )
