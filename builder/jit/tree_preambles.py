"""Which run-time preambles a kernel tree's JIT entry files need, under which C++ function names.

An entry file compiled at run time needs the headers it includes: MLX's ``unary.metal`` includes
``utils.h``, ``unary_ops.h`` and ``unary.h``, and MLX's host builds the run-time source from the
preambles ``utils()``, ``unary_ops()`` and ``unary()`` plus generated instantiation lines. So a JIT
entry file's preambles are its direct quoted includes (each inlined with everything it includes,
by ``embed``). Shared headers are one preamble, needed by several entry files.

Code is embedded where it is written (discovery's line markers say where:
``KernelTree.defined_in``). An entry file that writes a non-template kernel itself (``[[kernel]]``
or ``kernel void`` with a body in the ``.metal`` file, not in a header it includes) becomes a
preamble too, after its includes; a kernel written in a header (MLX's
``generate_bluestein_twiddles``, in ``fft.h``) is in that header's preamble already.

An entry file with the **whole-file** embedding (``KernelTree.embeddings``: it writes its own
kernel templates, or all its kernels are its own) is one run-time source instead: the file itself,
its includes inlined into it, named after the file, needed by that file alone. Its includes are
no preambles of their own for it.

Some preambles are needed whatever is JIT: the headers of **run-time-only** kernel templates
(``KernelTree.runtime_only``: MLX's ``indexing/scatter.h``, ``hadamard.h``...), which no metallib
holds, and ``[build.preambles]`` entries whose headers no entry file includes (extras the host
wants). :func:`always_preambles` lists them; :func:`jit_preambles` puts them after the JIT entry
files' preambles.

**Names.** ``[build.preambles]`` in metallib.toml names preambles (function -> headers, several
headers per function allowed). Any other header is named after its stem
(``steel/gemm/kernels/steel_gemm_fused.h`` -> ``steel_gemm_fused``), after its path without the
suffix when stems collide (``embed``'s rule), and after its whole path when even those collide
(``fft.h`` and ``fft.metal``: ``fft_h`` and ``fft_metal``). Names are settled once per tree, over
every preamble any split could need, so a header has the same function name in every build and
variant. A clash left after that (two paths that spell the same C++ name, or a configured name
equal to a header's) is an error naming both files and the metallib.toml line that settles it.

**The table only.** With ``[build] preamble-set = "table"`` (``builder.kernels.runtime_sources``)
the functions are exactly ``[build.preambles]``'s, as MLX's ``jit/includes.h`` declares its own: a
header an entry file includes that is no table header (MLX's ``reduce.metal`` includes
``atomic.h``, which ``reduce_utils.h`` inlines) is served by a table function whose inlined files
hold it: one the entry file already needs, else an ``always-embed`` one, else the first in table
order; none is an error naming the header and the key. A table function no JIT entry file needs
is then embedded only when ``always-embed`` names it (or a run-time-only kernel needs it), so a
table that lists the NAX preambles costs nothing where the NAX entry files are excluded. In both
modes ``[build] always-embed`` functions come with every variant, all-AOT included. And a split
with any JIT entry file (a variant or a build alike: :func:`split_preambles`) carries every table
function a JIT build of the tree needs, whichever entry files it keeps AOT, so it links with host
code that names them all.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from builder.errors import UsageError
from builder.jit.generate import cxx_identifier, function_names
from builder.jit.preamble import inlined_files, quoted_includes
from builder.kernels.kernel_tree import PREAMBLE, WHOLE_FILE
from builder.kernels.tree_files import path_matches

if TYPE_CHECKING:
    from builder.kernels.kernel_tree import KernelTree

__all__ = [
    "UNIT_LOOKUP",
    "PreambleSpec",
    "always_preambles",
    "declared_entries",
    "embedding_of",
    "entry_includes",
    "jit_preambles",
    "own_code_entries",
    "split_preambles",
]


UNIT_LOOKUP = "unit_source"
"""The function of a tree's host library that returns a whole-file unit's text by the unit's
name (``builder.cmake_build.tree_jit``): no preamble may take its name."""


class PreambleSpec(NamedTuple):
    """One run-time preamble: a C++ function returning the inlined text of ``headers``."""

    function: str
    headers: tuple[Path, ...]
    """Absolute paths, inlined in this order."""
    entries: tuple[str, ...]
    """The JIT entry files (relative to the tree) that include one of ``headers``; empty for a
    preamble every variant carries (run-time-only kernels, extras of ``[build.preambles]``)."""
    embedding: str = PREAMBLE
    """``whole-file``: the one entry file of ``entries`` itself, whole (``headers`` is that file);
    ``preamble``: headers the host adds instantiation lines to."""


def _search_path(tree: KernelTree) -> list[Path]:
    """Where quoted includes resolve, as discovery preprocesses: the -I folders, then the root."""
    return [*tree.config.include_dirs, tree.root.resolve()]


def entry_includes(tree: KernelTree, entry: str) -> list[Path]:
    """The headers ``entry`` (relative to the tree root) quote-includes itself, resolved."""
    return quoted_includes(tree.root / entry, _search_path(tree))


def own_code_entries(tree: KernelTree) -> set[str]:
    """Entry files that write kernel code themselves (a non-template kernel's body, or a kernel
    template), rather than only instantiating templates written in headers."""
    return {source for (source, _, _), (where, _) in tree.code_sites.items() if where == source}


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _entry_headers(tree: KernelTree, entry: str, own: set[str], whole: bool) -> list[Path]:
    """An entry file's run-time source roots: itself when embedded whole; else its direct
    includes, then itself if it writes kernels."""
    if whole:
        return [_real(tree.root / entry)]
    return [*entry_includes(tree, entry), *([_real(tree.root / entry)] if entry in own else [])]


def _runtime_headers(tree: KernelTree) -> list[Path]:
    return list(dict.fromkeys(_real(tree.root / t.source) for t in tree.runtime_only))


def _display(header: Path, tree: KernelTree) -> str:
    """A header as names are made from it: relative to the tree root, else to an -I folder."""
    for folder in [tree.root.resolve(), *tree.config.include_dirs]:
        try:
            return header.relative_to(_real(folder)).as_posix()
        except ValueError:
            continue
    return header.name


class _Universe:
    """Every preamble a split of the tree could need, named once."""

    def __init__(self, tree: KernelTree) -> None:
        self.tree = tree
        self.table_only = tree.config.runtime.table_only
        self.embedding = tree.embeddings()
        self.own = own_code_entries(tree)
        self.configured = {_real(h): f for f, hs in tree.config.preambles.items() for h in hs}
        self.roots: dict[str, list[Path]] = {
            e: _entry_headers(tree, e, self.own, self.embedding[e] == WHOLE_FILE)
            for e in tree.sources
        }
        loose: dict[Path, None] = {}
        # With the table only, what is named after itself is a JIT entry file embedded whole
        # (one that aot-only keeps AOT never is, so it takes no name).
        aot_only = tree.config.aot_only
        named = [
            hs
            for e, hs in self.roots.items()
            if not self.table_only
            or (self.embedding[e] == WHOLE_FILE and not path_matches(e, aot_only))
        ]
        for headers in [*named, [] if self.table_only else _runtime_headers(tree)]:
            for header in headers:
                if header not in self.configured:
                    loose.setdefault(header)
        self.loose = list(loose)
        displays = [_display(h, tree) for h in self.loose]
        self.names = dict(zip(self.loose, function_names(displays)))
        self.header_named = {f: h for h, f in self.names.items()}
        self._inlined: dict[str, frozenset[Path]] | None = None
        self._check_clashes()

    def function(self, header: Path, preferred: Sequence[str] = ()) -> str:
        """The function that embeds ``header``: its own (configured or named after it), or with
        the table only, a table function inlining it (``preferred`` ones first)."""
        found = self.configured.get(header) or self.names.get(header)
        if found is not None:
            return found
        return self._serving(header, preferred)

    def entry_functions(self, entry: str) -> list[str]:
        """The functions ``entry``'s run-time source roots need, in order, each once (with the
        table only, a header is served by a function its configured roots need first)."""
        roots = self.roots[entry]
        preferred = [self.configured[h] for h in roots if h in self.configured]
        return list(dict.fromkeys(self.function(h, preferred) for h in roots))

    def _serving(self, header: Path, preferred: Sequence[str]) -> str:
        """With the table only: the table function whose inlined files hold ``header``."""
        if self._inlined is None:
            self._inlined = _inlined_files(self.tree)
        serving = [f for f, files in self._inlined.items() if header in files]
        always = self.tree.config.runtime.always
        for pool in (preferred, always, serving):
            for function in pool:
                if function in serving:
                    return function
        toml = self.tree.config.path or self.tree.root / "metallib.toml"
        raise UsageError(
            f"{_display(header, self.tree)} is needed at run time, and no [build.preambles] "
            f'function inlines it (preamble-set = "table" in {toml}); add it to '
            "[build.preambles], or to the headers of the function that should carry it"
        )

    def _check_clashes(self) -> None:
        owners: dict[str, Path] = {}
        for function, headers in self.tree.config.preambles.items():
            owners.setdefault(function, _real(headers[0]))
        for function, header in [*owners.items(), *((self.names[h], h) for h in self.loose)]:
            if function == UNIT_LOOKUP:
                shown = _display(header, self.tree)
                raise UsageError(
                    f"run-time source name {function!r} of {shown} is the host library's lookup "
                    f"of whole-file units; name it otherwise in [build.preambles]"
                )
        for header in self.loose:
            name = self.names[header]
            other = owners.setdefault(name, header)
            if other != header:
                raise UsageError(self._clash_message(name, other, header))

    def _clash_message(self, name: str, first: Path, second: Path) -> str:
        tree = self.tree
        where = tree.config.path.parent if tree.config.path else tree.root
        toml = tree.config.path or tree.root / "metallib.toml"
        shown = os.path.relpath(second, where)
        used = {*self.names.values(), *tree.config.preambles}
        own = base = cxx_identifier(_display(second, tree))
        number = 2
        while own in used:  # a name nothing else has
            own, number = f"{base}_{number}", number + 1
        return (
            f"run-time preamble name {name!r} names two headers: {_display(first, tree)} and "
            f"{_display(second, tree)}; settle it in {toml}: [build.preambles] "
            f'{own} = "{Path(shown).as_posix()}"'
        )


_last: list[tuple[KernelTree, _Universe]] = []


def _universe(tree: KernelTree) -> _Universe:
    """The tree's universe, made once for the tree last asked about (variants ask per split)."""
    last = _last[0] if _last else None
    if last is not None and last[0] is tree:
        return last[1]
    made = _Universe(tree)
    _last[:] = [(tree, made)]
    return made


