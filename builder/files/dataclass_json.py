r"""Dataclasses to JSON and back: the one codec for every document the tool writes and reads.

A document (a saved report, a build record, a settings file's values) is declared once, as a
dataclass; :func:`dump` writes it and :func:`load` reads it back, checking every field against its
type hint. A JSON file may come from anyone (docs/security.md), so reading never trusts a shape:
a wrong value is a TypeError or ValueError whose text names the dotted field and shows the value
briefly (``'source.target' is 5, not a string``), which the caller turns into one line of error.

Why not hand-written pairs: each document used to have a ``to_dict`` and a ``from_dict`` kept
in step by hand, and a field added to one and not the other was found late. Here the dataclass is
the schema; a field's JSON metadata (:func:`field`) says only what differs from the default:
its key, when it is left out, and a check beyond its type (a byte count, a name rule).

Readers are compiled once per type (a closure per field), so reading 17,000 function rows costs
a dictionary look-up and an ``isinstance`` per value.

JSON text every parser accepts, even when a file name is not UTF-8.

Python reads a file name whose bytes are not UTF-8 with "surrogate escapes": byte 0xE9 becomes
the lone surrogate U+DCE9. ``json.dumps`` writes that as ``"\udce9"``, which strict parsers
(and any UTF-8 encoder) reject. Every JSON document the tool prints goes through :func:`dumps`,
which writes such a byte as the four characters ``\xe9`` instead, as Python's
``backslashreplace`` shows it (docs/report-schema.md, "Names that are not UTF-8"); any other lone
surrogate (from a JSON input) as ``\udXXX`` text. Documents without them are written exactly as
``json.dumps`` writes them, at the same cost.
"""

from __future__ import annotations

import dataclasses
import json
import re
import types
import typing
from collections.abc import Callable
from pathlib import PurePath
from typing import Any, Literal, TypeVar, Union

from builder.files.bounds import brief, byte_count

__all__ = ["clean", "count", "dump", "dumps", "field", "load"]


T = TypeVar("T")

Omit = Literal["never", "none", "empty", "default", "always"]
"""When a field's key is left out of the JSON: never; when it is None; when it is None or an
empty list, tuple, dict or string; when it equals its default; always (a value the model holds
in memory that its document does not carry, such as a generated text written to its own file)."""

_META = "dataclass_json"


@dataclasses.dataclass(frozen=True)
class _Meta:
    key: str | None
    omit: Omit
    check: Callable[[Any, str], Any] | None
    write: Callable[[Any], Any] | None = None


def field(
    *,
    key: str | None = None,
    omit: Omit = "never",
    check: Callable[[Any, str], Any] | None = None,
    write: Callable[[Any], Any] | None = None,
    **kwargs: Any,
) -> Any:
    """A :func:`dataclasses.field` with its JSON metadata: ``key`` (default: the field's name),
    ``omit`` (when the key is left out of the JSON) and ``check(value, where)`` (run on reading,
    after the type check; returns the value to keep, raises TypeError/ValueError to refuse).
    ``write(model)``: what the document holds for this field instead of its value (a model
    that writes a part otherwise than it holds it); such a field is never read back, the
    model's reader makes it again. Other keyword arguments (``default``,
    ``default_factory``, ``repr`` …) go to dataclasses."""
    metadata = dict(kwargs.pop("metadata", None) or {})
    metadata[_META] = _Meta(key, omit, check, write)
    return dataclasses.field(metadata=metadata, **kwargs)


def count(**kwargs: Any) -> Any:
    """A :func:`field` holding a byte count, checked on reading (``byte_count``: an integer from
    0 to ``LARGEST_COUNT``; None where the field's type allows it)."""
    return field(check=_count, **kwargs)


def _count(value: Any, where: str) -> Any:
    return None if value is None else byte_count(value, where)


def _meta(f: dataclasses.Field[Any]) -> _Meta:
    meta = f.metadata.get(_META)
    return meta if isinstance(meta, _Meta) else _Meta(None, "never", None)


# ---------------------------------------------------------------------------------------------
# Writing


