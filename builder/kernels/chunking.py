"""The chunks of a catalog tree's AOT units: its instantiations cut into generated sources.

A catalog tree has no entry files of its own: the build generates them, and from then on they are
compiled by the same AOT rule as any tree's entry files (``metallib_add_metallib``). A family with
many instantiations is cut into several sources so Ninja can keep every core busy while each
source still parses its family header once for many instantiations.

The cut must survive edits of the catalog: appending one instantiation must change one source,
not shift every later source by one (which recompiles the whole family). So:

* **order**: a family's instantiations are taken op by op, then by dtypes, parameters and form
  (each in declaration order), so the instantiations of an op appended to a family come last;
* **content-defined cuts**: a source ends after an instantiation whose host name hashes to 0
  modulo ``chunk_size`` (so ``chunk_size`` is the mean length), or after ``4 * chunk_size``
  instantiations. A cut depends on the names around it, not on positions, so an insertion
  changes only the source it lands in;
* **names by content**: a source is named after its first instantiation's host name, so an
  unchanged source keeps its name (and its ``.air``) wherever it moves in the list.

Sources are rewritten only when their bytes change and stale ones are removed, so a no-op
reconfigure leaves every timestamp alone. Standard library and ``builder`` only (runs in CMake).
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

__all__ = ["DEFAULT_CHUNK_SIZE", "Chunk", "catalog_chunks", "chunk_family", "write_sources"]

MAX_CHUNKS_PER_CUT = 4
"""A source holds at most this many times ``chunk_size`` instantiations (no content cut came)."""
_FILE_SAFE = re.compile(r"^[A-Za-z0-9_.-]{1,120}$")


@dataclass(frozen=True)
class Chunk:
    """One generated source: the family, its file stem, and the instantiations it holds."""

    family: str
    name: str
    instantiations: tuple[Instantiation, ...]

    def text(self) -> str:
        return render_translation_unit(self.instantiations)


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
        raise UsageError(f"generated source name {stem} would be used twice")
    taken.add(stem)
    return stem


def chunk_family(
    catalog: Catalog,
    spec: FamilySpec,
    items: Sequence[Instantiation],
    chunk_size: int,
    taken: set[str] | None = None,
) -> list[Chunk]:
    """The generated sources of one family (``items`` are its selected instantiations)."""
    if chunk_size < 1:
        raise UsageError(f"chunk size must be at least 1, got {chunk_size}")
    taken = set() if taken is None else taken
    chunks: list[Chunk] = []
    current: list[Instantiation] = []
    limit = MAX_CHUNKS_PER_CUT * chunk_size
    for inst in _order(catalog, spec, items):
        current.append(inst)
        if _cuts_after(inst.host_name, chunk_size) or len(current) >= limit:
            chunks.append(
                Chunk(spec.name, _stem(current[0].host_name, spec.name, taken), tuple(current))
            )
            current = []
    if current:
        chunks.append(
            Chunk(spec.name, _stem(current[0].host_name, spec.name, taken), tuple(current))
        )
    return chunks


def catalog_chunks(
    catalog: Catalog, families: Iterable[str], dtypes: Sequence[str] | None, chunk_size: int
) -> list[Chunk]:
    """The generated sources of ``families`` (catalog order), for the ``dtypes`` selection."""
    taken: set[str] = set()
    chunks: list[Chunk] = []
    for family in families:
        items = catalog.expand([family], dtypes)
        chunks += chunk_family(catalog, catalog.families[family], items, chunk_size, taken)
    return chunks


def write_sources(chunks: Sequence[Chunk], out_dir: Path) -> list[Path]:
    """Write ``<out_dir>/<chunk>.metal`` for each chunk (only when its bytes change) and remove
    the ``.metal`` files no chunk names; return the paths in chunk order."""
    paths = []
    for chunk in chunks:
        path = out_dir / f"{chunk.name}.metal"
        write_if_changed(path, chunk.text())
        paths.append(path)
    wanted = set(paths)
    if out_dir.is_dir():
        for stale in out_dir.glob("*.metal"):
            if stale not in wanted:
                stale.unlink()
    return paths
