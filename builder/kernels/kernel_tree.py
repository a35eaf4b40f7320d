"""A kernel tree as the build and the size report see it (:class:`KernelTree`), whatever its
kind: its entry files (or a catalog's family headers), every kernel with the entry file it comes
from, where each kernel's code is written, and the kernel templates no entry file instantiates.
``builder.kernels.discovery`` makes one (``load_tree``) and exports it."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from builder.kernels.kernel_scan import KernelRecord
from builder.kernels.platforms import left_out
from builder.kernels.runtime_only import RuntimeTemplate
from builder.kernels.tree_config import TreeConfig
from builder.kernels.tree_files import metal_headers

__all__ = ["KernelTree"]


@dataclass(frozen=True)
class KernelTree:
    """A kernel tree as the build and the size report see it, whatever its kind."""

    root: Path
    kind: str  # "catalog" or "discovered"
    sources: tuple[str, ...]  # entry files (catalog: family headers), in tree order
    kernels: tuple[KernelRecord, ...]
    config: TreeConfig
    written_in: dict[tuple[str, str], str] = field(default_factory=dict, compare=False)
    """(entry file, template name, or a non-template kernel's name) -> the file its code is
    written in: relative to the root (``/``), or absolute outside it. Empty for a catalog tree,
    whose records' ``source`` is that file already."""
    runtime_only: tuple[RuntimeTemplate, ...] = ()
    """Kernel templates of the tree's headers that no entry file instantiates."""
    files_read: tuple[str, ...] = field(default=(), compare=False)
    """Every file the preprocessor read for the entry files (tree paths, sorted)."""

    def defined_in(self, record: KernelRecord) -> str:
        """The file ``record``'s code (its template, or the function itself) is written in; the
        entry file when discovery did not find the definition (the safe answer: the entry's
        text holds everything it compiles)."""
        key = record.template if record.template is not None else record.name
        return self.written_in.get((record.source, key), record.source)

    @functools.cached_property
    def code_sites(self) -> dict[tuple[str, str | None, str], tuple[str, int]]:
        """(entry file, template or None, template or kernel name) -> (the file that code is
        written in, how many kernels of the entry file come from it): every kernel counted once,
        in a few hundred rows for MLX's 16,113 kernels."""
        sites: dict[tuple[str, str | None, str], list[Any]] = {}
        for record in self.kernels:
            name = record.template if record.template is not None else record.name
            site = sites.get((record.source, record.template, name))
            if site is None:
                where = self.written_in.get((record.source, name), record.source)
                sites[(record.source, record.template, name)] = [where, 1]
            else:
                site[1] += 1
        return {key: (where, count) for key, (where, count) in sites.items()}

    def own_templates(self) -> dict[str, list[str]]:
        """Entry file -> the kernel templates it instantiates that are written in the entry
        file itself (MLX: arg_reduce.metal's ``arg_reduce_general``), for the entries that have
        any. Such code is in no header, so no run-time preamble holds it. None in a catalog
        tree, whose units are the headers themselves."""
        own: dict[str, list[str]] = {}
        if self.kind == "catalog":
            return own
        for (source, template, _), (where, _count) in self.code_sites.items():
            if template is not None and where == source:
                own.setdefault(source, []).append(template)
        return own

    def source_of(self) -> dict[str, str]:
        """Kernel name -> entry file; a name two entry files produce goes to the first."""
        mapping: dict[str, str] = {}
        for record in self.kernels:
            mapping.setdefault(record.name, record.source)
        return mapping

    def by_source(self) -> dict[str, list[KernelRecord]]:
        """Entry file -> its kernels, for every entry file (some may have none)."""
        groups: dict[str, list[KernelRecord]] = {source: [] for source in self.sources}
        for record in self.kernels:
            groups.setdefault(record.source, []).append(record)
        return groups

    def to_json(self) -> dict[str, Any]:
        """The fields every kind of tree shares in ``kernels --format json``."""
        return {
            "kind": self.kind,
            "source_dir": str(self.root),
            "config": str(self.config.path) if self.config.path else None,
            "total": len(self.kernels),
            "sources": [
                {"source": source, "count": len(records)}
                for source, records in self.by_source().items()
            ],
            "kernels": [  # args stay tuples: JSON arrays all the same, no copies
                {"name": n, "source": s, "template": t, "args": a} for n, s, t, a in self.kernels
            ],
            "runtime_only": [{"template": t, "source": s} for t, s in self.runtime_only],
            "platform": None
            if self.config.platform is None
            else {**self.config.platform.as_dict(), "left_out": list(left_out(self.config))},
            "metal_headers": [
                {"source": source, "why": why}
                for source, why in (
                    metal_headers(self.root) if self.kind == "discovered" else {}
                ).items()
            ],
        }
