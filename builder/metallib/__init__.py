"""The metallib (MTLB) container format: read, verify, write, subset.

This package knows nothing of the command line. Layout notes: ``docs/metallib-format.md``.
"""

from __future__ import annotations

from importlib import import_module

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up: --version)

from builder.errors import (
    InternalError,
    MetallibError,
    MetallibFormatError,
    MetallibUnsupportedError,
)

# Every module but the errors is imported on first use: opening and listing a library (the hot
# path of list/report) does not pay for hashlib, tempfile and friends, and the command line's
# start-up (``--version`` asks builder.metallib.native) not for the reader.
_LAZY = {
    "Metallib": "reader",
    "open_metallib": "reader",
    "Span": "structs",
    "FUNCTION_TYPES": "structs",
    "ExtensionTag": "structs",
    "Header": "structs",
    "Region": "structs",
    "FunctionEntry": "table",
    "FunctionTable": "table",
    "Piece": "table",
    "FunctionParts": "parts",
    "LibraryParts": "parts",
    "new_function": "parts",
    "new_library": "parts",
    "wrap_bitcode": "parts",
    "parts_from_library": "parts",
    "Problem": "verify",
    "VerifyReport": "verify",
    "verify": "verify",
    "atomic_output": "writer",
    "layout": "writer",
    "library_bytes": "writer",
    "write_library": "writer",
}

if TYPE_CHECKING:
    from typing import Any

    from builder.metallib.parts import (
        FunctionParts,
        LibraryParts,
        new_function,
        new_library,
        parts_from_library,
        wrap_bitcode,
    )
    from builder.metallib.reader import Metallib, open_metallib
    from builder.metallib.structs import FUNCTION_TYPES, ExtensionTag, Header, Region, Span
    from builder.metallib.table import FunctionEntry, FunctionTable, Piece
    from builder.metallib.verify import Problem, VerifyReport, verify
    from builder.metallib.writer import atomic_output, layout, library_bytes, write_library


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'builder.metallib' has no attribute {name!r}")
    value = getattr(import_module(f"builder.metallib.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "FUNCTION_TYPES",
    "ExtensionTag",
    "FunctionEntry",
    "FunctionParts",
    "FunctionTable",
    "Header",
    "InternalError",
    "LibraryParts",
    "Metallib",
    "MetallibError",
    "MetallibFormatError",
    "MetallibUnsupportedError",
    "Piece",
    "Problem",
    "Region",
    "Span",
    "VerifyReport",
    "atomic_output",
    "layout",
    "library_bytes",
    "new_function",
    "new_library",
    "open_metallib",
    "parts_from_library",
    "verify",
    "wrap_bitcode",
    "write_library",
]
