"""The binaries behind a ``sources`` target: a binary given itself, or each binary member of a
wheel (a ``.whl`` or ``PACKAGE==VERSION``), to be read for the run-time sources it embeds.

A wheel's members come from the same cache as ``report``'s (``builder.inputs.wheel_extract``):
it extracts every ``.dylib``, ``.so`` and ``.bundle`` member, with its names checked and its bytes
bounded, so a host library such as mlx-metal's ``libmlx.dylib`` is already on disk beside the
metallib, and nothing is extracted twice. ``.metallib`` members are left out: they hold no host
code.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from builder.errors import UsageError
from builder.files.reading import check_regular
from builder.inputs.targets import Progress, common_root, fetch_spec

__all__ = ["Binary", "resolve_binaries"]


@dataclass(frozen=True)
class Binary:
    """One binary to read: its path on disk and, for a wheel's member, the member's path in the
    wheel (``mlx/lib/libmlx.dylib``; None for a binary given itself)."""

    path: Path
    member: str | None = None


def resolve_binaries(
    text: str, *, platform: str | None = None, progress: Progress | None = None
) -> list[Binary]:
    """The binaries ``text`` names: the file itself, or each binary member of the wheel it is
    or names (downloaded for ``platform`` and cached, as ``report`` does), in wheel order."""
    path = Path(text)
    if path.is_dir():
        raise UsageError(
            f"{text}: a directory; 'sources' reads a Mach-O binary, a .whl or PACKAGE==VERSION "
            "('report BUILD_DIR' measures a build's host library)"
        )
    if path.exists():
        check_regular(path, "the target")
        if path.suffix != ".whl":
            return [Binary(path)]
        from builder.inputs.wheel_extract import extract_metallibs

        paths = extract_metallibs(path)
    else:
        fetched = fetch_spec(text, platform=platform, progress=progress)
        if fetched is None:
            raise UsageError(
                f"{text}: no such file, and not a PACKAGE==VERSION spec "
                "(targets: a Mach-O binary, .whl, PACKAGE==VERSION)"
            )
        paths = fetched[1]
    if not paths:
        return []
    root = common_root(paths)
    return [Binary(p, p.relative_to(root).as_posix()) for p in paths if p.suffix != ".metallib"]
