"""The ``Setting`` model and its reading: one setting and every way it is spelled (flag, keys,
cache variable) and read (its kind, its validator, its choices), and a file's table read by its
settings (:func:`read_table`). The package's docstring says what is made from it.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any, Generic, Literal, TypeVar

from builder.errors import UsageError, closest_hint
from builder.files.bounds import brief
from builder.settings.text_rules import Refused, checked, refusal

__all__ = ["LIST_KINDS", "Kind", "Setting", "read_table", "split_names"]

T_co = TypeVar("T_co", covariant=True)

Kind = Literal[
    "text", "texts", "names", "globs", "path", "paths", "real_path", "flags", "int", "bool",
    "switch", "table", "count", "size", "growth", "sizes",
]  # fmt: skip
"""How a value is read. text: a string; texts: repeatable strings; names, globs: repeatable,
each comma-separated (``unary,binary``); path (a file), real_path (a folder, links resolved),
paths: absolute paths; flags: compiler flags, each value split as a shell splits words; int: a
whole number from 1; bool: a flag (on or off); switch: ``--x/--no-x``, None when neither is
given; table: a TOML table; count: a whole number from 0; size: a size limit (bytes, or text
with a unit: ``30MB``); growth: a size limit or a percentage (``1%``); sizes: a table of
name = size limit."""
LIST_KINDS = frozenset({"texts", "names", "globs", "paths", "flags"})
_TYPE_WORDS: dict[str, tuple[type | tuple[type, ...], str]] = {
    "text": (str, "text"),
    "path": ((str, PurePath), "a path"),
    "real_path": ((str, PurePath), "a path"),
    "int": (int, "a whole number"),
    "bool": (bool, "true or false"),
    "switch": (bool, "true or false"),
    "table": (dict, "a table"),
    "count": (int, "a whole number"),
}


def split_names(text: str | None) -> list[str] | None:
    """``"unary, binary"`` -> ``["unary", "binary"]``; None when nothing is left (no filter):
    the one rule for every comma-separated selection (``--kernels``, ``--dtypes``, ``--jit``,
    ``--aot``, the lists CMake hands to the generators)."""
    if text is None:
        return None
    names = [n.strip() for n in text.split(",") if n.strip()]
    return names or None


@dataclass(frozen=True)
class Setting(Generic[T_co]):
    """One setting and every way it is spelled and read; ``T_co`` is the type of its value, which
    a document holding it returns (``BuildRequest[setting]``)."""

    name: str
    """The identifier: a request field, the JSON key of plan.json's request."""
    help: str
    kind: Kind = "text"
    default: Any = None
    """The value when none is given (None: unset; a command or a tree's file decides)."""
    flag: str | None = ""
    """The command-line option: ``""`` the name's (``--jit-namespace``), ``"-I/--include-dir"``
    a short form too, ``"--x/--no-x"`` a switch's pair, None none."""
    toml: str | None = None
    """The key of ``metallib.toml``, ``table.key`` (``build.jit-namespace``); None: not one."""
    budget: str | None = None
    """The key of a budget table; None: not one."""
    cmake: str | None = None
    """The CMake cache variable (``METALLIB_*``); None: not one."""
    validate: Callable[[Any], Any] | None = None
    """Run on each value (each item of a list): returns it, or ValueError saying what it must
    be (``builder.settings.validators``)."""
    choices: tuple[str, ...] = ()
    expected: str | None = None
    """What a value must be when it has the wrong type, for a message (None: the kind says)."""
    metavar: str | None = None
    param: str | None = None
    """The command's parameter when it is not :attr:`name` (``variants --jit`` and ``--aot``
    are settings of their own, each a list of variants)."""
    bare: str | None = None
    """The value the flag stands for alone (``--jit``: ``*``, every unit): the flag then takes
    a value only when one follows that is not an option, and the cache variable reads a CMake
    boolean as this (true) or no value (false)."""
    shown_default: str | None = None
    """The default as the docs' table words it (None: from :attr:`default`)."""
    cmake_default: str | None = None
    """The cache variable's default when it is not :attr:`default`'s (a path in the project)."""

    @property
    def option(self) -> str | None:
        """The flag as the command line spells it: ``--jit-namespace`` (None: no flag)."""
        if self.flag is None:
            return None
        return self.flag or "--" + self.name.replace("_", "-")

    @property
    def long_flag(self) -> str | None:
        """The long form alone (``--include-dir``, ``--jit-lookup``), for messages."""
        option = self.option
        return None if option is None else option.split("/")[-1 if option[1] != "-" else 0]

    def read(
        self,
        value: Any,
        where: str,
        *,
        error: type[Exception] = UsageError,
        base: Path | None = None,
    ) -> Any:
        """``value`` from JSON or TOML, checked and normalized: paths absolute (relative ones
        from ``base``, the file's folder; None: the working directory), names split, lists as
        tuples. ``error`` says ``<where> must be <what>, got <value>``."""
        try:
            return self._read(value, base)
        except Refused as exc:
            raise error(refusal(where, exc, exc.value)) from None
        except UsageError as exc:  # a limit's refusal names the value itself
            raise error(f"{where}: {exc.message}") from None
        except (TypeError, ValueError) as exc:
            raise error(refusal(where, exc, value)) from None

    def _read(self, value: Any, base: Path | None) -> Any:
        from builder.settings.validators import growth_limit, size_limit

        kind = self.kind
        if kind in ("size", "growth"):
            return size_limit(value) if kind == "size" else growth_limit(value)
        if kind == "sizes":
            if not isinstance(value, dict):
                raise TypeError("a table of name = size")
            limits = {}
            for name, item in value.items():
                try:
                    limits[str(name)] = size_limit(item)
                except UsageError as exc:
                    raise UsageError(f"{brief(name)}: {exc.message}") from None
            return limits
        if kind in LIST_KINDS:
            item = (str, PurePath) if kind == "paths" else str  # a path read back is a Path
            if not isinstance(value, (list, tuple)) or not all(isinstance(v, item) for v in value):
                raise TypeError("a list of strings")
            items: Iterable[Any] = value
            if kind in ("names", "globs"):
                items = [n for text in value for n in split_names(text.replace(";", ",")) or ()]
            if kind == "paths":
                items = [_absolute(v, base) for v in value]
            return tuple(self._checked(v) for v in items)
        expected, words = _TYPE_WORDS[kind]
        if not _is(value, expected) or (expected is int and isinstance(value, bool)):
            raise TypeError(self.expected or words)
        if kind == "int" and value < 1:
            raise ValueError("a whole number from 1")
        if kind == "path":
            return _absolute(value, base)
        if kind == "real_path":
            return _absolute(value, base).resolve()
        return self._checked(value)

    def _checked(self, value: Any) -> Any:
        """``value`` (one item of a list) through the validators
        (``builder.settings.text_rules.checked``); Refused names the item."""
        return checked(value, self.validate, self.choices)

    def from_cli(self, value: Any) -> Any:
        """A click value as the setting's type (None: not given), checked: UsageError names
        the flag."""
        kind, flag = self.kind, self.long_flag
        if value is None or (value == () and kind != "flags"):
            return None
        if isinstance(value, (bool, int)):
            return self.read(value, str(flag))
        texts = (value,) if isinstance(value, (str, Path)) else tuple(value)
        if kind == "flags":
            if not texts:
                return None
            try:
                value = [word for text in texts for word in shlex.split(str(text))]
            except ValueError as exc:
                raise UsageError(f"{flag}: {exc}") from None
        elif kind in LIST_KINDS:
            value = [str(v) for v in texts]
        elif kind in ("path", "real_path", "text"):
            value = str(value)
        read = self.read(value, str(flag))
        if kind == "globs" and not read:
            raise UsageError(f"{flag} {' '.join(map(str, texts))!r}: names no unit")
        return read

    def field(self, **kwargs: Any) -> Any:
        """The dataclass field of a document holding this setting (the build request's parts):
        its default, the setting in its metadata, and plan.json's reading checked by
        :meth:`read`."""
        from builder.files import dataclass_json  # documents only: a command's start-up skips it

        default = self.default
        if isinstance(default, list):
            default = tuple(default)
        return dataclass_json.field(
            default=default,
            check=lambda value, where: (
                None if value is None else self.read(value, repr(where), error=ValueError)
            ),
            metadata={"setting": self},
            **kwargs,
        )


