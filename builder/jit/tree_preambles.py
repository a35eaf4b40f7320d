"""Which run-time preambles a kernel tree's JIT entry files need, under which C++ function names.

An entry file compiled at run time needs the headers it includes: MLX's ``unary.metal`` includes
``utils.h``, ``unary_ops.h`` and ``unary.h``, and MLX's host builds the run-time source from the
preambles ``utils()``, ``unary_ops()`` and ``unary()`` plus generated instantiation lines. So a JIT
entry file's preambles are its direct quoted includes (each inlined with everything it includes,
by ``embed``). ``[build.preambles]`` in metallib.toml names them (function -> headers, several
headers per function allowed); a header it does not name gets a function named after its stem
(``steel/gemm/kernels/steel_gemm_fused.h`` -> ``steel_gemm_fused``), the rule ``embed`` uses.
Shared headers are one preamble, needed by several entry files.

An entry file that also *defines* kernels of its own (a non-template ``[[kernel]]`` or ``kernel
void`` function, which discovery records with no template) holds code no header has: it becomes
a preamble itself, after its includes, so the run-time compiler gets those functions too.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from builder.jit.generate import function_names
from builder.jit.preamble import quoted_includes

if TYPE_CHECKING:
    from builder.kernels.discovery import KernelTree

__all__ = ["PreambleSpec", "entry_includes", "jit_preambles"]


class PreambleSpec(NamedTuple):
    """One run-time preamble: a C++ function returning the inlined text of ``headers``."""

    function: str
    headers: tuple[Path, ...]
    """Absolute paths, inlined in this order."""
    entries: tuple[str, ...]
    """The JIT entry files (relative to the tree) that include one of ``headers``."""


def _search_path(tree: KernelTree) -> list[Path]:
    """Where quoted includes resolve, as discovery preprocesses: the -I folders, then the root."""
    return [*tree.config.include_dirs, tree.root.resolve()]


def entry_includes(tree: KernelTree, entry: str) -> list[Path]:
    """The headers ``entry`` (relative to the tree root) quote-includes itself, resolved."""
    return quoted_includes(tree.root / entry, _search_path(tree))


def jit_preambles(tree: KernelTree, jit_entries: Sequence[str]) -> list[PreambleSpec]:
    """The preambles ``jit_entries`` need, in order of first use, each once."""
    configured = {header: function for function, headers in tree.config.preambles.items()
                  for header in headers}  # fmt: skip
    needed: dict[str, list[str]] = {}  # function -> entry files, in first-use order
    loose: list[Path] = []  # included headers no configured preamble names
    defines_kernels = {k.source for k in tree.kernels if k.template is None}
    for entry in jit_entries:
        own = [tree.root.resolve() / entry] if entry in defines_kernels else []
        for header in [*entry_includes(tree, entry), *own]:
            function = configured.get(header)
            if function is None:
                if header not in loose:
                    loose.append(header)
                function = f"\0{loose.index(header)}"  # named below, once all are known
            users = needed.setdefault(function, [])
            if entry not in users:
                users.append(entry)
    search = [tree.root.resolve(), *tree.config.include_dirs]  # names relative to the tree first
    named = dict(zip((f"\0{k}" for k in range(len(loose))),
                     function_names([_display(h, search) for h in loose])))  # fmt: skip
    specs = []
    for function, entries in needed.items():
        if function in named:
            headers: tuple[Path, ...] = (loose[int(function[1:])],)
            function = named[function]
        else:
            headers = tree.config.preambles[function]
        specs.append(PreambleSpec(function, headers, tuple(entries)))
    clash = sorted({s.function for s in specs if [t.function for t in specs].count(s.function) > 1})
    if clash:
        from builder.errors import UsageError

        raise UsageError(f"run-time preamble name(s) {', '.join(clash)} name different headers; "
                         "name them in metallib.toml [build.preambles]")  # fmt: skip
    return specs


def _display(header: Path, search: Sequence[Path]) -> str:
    for folder in search:
        try:
            return header.relative_to(folder.resolve()).as_posix()
        except ValueError:
            continue
    return header.name