def always_preambles(tree: KernelTree) -> list[PreambleSpec]:
    """The preambles every variant carries, JIT entry files or not: run-time-only kernel
    templates' headers, then ``[build.preambles]`` entries that no entry file needs."""
    return _always(_universe(tree))


def _always(universe: _Universe) -> list[PreambleSpec]:
    """``always-embed`` functions, run-time-only kernels' headers, then (unless the table only
    is asked for) ``[build.preambles]`` entries no entry file needs."""
    tree = universe.tree
    specs: dict[str, PreambleSpec] = {}
    for function in tree.config.runtime.always:
        specs[function] = PreambleSpec(function, tuple(tree.config.preambles[function]), ())
    for header in _runtime_headers(tree):
        function = universe.function(header, list(specs))
        if function not in specs:
            headers = tree.config.preambles.get(function) or (header,)
            specs[function] = PreambleSpec(function, tuple(headers), ())
    if universe.table_only:
        return list(specs.values())
    used = {universe.function(h) for hs in universe.roots.values() for h in hs}
    for function, headers in tree.config.preambles.items():
        if function not in used and function not in specs:
            specs[function] = PreambleSpec(function, tuple(headers), ())
    return list(specs.values())


def _inlined_files(tree: KernelTree) -> dict[str, frozenset[Path]]:
    """Each ``[build.preambles]`` function's files: its headers and everything they reach
    through quoted includes (what inlining them reads), as real paths."""
    search = _search_path(tree)
    return {
        function: frozenset(inlined_files(headers, search))
        for function, headers in tree.config.preambles.items()
    }


