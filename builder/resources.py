"""Where the bundled kernel sources and CMake modules are.

In a source checkout they sit beside ``builder/``; in an installed wheel they are shipped under
``builder/_data/``. Everything that needs ``metal_src/`` or ``cmake/`` asks here.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["cmake_dir", "metal_src_dir", "project_root"]

_PACKAGE = Path(__file__).resolve().parent


def project_root() -> Path | None:
    """The source checkout's root, or None when running from an installed wheel."""
    root = _PACKAGE.parent
    return root if (root / "metal_src").is_dir() and (root / "CMakeLists.txt").is_file() else None


def _resource(name: str) -> Path:
    root = project_root()
    return root / name if root else _PACKAGE / "_data" / name


def metal_src_dir() -> Path:
    """The bundled kernel library (``metal_src/``)."""
    return _resource("metal_src")


def cmake_dir() -> Path:
    """The bundled CMake modules (``cmake/``)."""
    return _resource("cmake")
