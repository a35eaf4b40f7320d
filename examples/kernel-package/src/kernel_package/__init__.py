"""kernel-package: Metal kernels (activations, axpy, row reductions) shipped the way the wheel
was built (``_built.py``, written by CMakeLists.txt):

* ``MODE == "jit"``: each entry file's run-time source, from the host library, for
  ``MTLDevice.newLibraryWithSource``; :func:`source`.
* ``MODE == "aot"``: one metallib compiled ahead of time, for ``newLibraryWithURL``;
  :func:`metallib_path`.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from kernel_package import _built

__all__ = ["ENTRY_FILES", "MODE", "metallib_path", "source"]

MODE: str = _built.MODE
ENTRY_FILES: tuple[str, ...] = _built.ENTRY_FILES
_HERE = Path(__file__).resolve().parent


@lru_cache(maxsize=1)
def _lookup() -> Callable[[bytes], bytes | None]:
    """``kpkg_source`` of the host library, loaded once."""
    library = ctypes.CDLL(str(_HERE / _built.HOST_LIBRARY))
    lookup = library.kpkg_source
    lookup.argtypes = [ctypes.c_char_p]
    lookup.restype = ctypes.c_char_p
    found: Callable[[bytes], bytes | None] = lookup
    return found


def source(entry: str) -> str:
    """The Metal source of entry file ``entry`` (``"axpy.metal"``) with its headers inlined,
    ready to compile at run time. KeyError for a name the package does not ship."""
    if MODE != "jit":
        raise LookupError("this wheel ships a metallib (MODE 'aot'): use metallib_path()")
    text = _lookup()(entry.encode("utf-8"))
    if text is None:
        raise KeyError(f"{entry!r} is not an entry file of kernel-package ({ENTRY_FILES})")
    return text.decode("utf-8")


def metallib_path() -> Path:
    """The metallib the wheel ships (``MODE == "aot"``)."""
    if MODE != "aot":
        raise LookupError("this wheel ships run-time sources (MODE 'jit'): use source()")
    return _HERE / str(_built.METALLIB)
