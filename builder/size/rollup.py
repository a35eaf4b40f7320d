"""The two shapes every size figure takes: a function's row, and the rollup of rows into groups.

Following bloaty's model (data sources x output formats), whatever is measured and however it is
grouped ends up as a list of ``Rollup`` nodes, and every renderer (``builder.render``: table,
JSON, CSV, markdown, HTML) draws any list of them. A rollup node has the same measures at every
level, and a node's ``children`` (the groups of a second ``--by`` key) add up to it exactly, for
every measure. A comparison (``builder.size.compare``) is the same shape: head's measures, plus
the base measures of the same group, from which the deltas follow. A new measure is a field here,
a line in ``roll_up`` and one in ``fold``; the renderers show the fields they know.

Every table-shaped result is such rows: a report's groups and overhead, a build's JIT units and
the host-library bytes no unit owns (``builder.size.compare.jit_breakdown``). ``join`` is the one
join of a base and a head table, whatever the rows are.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple, NoReturn

from builder.files.bounds import LARGEST_COUNT, brief, byte_count
from builder.files.dataclass_json import field

__all__ = [
    "SAVED_FIELDS",
    "FunctionRow",
    "Rollup",
    "fold",
    "join",
    "overhead_row",
    "read_functions",
    "roll_up",
]


class FunctionRow(NamedTuple):
    """One function of a metallib: its measured bytes, its place and kind in the file, and the
    group (and, with two ``--by`` keys, the subgroup) a report put it in.

    The one function-row shape of the tool: ``report`` fills the groups, ``list`` the position
    and type (``builder.render.library``).
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


SAVED_FIELDS = FunctionRow._fields[:7]
"""The fields of ``FunctionRow`` a saved report writes for each function, in its order (the
second ``--by`` label is written as ``subgroup``, the download share as ``download_bytes``)."""


def read_functions(value: object, where: str) -> list[FunctionRow]:
    """A saved report's functions, one row each, every field checked. A report may list a million
    functions, so the common case (every field of the right type) is tested inline, and only a
    function that fails it goes through the checks that name the field (a call per field took
    about 1.5 times the CPU: 3.8 against 2.5 s for 1.3 million functions). Repeated group labels
    share one string."""
    if not isinstance(value, list) or not all(type(item) is dict for item in value):
        raise TypeError(f"{where!r} is not a list of objects")
    rows: list[FunctionRow] = []
    labels: dict[str, str] = {}
    for position, f in enumerate(value):
        name, group, sub = f.get("name"), f.get("group", "other"), f.get("subgroup", "")
        size, bitcode = f.get("bytes"), f.get("bitcode_bytes", 0)
        entry, meta = f.get("entry_bytes", 0), f.get("metadata_bytes", 0)
        refl = f.get("reflection_bytes", 0)
        if not (
            type(name) is str
            and type(group) is str
            and type(sub) is str
            and type(size) is int
            and type(bitcode) is int
            and type(entry) is int
            and type(meta) is int
            and type(refl) is int
            and min(size, bitcode, entry, meta, refl) >= 0
            and max(size, bitcode, entry, meta, refl) <= LARGEST_COUNT
        ):
            _refuse_function(f)  # raises, naming the field
        group, sub = labels.setdefault(group, group), labels.setdefault(sub, sub)
        rows.append(FunctionRow(name, group, size, bitcode, entry, meta, refl, sub, "", position))
    return rows


def _refuse_function(f: dict[str, object]) -> NoReturn:
    """The error of a saved function with a field of the wrong type."""
    for key in ("name", "group", "subgroup"):
        if key == "name" and key not in f:
            raise ValueError("'functions[].name' is missing")
        value = f.get(key, "")
        if not isinstance(value, str):
            raise TypeError(f"'functions[].{key}' is {brief(value)}, not a string")
    if "bytes" not in f:
        raise ValueError("'functions[].bytes' is missing")
    for key in SAVED_FIELDS[2:]:
        byte_count(f.get(key, 0), f"functions[].{key}")
    raise TypeError("'functions[]' holds a value of a type no report writes")


