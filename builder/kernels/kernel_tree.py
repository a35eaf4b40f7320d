"""A kernel tree as the build and the size report see it (:class:`KernelTree`), whatever its
kind: its entry files (or a catalog's family headers), every kernel with the entry file it comes
from, where each kernel's code is written, and the kernel templates no entry file instantiates.
``builder.kernels.discovery`` makes one (``load_tree``) and exports it.

**Embedding** (:meth:`KernelTree.embeddings`): how each entry file of a discovered tree is embedded
when it is JIT. Two embeddings of one entry file as run-time source:

- **whole-file**: the entry file's own text, its quoted includes inlined (each file once, with
  ``#line`` markers), is one run-time source. The host compiles it and gets every kernel the file
  defines, instantiations included: what ggml's ``GGML_METAL_EMBED_LIBRARY`` and candle's
  ``new_library_with_source`` do.
- **preamble**: MLX's way. The headers the entry file includes are preambles (shared ones once),
  and the host writes the instantiation lines itself.

The choice is automatic: an entry file that writes its own kernel templates (MLX's
``arg_reduce.metal``, ggml's ``ggml-metal.metal``), or that defines its kernels itself with none of
them written in a header (candle's ``unary.metal``), gets the whole-file embedding; no header
holds its code, so a host working from preambles could not build it. Every other entry file keeps
the preamble embedding. ``[build.embedding]`` in metallib.toml overrides the choice per glob
(later globs win); a glob that matches no entry file is an error naming it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from builder.errors import UsageError
from builder.files.dataclass_json import dump
from builder.kernels.kernel_scan import KernelRecord
from builder.kernels.platforms import left_out
from builder.kernels.runtime_only import RuntimeTemplate
from builder.kernels.tree_config import TreeConfig
from builder.kernels.tree_files import entry_files, metal_headers, path_matches, unmatched_glob

__all__ = ["PREAMBLE", "WHOLE_FILE", "KernelTree"]

WHOLE_FILE = "whole-file"
PREAMBLE = "preamble"


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

    def automatic_embedding(self) -> dict[str, str]:
        """Entry file -> its embedding without settings, for every entry file in tree order."""
        if self.kind == "catalog":
            return {source: PREAMBLE for source in self.sources}
        own_templates = self.own_templates()
        in_entry: dict[str, bool] = {}  # entry file -> every kernel's code written in it
        for (source, _, _), (where, _count) in self.code_sites.items():
            in_entry[source] = in_entry.get(source, True) and where == source
        return {
            source: WHOLE_FILE if source in own_templates or in_entry.get(source) else PREAMBLE
            for source in self.sources
        }

    def embeddings(self) -> dict[str, str]:
        """Entry file -> ``whole-file`` or ``preamble``: the automatic choice with
        ``[build.embedding]`` over it. UsageError (exit 2) for a glob that names no entry file
        (one that names only excluded files is no typo) or for settings on a catalog tree."""
        chosen = self.automatic_embedding()
        settings = self.config.embedding
        if not settings:
            return chosen
        if self.kind == "catalog":
            raise UsageError(
                f"{self.config.path}: [build.embedding] applies to a folder of .metal entry "
                f"files; {self.root} is a catalog tree, whose families are embedded as preambles"
            )
        globs = [glob for glob, _ in settings]
        if unmatched_glob(globs, self.sources) is not None:
            missing = unmatched_glob(globs, entry_files(self.root))
            if missing is not None:
                count = len(self.sources)
                raise UsageError(
                    f"{self.config.path}: [build.embedding] {missing!r} matches no entry file of "
                    f"{self.root} ({count:,} entry file{'s' if count != 1 else ''})"
                )
        for source in chosen:
            for glob, value in settings:
                if path_matches(source, [glob]):
                    chosen[source] = value
        return chosen

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
            else {**dump(self.config.platform), "left_out": list(left_out(self.config))},
            "metal_headers": [
                {"source": source, "why": why}
                for source, why in (
                    metal_headers(self.root) if self.kind == "discovered" else {}
                ).items()
            ],
        }
