"""The metallib (MTLB) container format: read, verify, write, subset.

This package knows nothing of the command line. Layout notes: ``docs/metallib-format.md``.
"""

from __future__ import annotations

from importlib import import_module

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up: --version)

from builder.errors import InternalError as InternalError
from builder.errors import MetallibError as MetallibError
from builder.errors import MetallibFormatError as MetallibFormatError
from builder.errors import MetallibUnsupportedError as MetallibUnsupportedError

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
    "LibraryParts": "parts",
    "parts_from_library": "parts",
    "Problem": "verify",
    "VerifyReport": "verify",
    "verify": "verify",
    "atomic_output": "writer",
    "layout": "writer",
    "library_bytes": "writer",
    "write_library": "writer",
}

if TYPE_CHECKING:  # the names of _LAZY, re-exported for type checkers
    from typing import Any

    from builder.metallib.parts import LibraryParts as LibraryParts
    from builder.metallib.parts import parts_from_library as parts_from_library
    from builder.metallib.reader import Metallib as Metallib
    from builder.metallib.reader import open_metallib as open_metallib
    from builder.metallib.structs import FUNCTION_TYPES as FUNCTION_TYPES
    from builder.metallib.structs import ExtensionTag as ExtensionTag
    from builder.metallib.structs import Header as Header
    from builder.metallib.structs import Region as Region
    from builder.metallib.structs import Span as Span
    from builder.metallib.table import FunctionEntry as FunctionEntry
    from builder.metallib.table import FunctionTable as FunctionTable
    from builder.metallib.table import Piece as Piece
    from builder.metallib.verify import Problem as Problem
    from builder.metallib.verify import VerifyReport as VerifyReport
    from builder.metallib.verify import verify as verify
    from builder.metallib.writer import atomic_output as atomic_output
    from builder.metallib.writer import layout as layout
    from builder.metallib.writer import library_bytes as library_bytes
    from builder.metallib.writer import write_library as write_library


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'builder.metallib' has no attribute {name!r}")
    value = getattr(import_module(f"builder.metallib.{module}"), name)
    globals()[name] = value
    return value