def dump(value: Any) -> Any:
    """``value`` as JSON-ready data: a dataclass as an object of its fields in declaration order
    (keys and omissions as their metadata says; a field the model derives, ``init=False``, is
    written in its place and never read back), tuples and lists as lists, dicts with their
    values dumped, anything else as it is."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _dump_fields(value)
    if isinstance(value, (list, tuple)):
        return [dump(item) for item in value]
    if isinstance(value, dict):
        return {key: dump(item) for key, item in value.items()}
    if isinstance(value, PurePath):
        return str(value)
    return value


def _dump_fields(value: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f, meta in _fields(type(value)):
        item = getattr(value, f.name) if meta.write is None else meta.write(value)
        if _omitted(meta.omit, item, f):
            continue
        out[meta.key or f.name] = dump(item)
    return out


def _omitted(omit: Omit, item: Any, f: dataclasses.Field[Any]) -> bool:
    if omit == "never":
        return False
    if omit == "always":
        return True
    if omit == "none":
        return item is None
    if omit == "empty":
        return item is None or (isinstance(item, (list, tuple, dict, str)) and not item)
    if f.default is not dataclasses.MISSING:
        return bool(item == f.default)
    if f.default_factory is not dataclasses.MISSING:
        return bool(item == f.default_factory())
    return False


_FIELDS: dict[type, tuple[tuple[dataclasses.Field[Any], _Meta], ...]] = {}


def _fields(cls: type) -> tuple[tuple[dataclasses.Field[Any], _Meta], ...]:
    """The fields of ``cls`` its document holds: those ``__init__`` takes, and the ones the model
    derives (``init=False``) that have JSON metadata."""
    found = _FIELDS.get(cls)
    if found is None:
        found = tuple(
            (f, _meta(f)) for f in dataclasses.fields(cls) if f.init or _META in f.metadata
        )
        _FIELDS[cls] = found
    return found


# ---------------------------------------------------------------------------------------------
# Reading

Reader = Callable[[Any, str], Any]
_READERS: dict[Any, Reader] = {}


def load(cls: type[T], data: Any, where: str = "") -> T:
    """``data`` (parsed JSON) read into ``cls``, every field checked against its type hint.
    ``where`` names the document's place for messages (``source`` makes ``'source.target'``);
    keys the dataclass does not declare are ignored, so that a newer writer's additions read."""
    result: T = _reader(cls)(data, where)
    return result


def _reader(hint: Any) -> Reader:
    found = _READERS.get(hint)
    if found is None:
        found = _make_reader(hint)
        _READERS[hint] = found
    return found


def _name(where: str) -> str:
    return where or "the document"


def _make_reader(hint: Any) -> Reader:
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return _dataclass_reader(hint)
    if hint is Any or hint is object:
        return lambda value, where: value
    if hint is type(None) or hint is None:
        return _exact(type(None), "null")
    if hint is bool:
        return _exact(bool, "true or false")
    if hint is str:
        return _exact(str, "a string")
    if hint is int:
        return _integer
    if hint is float:
        return _number
    if isinstance(hint, type) and issubclass(hint, PurePath):
        return _path_reader(hint)
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (Union, types.UnionType):
        return _union_reader(args)
    if origin is Literal:
        return _literal_reader(args)
    if origin in (list, tuple) and (origin is list or (len(args) == 2 and args[1] is Ellipsis)):
        return _sequence_reader(_reader(args[0]), origin)
    if origin is tuple:
        return _fixed_tuple_reader(tuple(_reader(a) for a in args))
    if origin is dict and args and args[0] is str:
        return _mapping_reader(_reader(args[1]))
    raise TypeError(f"dataclass_json cannot read {hint!r}")


def _exact(kind: type, words: str) -> Reader:
    def read(value: Any, where: str) -> Any:
        if type(value) is not kind:
            raise TypeError(f"{_name(where)!r} is {brief(value)}, not {words}")
        return value

    return read


def _integer(value: Any, where: str) -> int:
    if type(value) is not int:
        raise TypeError(f"{_name(where)!r} is {brief(value)}, not an integer")
    return value


def _number(value: Any, where: str) -> float:
    if type(value) is float:
        return value
    if type(value) is int:
        return float(value)
    raise TypeError(f"{_name(where)!r} is {brief(value)}, not a number")


def _path_reader(kind: type) -> Reader:
    """A path is written as its text (``dump``) and read back as ``kind``."""

    def read(value: Any, where: str) -> Any:
        if type(value) is not str:
            raise TypeError(f"{_name(where)!r} is {brief(value)}, not a path")
        return kind(value)

    return read


