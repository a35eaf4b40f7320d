"""The optional native fast path of the container code: the ``builder.metallib._native`` extension.

``pip install`` builds it from ``builder/metallib/csrc/`` (cmake/MetallibNative.cmake) into this
package. Without it, or when ``METALLIB_BUILDER_NATIVE=0`` is set, the pure-Python code does the
same work, more slowly; results are identical (tested). The extension only decides the accepted,
well-formed case: for anything else it answers None and the Python code reports the problem with
its byte offset.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import import_module
from types import ModuleType

__all__ = ["ABI", "disabled", "has_native_sha256", "native_module", "status", "version_text"]

ABI = 13
"""The extension's result layout. Stated only here: CMake reads this line (``file(STRINGS)`` in
cmake/MetallibNative.cmake) and compiles it in, and an extension built for another number is not
used. Bump it whenever a native function's arguments or results change."""


def _load() -> tuple[ModuleType | None, str]:
    if os.environ.get("METALLIB_BUILDER_NATIVE", "1") == "0":
        return None, "off (METALLIB_BUILDER_NATIVE=0)"
    try:
        module = import_module("builder.metallib._native")
    except ImportError:
        return None, "not built (pure-Python parser)"
    where = getattr(module, "__file__", None) or module.__name__
    found = getattr(module, "ABI", None)
    if found != ABI:
        return None, f"ignored: {where} has ABI {found}, this package needs {ABI} (reinstall)"
    hashing = (
        "module hashes by OpenSSL"
        if getattr(module, "HAS_SHA256", 0)
        else "module hashes by hashlib"
    )
    deflate = "in C" if getattr(module, "HAS_DEFLATE", 0) else "in Python (built without zlib)"
    return module, f"on, {hashing}, download model {deflate} ({where})"


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


def version_text() -> str:
    """What ``metallib-builder --version`` prints: the tool's version and :func:`status`."""
    from builder import __version__

    return f"metallib-builder, version {__version__}\nnative container reader: {status()}"


@contextmanager
def disabled() -> Iterator[None]:
    """Run the pure-Python paths inside the block, as ``METALLIB_BUILDER_NATIVE=0`` does for a
    whole process: the tests compare both paths in one process. Not thread-safe."""
    global _MODULE
    saved = _MODULE
    _MODULE = None
    try:
        yield
    finally:
        _MODULE = saved
