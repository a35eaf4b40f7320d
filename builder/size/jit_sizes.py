"""The JIT side of a size report: what each run-time compiled unit costs in the host library.

A unit built JIT has no function in the metallib: its source is embedded in the host library
and compiled at run time. A build whose units are all JIT has no metallib at all, so its
size report must be about the host library instead. The figures are measured, never estimated:

* per unit, the bytes of its symbols in the host library, an ELF ``.so`` or a Mach-O
  ``.dylib`` (``builder.size.host_symbols``: the symbols whose names hold the unit's
  namespace, and its registry entry; ELF ``st_size``, or in Mach-O each symbol up to the
  next), plus the symbols no unit owns (the runtime, source pieces shared by units) and the
  file bytes in no symbol (headers, symbol and string tables, padding). Together they are the
  host library's file size, as a metallib's functions and container overhead are its file size;
* when the symbols cannot be read (a stripped library, another format, a missing file), the
  embedded source bytes the build recorded in its manifest, and the report says so.

The rows a report shows for them are ``builder.size.jit_rows``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from builder.files.bounds import byte_count

__all__ = [
    "HostLibrary",
    "JitUnit",
    "host_from_dict",
    "host_to_dict",
    "measure_host",
    "unattributed_bytes",
    "unmeasured_reason",
]


class JitUnit(NamedTuple):
    """A unit compiled at run time: its source is embedded in the host library."""

    name: str
    embedded_bytes: int
    """Source bytes stored for it, as the build manifest records them."""
    host_bytes: int | None = None
    """Bytes of its symbols in the host library (``builder.size.host_symbols``); None when not
    measured."""
    kernel_count: int = 0
    """Instantiations it provides at run time (its host names in the manifest)."""
    embedding: str = "preamble"
    """``whole-file`` (an entry file's text, includes inlined) or ``preamble`` (headers the host
    adds instantiation lines to; every catalog family)."""


@dataclass(frozen=True)
class HostLibrary:
    """The host library a build embeds its JIT units in, as measured on disk."""

    path: str
    file_size: int
    measured_by: str | None
    """How symbol sizes were read (``pyelftools .symtab``, ``Mach-O LC_SYMTAB``); None when they
    could not be."""
    shared_bytes: int | None = None
    """Bytes of symbols no unit owns: the runtime and source pieces shared by units."""
    unmatched: tuple[str, ...] = ()
    """Of a shipped host library measured by its run-time sources against a kernel tree
    (``builder.size.host_strings``): the rows no header of the tree made. Not saved."""


def measure_host(
    path: Path, units: Sequence[tuple[str, int, int]]
) -> tuple[list[JitUnit], HostLibrary | None]:
    """Measure the host library at ``path`` for ``units`` = (name, embedded bytes, kernels).

    A missing file gives no ``HostLibrary`` (the rows fall back to the manifest's embedded
    bytes); a file whose symbols cannot be read gives one with ``measured_by`` None.
    """
    from builder.size.host_symbols import OTHER, symbol_sizes

    if not path.is_file():
        return [JitUnit(n, e, None, k) for n, e, k in units], None
    symbols = symbol_sizes(path, [name for name, _, _ in units])
    size = path.stat().st_size
    if symbols is None:
        return [JitUnit(n, e, None, k) for n, e, k in units], HostLibrary(str(path), size, None)
    jit = [JitUnit(n, e, symbols.by_unit[n], k) for n, e, k in units]
    return jit, HostLibrary(str(path), size, symbols.method, symbols.by_unit[OTHER])


def unmeasured_reason(host: HostLibrary | None, jit: Sequence[JitUnit]) -> str | None:
    """None when the host library's symbol sizes cover every JIT unit, else the reason."""
    if host is None:
        return "host library not found"
    if host.measured_by is None or host.shared_bytes is None:
        return (
            f"no symbol sizes in the host library {host.path}: stripped, not made by this "
            "tool, or neither ELF nor Mach-O"
        )
    if any(j.host_bytes is None for j in jit):
        return f"no symbol sizes for some units in the host library {host.path}"
    return None


def unattributed_bytes(host: HostLibrary, jit: Sequence[JitUnit]) -> int:
    """File bytes of the host library in no symbol (headers, tables, padding)."""
    return host.file_size - (host.shared_bytes or 0) - sum(j.host_bytes or 0 for j in jit)


def host_to_dict(host: HostLibrary, jit: Sequence[JitUnit]) -> dict[str, object]:
    """The report JSON's ``host_library`` object (docs/report-schema.md)."""
    measured = unmeasured_reason(host, jit) is None
    return {
        "path": host.path,
        "file_size": host.file_size,
        "measured_by": host.measured_by,
        "shared_bytes": host.shared_bytes,
        "unattributed_bytes": unattributed_bytes(host, jit) if measured else None,
    }


def host_from_dict(value: object, jit: Sequence[JitUnit]) -> HostLibrary | None:
    """Read ``host_library`` back; a measured one must add up to its file size (ValueError)."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise TypeError("'host_library' is not an object")
    measured_by = value["measured_by"]
    if measured_by is not None and not isinstance(measured_by, str):
        raise TypeError("'host_library.measured_by' is not a string")
    shared = value.get("shared_bytes")
    path = value["path"]
    if not isinstance(path, str):
        raise TypeError("'host_library.path' is not a string")
    host = HostLibrary(
        path,
        byte_count(value["file_size"], "host_library.file_size"),
        measured_by,
        None if shared is None else byte_count(shared, "host_library.shared_bytes"),
    )
    if unmeasured_reason(host, jit) is None:
        unmapped = byte_count(value["unattributed_bytes"], "host_library.unattributed_bytes")
        if unmapped != unattributed_bytes(host, jit):
            total = host.file_size - unattributed_bytes(host, jit) + unmapped
            raise ValueError(
                f"JIT units, shared and unattributed bytes add up to {total}, "
                f"host_library.file_size says {host.file_size}"
            )
    return host
