"""What a split costs beside its metallib, per entry file, for the ``--ceiling`` planner
(``builder.subsets.variant_plan``): the embedded source bytes of any set of JIT entry files (its
ties, and the download measure's source), and the **first-use source bytes**, the planner's
measured proxy of what compiling an entry file at run time costs.

The proxy. A host compiles a JIT entry file's kernels at their first use from the run-time source
text: the preambles the file needs (each function's whole inlined text, as the split's
``jit_sources.cpp`` stores it; a shared one such as MLX's ``utils()`` counted in every file that
needs it, as each run-time compile reads it again) plus the instantiation lines, for which the
entry file's own text stands (its lines less its quoted ``#include`` lines; an entry file that
is a run-time source itself, embedded whole or writing kernels of its own, is counted once, as
that source). A compile's time grows with the text
it reads, so the bytes rank what a split makes the app compile at run time; they are no time: the
time also depends on the kernels asked for, the device and the compiler's cache (docs/mlx.md,
"Mixed splits", measures it on MLX v0.32.1). A catalog tree's JIT unit is its family header:
its text alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from builder.files.reading import read_source
from builder.jit.tree_preambles import declared_entries
from builder.kernels.kernel_tree import WHOLE_FILE
from builder.subsets.coverage import jit_sources

if TYPE_CHECKING:
    from builder.kernels.kernel_tree import KernelTree
    from builder.subsets.coverage import JitSources

__all__ = ["PROXY", "EmbedCosts", "instantiation_bytes"]

PROXY = (
    "first-use source bytes (a proxy of run-time compile cost): the preambles and "
    "instantiation lines each JIT entry file's first use compiles"
)
"""How outputs name the proxy."""

_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*"[^"\n]*"[^\n]*$', re.MULTILINE)


def instantiation_bytes(tree: KernelTree, entry: str) -> int:
    """The bytes of ``entry``'s own text less its quoted include lines (and their newlines):
    what stands for the instantiation lines a host appends to its preambles."""
    data = read_source(tree.root / entry)
    included = sum(len(m.group(0)) + 1 for m in _INCLUDE.finditer(data))
    return max(0, len(data) - included)


class EmbedCosts:
    """Embedded bytes of any set of JIT entry files, for the planner's ties: the union of what
    the file would store for each entry file's preambles (:attr:`JitSources.stored`, each entry
    file's made once), with the table functions a complete split adds
    (``builder.subsets.coverage.preamble_specs``) when there is a JIT entry file; and each
    entry file's first-use source bytes (:meth:`first_use`)."""

    def __init__(self, tree: KernelTree) -> None:
        self._tree = tree
        self._sources: dict[str, JitSources | None] = {}
        self._stored: dict[str, dict[str, str]] = {}
        self._fill: dict[str, str] | None = None
        self._own_code: set[str] | None = None
        self._first_use: dict[str, int] = {}

    def _own(self, entry: str) -> JitSources | None:
        if entry not in self._sources:
            self._sources[entry] = jit_sources(self._tree, [entry], complete=False)
        return self._sources[entry]

    def _table_fill(self) -> dict[str, str]:
        """What a complete split stores beside its own: every table function's of the
        ``jit-mode`` set (nothing unless ``preamble-set = "table"``)."""
        if self._fill is None:
            tree = self._tree
            made = None
            if tree.kind != "catalog" and tree.config.runtime.table_only:
                made = jit_sources(tree, declared_entries(tree), complete=False)
            self._fill = dict(made.stored) if made is not None else {}
        return self._fill

    def _union(self, entries: Iterable[str]) -> dict[str, str]:
        """What ``entries`` store together: a key two of them store, once."""
        union: dict[str, str] = {}
        for entry in entries:
            if entry not in self._stored:
                sources = self._own(entry)
                self._stored[entry] = sources.stored if sources is not None else {}
            union.update(self._stored[entry])
        return union

    def _complete(self, entries: Iterable[str]) -> dict[str, str]:
        chosen = list(entries)
        union = self._union(chosen)
        if chosen:
            for key, text in self._table_fill().items():
                union.setdefault(key, text)
        return union

    def joined(self, entries: Iterable[str]) -> str:
        """The union of what ``entries`` store, by key order, as one text."""
        union = self._complete(entries)
        return "".join(union[k] for k in sorted(union))

    def __call__(self, entries: Iterable[str]) -> int:
        return sum(len(t.encode("utf-8")) for t in self._complete(entries).values())

    def first_use(self, entry: str) -> int:
        """The proxy: the whole text of every function ``entry`` needs, plus its instantiation
        lines (none apart for an entry file that is a run-time source itself). Worked out once
        per entry file: the planner and every variant's record ask for the same ones."""
        if entry not in self._first_use:
            self._first_use[entry] = self._first_use_bytes(entry)
        return self._first_use[entry]

    def _first_use_bytes(self, entry: str) -> int:
        sources = self._own(entry)
        preambles = 0
        if sources is not None:
            preambles = sum(
                len(text.encode("utf-8"))
                for function, text in sources.texts.items()
                if entry in sources.users.get(function, ())
            )
        if self._tree.kind == "catalog" or self._is_source(entry):
            return preambles
        return preambles + instantiation_bytes(self._tree, entry)

    def _is_source(self, entry: str) -> bool:
        """``entry`` is a run-time source itself: embedded whole, or writing kernels."""
        from builder.jit.tree_preambles import embedding_of, own_code_entries

        if self._own_code is None:
            self._own_code = own_code_entries(self._tree)
        return entry in self._own_code or embedding_of(self._tree).get(entry) == WHOLE_FILE
