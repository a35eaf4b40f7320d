"""The JIT side of a size report: what each run-time compiled family costs in the host library.

A family built JIT has no function in the metallib: its source is embedded in the host library
and compiled at run time. A build whose families are all JIT has no metallib at all, so its
size report must be about the host library instead. The figures are measured, never estimated:

* per family, the bytes of its symbols in the host library (ELF ``st_size``, read by
  ``builder.build.host_symbols`` from the ``.symtab``: the locals of its ``<family>.cpp`` and
  its exported registry entry), plus the symbols no family owns (the runtime, source pieces
  shared by families) and the file bytes in no symbol (ELF headers, symbol and string tables,
  padding). Together they are the host library's file size, as a metallib's functions and
  container overhead are its file size;
* when the symbols cannot be read (a Mach-O dylib, a stripped library, a missing file), the
  embedded source bytes the build recorded in its manifest, and the report says so.

``JitBreakdown.origin`` is the sentence every rendering prints with these rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from builder.report import OverheadRow, Report

__all__ = [
    "HOST_SHARED",
    "HOST_UNMAPPED",
    "HostLibrary",
    "JitBreakdown",
    "JitFamily",
    "JitRow",
    "host_from_dict",
    "host_to_dict",
    "jit_breakdown",
    "measure_host",
]

HOST_SHARED = "[runtime, shared]"
HOST_UNMAPPED = "[not in any symbol]"


class JitFamily(NamedTuple):
    """A family compiled at run time: its source is embedded in the host library."""

    name: str
    embedded_bytes: int
    """Source bytes stored for it, as the build manifest records them."""
    host_bytes: int | None = None
    """Bytes of its symbols in the host library (ELF ``st_size``); None when not measured."""
    kernel_count: int = 0
    """Instantiations it provides at run time (its host names in the manifest)."""


@dataclass(frozen=True)
class HostLibrary:
    """The host library a build embeds its JIT families in, as measured on disk."""

    path: str
    file_size: int
    measured_by: str | None
    """How symbol sizes were read (``pyelftools .symtab``); None when they could not be."""
    shared_bytes: int | None = None
    """Bytes of symbols no family owns: the runtime and source pieces shared by families."""


class JitRow(NamedTuple):
    name: str
    kernel_count: int
    bytes: int
    """Host-library symbol bytes when measured, else the manifest's embedded source bytes."""
    embedded_bytes: int


class JitBreakdown(NamedTuple):
    """JIT families as rows that add up to ``total``, with the sentence saying what they are.

    Measured (``host_measured``): symbol bytes per family plus ``overhead`` (shared symbols, bytes
    in no symbol), and ``total`` is the host library's file size. Otherwise: the manifest's
    embedded source bytes, ``overhead`` empty and ``total`` their sum.
    """

    families: list[JitRow]
    """Largest first (ties by name)."""
    overhead: list[OverheadRow]
    total: int
    host_measured: bool
    origin: str


def measure_host(
    path: Path, families: Sequence[tuple[str, int, int]]
) -> tuple[list[JitFamily], HostLibrary | None]:
    """Measure the host library at ``path`` for ``families`` = (name, embedded bytes, kernels).

    A missing file gives no ``HostLibrary`` (the rows fall back to the manifest's embedded
    bytes); a file whose symbols cannot be read gives one with ``measured_by`` None.
    """
    from builder.build.host_symbols import OTHER, symbol_sizes

    if not path.is_file():
        return [JitFamily(n, e, None, k) for n, e, k in families], None
    symbols = symbol_sizes(path, [name for name, _, _ in families])
    size = path.stat().st_size
    if symbols is None:
        return [JitFamily(n, e, None, k) for n, e, k in families], HostLibrary(str(path), size, None)
    jit = [JitFamily(n, e, symbols.by_family[n], k) for n, e, k in families]
    return jit, HostLibrary(str(path), size, symbols.method, symbols.by_family[OTHER])


def _unmeasured(host: HostLibrary | None, jit: Sequence[JitFamily]) -> str | None:
    """None when the host library's symbol sizes cover every JIT family, else the reason."""
    if host is None:
        return "host library not found"
    if host.measured_by is None or host.shared_bytes is None:
        return f"no symbol sizes in the host library {host.path}: not ELF, or stripped"
    if any(j.host_bytes is None for j in jit):
        return f"no symbol sizes for some families in the host library {host.path}"
    return None


def _unmapped(host: HostLibrary, jit: Sequence[JitFamily]) -> int:
    return host.file_size - (host.shared_bytes or 0) - sum(j.host_bytes or 0 for j in jit)


def jit_breakdown(report: Report, *, host: bool = True) -> JitBreakdown | None:
    """The JIT families of ``report`` as rows (None when it has none); ``host=False`` takes the
    manifest's embedded bytes even when symbol sizes were measured (to compare like with like
    against a side whose symbols could not be read)."""
    from builder.report import OverheadRow

    jit = report.jit_families
    if not jit:
        return None
    library = report.host_library
    manifest = report.source.manifest or "(no manifest path)"
    why = _unmeasured(library, jit) if host else "the other side's symbols could not be read"
    if library is not None and why is None:
        rows = [JitRow(j.name, j.kernel_count, j.host_bytes or 0, j.embedded_bytes) for j in jit]
        overhead = [OverheadRow(HOST_SHARED, library.shared_bytes or 0),
                    OverheadRow(HOST_UNMAPPED, _unmapped(library, jit))]  # fmt: skip
        total = library.file_size
        origin = (f"symbol sizes (ELF st_size, {library.measured_by}) in the host library "
                  f"{library.path}, not metallib bytes; embedded source bytes per build "
                  f"manifest {manifest}")  # fmt: skip
    else:
        rows = [JitRow(j.name, j.kernel_count, j.embedded_bytes, j.embedded_bytes) for j in jit]
        overhead, total = [], sum(r.bytes for r in rows)
        origin = f"embedded source bytes per build manifest {manifest} ({why}), not metallib bytes"
    rows.sort(key=lambda r: (-r.bytes, r.name))
    return JitBreakdown(rows, overhead, total, why is None, origin)


def host_to_dict(host: HostLibrary, jit: Sequence[JitFamily]) -> dict[str, Any]:
    """The report JSON's ``host_library`` object (docs/report-schema.md)."""
    measured = _unmeasured(host, jit) is None
    return {"path": host.path, "file_size": host.file_size, "measured_by": host.measured_by,
            "shared_bytes": host.shared_bytes,
            "unattributed_bytes": _unmapped(host, jit) if measured else None}  # fmt: skip


def host_from_dict(value: Any, jit: Sequence[JitFamily]) -> HostLibrary | None:
    """Read ``host_library`` back; a measured one must add up to its file size (ValueError)."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise TypeError("'host_library' is not an object")
    measured_by = value["measured_by"]
    if measured_by is not None and not isinstance(measured_by, str):
        raise TypeError("'host_library.measured_by' is not a string")
    shared = value.get("shared_bytes")
    host = HostLibrary(str(value["path"]), _count(value["file_size"]), measured_by,
                       None if shared is None else _count(shared))  # fmt: skip
    if _unmeasured(host, jit) is None:
        unmapped = _count(value["unattributed_bytes"])
        if unmapped != _unmapped(host, jit):
            total = host.file_size - _unmapped(host, jit) + unmapped
            raise ValueError(f"JIT families, shared and unattributed bytes add up to {total}, "
                             f"host_library.file_size says {host.file_size}")  # fmt: skip
    return host


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{value!r} is not a byte count")
    return value
