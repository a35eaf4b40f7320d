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
from contextlib import suppress
from pathlib import Path
from subprocess import DEVNULL, PIPE, STDOUT

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
    canonical_name,
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
    """Return the path of ``name==version``'s wheel for ``platform``, downloading it if needed.

    pip's output is kept, never shown: a download pip refuses is one ``DownloadError`` line
    naming the cause pip gave (:func:`refusal`), and pip's whole output is left in
    ``wheels/pip-NAME-VERSION-PLATFORM.log`` of the cache, which the line names. ``quiet=False``
    (a command with progress on stderr) asks pip for its informational lines too, in that log."""
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
        cmd = [sys.executable, "-m", "pip", "download", *(["-q"] if quiet else [])]
        cmd += ["--no-deps", "--only-binary=:all:", "--disable-pip-version-check"]
        cmd += ["--platform", platform, "--python-version", "3.12", "--progress-bar", "off"]
        cmd += ["-d", tmp, f"{name}=={version}"]
        # stdin closed: pip never waits for a password prompt; its output goes to the log only
        result = subprocess.run(
            cmd,
            stdin=DEVNULL,
            stdout=PIPE,
            stderr=STDOUT,
            text=True,
            errors="replace",
            check=False,
        )
        wheels = list(Path(tmp).glob("*.whl"))
        if result.returncode != 0 or not wheels:
            output = (result.stdout or "") + (result.stderr or "")
            log = _pip_log(folder, name, version, platform, output)
            where = f"; pip's output: {log}" if log is not None else ""
            raise DownloadError(
                f"{name}=={version}: {refusal(output, name, platform, result.returncode)}{where}"
            )
        target = folder / wheels[0].name
        try:
            os.replace(wheels[0], target)
        except OSError as exc:
            raise write_error(folder, exc, f"storing {target.name}") from None
    remember_choice(folder, name, version, platform, target)
    return target


_NO_VERSION = re.compile(
    r"Could not find a version that satisfies the requirement \S+ \(from versions: (.*)\)"
)
_UNREACHABLE = re.compile(
    r"(Could not fetch URL \S+: .*|Failed to establish a new connection: [^'\")]*"
    r"|Name or service not known|Temporary failure in name resolution|Connection refused"
    r"|Read timed out|certificate verify failed)"
)


def refusal(output: str, name: str, platform: str, code: int) -> str:
    """Why ``pip download`` of ``name`` for ``platform`` failed, in a few words, from pip's
    ``output``: no reachable index; no wheel of that version for ``platform`` (with the
    versions pip found one for); a download that does not match the index's hash; else pip's
    last error line."""
    found = _NO_VERSION.search(output)
    if found is not None:
        offline = _UNREACHABLE.search(output)
        if offline is not None:
            return f"the package index cannot be reached ({offline[1].strip().rstrip(':')})"
        listed = [v.strip() for v in found[1].split(",") if v.strip() not in ("", "none")]
        if not listed:
            return (
                f"no macOS wheel for {platform} on the package index, in any version of {name} "
                "(or no such package)"
            )
        older = f" and {len(listed) - 5} older" if len(listed) > 5 else ""
        return (
            f"no macOS wheel for {platform} on the package index: no such version, or none "
            f"built for that platform (versions with one: {', '.join(listed[-5:])}{older})"
        )
    if "DO NOT MATCH THE HASHES" in output:
        return "pip refused the download: it does not match the index's SHA-256"
    errors = [
        line.removeprefix("ERROR:").strip()
        for line in output.splitlines()
        if line.startswith("ERROR:") and line.removeprefix("ERROR:").strip()
    ]
    if errors:
        return f"pip could not download it for {platform}: {errors[-1]}"
    if code == 0:
        return f"pip downloaded no wheel for {platform}"
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    said = f": {lines[-1]}" if lines else " and said nothing"
    return f"pip could not download it for {platform} (exit status {code}){said}"


def _pip_log(folder: Path, name: str, version: str, platform: str, output: str) -> Path | None:
    """pip's whole output of a failed download, in the cache beside the wheels (replaced by
    the next failure of the same download); None when it cannot be written."""
    from builder.errors import OutputError
    from builder.files.atomic import write_atomic

    canonical = canonical_name(name, "_")
    log = folder / f"pip-{canonical}-{version}-{platform}.log"
    try:
        write_atomic(log, output)
    except (OutputError, UsageError):
        return None
    return log


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
        with suppress(OSError):  # the next attempt reports whatever is wrong with the folder
            path.unlink(missing_ok=True)
