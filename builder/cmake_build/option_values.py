"""What a build option is (:class:`Option`, the metadata of a ``BuildRequest`` field) and how
its values are read: from click (:func:`from_cli`) and from JSON (:func:`from_json`, the one
way a request is read back: plan.json's ``request``, or a plain CMake run's cache as
``metallib_build_request`` words it). Standard library and ``builder`` only (runs in CMake)."""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from builder.errors import UsageError

__all__ = ["Option", "from_cli", "from_json", "meta", "to_json"]


@dataclass(frozen=True)
class Option:
    """What a request field is as an option: how it is spelled and explained on the command
    line and in CMake, and its kind (how a value is read from the CLI and from JSON)."""

    kind: str
    """text, flags, path, real_path, paths, texts, names, globs, int, bool."""
    help: str
    flag: str | None = None
    """The command-line option (None: set another way)."""
    cmake: str | None = None
    """The CMake cache variable (None: not one)."""
    metavar: str | None = None
    choices: tuple[str, ...] = ()
    cmake_default: str | None = None
    """The cache variable's default when it is not the field's (e.g. a path in the project)."""
    shown_default: str | None = None
    """The default as the docs' table words it (None: from the field's default)."""


def meta(kind: str, help: str, **more: Any) -> dict[str, Option]:
    return {"option": Option(kind, help, **more)}


def _names(texts: Any) -> tuple[str, ...]:
    from builder.kernels.catalog import split_names

    return tuple(n for text in texts for n in (split_names(text.replace(";", ",")) or ()))


def _absolute(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.abspath(path))


def from_cli(f: Any, value: Any) -> Any:
    """A click value as the field's type; None: not given."""
    kind = f.metadata["option"].kind
    if value is None or (value == () and kind != "flags"):
        return None
    if kind == "names":
        return _names([value])
    if kind == "globs":
        globs = _names(value)
        if not globs:
            raise UsageError(f"{f.metadata['option'].flag} {' '.join(value)!r}: names no unit")
        return globs
    if kind == "paths":
        return tuple(_absolute(p) for p in value)
    if kind == "path":
        return _absolute(value)
    if kind == "real_path":
        return Path(value).resolve()
    if kind == "texts":
        return tuple(value)
    if kind == "flags":
        if not value:
            return None
        try:
            return tuple(flag for text in value for flag in shlex.split(text))
        except ValueError as exc:
            raise UsageError(f"--metal-flags: {exc}") from None
    return value


def to_json(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, Path):
        return str(value)
    return [str(v) for v in value]


def from_json(f: Any, value: Any) -> Any:
    """A JSON value as the field's type (ValueError naming the field when it is not)."""
    option = f.metadata["option"]
    kind = option.kind
    if value is None:
        return None
    single = {"bool": bool, "int": int, "text": str, "path": str, "real_path": str}
    expected: type[Any] = single.get(kind, list)
    if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
        raise ValueError(f"build option {f.name!r}: {value!r} is not a {kind}")
    if expected is list and not all(isinstance(v, str) for v in value):
        raise ValueError(f"build option {f.name!r}: not a list of strings")
    if kind == "int" and value < 1:
        raise ValueError(f"build option {f.name!r} ({option.cmake}): {value} must be at least 1")
    if kind == "text" and option.choices and value not in option.choices:
        raise ValueError(
            f"build option {f.name!r} ({option.cmake}): {value!r} is not one of "
            f"{', '.join(option.choices)}"
        )
    if kind == "path":
        return _absolute(value)
    if kind == "real_path":
        return Path(value).resolve()
    if kind == "paths":
        return tuple(_absolute(v) for v in value)
    if kind in ("names", "globs"):
        return _names(value)
    return tuple(value) if expected is list else value