def embedding_of(tree: KernelTree) -> dict[str, str]:
    """Entry file -> its embedding (``KernelTree.embeddings``), settled once per tree."""
    return dict(_universe(tree).embedding)


def jit_preambles(tree: KernelTree, jit_entries: Sequence[str]) -> list[PreambleSpec]:
    """The preambles ``jit_entries`` need, in order of first use, each once, then the ones every
    variant carries (:func:`always_preambles`). UsageError (exit 2) for a name clash."""
    universe = _universe(tree)
    needed: dict[str, list[str]] = {}  # function -> entry files, in first-use order
    headers_of: dict[str, tuple[Path, ...]] = {}
    whole: set[str] = set()
    for entry in jit_entries:
        if universe.embedding[entry] == WHOLE_FILE:
            for header in universe.roots[entry]:  # the file itself, never renamed
                function = universe.function(header)
                whole.add(function)
                headers_of.setdefault(function, (header,))
                needed.setdefault(function, []).append(entry)
            continue
        for function in universe.entry_functions(entry):
            headers = tree.config.preambles.get(function) or (universe.header_named[function],)
            headers_of.setdefault(function, tuple(headers))
            users = needed.setdefault(function, [])
            if entry not in users:
                users.append(entry)
    specs = [
        PreambleSpec(f, headers_of[f], tuple(e), WHOLE_FILE if f in whole else PREAMBLE)
        for f, e in needed.items()
    ]
    specs += [s for s in _always(universe) if s.function not in needed]
    return specs


