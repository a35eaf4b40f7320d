"""MLX's real kernel headers from an mlx-metal wheel, and the MLX-style entry files in
tests/data/mlx_style that include them (helpers for the discovery tests' fixtures).

The mlx-metal macOS wheels ship the headers (not the ``.metal`` files) under
``mlx/include/mlx/backend/metal/kernels/``; the entry files include them as
``"mlx/backend/metal/kernels/utils.h"``, so the include root is the folder holding ``mlx/``.
Only that tree is extracted, once, into the tool's cache, with every member name checked.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

MLX_VERSION = "0.32.0"  # headers and library of the same wheel
MLX_PLATFORM = "macosx_14_0_arm64"
DATA = Path(__file__).resolve().parent / "data" / "mlx_style"
_ROOT_IN_WHEEL = "mlx/include/"
_KERNELS_IN_WHEEL = _ROOT_IN_WHEEL + "mlx/backend/metal/kernels/"
_COMPLETE = ".complete"


def safe_member(name: str) -> PurePosixPath:
    """A wheel member's path below the include root, or ValueError if it could land outside."""
    rel = name[len(_ROOT_IN_WHEEL) :]
    path = PurePosixPath(rel)
    if (
        not rel
        or "\\" in rel
        or path.is_absolute()
        or (len(rel) > 1 and rel[1] == ":")
        or any(part in ("..", "") for part in rel.split("/"))
    ):
        raise ValueError(f"unsafe member name {name!r}")
    return path


def extract_kernel_headers(wheel: Path, dest: Path) -> Path:
    """Extract the kernel headers of ``wheel`` into ``dest`` (the include root) once; a complete
    earlier extraction is reused. Written to a temporary sibling and renamed into place."""
    if (dest / _COMPLETE).is_file():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=".extract-"))
    try:
        root = tmp.resolve()
        with zipfile.ZipFile(wheel) as archive:
            for info in archive.infolist():
                if not info.filename.startswith(_KERNELS_IN_WHEEL) or info.is_dir():
                    continue
                target = tmp / safe_member(info.filename)
                if not target.resolve().is_relative_to(root):
                    raise ValueError(f"unsafe member name {info.filename!r}")
                target.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(info) as src, open(target, "wb") as out:
                    shutil.copyfileobj(src, out)
        (tmp / _COMPLETE).write_text(wheel.name, encoding="utf-8")
        try:
            os.rename(tmp, dest)
        except OSError:
            if not (dest / _COMPLETE).is_file():  # not a concurrent run that won the race
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest
