"""The optional native fast path of the reader (the ``_metallib_native`` C extension).

``pip install`` builds the extension from ``builder/metallib/_native/`` and installs it as a
top-level module, so it is found both by the installed package and by a source checkout run
against that installation (the test suite). Without it, or when ``METALLIB_BUILDER_NATIVE=0`` is
set, the pure-Python parser does the same work, more slowly; results are identical (tested).
The extension only decides the accepted, well-formed case: for anything else it answers None and
the Python parser reports the problem with its byte offset.
"""

from __future__ import annotations

import os
from types import ModuleType

__all__ = ["ABI", "has_native_sha256", "native_module", "status"]

ABI = 7
"""Result layout this package expects; an extension built from another version is not used."""


def _load() -> tuple[ModuleType | None, str]:
    if os.environ.get("METALLIB_BUILDER_NATIVE", "1") == "0":
        return None, "off (METALLIB_BUILDER_NATIVE=0)"
    try:
        import _metallib_native as module  # type: ignore[import-not-found]
    except ImportError:
        return None, "not built (pure-Python parser)"
    found = getattr(module, "ABI", None)
    if found != ABI:
        return None, f"ignored: {module.__file__} has ABI {found}, this package needs {ABI} (reinstall)"
    hashing = "module hashes by OpenSSL" if getattr(module, "HAS_SHA256", 0) else "module hashes by hashlib"
    return module, f"on, {hashing} ({module.__file__})"


_MODULE, _STATUS = _load()


def native_module() -> ModuleType | None:
    """The extension module, or None when the pure-Python path is in use."""
    return _MODULE


def has_native_sha256() -> bool:
    """Whether the extension was built with OpenSSL and hashes modules itself."""
    return _MODULE is not None and bool(getattr(_MODULE, "HAS_SHA256", False))


def status() -> str:
    """One line saying whether the native parser is used, and why not."""
    return _STATUS
