"""The kernel library's Python side: catalog, host-name grammar, source check, CPU runner.

This package must not import click or rich; ``builder.cli.kernels`` renders its results.
"""

from __future__ import annotations

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

__all__ = [
    "DTYPES",
    "FAMILIES",
    "METAL_TYPES",
    "Catalog",
    "CatalogError",
    "Instantiation",
    "ParsedName",
    "format_host_name",
    "header_closure",
    "load_catalog",
    "parse_host_name",
    "render_translation_unit",
]
