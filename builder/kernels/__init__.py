"""The kernel library's Python side: trees (catalog or discovered), host-name grammar, source
check, CPU runner.

This package must not import click or rich; ``builder.cli.kernels`` renders its results.
Discovery (``KernelTree``, ``load_tree``...) is imported on first use, so importing this package
for the catalog or the host-name grammar stays cheap.
"""

from __future__ import annotations

from typing import Any

from builder.kernels.catalog import (
    Catalog,
    CatalogError,
    Instantiation,
    load_catalog,
    render_translation_unit,
)
from builder.kernels.dtypes import DTYPES, METAL_TYPES
from builder.kernels.headers import header_closure
from builder.kernels.naming import FAMILIES, ParsedName, format_host_name, parse_host_name

_LAZY = {
    "KernelRecord": "builder.kernels.discovery",
    "KernelTree": "builder.kernels.discovery",
    "load_tree": "builder.kernels.discovery",
    "TreeConfig": "builder.kernels.tree_config",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
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
    "header_closure",
    "load_catalog",
    "load_tree",
    "parse_host_name",
    "render_translation_unit",
]
