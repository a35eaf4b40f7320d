"""What produced a report: the tool, the library's own version facts, and the build options.

A size figure is only comparable with another when both were produced the same way, so every
report carries this record (JSON ``provenance``, one line in tables and markdown, a panel in the
HTML view). It is plain data: a dict of JSON types, built once where the metallib is open
(``builder.size.load``); ``builder.render.text`` shows it as one line. Nothing in it is
guessed: a field that could not be read is absent or an empty list.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from builder.metallib.provenance import Provenance

__all__ = ["TOOL_NAME", "build_provenance"]

TOOL_NAME = "metallib-builder"


def build_provenance(
    library: Provenance | None, build: Mapping[str, object] | None = None
) -> dict[str, object]:
    """The provenance record of a freshly measured report (see docs/report-schema.md)."""
    from builder import __version__

    record: dict[str, object] = {"tool": {"name": TOOL_NAME, "version": __version__}}
    if library is not None:
        record["library"] = library.as_dict()
    if build is not None:
        record["build"] = dict(build)
    return record
