"""A variant's ``jit_sources.cpp``: its JIT entry files' headers embedded as ``embed`` does.

An entry file compiled at run time needs the headers it includes (``builder.jit.tree_preambles``:
its direct quoted includes, shared ones once); every variant, ``all-aot`` included, also carries
the headers of the tree's run-time-only kernels and ``[build.preambles]`` extras. The C++ source
is exactly what ``metallib-builder embed HEADER... -I DIR...`` writes for those headers, with the
tree's ``-I`` folders and then the tree itself as include folders (discovery's search order), so
a user can regenerate it with the command the report prints. When a preamble's name is not the
one ``embed`` would give (metallib.toml names it in ``[build.preambles]``, perhaps for several
headers, or the tree's naming settled a stem clash over the whole tree that this variant's
headers alone would not have) every preamble is given by name, ``embed --preamble NAME=HEADER``,
and the command says so: every variant that embeds sources has one.

Measured on what is written: ``embedded_bytes`` is the text of every distinct piece the file
stores (a header shared by several preambles once; no NUL terminators), and
``compressed_bytes`` those pieces back to back as one zlib stream at level 9, what an app
storing them compressed would carry. The catalog tree's JIT unit is the family header itself.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from builder.jit.codegen import family_pieces
from builder.jit.generate import cxx_identifier, embed_headers, root_names
from builder.jit.preamble import Preamble, inline_preamble
from builder.jit.tree_preambles import PreambleSpec, jit_preambles

if TYPE_CHECKING:
    from builder.kernels.discovery import KernelTree

__all__ = [
    "COMPRESSION",
    "NAMESPACE",
    "EmbedCosts",
    "JitSources",
    "include_dirs",
    "jit_sources",
    "preamble_specs",
]

ZLIB_LEVEL = 9
COMPRESSION = f"zlib level {ZLIB_LEVEL}"
NAMESPACE = "metal_jit"
"""``embed``'s default namespace."""


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
    headers: tuple[Path, ...]
    """The root headers, absolute, in order (``embed``'s arguments when it wrote the file)."""
    embed_args: tuple[str, ...]
    """``embed`` arguments writing the same file (before ``-o``)."""


def include_dirs(tree: KernelTree) -> list[Path]:
    """Where quoted includes resolve: the tree's -I folders, then the tree (as discovery)."""
    if tree.kind == "catalog":
        return [tree.root.resolve()]
    return [*tree.config.include_dirs, tree.root.resolve()]


def preamble_specs(tree: KernelTree, entries: Sequence[str]) -> list[PreambleSpec]:
    """The preambles a variant with ``entries`` JIT embeds (a catalog tree: each family header,
    under ``embed``'s name)."""
    if tree.kind == "catalog":
        from builder.jit.generate import function_names

        names = function_names(list(entries))
        return [
            PreambleSpec(name, ((tree.root / entry).resolve(),), (entry,))
            for name, entry in zip(names, entries)
        ]
    return jit_preambles(tree, entries)


def _roots(tree: KernelTree, entries: Sequence[str]) -> list[tuple[tuple[Path, ...], str | None]]:
    """Each preamble's headers and its function name (None: the catalog's, ``embed``'s)."""
    specs = preamble_specs(tree, entries)
    if tree.kind == "catalog":
        return [(spec.headers, None) for spec in specs]
    return [(spec.headers, spec.function) for spec in specs]


def _render(
    roots: list[tuple[tuple[Path, ...], str | None]], dirs: list[Path]
) -> tuple[str, list[Preamble], tuple[str, ...]]:
    """The text, its preambles and the ``embed`` arguments (before ``-I``) that write it: each
    preamble one header under the name ``embed`` gives it, or else every one named with
    ``--preamble`` (a configured name, several headers, or a name the tree's naming settled)."""
    from builder.jit.generate import function_names

    if all(len(headers) == 1 for headers, _ in roots):
        text, preambles = embed_headers(
            [headers[0] for headers, _ in roots], dirs, namespace=NAMESPACE
        )
        given = function_names([p.headers[0] for p in preambles])
        if all(function in (None, name) for (_, function), name in zip(roots, given)):
            return text, preambles, tuple(str(headers[0]) for headers, _ in roots)
    # a catalog tree's names are embed's (None): only a discovered tree's come here, all named
    named = [(function or cxx_identifier(hs[0].stem), hs) for hs, function in roots]
    text, preambles = embed_headers([], dirs, namespace=NAMESPACE, named=named)
    args = tuple(f"--preamble={function}={h}" for function, hs in named for h in hs)
    return text, preambles, args


def _distinct_texts(preambles: Iterable[Preamble]) -> list[str]:
    """The texts of the pieces the generated file stores, each once, in the file's order."""
    seen: dict[str, str] = {}
    for preamble in preambles:
        for piece in family_pieces(preamble, dedup=True, compress=False):
            seen.setdefault(piece.name, piece.text)
    return list(seen.values())


def jit_sources(tree: KernelTree, entries: Sequence[str]) -> JitSources | None:
    """The JIT source for ``entries`` (None when they include no header to embed)."""
    roots = _roots(tree, entries)
    if not roots:
        return None
    dirs = include_dirs(tree)
    text, preambles, given = _render(roots, dirs)
    raw = "".join(_distinct_texts(preambles)).encode("utf-8")
    headers = tuple(dict.fromkeys(h for hs, _ in roots for h in hs))
    args = ("embed", *given, *(a for d in dirs for a in ("-I", str(d))))
    return JitSources(
        text=text,
        preambles=tuple(", ".join(root_names(p, hs)) for p, (hs, _) in zip(preambles, roots)),
        files=len({f for p in preambles for f in p.files}),
        embedded_bytes=len(raw),
        compressed_bytes=len(zlib.compress(raw, ZLIB_LEVEL)),
        headers=headers,
        embed_args=args,
    )


class EmbedCosts:
    """Embedded bytes of any set of JIT entry files, for the planner's ties: the union of the
    text each file's preambles are made of (shared headers once), computed per file once."""

    def __init__(self, tree: KernelTree) -> None:
        self._tree = tree
        self._dirs = include_dirs(tree)
        self._texts: dict[str, frozenset[str]] = {}

    def texts(self, entry: str) -> frozenset[str]:
        """The distinct texts ``entry``'s preambles are made of."""
        if entry not in self._texts:
            preambles = [inline_preamble(h, self._dirs) for h, _ in _roots(self._tree, [entry])]
            self._texts[entry] = frozenset(_distinct_texts(preambles))
        return self._texts[entry]

    def __call__(self, entries: Iterable[str]) -> int:
        texts: set[str] = set()
        for entry in entries:
            texts |= self.texts(entry)
        return sum(len(t.encode("utf-8")) for t in texts)
