"""What a build option is (:class:`Option`, the metadata of a ``BuildRequest`` field) and how
its values are read: from click (:func:`from_cli`) and from JSON (:func:`from_json`, the one
way a request is read back: plan.json's ``request``, or a plain CMake run's cache as
``metallib_build_request`` words it). Standard library and ``builder`` only (runs in CMake)."""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable
from dataclasses import Field, dataclass
from pathlib import Path

from builder.errors import UsageError

__all__ = ["Option", "from_cli", "from_json", "meta", "option_of", "to_json"]


@dataclass(frozen=True)
class Option:
    """What a request field is as an option: how it is spelled and explained on the command
    line and in CMake, and its kind (how a value is read from the CLI and from JSON)."""

    kind: str
    """text, flags, path, real_path, paths, texts, names, globs, int, bool, switch (a bool
    that may be unset: ``--x/--no-x``, None when neither is given)."""
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


def meta(
    kind: str,
    help: str,
    *,
    flag: str | None = None,
    cmake: str | None = None,
    metavar: str | None = None,
    choices: tuple[str, ...] = (),
    cmake_default: str | None = None,
    shown_default: str | None = None,
) -> dict[str, Option]:
    """A request field's metadata: its :class:`Option`."""
    option = Option(kind, help, flag, cmake, metavar, choices, cmake_default, shown_default)
    return {"option": option}


def option_of(f: Field[object]) -> Option:
    """The :class:`Option` a request field declares."""
    option = f.metadata["option"]
    if not isinstance(option, Option):
        raise TypeError(f"field {f.name} declares no build option")
    return option


def _texts(value: object) -> tuple[str, ...]:
    """A text, or a list of texts, as texts (TypeError for anything else)."""
    items = (value,) if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(v, str) for v in items):
        raise TypeError(f"{value!r} is not text")
    return tuple(items)


def _paths(value: object, *, real: bool = False) -> tuple[Path, ...]:
    """A path, or a list of paths or texts, as absolute paths (``real``: symbolic links
    resolved); TypeError for anything else."""
    items = (value,) if isinstance(value, (str, Path)) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(v, (str, Path)) for v in items):
        raise TypeError(f"{value!r} is not a path")
    return tuple(Path(v).resolve() if real else Path(os.path.abspath(v)) for v in items)


def _names(texts: Iterable[str]) -> tuple[str, ...]:
    from builder.kernels.catalog import split_names

    return tuple(n for text in texts for n in (split_names(text.replace(";", ",")) or ()))


def from_cli(f: Field[object], value: object) -> object:
    """A click value as the field's type; None: not given."""
    option = option_of(f)
    kind = option.kind
    if value is None or (value == () and kind != "flags"):
        return None
    if kind in ("names", "globs"):
        names = _names(_texts(value))
        if kind == "globs" and not names:
            raise UsageError(f"{option.flag} {' '.join(_texts(value))!r}: names no unit")
        return names
    if kind in ("paths", "path"):
        paths = _paths(value)
        return paths if kind == "paths" else paths[0]
    if kind == "real_path":
        return _paths(value, real=True)[0]
    if kind == "texts":
        return _texts(value)
    if kind == "flags":
        if not value:
            return None
        try:
            return tuple(flag for text in _texts(value) for flag in shlex.split(text))
        except ValueError as exc:
            raise UsageError(f"--metal-flags: {exc}") from None
    return value


def to_json(value: object) -> object:
    """A field's value as plan.json holds it (paths as text, tuples as lists)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, Path):
        return str(value)
    if not isinstance(value, tuple):
        raise TypeError(f"{value!r} is not a build option's value")
    return [str(v) for v in value]


def from_json(f: Field[object], value: object) -> object:
    """A JSON value as the field's type (ValueError naming the field when it is not)."""
    option = option_of(f)
    kind = option.kind
    if value is None:
        return None
    single: dict[str, type] = {"bool": bool, "switch": bool, "int": int, "text": str}
    single |= {"path": str, "real_path": str}
    expected = single.get(kind, list)
    if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
        raise ValueError(f"build option {f.name!r}: {value!r} is not a {kind}")
    if isinstance(value, list) and not all(isinstance(v, str) for v in value):
        raise ValueError(f"build option {f.name!r}: not a list of strings")
    if isinstance(value, int) and kind == "int" and value < 1:
        raise ValueError(f"build option {f.name!r} ({option.cmake}): {value} must be at least 1")
    if kind == "text" and option.choices and value not in option.choices:
        raise ValueError(
            f"build option {f.name!r} ({option.cmake}): {value!r} is not one of "
            f"{', '.join(option.choices)}"
        )
    if kind in ("path", "paths"):
        paths = _paths(value)
        return paths if kind == "paths" else paths[0]
    if kind == "real_path":
        return _paths(value, real=True)[0]
    if kind in ("names", "globs"):
        return _names(_texts(value))
    return _texts(value) if expected is list else value