def _is(value: Any, kind: type | tuple[type, ...]) -> bool:
    """``isinstance`` that leaves ``value`` typed as it was (Any), for the reading above."""
    return isinstance(value, kind)


def _absolute(path: str, base: Path | None) -> Path:
    """``path`` from ``base`` (None: the working directory), ``..`` folded, links kept."""
    return Path(os.path.normpath(base / path) if base is not None else os.path.abspath(path))


def read_table(
    table: Mapping[str, Any],
    keys: Mapping[str, Setting[Any]],
    where: Callable[[str], str],
    unknown: str,
    *,
    error: type[Exception] = UsageError,
    base: Path | None = None,
) -> dict[str, Any]:
    """A file's table (a ``metallib.toml`` table, a budget) read by its settings, ``keys`` (key
    -> setting): each value as its setting's :meth:`Setting.read` reads it, by setting name, so
    that a record of the file is its settings' values (``Budget(**values)``). ``where(key)``
    names a key in a refusal; an unknown key is refused as ``<unknown>'key'`` with the closest
    known one."""
    values = {}
    for key, value in table.items():
        if key not in keys:
            raise error(f"{unknown}{brief(key)}{closest_hint(key, list(keys))}")
        values[keys[key].name] = keys[key].read(value, where(key), error=error, base=base)
    return values
