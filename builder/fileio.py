"""Writing generated files so that build tools see a change only when there is one.

Generators run on every configure or build step; rewriting an identical file would bump its mtime
and make Ninja rebuild everything downstream. Standard library only: CMake runs this inside
scikit-build-core's isolated environment.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["write_if_changed"]


def write_if_changed(path: Path, data: bytes | str) -> bool:
    """Atomically replace ``path`` with ``data`` unless it already holds exactly that."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    try:
        if path.read_bytes() == raw:
            return False
    except OSError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(raw)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; generated files are ordinary files
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True
