"""``embed.json``: what one host JIT library target embeds per unit, one shape for the catalog's
host library and a discovered tree's (``builder.cmake_build.tree_jit`` writes it; the build's
manifest, ``builder.records.manifest``, takes it over). Standard library and ``builder.files``
only: it runs inside CMake's build step.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from builder.files.atomic import write_if_changed

__all__ = ["EMBED_SCHEMA", "embed_facts", "write_embed_facts"]

EMBED_SCHEMA = 3
"""2: ``units`` (with the document's ``kind``) instead of ``families``; ``shared[].units``.
3: a discovered tree's unit lists ``own_preambles`` (2 said ``preambles``): the preambles only
it uses, where plan.json and the manifest say ``preambles`` for every one a unit needs."""


def embed_facts(
    kind: str,
    units: Sequence[Mapping[str, Any]],
    shared: Sequence[Mapping[str, Any]],
    shared_bytes: int,
    *,
    compressed: bool,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The embed.json document: ``units`` each with ``name`` and ``embedded_bytes`` (its own
    stored bytes), ``shared`` the entries several units use (``name``, ``units``). The
    document's ``embedded_bytes`` is every stored byte: each unit's own plus ``shared_bytes``
    once.

    Shape (schema 3)::

        {"schema": 3, "kind": "catalog" | "discovered", "compressed": bool,
         "embedded_bytes": int, "shared_bytes": int, ...writer-specific totals...,
         "units": [{"name", "headers", "source_bytes", "embedded_bytes", ...}],
         "shared": [{"name", "units", ["bytes"]}]}
    """
    if kind not in ("catalog", "discovered"):
        raise ValueError(f"embed.json kind {kind!r}")
    return {
        "schema": EMBED_SCHEMA,
        "kind": kind,
        "compressed": compressed,
        "embedded_bytes": shared_bytes + sum(int(u["embedded_bytes"]) for u in units),
        "shared_bytes": shared_bytes,
        **(extra or {}),
        "units": [dict(u) for u in units],
        "shared": [dict(s) for s in shared],
    }


def write_embed_facts(path: Path, facts: Mapping[str, Any]) -> bool:
    """Write ``facts`` to ``path`` only when its bytes change (Ninja's restat then skips what
    follows); True when written."""
    return write_if_changed(path, json.dumps(facts, indent=1) + "\n")