@dataclass(frozen=True)
class Rollup:
    """A group of functions with its measures; ``children`` are its groups by a second key.

    In a comparison the measures are head's and the ``base_`` ones base's (0 for a group new in
    head, and head's are 0 for a group gone from it); in a report the base ones are None."""

    name: str
    function_count: int
    bytes: int
    bitcode_bytes: int
    download_bytes: int | None = field(omit="none", default=None)
    """The functions' shares of the modelled download (``--download``), else None."""
    children: tuple[Rollup, ...] = field(omit="empty", default=())
    """Largest first (ties by name); empty without a second key."""
    base_function_count: int | None = field(omit="none", default=None)
    base_bytes: int | None = field(omit="none", default=None)
    base_download_bytes: int | None = field(omit="none", default=None)
    """Base's download bytes (``compare --download``)."""
    overhead: bool = False
    """Bytes no function owns (the container overhead, a host library's unowned symbols); the
    function counts of such a row are 0."""
    embedded_bytes: int | None = field(omit="none", default=None)
    """A JIT unit's source bytes embedded in the host library
    (``builder.size.compare.jit_breakdown``)."""

    @property
    def delta(self) -> int:
        """Bytes grown since base (a comparison's row)."""
        assert self.base_bytes is not None, "a report's rollup has no base"
        return self.bytes - self.base_bytes

    @property
    def percent(self) -> float | None:
        """Growth relative to base; None for a group that is new in head."""
        return 100.0 * self.delta / self.base_bytes if self.base_bytes else None

    @property
    def download_delta(self) -> int | None:
        """Download bytes grown since base; None unless both sides have download figures."""
        if self.base_download_bytes is None or self.download_bytes is None:
            return None
        return self.download_bytes - self.base_download_bytes


def overhead_row(name: str, size: int, download: int | None = None) -> Rollup:
    """A row of bytes no function owns (the container's, a host library's)."""
    return Rollup(name, 0, size, 0, download, overhead=True)


def fold(name: str, rows: Sequence[Rollup]) -> Rollup:
    """``rows`` summed into one (a table's "rest" row), measure by measure; a measure the first
    row lacks (None) is absent from the sum. ``rows`` is not empty."""

    def total(values: list[int | None]) -> int | None:
        return None if values[0] is None else sum(v or 0 for v in values)

    return Rollup(
        name,
        sum(r.function_count for r in rows),
        sum(r.bytes for r in rows),
        sum(r.bitcode_bytes for r in rows),
        total([r.download_bytes for r in rows]),
        base_function_count=total([r.base_function_count for r in rows]),
        base_bytes=total([r.base_bytes for r in rows]),
        base_download_bytes=total([r.base_download_bytes for r in rows]),
        embedded_bytes=total([r.embedded_bytes for r in rows]),
    )


def join(
    base: Sequence[Rollup], head: Sequence[Rollup], *, downloads: bool = False
) -> list[Rollup]:
    """Head's rows with base's measures beside them, matched by name (bloaty's diff): a row on one
    side only counts 0 on the other. Rows by absolute delta, largest first (then head's bytes,
    then name); the overhead rows after them, in the order they appear. ``downloads``: both
    sides have download figures, so the rows carry them (0 where a row is absent)."""
    base_rows = {r.name: r for r in base}
    head_rows = {r.name: r for r in head}
    empty = Rollup("", 0, 0, 0, 0)
    rows = []
    for name in dict.fromkeys([*base_rows, *head_rows]):
        b, h = base_rows.get(name, empty), head_rows.get(name, empty)
        rows.append(
            Rollup(
                name,
                h.function_count,
                h.bytes,
                h.bitcode_bytes,
                (h.download_bytes or 0) if downloads else None,
                base_function_count=b.function_count,
                base_bytes=b.bytes,
                base_download_bytes=(b.download_bytes or 0) if downloads else None,
                overhead=(h if name in head_rows else b).overhead,
            )
        )
    groups = [r for r in rows if not r.overhead]
    groups.sort(key=lambda g: (-abs(g.delta), -g.bytes, g.name))
    return groups + [r for r in rows if r.overhead]


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
