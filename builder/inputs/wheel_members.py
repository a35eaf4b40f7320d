"""A wheel's members as libraries: each ``.metallib``, each metallib inside a binary and, where
the wheel holds no metallib, the binaries that may be host libraries.

A wheel that ships its kernels as run-time sources (a Linux wheel whose ``.so`` was built with
``metallib_embed_headers``, ``examples/kernel-package``) holds no metallib. For the size commands
(``host_libraries``) such a wheel resolves to each Mach-O or ELF binary member, marked
``optional``: the measuring side (``builder.size.load``) reads each for run-time sources, leaves
out those holding none, and raises :func:`no_metallib_in_wheel` when none holds any. Searching
for run-time sources needs ``builder.size``, a layer above this one, hence the split. A wheel
that holds a metallib is its metallibs only: its binaries are never read for run-time sources
(MLX's ``libmlx.dylib`` beside ``mlx.metallib`` is named with ``--member``).
"""

from __future__ import annotations

from pathlib import Path

from builder.errors import UsageError
from builder.inputs.libraries import Hosts, Library, from_binary, may_host, no_metallib

__all__ = ["from_wheel", "no_metallib_in_wheel"]


def from_wheel(
    text: str,
    wheel: Path,
    paths: list[Path],
    kind: str = "wheel",
    host: tuple[str | None, Hosts] = (None, False),
) -> list[Library]:
    """The wheel's libraries; ``host`` (a member path, and whether a host library may be
    measured): that binary member when it holds no metallib, as a binary given itself is
    (``"every"``: each binary member); no member named and no metallib in the wheel: each
    Mach-O or ELF member, ``optional``."""
    from builder.inputs.wheel_cache import extraction_root

    member, hosts = host
    root = extraction_root(paths) if paths else wheel.parent
    names = [p.relative_to(root).as_posix() for p in paths]
    chosen = _named_file(names, member)
    found: list[Library] = []
    for p, name in zip(paths, names, strict=True):
        if p.suffix == ".metallib":
            found.append(Library(text, kind, p, wheel=str(wheel), member=name))
            continue
        if hosts == "every":  # read for what it returns, not searched for metallibs
            found.append(Library(text, kind, None, wheel=str(wheel), member=name, host=p))
            continue
        inside = from_binary(text, p, name, kind, wheel=str(wheel))
        if not inside and name == chosen:  # the member named: a binary holding no metallib
            if hosts and may_host(p):
                return [Library(text, kind, None, wheel=str(wheel), member=name, host=p)]
            raise no_metallib(f"{text}:{name}", p)
        found += inside
    if found or hosts == "every":
        return found
    binaries = [(p, n) for p, n in zip(paths, names, strict=True) if hosts and may_host(p)]
    if binaries and member is None:
        return [
            Library(text, kind, None, wheel=str(wheel), member=n, host=p, optional=True)
            for p, n in binaries
        ]
    raise no_metallib_in_wheel(text, wheel.name, [n for _, n in binaries])


def no_metallib_in_wheel(
    text: str, wheel: str, binaries: list[str], *, read: bool = False
) -> UsageError:
    """The error for a wheel holding no metallib: ``binaries``, the Mach-O or ELF members that
    could be host libraries, are named to choose from with ``--member``; ``read``: they were
    read already, and none holds a run-time source."""
    listed = f"{', '.join(binaries[:3])}{', ...' if len(binaries) > 3 else ''}"
    if not binaries:
        hint = ""
    elif read:
        which = "its binary" if len(binaries) == 1 else f"any of its {len(binaries)} binaries"
        hint = f" nor run-time source (no function of {which} returns a source text: {listed})"
    else:
        hint = (
            f"; to measure a binary's run-time sources, name it with --member (a budget's "
            f"member): {listed}"
        )
    return UsageError(
        f"{text}: the wheel {wheel} contains no metallib (no .metallib member, and none "
        f"inside its binaries){hint}"
    )


def _named_file(names: list[str], member: str | None) -> str | None:
    """The wheel path ``member`` names: itself, or the one path whose base name it is."""
    if member is None or member in names:
        return member
    same = [name for name in names if name.rpartition("/")[2] == member]
    return same[0] if len(same) == 1 else None
