"""Functions in more than one library: the same name in two libraries, and among those the ones
whose modules are identical, per pair of libraries (``report`` of a target holding several, or of
several targets).

PyTorch compiled every MPS kernel twice, once per Metal version (``metal_basic`` and
``metal_40`` in ``libtorch_cpu.dylib``), and the fix took 96 MiB off once someone noticed; this
module is how it gets noticed. Pure data in and out: each library is a ``Held`` (its label and,
per function, name, bytes, group and module key), each pair sharing a name a ``Duplication``.

Whose bytes: ``bytes`` and ``identical_bytes`` are the *second* library's bytes of the shared
functions, everything each owns (entry, metadata, module, reflection): what dropping them from
the second library would save. A name is shared when both libraries hold a function of that
name; ``functions`` counts such names. A shared name is identical when one of the second
library's functions of that name has a module of the same size and HASH tag (the SHA-256 of the
module as stored, which ``verify`` checks) as one of the first library's; unknown (None) when
either library's modules are not known (a saved report keeps no HASH tags). ``only_first`` and
``only_second`` are the names one library holds and the other lacks, with that library's bytes
and its groups (``--by``): what a macOS 26 library adds over a macOS 14 one.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING, NamedTuple

from builder.files.dataclass_json import count, field

if TYPE_CHECKING:
    from builder.size.report import Report

__all__ = [
    "Duplicates",
    "Duplication",
    "GroupBytes",
    "Held",
    "OnlyIn",
    "duplicates",
    "held",
    "report_duplicates",
]

_DIGEST = 32
_NO_HASH = bytes(_DIGEST)


@dataclass(frozen=True)
class Held:
    """One library's functions as the comparison reads them, aligned lists in file order."""

    label: str
    names: Sequence[str]
    sizes: Sequence[int]
    """Everything each function owns in the library, in bytes."""
    groups: Sequence[str]
    """Each function's group (the report's first ``--by`` key)."""
    modules: Sequence[tuple[int, bytes] | None] | None
    """Each function's module as (size, HASH tag); None for a function without a HASH tag,
    and for the whole list when the library's modules are not known."""


def held(report: Report) -> Held | None:
    """``report``'s functions, or None for a report of no metallib (a host library, a build
    whose units are all JIT)."""
    if report.source.path is None:
        return None
    functions = report.functions
    hashes = report.module_hashes
    modules: list[tuple[int, bytes] | None] | None = None
    if hashes is not None and len(hashes) == _DIGEST * len(functions):
        modules = []
        for at, f in enumerate(functions):
            digest = hashes[_DIGEST * at : _DIGEST * (at + 1)]
            modules.append(None if digest == _NO_HASH else (f.bitcode_bytes, digest))
    return Held(
        report.source.label,
        [f.name for f in functions],
        [f.bytes for f in functions],
        [f.group for f in functions],
        modules,
    )


@dataclass(frozen=True)
class GroupBytes:
    """A group's functions among the names one library holds alone, and their bytes."""

    group: str
    functions: int = count()
    bytes: int = count()


@dataclass(frozen=True)
class OnlyIn:
    """The names one library of a pair holds and the other lacks, with the holder's bytes."""

    functions: int = count()
    """How many names."""
    bytes: int = count()
    """The holder's bytes of every function of those names."""
    groups: list[GroupBytes] = field()
    """Those functions by the holder's group, largest first (ties by name)."""
    names: list[str] = field()
    """Sorted."""


@dataclass(frozen=True)
class Duplication:
    """Two libraries that hold functions of the same names (module docstring: whose bytes)."""

    first: str
    """The first library's label, in the order the libraries were given."""
    second: str
    functions: int = count()
    """Names both libraries hold."""
    bytes: int = count()
    """The second library's bytes of every function of those names."""
    identical_functions: int | None = count()
    """Shared names whose modules are identical; None when a side's modules are unknown."""
    identical_bytes: int | None = count()
    """The second library's bytes of those functions."""
    names: list[str] = field()
    """The shared names, sorted."""
    identical_names: list[str] | None = field()
    """The shared names with identical modules, sorted (None: unknown)."""
    only_first: OnlyIn = field()
    only_second: OnlyIn = field()


def duplicates(libraries: Sequence[Held]) -> list[Duplication]:
    """One ``Duplication`` per pair of ``libraries`` (in their order) sharing any name."""
    found = []
    indexed = [(lib, _by_name(lib)) for lib in libraries]
    for (a, a_names), (b, b_names) in combinations(indexed, 2):
        shared = a_names.keys() & b_names.keys()
        if shared:
            found.append(_pair(a, a_names, b, b_names, shared))
    return found


def _by_name(lib: Held) -> dict[str, list[int]]:
    """Each name's functions (indices) in ``lib``: a name may be held more than once."""
    at: dict[str, list[int]] = defaultdict(list)
    for index, name in enumerate(lib.names):
        at[name].append(index)
    return at


def _pair(
    a: Held,
    a_names: dict[str, list[int]],
    b: Held,
    b_names: dict[str, list[int]],
    shared: set[str],
) -> Duplication:
    names = sorted(shared)
    identical: list[str] | None = None
    identical_bytes = None
    if a.modules is not None and b.modules is not None:
        first, second = a.modules, b.modules
        identical, identical_bytes = [], 0
        for name in names:
            theirs = {first[i] for i in a_names[name]} - {None}
            same = [i for i in b_names[name] if second[i] is not None and second[i] in theirs]
            if same:
                identical.append(name)
                identical_bytes += sum(b.sizes[i] for i in same)
    return Duplication(
        a.label,
        b.label,
        len(names),
        _bytes(b, b_names, names),
        None if identical is None else len(identical),
        identical_bytes,
        names,
        identical,
        _only(a, a_names, a_names.keys() - shared),
        _only(b, b_names, b_names.keys() - shared),
    )


def _bytes(lib: Held, at: dict[str, list[int]], names: Sequence[str]) -> int:
    return sum(lib.sizes[i] for name in names for i in at[name])


def _only(lib: Held, at: dict[str, list[int]], names: set[str]) -> OnlyIn:
    """``names`` of ``lib`` (the other library lacks them), with their bytes by group."""
    groups: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for name in names:
        for i in at[name]:
            counted = groups[lib.groups[i]]
            counted[0] += 1
            counted[1] += lib.sizes[i]
    rows = [GroupBytes(g, n, size) for g, (n, size) in groups.items()]
    rows.sort(key=lambda r: (-r.bytes, r.group))
    return OnlyIn(len(names), sum(r.bytes for r in rows), rows, sorted(names))


class Duplicates(NamedTuple):
    """The libraries compared (their labels, in order) and each pair sharing a name."""

    libraries: list[str]
    pairs: list[Duplication]


def report_duplicates(reports: Sequence[Report]) -> Duplicates | None:
    """The functions in more than one of the metallibs ``reports`` measured; None when there
    are fewer than two (a host library or a build with no metallib is none)."""
    libraries = [h for h in map(held, reports) if h is not None]
    if len(libraries) < 2:
        return None
    return Duplicates([lib.label for lib in libraries], duplicates(libraries))
