"""The two shapes every size figure takes: a function's row, and the rollup of rows into groups.

Following bloaty's model (data sources x output formats), whatever is measured and however it is
grouped ends up as a list of ``Rollup`` nodes, and every renderer (``builder.render``: table,
JSON, CSV, markdown, HTML) draws any list of them. A rollup node has the same measures at every
level, and a node's ``children`` (the groups of a second ``--by`` key) add up to it exactly, for
every measure. A new measure is a field here and a line in ``roll_up``; the renderers show the
fields they know.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

__all__ = ["FunctionRow", "Rollup", "roll_up"]


class FunctionRow(NamedTuple):
    """One function of a metallib: its measured bytes, its place and kind in the file, and the
    group (and, with two ``--by`` keys, the subgroup) a report put it in.

    The one function-row shape of the tool: ``report`` fills the groups, ``list`` the position
    and type (``builder.render.listing``).
    """

    name: str
    group: str
    bytes: int
    """Everything the function owns in the file: entry, metadata, bitcode and reflection."""
    bitcode_bytes: int
    entry_bytes: int
    metadata_bytes: int
    reflection_bytes: int
    subgroup: str = ""
    """The label of the second ``--by`` key ("" when the report has one key)."""
    type: str = ""
    """The function type the library records (``list``; "" in reports)."""
    position: int = 0
    """Index in the library's function list (file order)."""


@dataclass(frozen=True)
class Rollup:
    """A group of functions with its measures; ``children`` are its groups by a second key."""

    name: str
    function_count: int
    bytes: int
    bitcode_bytes: int
    download_bytes: int | None = None
    """The functions' shares of the modelled download (``--download``), else None."""
    children: tuple[Rollup, ...] = ()
    """Largest first (ties by name); empty without a second key."""


class _Sums:
    __slots__ = ("bitcode", "bytes", "children", "count", "download")

    def __init__(self) -> None:
        self.count = self.bytes = self.bitcode = self.download = 0
        self.children: dict[str, _Sums] | None = None

    def node(self, name: str, downloads: bool) -> Rollup:
        children = () if self.children is None else _nodes(self.children, downloads)
        return Rollup(
            name,
            self.count,
            self.bytes,
            self.bitcode,
            self.download if downloads else None,
            children,
        )


def _nodes(sums: dict[str, _Sums], downloads: bool) -> tuple[Rollup, ...]:
    nodes = [s.node(name, downloads) for name, s in sums.items()]
    nodes.sort(key=lambda g: (-g.bytes, g.name))
    return tuple(nodes)


def roll_up(
    functions: Sequence[FunctionRow],
    download: Sequence[int] | None = None,
    *,
    nested: bool = False,
) -> list[Rollup]:
    """Sum functions into groups (and, ``nested``, each group into its subgroups), largest first.

    ``download`` holds each function's download share, aligned with ``functions``.
    """
    groups: dict[str, _Sums] = {}
    shares: Iterable[int] = download if download is not None else _zeros(len(functions))
    if not nested:  # the common case, kept to one dictionary look-up per function
        for fn, share in zip(functions, shares):
            found = groups.get(fn.group)
            if found is None:
                found = groups[fn.group] = _Sums()
            found.count += 1
            found.bytes += fn.bytes
            found.bitcode += fn.bitcode_bytes
            found.download += share
        return list(_nodes(groups, download is not None))
    for fn, share in zip(functions, shares):
        found = groups.get(fn.group)
        if found is None:
            found = groups[fn.group] = _Sums()
            found.children = {}
        assert found.children is not None
        child = found.children.get(fn.subgroup)
        if child is None:
            child = found.children[fn.subgroup] = _Sums()
        for level in (found, child):
            level.count += 1
            level.bytes += fn.bytes
            level.bitcode += fn.bitcode_bytes
            level.download += share
    return list(_nodes(groups, download is not None))


def _zeros(count: int) -> Iterable[int]:
    from itertools import repeat

    return repeat(0, count)
