"""The variants page: ``variants.html`` with the shared stylesheet, ``variants.js`` and the data.

Self-contained like the report page (one file, no network, same bytes for the same input): the
template, stylesheet and script are package data files in this folder, inlined in one pass, so
text inserted (a title, a path) is never searched for placeholders again.
"""

from __future__ import annotations

import html
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

from builder.render.text import visible

__all__ = ["variants_page"]

_ASSETS = Path(__file__).resolve().parent
_PLACEHOLDER = re.compile(r"\{\{TITLE\}\}|/\*\{\{STYLE\}\}\*/|/\*\{\{SCRIPT\}\}\*/|\{\{DATA\}\}")


@cache
def _asset(name: str) -> str:
    return (_ASSETS / name).read_text(encoding="utf-8")


def _script_json(data: Any) -> str:
    """JSON that cannot close its ``<script>`` element (no ``<``; line separators escaped)."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def variants_page(title: str, data: dict[str, Any]) -> str:
    """The page for ``data`` (``builder.render.variants.variants_to_dict`` plus notes)."""
    parts = {
        "{{TITLE}}": html.escape(visible(title)),
        "/*{{STYLE}}*/": _asset("style.css"),
        "/*{{SCRIPT}}*/": _asset("variants.js"),
        "{{DATA}}": _script_json(data),
    }
    return _PLACEHOLDER.sub(lambda match: parts[match.group()], _asset("variants.html"))
