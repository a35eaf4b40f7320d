"""Fetch macOS wheels from the package index and pull the metallibs out of them.

Real metallibs come only from Apple's compiler, and the easiest place to get them on Linux is a
macOS wheel such as ``mlx-metal``. Downloads go through ``pip download`` into a cache outside any
project tree (``$METALLIB_BUILDER_CACHE`` or ``$XDG_CACHE_HOME/metallib-builder``); extracted
metallibs are cached beside the wheel so repeated runs cost nothing.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from builder.errors import UsageError

__all__ = [
    "DEFAULT_PLATFORM",
    "DownloadError",
    "cache_dir",
    "download_wheel",
    "extract_metallibs",
    "metallibs_from_spec",
    "parse_spec",
]

DEFAULT_PLATFORM = "macosx_14_0_arm64"
_SPEC = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[A-Za-z0-9.+!_-]+)$")


class DownloadError(UsageError):
    """The package index could not be reached or had no such wheel."""


def cache_dir() -> Path:
    """The cache root; created on first use."""
    root = os.environ.get("METALLIB_BUILDER_CACHE")
    if root:
        path = Path(root)
    else:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        path = Path(base) / "metallib-builder"
    path.mkdir(parents=True, exist_ok=True)
    return path


def parse_spec(spec: str) -> tuple[str, str] | None:
    """``"mlx-metal==0.30.0"`` -> ``("mlx-metal", "0.30.0")``; anything else -> None."""
    match = _SPEC.match(spec.strip())
    return (match["name"], match["version"]) if match else None


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _find_cached(folder: Path, name: str, version: str, platform: str) -> Path | None:
    prefix = f"{_normalise(name)}-{version}-"
    for wheel in sorted(folder.glob("*.whl")):
        if wheel.name.lower().startswith(prefix) and platform in wheel.name:
            return wheel
    return None


def download_wheel(
    name: str, version: str, platform: str = DEFAULT_PLATFORM, *, quiet: bool = True
) -> Path:
    """Return the path of ``name==version``'s wheel for ``platform``, downloading it if needed."""
    folder = cache_dir() / "wheels"
    folder.mkdir(parents=True, exist_ok=True)
    cached = _find_cached(folder, name, version, platform)
    if cached:
        return cached
    with tempfile.TemporaryDirectory(dir=folder, prefix=".download-") as tmp:
        cmd = [
            sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
            "--platform", platform, "--python-version", "3.12", "--disable-pip-version-check",
            "-d", tmp, f"{name}=={version}",
        ]  # fmt: skip
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
        os.replace(wheels[0], target)
    return target


def extract_metallibs(wheel: Path) -> list[Path]:
    """Extract every ``*.metallib`` in ``wheel`` into the cache; return their paths in wheel order."""
    try:
        archive = zipfile.ZipFile(wheel)
    except (OSError, zipfile.BadZipFile) as exc:
        raise UsageError(f"{wheel}: not a readable wheel ({exc})") from None
    out_root = cache_dir() / "metallibs" / wheel.stem
    paths = []
    with archive:
        for info in archive.infolist():
            if not info.filename.endswith(".metallib"):
                continue
            target = out_root / info.filename
            if not (target.exists() and target.stat().st_size == info.file_size):
                target.parent.mkdir(parents=True, exist_ok=True)
                with (
                    archive.open(info) as src,
                    tempfile.NamedTemporaryFile(
                        dir=target.parent, delete=False, prefix=".extract-"
                    ) as dst,
                ):
                    shutil.copyfileobj(src, dst, 1 << 20)
                os.replace(dst.name, target)
            paths.append(target)
    return paths


def metallibs_from_spec(spec: str, platform: str = DEFAULT_PLATFORM) -> list[Path]:
    """Download (or reuse) the wheel named by ``PACKAGE==VERSION`` and return its metallibs."""
    parsed = parse_spec(spec)
    if parsed is None:
        raise UsageError(f"{spec!r} is not a PACKAGE==VERSION spec")
    return extract_metallibs(download_wheel(*parsed, platform))
