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

The interface is the tree's (``[build]`` ``jit-namespace``, ``jit-api``, ``jit-lookup`` of
metallib.toml, ``builder.kernels.runtime_sources``): a host such as MLX links the file as it is.

Measured on what is written, as the chosen API stores it (``storage``): with ``string`` the text
of every distinct piece the file stores (a header shared by several preambles once:
``deduplicated``), with ``cstring`` each function's whole text on its own (``separate``, as MLX
ships its preambles); no NUL terminators either way. ``compressed_bytes`` is those texts back to
back as one zlib stream at level 9, what an app storing them compressed would carry. The catalog
tree's JIT unit is the family header itself.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from builder.jit.generate import cxx_identifier, embed_headers, root_names
from builder.jit.preamble import Preamble, inline_preamble
from builder.jit.tree_preambles import PreambleSpec, jit_preambles
from builder.jit.writer import stored_pieces
from builder.kernels.runtime_sources import RuntimeSources

if TYPE_CHECKING:
    from builder.kernels.discovery import KernelTree

__all__ = [
    "COMPRESSION",
    "EmbedCosts",
    "JitSources",
    "include_dirs",
    "jit_sources",
    "preamble_specs",
    "settings_of",
]

ZLIB_LEVEL = 9
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


def settings_of(tree: KernelTree) -> RuntimeSources:
    """The tree's run-time source settings (a catalog tree has none: ``embed``'s defaults)."""
    return tree.config.runtime


def include_dirs(tree: KernelTree) -> list[Path]:
    """Where quoted includes resolve: the tree's -I folders (a catalog tree has none), then the
    tree (as discovery)."""
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
    catalog = tree.kind == "catalog"
    return [
        (spec.headers, None if catalog else spec.function) for spec in preamble_specs(tree, entries)
    ]


def _render(
    roots: list[tuple[tuple[Path, ...], str | None]], dirs: list[Path], settings: RuntimeSources
) -> tuple[str, list[Preamble], tuple[str, ...]]:
    """The text, its preambles and the ``embed`` arguments (before ``-I``) that write it: each
    preamble one header under the name ``embed`` gives it, or else every one named with
    ``--preamble`` (a configured name, several headers, or a name the tree's naming settled);
    then the interface options that are not ``embed``'s defaults."""
    from builder.jit.generate import function_names

    ns, api, lookup = settings.namespace, settings.api, settings.lookup
    options = _interface_args(settings)
    if all(len(headers) == 1 for headers, _ in roots):
        firsts = [headers[0] for headers, _ in roots]
        text, preambles = embed_headers(firsts, dirs, namespace=ns, api=api, lookup=lookup)
        given = function_names([p.headers[0] for p in preambles])
        if all(function in (None, name) for (_, function), name in zip(roots, given)):
            return text, preambles, (*(str(headers[0]) for headers, _ in roots), *options)
    # a catalog tree's names are embed's (None): only a discovered tree's come here, all named
    named = [(function or cxx_identifier(hs[0].stem), hs) for hs, function in roots]
    text, preambles = embed_headers([], dirs, named=named, namespace=ns, api=api, lookup=lookup)
    args = tuple(f"--preamble={function}={h}" for function, hs in named for h in hs)
    return text, preambles, (*args, *options)


def _interface_args(settings: RuntimeSources) -> tuple[str, ...]:
    """``embed`` options for the interface, those that differ from its defaults."""
    default = RuntimeSources()
    args: list[str] = []
    if settings.namespace != default.namespace:
        args.append(f"--jit-namespace={settings.namespace}")
    if settings.api != default.api:
        args.append(f"--jit-api={settings.api}")
    if not settings.lookup:
        args.append("--no-jit-lookup")
    return tuple(args)


def _stored_texts(
    named: Iterable[tuple[str, Preamble]], settings: RuntimeSources
) -> dict[str, str]:
    """What the generated file stores, by key, in the file's order: with ``cstring`` each
    function's whole text (key: the function), with ``string`` each distinct piece (key: the
    piece's name, a hash of its text)."""
    stored: dict[str, str] = {}
    for function, preamble in named:
        if settings.storage == "separate":
            stored.setdefault(function, preamble.text)
            continue
        for piece in stored_pieces(preamble, dedup=True, compress=False):
            stored.setdefault(piece.name, piece.text)
    return stored


def _function(preamble: Preamble, roots: tuple[Path, ...], function: str | None) -> str:
    """A preamble's function name (a catalog family's: ``embed``'s, from its header)."""
    from builder.jit.generate import function_names

    return function or function_names([preamble.headers[0]])[0] if roots else ""


def jit_sources(tree: KernelTree, entries: Sequence[str]) -> JitSources | None:
    """The JIT source for ``entries`` (None when they include no header to embed)."""
    roots = _roots(tree, entries)
    if not roots:
        return None
    dirs = include_dirs(tree)
    settings = settings_of(tree)
    text, preambles, given = _render(roots, dirs, settings)
    named = [(_function(p, hs, f), p) for p, (hs, f) in zip(preambles, roots)]
    raw = "".join(_stored_texts(named, settings).values()).encode("utf-8")
    headers = tuple(dict.fromkeys(h for hs, _ in roots for h in hs))
    args = ("embed", *given, *(a for d in dirs for a in ("-I", str(d))))
    return JitSources(
        text=text,
        preambles=tuple(", ".join(root_names(p, hs)) for p, (hs, _) in zip(preambles, roots)),
        files=len({f for p in preambles for f in p.files}),
        embedded_bytes=len(raw),
        compressed_bytes=len(zlib.compress(raw, ZLIB_LEVEL)),
        storage=settings.storage,
        headers=headers,
        embed_args=args,
    )


class EmbedCosts:
    """Embedded bytes of any set of JIT entry files, for the planner's ties: the union of what
    the file would store for each entry file's preambles (as the API stores it: shared pieces
    once with ``string``, each function's text with ``cstring``), computed per file once."""

    def __init__(self, tree: KernelTree) -> None:
        self._tree = tree
        self._dirs = include_dirs(tree)
        self._settings = settings_of(tree)
        self._stored: dict[str, dict[str, str]] = {}

    def stored(self, entry: str) -> dict[str, str]:
        """What ``entry``'s preambles store, by key (a function, or a piece's name)."""
        if entry not in self._stored:
            named = [
                (_function(p, h, f), p)
                for h, f in _roots(self._tree, [entry])
                for p in [inline_preamble(h, self._dirs)]
            ]
            self._stored[entry] = _stored_texts(named, self._settings)
        return self._stored[entry]

    def _union(self, entries: Iterable[str]) -> dict[str, str]:
        """What ``entries`` store together: a key two of them store, once."""
        union: dict[str, str] = {}
        for entry in entries:
            union.update(self.stored(entry))
        return union

    def joined(self, entries: Iterable[str]) -> str:
        """The union of what ``entries`` store, by key order, as one text."""
        union = self._union(entries)
        return "".join(union[k] for k in sorted(union))

    def __call__(self, entries: Iterable[str]) -> int:
        return sum(len(t.encode("utf-8")) for t in self._union(entries).values())
