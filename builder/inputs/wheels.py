"""Fetch macOS wheels from the package index and pull the metallibs out of them.

Real metallibs come only from Apple's compiler, and the easiest place to get them on Linux is a
macOS wheel such as ``mlx-metal``. Downloads go through ``pip download`` into a cache outside any
project tree (layout and temp-file cleanup: ``builder.inputs.wheel_cache``); the members that
may hold metallibs are extracted by ``builder.inputs.wheel_extract``, which checks them as the
untrusted input a wheel is. A downloaded wheel whose extraction fails is deleted: the cache holds
only usable results. ``pip download`` verifies the index's ``#sha256=`` fragment for a pinned
``NAME==VERSION``; a cached wheel that is still unreadable (truncated, bit rot) is deleted and
downloaded once more. Wheels the user names are only read, never deleted.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from builder.errors import UsageError
from builder.inputs import DEFAULT_PLATFORM
from builder.inputs.wheel_cache import (
    CorruptWheelError,
    DownloadError,
    UnusableWheelError,
    cache_dir,
    make_dir,
    prepare_cache,
    record_path,
    write_error,
)
from builder.inputs.wheel_extract import extract_metallibs
from builder.inputs.wheel_index import (
    cached_wheel,
    check_remote,
    remember_choice,
)

__all__ = ["download_wheel", "fetch_metallibs", "metallibs_from_spec", "parse_spec"]

_SPEC = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[A-Za-z0-9.+!_-]+)$")


def parse_spec(spec: str) -> tuple[str, str] | None:
    """``"mlx-metal==0.30.0"`` -> ``("mlx-metal", "0.30.0")``; anything else -> None."""
    match = _SPEC.match(spec.strip())
    return (match["name"], match["version"]) if match else None


def download_wheel(
    name: str, version: str, platform: str = DEFAULT_PLATFORM, *, quiet: bool = True
) -> Path:
    """Return the path of ``name==version``'s wheel for ``platform``, downloading it if needed."""
    cache = prepare_cache()
    folder = cache / "wheels"
    make_dir(folder)
    cached = cached_wheel(folder, name, version, platform)
    if cached:
        return cached
    check_remote(name, version, platform)
    try:
        tmpdir = tempfile.TemporaryDirectory(
            dir=folder, prefix=".download-", ignore_cleanup_errors=True
        )
    except OSError as exc:
        raise write_error(folder, exc, f"downloading {name}=={version}") from None
    with tmpdir as tmp:
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--platform",
            platform,
            "--python-version",
            "3.12",
            "--disable-pip-version-check",
            "-d",
            tmp,
            f"{name}=={version}",
        ]
        if quiet:
            cmd.insert(4, "-q")
        result = subprocess.run(cmd, capture_output=quiet, text=True, check=False)
        wheels = list(Path(tmp).glob("*.whl"))
        if result.returncode != 0 or not wheels:
            detail = (result.stderr or "").strip().splitlines()[-1:] if quiet else []
            raise DownloadError(
                f"could not download {name}=={version} for {platform} from the package index"
                + (f": {detail[0]}" if detail else "")
            )
        target = folder / wheels[0].name
        try:
            os.replace(wheels[0], target)
        except OSError as exc:
            raise write_error(folder, exc, f"storing {target.name}") from None
    remember_choice(folder, name, version, platform, target)
    return target


def fetch_metallibs(
    name: str,
    version: str,
    platform: str = DEFAULT_PLATFORM,
    *,
    quiet: bool = True,
    notice: Callable[[str], None] | None = None,
) -> tuple[Path, list[Path]]:
    """Download (or reuse) ``name==version``'s wheel and extract its metallibs.

    A cached wheel that turns out unreadable is deleted and downloaded once more (``notice`` is
    told); if the fresh copy is bad too it is deleted as well and the error says so.
    """
    for attempt in (1, 2):
        wheel = download_wheel(name, version, platform, quiet=quiet)
        try:
            return wheel, extract_metallibs(wheel, notice)
        except UnusableWheelError:
            _forget(wheel)  # downloading it again would give the same bytes
            raise
        except CorruptWheelError as exc:
            _forget(wheel)
            if attempt == 2:
                raise CorruptWheelError(
                    f"{exc} (downloaded again from the package index and still unreadable; "
                    "removed from the cache)"
                ) from None
            if notice is not None:
                notice(f"{exc}; deleted it from the cache, downloading it again")
    raise AssertionError("unreachable")


def metallibs_from_spec(spec: str, platform: str = DEFAULT_PLATFORM) -> list[Path]:
    """Download (or reuse) the wheel named by ``PACKAGE==VERSION`` and return its ``.metallib``
    files (not the binaries ``extract_metallibs`` also extracts)."""
    parsed = parse_spec(spec)
    if parsed is None:
        raise UsageError(f"{spec!r} is not a PACKAGE==VERSION spec")
    return [p for p in fetch_metallibs(*parsed, platform)[1] if p.suffix == ".metallib"]


def _forget(wheel: Path) -> None:
    """Delete a cached wheel we downloaded, and its digest record."""
    for path in (wheel, record_path(cache_dir(), wheel)):
        try:
            path.unlink(missing_ok=True)
        except OSError:
            pass  # the next attempt reports whatever is wrong with the folder
