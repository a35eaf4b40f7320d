"""What a target resolves to: the ``Library`` type, and the libraries one binary holds.

Below both ``builder.inputs.targets`` (files, builds, reports, specs) and
``builder.inputs.wheel_members`` (a wheel's members), which each find libraries in binaries.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from builder.errors import UsageError
from builder.files.reading import open_regular
from builder.inputs.member_names import Named, label

if TYPE_CHECKING:
    from builder.metallib import Span
    from builder.metallib.embedded import Location
    from builder.records.manifest import BuildManifest

__all__ = ["Hosts", "Library", "from_binary", "may_host", "no_metallib"]

Hosts = bool | Literal["every"]  # may a binary holding no metallib be a host library


@dataclass(frozen=True)
class Library:
    """One library a target resolved to: a metallib to measure, or a saved report to read."""

    target: str
    kind: str
    path: Path | None
    wheel: str | None = None
    manifest: BuildManifest | None = None
    member: str | None = None
    saved: dict[str, Any] | None = None
    window: Span | None = None
    """Where the metallib sits in ``path`` when ``path`` is a binary holding it (else None)."""
    location: Location | None = None
    """The binary's segment, section and symbol around it, where the binary has sections."""
    host: Path | None = None
    """A Mach-O or ELF binary that holds no metallib, to be measured by the run-time sources it
    embeds (``resolve_target(..., host_libraries=True)``; ``builder.size.host_strings``)."""
    optional: bool = False
    """A host library that is one of a wheel's binary members, offered because the wheel holds
    no metallib and no ``--member`` was named: measuring leaves it out when it holds no run-time
    source (``builder.size.load``), and says the wheel's error when none of them holds one."""
    identity: str | None = None
    """A library inside a binary: its identity there (``builder.metallib.binary_sections``), the
    part of ``member`` after its last ``#``."""
    ordinal: int | None = None
    """A library inside a binary: its number there in file order, from 1 (``#N``)."""
    siblings: tuple[tuple[str, Span], ...] = ()
    """A library inside a binary: the binary's other libraries, each its identity and bytes
    there, as the search that found this one found them (whichever ``--member`` was asked
    for), so that what is said of one beside the others reads no file again."""

    @property
    def label(self) -> str:
        """How tables and messages name it (``builder.inputs.member_names.label``)."""
        return label(self.target, self.kind, self.member, self.identity)

    @property
    def named(self) -> Named:
        """Its name (``builder.inputs.member_names``): the member, else the file's name."""
        name = self.member or (self.path.name if self.path else self.target)
        return Named(name, self.identity, self.ordinal)


def _kind(path: Path) -> str | None:
    """What the file is by its first bytes (``builder.metallib.binary_sections.file_kind``)."""
    from builder.metallib.binary_sections import file_kind

    with open_regular(path, "the target") as handle:
        return file_kind(handle.read(8))


def no_metallib(text: str, path: Path, *, sources: bool = False) -> UsageError:
    """The error for a binary that holds no metallib (``sources``: and, measured as a host
    library, no run-time source either), naming what the file is."""
    what = _kind(path) or "a file of no kind this tool knows"
    also = " nor run-time source (no function returning a source text)" if sources else ""
    return UsageError(
        f"{text}: {what} that holds no metallib (no MTLB header that parses whole){also}; "
        "give a .metallib, a binary or wheel that ships one, or a PACKAGE==VERSION"
    )


def from_binary(
    text: str,
    path: Path,
    name: str,
    kind: str,
    wheel: str | None = None,
    *,
    hosts: Hosts = False,
) -> list[Library]:
    """One library per metallib found in the binary at ``path``, named ``name#IDENTITY``
    (``builder.inputs.member_names``); with ``hosts``, a Mach-O or ELF one that holds none is a
    host library to measure. A wheel's member holding none gives none (the wheel decides)."""
    from builder.metallib import MetallibError
    from builder.metallib.embedded import find_metallibs

    try:
        found = find_metallibs(path)
    except MetallibError as exc:
        raise UsageError(str(exc)) from None
    if not found and wheel is None:
        if hosts and may_host(path):
            return [Library(text, "host library", None, host=path)]
        raise no_metallib(text, path)
    return [
        Library(
            text,
            kind,
            path,
            wheel=wheel,
            member=f"{name}#{e.identity}",
            window=e.span,
            location=e.location,
            identity=e.identity,
            ordinal=e.number,
            siblings=tuple((o.identity, o.span) for o in found if o is not e),
        )
        for e in found
    ]


def may_host(path: Path) -> bool:
    """Whether a binary holding no metallib is read for run-time sources: a Mach-O or ELF file
    (``builder.size.host_strings``)."""
    kind = _kind(path) or ""
    return "Mach-O" in kind or "ELF" in kind
