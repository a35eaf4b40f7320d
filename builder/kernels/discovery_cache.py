"""A build directory's memory of its tree's discovery, so that planning a no-op build stays fast.

The build plan needs discovery (which entry files write their kernel templates themselves, which
kernels are run-time only, where code is written), and ``build`` plans again on every run to see
new files. Preprocessing MLX's tree takes about a second; checking that nothing it read has
changed takes milliseconds. So :func:`discover_cached` keeps the discovered tree in a JSON file
(``<build dir>/metal_plan/discovery.json``) with what it depends on, and reuses it only when all
of that is as it was:

- the settings (folder, ``-I``, ``-D``, excludes, ``__METAL_VERSION__``), the preprocessor and the
  version of metallib-builder, and the modification time and size of the discovery code itself;
- the entry files and the headers under the tree (a new header may hold run-time-only kernels);
- the modification time and size of every file the preprocessor read for any entry file (its
  line markers name them), of every header and of every ``.metal`` file under the tree
  (excluded ones too: what they include is not run-time only).

Anything else (a missing, unreadable or foreign file) means: discover again, and write the file
anew (atomically). Nothing a cache holds is trusted beyond its shape: a bad one is ignored.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from builder.errors import UsageError
from builder.files.reading import read_json
from builder.kernels.discovery import KernelRecord, checked_entries, discover
from builder.kernels.kernel_tree import KernelTree
from builder.kernels.runtime_only import RuntimeTemplate
from builder.kernels.tree_config import TreeConfig
from builder.kernels.tree_files import entry_files

__all__ = ["CACHE_SCHEMA", "DiscoveryMemo", "discover_cached", "load_or_discover", "remember"]

CACHE_SCHEMA = 1
_CODE = (
    "discovery.py",
    "kernel_scan.py",
    "cxx_text.py",
    "kernel_tree.py",
    "definitions.py",
    "runtime_only.py",
    "preprocess.py",
    "bounded_run.py",
    "prelude.h",
    "discovery_cache.py",
    "confinement.py",
)


def _stat(path: Path) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size]


def _key(root: Path, config: TreeConfig, listed: list[str], compiler: str) -> dict[str, Any]:
    from builder import __version__

    here = Path(__file__).resolve().parent
    return {
        "schema": CACHE_SCHEMA,
        "version": __version__,
        "root": str(root.resolve()),
        "include_dirs": [str(d) for d in config.include_dirs],
        "defines": list(config.defines),
        "exclude": list(config.exclude),
        "metal_version": config.metal_version,
        "compiler": compiler,
        "code": {name: _stat(here / name) for name in _CODE},
        "listed": listed,
    }


def _files(root: Path, names: list[str]) -> dict[str, list[int] | None]:
    return {name: _stat(root / name) for name in names}


def _load(path: Path, key: dict[str, Any], root: Path, config: TreeConfig) -> KernelTree | None:
    try:
        data = read_json(path, "the discovery cache")
        if data.get("key") != key:
            return None
        files = data["files"]
        if not isinstance(files, dict) or _files(root, list(files)) != files:
            return None
        tree = data["tree"]
        kernels = tuple(KernelRecord(n, s, t, tuple(a)) for n, s, t, a in tree["kernels"])
        written = {(e, k): f for e, k, f in tree["written_in"]}
        runtime = tuple(RuntimeTemplate(t, s) for t, s in tree["runtime_only"])
        if not {r.source for r in runtime} <= set(key["listed"]):
            return None  # only headers of the tree are ever embedded for their own sake
        return KernelTree(
            root,
            "discovered",
            tuple(tree["sources"]),
            kernels,
            config,
            written,
            runtime,
            tuple(tree["files_read"]),
        )
    except (UsageError, ValueError, KeyError, TypeError, AttributeError):
        return None  # (an unreadable or damaged cache entry: discover again)


def _save(path: Path, key: dict[str, Any], tree: KernelTree, listed: list[str]) -> None:
    from builder.errors import OutputError
    from builder.files.atomic import make_dirs, write_atomic

    names = sorted({*tree.files_read, *listed})
    data = {
        "key": key,
        "files": _files(tree.root, names),
        "tree": {
            "sources": list(tree.sources),
            "kernels": [[n, s, t, list(a)] for n, s, t, a in tree.kernels],
            "written_in": [[e, k, f] for (e, k), f in tree.written_in.items()],
            "runtime_only": [list(r) for r in tree.runtime_only],
            "files_read": list(tree.files_read),
        },
    }
    try:
        make_dirs(path.parent)
        write_atomic(path, json.dumps(data, separators=(",", ":")))
    except OutputError:
        pass  # a cache that cannot be written costs time, nothing else


@dataclass(frozen=True)
class DiscoveryMemo:
    """A discovery not yet remembered: what :func:`remember` writes, once the build folder may
    be written (a plan is made before anything is created, so a refused build leaves none)."""

    key: dict[str, Any]
    listed: list[str]
    tree: KernelTree


def load_or_discover(
    source_dir: Path, config: TreeConfig, cache_file: Path, *, compiler: str | None = None
) -> tuple[KernelTree, DiscoveryMemo | None]:
    """The tree from ``cache_file`` when nothing it depends on changed (memo None), else
    discovered anew with the memo to :func:`remember` it by. Writes nothing."""
    from builder.kernels.preprocess import find_preprocessor
    from builder.kernels.tree_files import tree_headers

    root = Path(source_dir)
    checked_entries(root, config)  # the usual errors first
    listed = [*entry_files(root), *tree_headers(root)]
    key = _key(root, config, listed, find_preprocessor(compiler).path)
    tree = _load(cache_file, key, root, config)
    if tree is not None:
        return tree, None
    tree = discover(root, config, compiler=compiler)
    return tree, DiscoveryMemo(key, listed, tree)


def remember(cache_file: Path, memo: DiscoveryMemo) -> None:
    """Write ``memo`` to ``cache_file`` (atomically; a cache that cannot be written costs time
    on the next run, nothing else)."""
    _save(cache_file, memo.key, memo.tree, memo.listed)


def discover_cached(
    source_dir: Path, config: TreeConfig, cache_file: Path | None, *, compiler: str | None = None
) -> KernelTree:
    """:func:`builder.kernels.discovery.discover`, reusing ``cache_file`` when nothing it
    depends on changed and writing it otherwise (None: no cache)."""
    if cache_file is None:
        return discover(source_dir, config, compiler=compiler)
    tree, memo = load_or_discover(source_dir, config, cache_file, compiler=compiler)
    if memo is not None:
        remember(cache_file, memo)
    return tree