def declared_entries(tree: KernelTree) -> list[str]:
    """The entry files a JIT build of the tree compiles at run time: every one of the tree's
    (for its platform) that ``[build] aot-only`` does not name; with the table only, their
    preambles are the table functions the project's JIT build declares."""
    aot_only = tree.config.aot_only
    return [s for s in tree.sources if not (aot_only and path_matches(s, aot_only))]


def split_preambles(
    tree: KernelTree, jit_entries: Sequence[str], *, complete: bool = True
) -> list[PreambleSpec]:
    """The preambles a split with ``jit_entries`` JIT embeds: a ``variants`` split's
    ``jit_sources.cpp`` and a ``build``'s host library alike, from this one rule, so a variant
    and a build of the same split define the same functions.

    :func:`jit_preambles`; and with the table only, a split with any JIT entry file is
    ``complete``: after its own it carries every table function a JIT entry file of the tree
    needs (:func:`declared_entries`), each with no entry file (none of this split's needs it).
    A project's JIT build (MLX's ``MLX_METAL_JIT``) links host code naming every function its
    declarations name, whichever entry files are AOT: a split missing one would not link (MLX
    v0.32.1 at a 60 MB ceiling: 8 of ``jit/includes.h``'s 41 for macOS 14)."""
    specs = jit_preambles(tree, jit_entries)
    if complete and jit_entries and tree.config.runtime.table_only:
        have = {s.function for s in specs}
        table = tree.config.preambles
        specs += [
            s._replace(entries=())
            for s in jit_preambles(tree, declared_entries(tree))
            if s.function in table and s.function not in have
        ]
    return specs
