"""Fixtures for the kernel tests: running the CLI in-process, and counting the catalog
independently of builder.kernels (straight from the JSON), so counts are never copied from
output."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
from clirun import run_cli as shared_run_cli

from builder.resources import metal_src_dir


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]) -> Callable[[list[str]], tuple[int, str, str]]:
    """``run_cli(ARGS)`` runs ``metallib-builder ARGS`` in-process -> (exit code, stdout,
    stderr)."""

    return lambda args: shared_run_cli(args, capsys)


@pytest.fixture
def catalog_counter() -> Callable[..., int]:
    """The independent counter below, as a fixture."""
    return declared_count


@pytest.fixture
def raw() -> dict[str, Any]:
    """The bundled catalog.json as plain JSON."""
    return raw_catalog()


def raw_catalog(source_dir: Path | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(((source_dir or metal_src_dir()) / "catalog.json").read_text())
    return doc


def declared_count(
    raw: dict[str, Any], families: Iterable[str] | None = None, dtypes: Iterable[str] | None = None
) -> int:
    """Instantiations the catalog declares: per form, params product times, per op (or the
    family), the product of its dtype-set sizes; a dtype filter narrows all but index sets."""
    wanted = set(dtypes) if dtypes is not None else None
    sets = raw["dtype_sets"]

    def size(set_name: str) -> int:
        members = sets[set_name]
        if wanted is None or set_name == "index":
            return len(members)
        return len([m for m in members if m in wanted])

    total = 0
    for name, family in raw["families"].items():
        if families is not None and name not in families:
            continue
        axes_per_op = [op["dtypes"] for op in family.get("ops", {}).values()] or [family["dtypes"]]
        per_variant = sum(math.prod(size(s) for s in axes) for axes in axes_per_op)
        for form in family["forms"].values():
            params = form.get("params", {})
            total += per_variant * math.prod(len(v) for v in params.values())
    return total
