"""The host JIT library from Python, through its C API (ctypes: no build step, no compiler).

Test support, not part of the package: the tests ask the built library itself, so what they see
is exactly what an app gets from ``metal_jit::source_for``: the same bytes, assembled (and
inflated) by the same code.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

__all__ = ["JitLibrary", "JitLibraryError"]


class JitLibraryError(RuntimeError):
    """The library cannot be loaded, lacks the C API, or failed to inflate a source."""


class JitLibrary:
    """A loaded host JIT library: embedded host names, families and run-time sources."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            lib = ctypes.CDLL(str(self.path))
        except OSError as exc:
            raise JitLibraryError(f"{self.path}: cannot load: {exc}") from None
        try:
            self._setup(lib)
        except AttributeError as exc:
            raise JitLibraryError(f"{self.path}: not a metal_jit library ({exc})") from None
        self._lib = lib

    @staticmethod
    def _setup(lib: ctypes.CDLL) -> None:
        size_t, char_p = ctypes.c_size_t, ctypes.c_char_p
        lib.mbjit_count.restype = size_t
        lib.mbjit_count.argtypes = []
        lib.mbjit_name.restype = char_p
        lib.mbjit_name.argtypes = [size_t]
        lib.mbjit_family.restype = char_p
        lib.mbjit_family.argtypes = [char_p]
        lib.mbjit_source.restype = ctypes.c_int
        lib.mbjit_source.argtypes = [
            char_p,
            ctypes.POINTER(ctypes.c_void_p),
            ctypes.POINTER(size_t),
        ]
        lib.mbjit_free.restype = None
        lib.mbjit_free.argtypes = [ctypes.c_void_p]
        lib.mbjit_family_count.restype = size_t
        lib.mbjit_family_count.argtypes = []
        lib.mbjit_family_name.restype = char_p
        lib.mbjit_family_name.argtypes = [size_t]
        lib.mbjit_preamble.restype = ctypes.c_int
        lib.mbjit_preamble.argtypes = [
            char_p,
            ctypes.POINTER(ctypes.c_void_p),
            ctypes.POINTER(size_t),
        ]
        lib.mbjit_compressed.restype = ctypes.c_int
        lib.mbjit_compressed.argtypes = []

    def names(self) -> list[str]:
        """Every embedded host name, family by family in catalog order."""
        lib = self._lib
        return [lib.mbjit_name(i).decode() for i in range(lib.mbjit_count())]

    def families(self) -> list[str]:
        lib = self._lib
        return [lib.mbjit_family_name(i).decode() for i in range(lib.mbjit_family_count())]

    @property
    def compressed(self) -> bool:
        return bool(self._lib.mbjit_compressed())

    def family(self, host_name: str) -> str | None:
        """The family embedding ``host_name``, or None."""
        found = self._lib.mbjit_family(host_name.encode())
        return found.decode() if found is not None else None

    def source(self, host_name: str) -> str:
        """The complete run-time source for ``host_name``; KeyError if it is not embedded."""
        out, size = ctypes.c_void_p(), ctypes.c_size_t()
        status = self._lib.mbjit_source(host_name.encode(), ctypes.byref(out), ctypes.byref(size))
        if status == 1:
            raise KeyError(host_name)
        if status != 0 or out.value is None:
            raise JitLibraryError(f"{self.path}: {host_name}: embedded source failed to inflate")
        try:
            return ctypes.string_at(out.value, size.value).decode("utf-8")
        finally:
            self._lib.mbjit_free(out)

    def preamble(self, family: str) -> str:
        """A family's preamble; KeyError for a family the library does not embed."""
        out, size = ctypes.c_void_p(), ctypes.c_size_t()
        status = self._lib.mbjit_preamble(family.encode(), ctypes.byref(out), ctypes.byref(size))
        if status == 1:
            raise KeyError(family)
        if status != 0 or out.value is None:
            raise JitLibraryError(f"{self.path}: {family}: embedded preamble failed to inflate")
        return ctypes.string_at(out.value, size.value).decode("utf-8")
