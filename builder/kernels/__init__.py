"""The kernel library's Python side: trees (catalog or discovered) and the host-name grammar
(the check of a tree is ``builder.jit.check``).

This package must not import click or rich; ``builder.cli.kernels`` and ``builder.cli.check``
render its results.
Names are imported on first use, so a command pays only for what it touches (discovering a
folder of ``.metal`` files never loads the catalog machinery, and the reverse).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from builder.kernels.catalog import (
        Catalog,
        CatalogError,
        Instantiation,
        load_catalog,
        render_translation_unit,
        split_names,
    )
    from builder.kernels.discovery import KernelRecord, load_tree
    from builder.kernels.dtypes import (
        DTYPES,
        FAMILIES,
        METAL_TYPES,
        ParsedName,
        format_host_name,
        parse_host_name,
    )
    from builder.kernels.kernel_tree import KernelTree
    from builder.kernels.tree_config import TreeConfig

_HOME = {
    "Catalog": "catalog",
    "CatalogError": "catalog",
    "Instantiation": "catalog",
    "load_catalog": "catalog",
    "render_translation_unit": "catalog",
    "split_names": "catalog",
    "KernelRecord": "discovery",
    "KernelTree": "kernel_tree",
    "load_tree": "discovery",
    "DTYPES": "dtypes",
    "METAL_TYPES": "dtypes",
    "FAMILIES": "dtypes",
    "ParsedName": "dtypes",
    "format_host_name": "dtypes",
    "parse_host_name": "dtypes",
    "TreeConfig": "tree_config",
}


def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DTYPES",
    "FAMILIES",
    "METAL_TYPES",
    "Catalog",
    "CatalogError",
    "Instantiation",
    "KernelRecord",
    "KernelTree",
    "ParsedName",
    "TreeConfig",
    "format_host_name",
    "load_catalog",
    "load_tree",
    "parse_host_name",
    "render_translation_unit",
    "split_names",
]
