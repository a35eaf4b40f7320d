"""The metallib (MTLB) container format: read, verify, write, subset.

This package knows nothing of the command line. Layout notes: ``docs/metallib-format.md``.
"""

from __future__ import annotations

from builder.metallib.errors import MetallibError, MetallibFormatError, MetallibUnsupportedError
from builder.metallib.model import FUNCTION_TYPES, ExtensionTag, FunctionEntry, Header, Region
from builder.metallib.parts import (
    FunctionParts,
    LibraryParts,
    new_function,
    new_library,
    parts_from_library,
    wrap_bitcode,
)
from builder.metallib.reader import Metallib, open_metallib
from builder.metallib.structs import Span
from builder.metallib.verify import Problem, VerifyReport, verify
from builder.metallib.writer import atomic_output, layout, library_bytes, write_library

__all__ = [
    "FUNCTION_TYPES",
    "ExtensionTag",
    "FunctionEntry",
    "FunctionParts",
    "Header",
    "LibraryParts",
    "Metallib",
    "MetallibError",
    "MetallibFormatError",
    "MetallibUnsupportedError",
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