def _union_reader(args: tuple[Any, ...]) -> Reader:
    optional = type(None) in args
    rest = [a for a in args if a is not type(None)]
    if len(rest) != 1:
        raise TypeError(f"dataclass_json reads only X | None unions, not {args!r}")
    inner = _reader(rest[0])

    def read(value: Any, where: str) -> Any:
        if value is None and optional:
            return None
        return inner(value, where)

    return read


def _literal_reader(choices: tuple[Any, ...]) -> Reader:
    allowed = frozenset(choices)
    words = ", ".join(repr(c) for c in choices)

    def read(value: Any, where: str) -> Any:
        if not isinstance(value, (str, int)) or isinstance(value, bool) or value not in allowed:
            raise ValueError(f"{_name(where)!r} is {brief(value)}, not one of {words}")
        return value

    return read


def _sequence_reader(item: Reader, kind: type) -> Reader:
    def read(value: Any, where: str) -> Any:
        if type(value) is not list:
            raise TypeError(f"{_name(where)!r} is {brief(value)}, not a list")
        items = [item(v, f"{where}[{i}]") for i, v in enumerate(value)]
        return items if kind is list else tuple(items)

    return read


def _fixed_tuple_reader(items: tuple[Reader, ...]) -> Reader:
    def read(value: Any, where: str) -> Any:
        if type(value) is not list or len(value) != len(items):
            raise TypeError(f"{_name(where)!r} is {brief(value)}, not a list of {len(items)}")
        return tuple(r(v, f"{where}[{i}]") for i, (r, v) in enumerate(zip(items, value)))

    return read


def _mapping_reader(item: Reader) -> Reader:
    def read(value: Any, where: str) -> Any:
        if type(value) is not dict:
            raise TypeError(f"{_name(where)!r} is {brief(value)}, not an object")
        return {k: item(v, f"{where}.{k}" if where else k) for k, v in value.items()}

    return read


def _dataclass_reader(cls: type) -> Reader:
    hints = typing.get_type_hints(cls)
    plan: list[tuple[str | None, str, Reader, Callable[[Any, str], Any] | None, bool]] = []
    for f, meta in _fields(cls):
        if meta.omit == "always" or meta.write is not None:  # the model makes these itself
            continue
        required = f.init and f.default is dataclasses.MISSING
        required = required and f.default_factory is dataclasses.MISSING
        # a derived field is checked when present, then left to the model to recompute
        name = f.name if f.init else None
        plan.append((name, meta.key or f.name, _late(hints[f.name]), meta.check, required))

    def read(value: Any, where: str) -> Any:
        if type(value) is not dict:
            raise TypeError(f"{_name(where)!r} is {brief(value)}, not an object")
        kwargs: dict[str, Any] = {}
        for name, key, reader, check, required in plan:
            inner = f"{where}.{key}" if where else key
            if key not in value:
                if required:
                    raise ValueError(f"{inner!r} is missing")
                continue
            item = reader(value[key], inner)
            item = check(item, inner) if check is not None else item
            if name is not None:
                kwargs[name] = item
        return cls(**kwargs)

    return read


def _late(hint: Any) -> Reader:
    """A reader made on first use, so that a dataclass may hold itself (a rollup's children)."""
    made: list[Reader] = []

    def read(value: Any, where: str) -> Any:
        if not made:
            made.append(_reader(hint))
        return made[0](value, where)

    return read


_SURROGATE = re.compile("[\ud800-\udfff]")
# In ensure_ascii output a surrogate is an escape; any \ud8xx-\udfxx escape sends the document
# through clean() (a real non-BMP character costs only that detour).
_ESCAPED_SURROGATE = re.compile(r"\\ud[89a-f]", re.IGNORECASE)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def clean(value: Any) -> Any:
    """``value`` (JSON data: dicts, lists, strings, numbers) with every string's lone surrogates
    written as escape text; strings without them are returned as they are."""
    if isinstance(value, str):
        return _SURROGATE.sub(_escape, value) if _SURROGATE.search(value) else value
    if isinstance(value, dict):
        return {clean(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    return value


def dumps(value: Any, **options: Any) -> str:
    """``json.dumps(value, **options)``, with file names that are not UTF-8 made valid
    (:func:`clean`)."""
    text = json.dumps(value, **options)
    if _ESCAPED_SURROGATE.search(text) is None and _SURROGATE.search(text) is None:
        return text
    return json.dumps(clean(value), **options)
