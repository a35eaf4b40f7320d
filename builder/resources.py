"""Where the bundled kernel sources and CMake modules are.

In a source checkout they sit beside ``builder/``; in an installed wheel they are shipped under
``builder/_data/``. A checkout that holds the working directory wins over both: after
``pip install .`` a maintainer edits ``metal_src/`` or ``cmake/`` in the checkout and runs the tool
from there, and the edits must count. Everything that needs ``metal_src/`` or ``cmake/`` asks here.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["cmake_dir", "metal_src_dir", "own_cmake_dir", "project_root"]

_PACKAGE = Path(__file__).resolve().parent
_PROJECT_NAME = 'name = "metallib-builder"'


def _is_checkout(root: Path) -> bool:
    """``root`` is a source checkout of this project (not just any CMake project)."""
    if not (
        (root / "metal_src" / "catalog.json").is_file() and (root / "CMakeLists.txt").is_file()
    ):
        return False
    project = root / "pyproject.toml"
    # The working directory may be a pull request's tree: its pyproject.toml is read only when
    # it is a regular file (a FIFO would hang), and only its first MiB (the name is near the top).
    # builder.files.reading cannot be used here: this module sits below every layer.
    if not project.is_file():
        return False
    try:
        with open(project, "rb") as handle:
            return _PROJECT_NAME.encode() in handle.read(1 << 20)
    except OSError:
        return False


def project_root() -> Path | None:
    """The source checkout to take ``metal_src/`` and ``cmake/`` from: the one holding the working
    directory, else the one this package runs from, else None (an installed wheel's copy)."""
    try:
        here = Path.cwd()
    except OSError:  # the working directory was deleted
        here = None
    if here is not None:
        for folder in (here, *here.parents):
            if _is_checkout(folder):
                return folder
    root = _PACKAGE.parent
    return root if _is_checkout(root) else None


def _resource(name: str) -> Path:
    root = project_root()
    return root / name if root else _PACKAGE / "_data" / name


def metal_src_dir() -> Path:
    """The bundled kernel library (``metal_src/``)."""
    return _resource("metal_src")


def cmake_dir() -> Path:
    """The bundled CMake modules (``cmake/``)."""
    return _resource("cmake")


def own_cmake_dir() -> Path:
    """The CMake modules of the running package itself, whatever the working directory: its own
    checkout's ``cmake/`` (an editable install) or the wheel's copy. ``vendor`` writes these beside
    the package's Python modules, so the two halves of a vendored copy are one version."""
    root = _PACKAGE.parent
    return root / "cmake" if _is_checkout(root) else _PACKAGE / "_data" / "cmake"
