"""The catalog as a generator of an ordinary kernel tree: ``catalog.json`` in, ``.metal`` entry
files out.

A catalog tree (``metal_src/``) has no entry files of its own. This module writes them, once per
build, into the build folder (``metal_gen/``): per family, its instantiations cut into entry
files ``<family>/<first host name>.metal``, each ``#include``-ing the family header and holding
one ``instantiate_kernel(...)`` line per instantiation, self-contained given ``-I metal_src``.
From there the build compiles them as it compiles any tree's entry files, and ``check`` compiles
the same texts, so a check compiles what a build compiles.

A family is cut into several entry files so Ninja keeps every core busy while each file still
parses its family header once for many instantiations, and the cut survives edits of the
catalog: appending one instantiation changes one file, not every later one (which would
recompile the whole family). So:

* **order**: a family's instantiations are taken op by op, then by dtypes, parameters and form
  (each in declaration order), so the instantiations of an op appended to a family come last;
* **content-defined cuts**: a file ends after an instantiation whose host name hashes to 0
  modulo ``chunk_size`` (so ``chunk_size`` is the mean length), or after ``4 * chunk_size``
  instantiations. A cut depends on the names around it, not on positions, so an insertion
  changes only the file it lands in;
* **names by content**: a file is named after its first instantiation's host name, so an
  unchanged file keeps its name (and its ``.air``) wherever it moves in the list.

The output is deterministic (the same catalog and selection give the same bytes); each file is
written atomically and only when its bytes change, and files the tree no longer holds are
removed, so a no-op reconfigure leaves every timestamp alone. Standard library and ``builder``
only (runs in CMake).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from builder.errors import UsageError
from builder.files.atomic import write_if_changed
from builder.kernels.catalog import Catalog, FamilySpec, Instantiation, render_translation_unit
from builder.settings.declared import DEFAULT_CHUNK_SIZE

__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "GENERATED_TREE",
    "EntryFile",
    "GeneratedTree",
    "generate_tree",
    "write_tree",
]

GENERATED_TREE = "metal_gen"
"""Where a build writes a catalog's entry files, relative to the build folder."""
MAX_CHUNKS_PER_CUT = 4
"""An entry file holds at most this many times ``chunk_size`` instantiations (no content cut
came)."""
_FILE_SAFE = re.compile(r"^[A-Za-z0-9_.-]{1,120}$")


@dataclass(frozen=True)
class EntryFile:
    """One generated entry file: its unit (the family), its path in the tree and what it holds.
    ``name`` (the file's stem) is what ``check`` calls its chunk."""

    unit: str
    name: str
    instantiations: tuple[Instantiation, ...]

    @property
    def path(self) -> str:
        """Relative to the generated tree: ``<family>/<name>.metal``."""
        return f"{self.unit}/{self.name}.metal"

    def text(self) -> str:
        return render_translation_unit(self.instantiations)


@dataclass(frozen=True)
class GeneratedTree:
    """The entry files a catalog selection expands into, in unit (catalog) order."""

    entries: tuple[EntryFile, ...]


def _order(
    catalog: Catalog, spec: FamilySpec, items: Sequence[Instantiation]
) -> list[Instantiation]:
    """``items`` op by op, then by dtypes, parameters and form, in declaration order."""
    ops = {op.name: (k, op.dtype_sets) for k, op in enumerate(spec.ops)}
    forms = {v.name: (k, dict(v.params)) for k, v in enumerate(spec.forms)}

    def key(inst: Instantiation) -> tuple[object, ...]:
        op_index, sets = ops[inst.op] if inst.op is not None else (0, spec.dtype_sets)
        dtypes = tuple(catalog.dtype_sets[s].index(d) for s, d in zip(sets, inst.dtypes))
        form_index, axes = forms[inst.form]
        params = tuple(axes[name].index(value) for name, value in inst.params)
        return (op_index, dtypes, params, form_index)

    return sorted(items, key=key)


def _cuts_after(host_name: str, chunk_size: int) -> bool:
    digest = hashlib.sha256(host_name.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % chunk_size == 0


def _stem(first: str, family: str, taken: set[str]) -> str:
    stem = (
        first
        if _FILE_SAFE.match(first)
        else f"{family}_{hashlib.sha256(first.encode()).hexdigest()[:12]}"
    )
    if stem in taken:  # two families cannot share a host name, so only a hash clash lands here
        raise UsageError(f"generated entry file name {stem} would be used twice")
    taken.add(stem)
    return stem


def _cut_family(
    catalog: Catalog,
    spec: FamilySpec,
    items: Sequence[Instantiation],
    chunk_size: int,
    taken: set[str],
) -> list[EntryFile]:
    """The entry files of one family (``items`` are its selected instantiations)."""
    entries: list[EntryFile] = []
    current: list[Instantiation] = []
    limit = MAX_CHUNKS_PER_CUT * chunk_size
    for inst in _order(catalog, spec, items):
        current.append(inst)
        if _cuts_after(inst.host_name, chunk_size) or len(current) >= limit:
            entries.append(
                EntryFile(spec.name, _stem(current[0].host_name, spec.name, taken), tuple(current))
            )
            current = []
    if current:
        entries.append(
            EntryFile(spec.name, _stem(current[0].host_name, spec.name, taken), tuple(current))
        )
    return entries


def generate_tree(
    catalog: Catalog,
    families: Iterable[str],
    dtypes: Sequence[str] | None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
) -> GeneratedTree:
    """The entry files of ``families`` (in the order given) for the ``dtypes`` selection (None:
    all); nothing is written."""
    if chunk_size < 1:
        raise UsageError(f"chunk size must be at least 1, got {chunk_size}")
    taken: set[str] = set()
    entries: list[EntryFile] = []
    for family in families:
        items = catalog.expand([family], dtypes)
        entries += _cut_family(catalog, catalog.families[family], items, chunk_size, taken)
    return GeneratedTree(tuple(entries))


def write_tree(tree: GeneratedTree, root: Path) -> list[Path]:
    """Write each entry file under ``root`` (only when its bytes change, atomically) and remove
    the ``.metal`` files the tree does not hold; return the paths in tree order."""
    paths = []
    for entry in tree.entries:
        path = root / entry.path
        write_if_changed(path, entry.text())
        paths.append(path)
    wanted = set(paths)
    if root.is_dir():
        for stale in root.glob("*/*.metal"):
            if stale not in wanted:
                stale.unlink()
    return paths
