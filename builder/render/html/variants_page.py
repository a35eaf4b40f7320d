"""The variants page: ``variants.html`` with the shared stylesheet, ``variants.js`` and the data.

Self-contained like the report page (one file, no network, same bytes for the same input), and
filled by the same one-pass ``page`` function.
"""

from __future__ import annotations

from builder.render.html import page

__all__ = ["variants_page"]


def variants_page(title: str, data: dict[str, object]) -> str:
    """The page for ``data`` (``builder.render.variants.variants_to_dict`` plus notes)."""
    return page(title, data, template="variants.html", scripts=("variants.js",))
