"""Which functions the Metal compiler would emit, read from preprocessed Metal source.

Input is the output of ``preprocess`` (comments gone, macros expanded, ``#if`` settled). A
library function comes from

- an explicit instantiation ``template [[host_name("a" "b")]] ... f<args>...;``, named by its
  host name (adjacent string literals joined, escapes decoded, as C++ does), including MLX's
  ``decltype(f<args>) f<args>;`` form; ``extern template`` declarations emit nothing;
- an explicit specialization ``template <> [[host_name("x")]] ... { }``, named by its host name;
- a non-template definition (with a body) marked as a shader function, by the ``[[kernel]]``
  attribute (also in a list: ``[[kernel, max_total_threads_per_threadgroup(1024)]]``), the Metal
  qualifier ``kernel void f(...)``, or the other stages (``vertex``, ``fragment``; attributes
  ``[[visible]]``, ``[[stitchable]]``, ``[[mesh]]``, ``[[object]]``, ``[[intersection(...)]]``),
  named by its host name if it has one, else by its own name.

Template definitions and prototypes emit nothing. MLX's one-line instantiation form, which makes
up almost all of a large tree, is matched by one regular expression (``_FAST``); everything else
goes through the general parser, which gives the same answer for that form (the tests run both).

:func:`scan_text` also says where things are written, as offsets into ``text`` (discovery maps
them to files through the preprocessor's line markers, ``builder.kernels.definitions``): each
non-template kernel's definition, and every **kernel template** defined (a template with a body
marked as a shader function, ``template <...> [[kernel]] void f(...) {...}``), which is what an
instantiation's code comes from.
"""

from __future__ import annotations

import functools
import re
from typing import NamedTuple

from builder.kernels.cxx_text import (
    CHAR,
    LIT,
    STRING,
    WORD,
    declarator,
    decode_literals,
    join_literals,
    matching,
    normalize_arg,
    split_top,
)

__all__ = ["KernelRecord", "Scan", "ScanError", "scan_kernels", "scan_text"]


class ScanError(ValueError):
    """The source asks for something the compiler would refuse (e.g. a non-literal host name)."""


class KernelRecord(NamedTuple):
    """One kernel of a tree: its library name, entry file, template function and arguments.

    Defined here, where records are made (one per emitted function, tens of thousands for a
    large tree), and exported by ``builder.kernels.discovery``.
    """

    name: str
    source: str  # entry file relative to the tree root, "/" separators
    template: str | None
    args: tuple[str, ...]


class Scan(NamedTuple):
    """What one preprocessed file emits, and where its kernels' code is written in the text."""

    kernels: list[KernelRecord]
    functions: dict[str, int]
    """Non-template kernel (by record name) -> offset of its definition."""
    templates: list[tuple[str, int]]
    """Kernel templates defined: (template name, offset of the definition), in text order."""


_Found = tuple[str, "str | None", tuple[str, ...]]  # (name, template, args) of one declaration


class _TemplateDefinition(NamedTuple):
    name: str


# Patterns are unrolled loops, as in builder.kernels.cxx_text.
# MLX's instantiate_kernel expansion in one piece; the literal "template" prefix keeps the search
# fast. Arguments without parentheses or brackets, nested <> one level deep (And<bool>); anything
# else takes the general path.
_ARG_CHARS = r"[^<>()\"'\[\];{}]*"
_PLAIN = rf"{_ARG_CHARS}(?:<{_ARG_CHARS}>{_ARG_CHARS})*"
_FAST = re.compile(
    rf"template\s*\[\[\s*host_name\s*\(\s*(?P<names>(?:{LIT}\s*)+)\)\s*\]\]\s*"
    r"\[\[\s*kernel\s*\]\]\s*decltype\s*\(\s*(?P<func>[A-Za-z_]\w*)\s*"
    rf"<(?P<args>{_PLAIN})>\s*\)\s*(?P=func)\s*<(?P=args)>\s*;"
)
_ANCHOR = re.compile(
    r"host_name|kernel|vertex|fragment|\[\[\s*(?:visible|stitchable|mesh|object|intersection)\b"
)
_ATTR = re.compile(rf"\[\[([^\]\"']*(?:(?:{STRING}|{CHAR}|\](?!\]))[^\]\"']*)*)\]\]")
_HEAD = re.compile(rf"[^;{{}}\"']*(?:(?:{STRING}|{CHAR})[^;{{}}\"']*)*")
_QUOTED = re.compile(STRING + "|" + CHAR + "|[\"']")
_ATTR_WORDS = re.compile(
    r"host_name|kernel|vertex|fragment|visible|stitchable|mesh|object|intersection"
)
_FAST_ARG = re.compile(r"[^,<]*(?:<[^<>]*>[^,<]*)*")
_PP_LINE = re.compile(r"^[ \t]*#[^\n]*", re.MULTILINE)
_TEMPLATE = re.compile(r"(extern\s+)?template\b\s*")
_STAGE_WORD = re.compile(r"\b(?:kernel|vertex|fragment)\b")
_ATTR_NAME = re.compile(r"\s*(?:metal\s*::\s*)?([A-Za-z_]\w*)")
STAGE_ATTRIBUTES = frozenset(
    {"kernel", "vertex", "fragment", "visible", "stitchable", "mesh", "object", "intersection"}
)


@functools.lru_cache(maxsize=4096)
def _split_args(text: str) -> tuple[str, ...]:
    """Template arguments of a fast match (no parentheses, <> one level deep); cached, as the
    same lists recur thousands of times."""
    parts = _FAST_ARG.findall(text) if "<" in text else text.split(",")
    return tuple(normalize_arg(a) for a in parts if a.strip())


def _attributes(groups: list[str]) -> tuple[str | None, bool]:
    """(host name, has a stage attribute) from the bodies of ``[[...]]`` groups."""
    host_name, stage = None, False
    for body in groups:
        if not _ATTR_WORDS.search(body):
            continue  # [[buffer(0)]], [[thread_position_in_grid]]: parameter attributes
        for item in split_top(body) if "," in body else (body,):
            match = _ATTR_NAME.match(item)
            if match is None:
                continue
            word = match.group(1)
            if word in STAGE_ATTRIBUTES:
                stage = True
            elif word == "host_name":
                rest = item[match.end() :].strip()
                inner = rest[1:-1] if rest.startswith("(") and rest.endswith(")") else ""
                joined = join_literals(inner)
                if joined is None:
                    raise ScanError(
                        "[[host_name(...)]] must hold string literals, got: "
                        f"{' '.join(rest.split())}"
                    )
                host_name = joined
    return host_name, stage


def _declaration(decl: str, has_body: bool) -> _Found | _TemplateDefinition | None:
    """What one declaration (from its start up to ``;`` or ``{``) emits, if anything; a kernel
    template's definition is returned as such (it emits nothing itself)."""
    if "#" in decl:
        decl = _PP_LINE.sub(" ", decl)
    groups, pieces, last = [], [], 0
    for attr in _ATTR.finditer(decl):  # attribute bodies, and the text without them
        groups.append(attr.group(1))
        pieces.append(decl[last : attr.start()])
        last = attr.end()
    pieces.append(decl[last:])
    host_name, stage_attr = _attributes(groups)
    plain = " ".join(pieces).strip()
    kind = "plain"
    match = _TEMPLATE.match(plain)
    if match:
        rest = plain[match.end() :]
        if rest.startswith("<"):
            close = matching(rest, 0, "<>")
            if match.group(1) or close < 0:
                return None  # extern, or unbalanced
            if rest[1:close].strip():  # a template definition: nothing of its own
                if not has_body:
                    return None
                head = rest[close + 1 :]
                defined = declarator(head)
                if defined is None:
                    return None
                # the qualifier comes before the name (not a parameter type named "kernel")
                if stage_attr or _STAGE_WORD.search(head, 0, max(0, head.find(defined[0]))):
                    return _TemplateDefinition(defined[0])
                return None
            kind, plain = "specialization", rest[close + 1 :]
        elif match.group(1):
            return None  # extern template: declared here, instantiated elsewhere
        else:
            kind, plain = "instantiation", rest
    found = declarator(plain)
    if found is None:
        return None
    name, args = found
    if kind == "instantiation":
        return (host_name, name, args) if host_name else None
    if kind == "specialization":
        return (host_name, name, args) if host_name and has_body else None
    if not has_body or not (stage_attr or _STAGE_WORD.search(plain)):
        return None
    return (host_name or name, None, ())


def _in_literal(text: str, safe: int, pos: int) -> bool:
    """Whether ``pos`` lies inside a string or character literal, scanning from ``safe`` (a
    position known to be outside one) or the start of its line."""
    start = max(safe, text.rfind("\n", 0, pos) + 1)
    if text.find('"', start, pos) < 0 and text.find("'", start, pos) < 0:
        return False
    for match in _QUOTED.finditer(text, start, pos + 1):
        if match.start() < pos < match.end() - 1 or len(match.group()) == 1:
            return True
    return False


def _fast_ok(text: str, start: int) -> bool:
    """The fast match at ``start`` begins a declaration (not ``extern template``, no pragma)."""
    i = start - 1
    while i >= 0 and text[i] in " \t\r\n":
        i -= 1
    return i < 0 or text[i] in ";{}"


def _scan_gap(text: str, start: int, end: int, source: str, out: Scan) -> int:
    """General parse of ``text[start:end]``; returns where scanning may resume."""
    pos = start
    while True:
        match = _ANCHOR.search(text, pos, end)
        if match is None:
            return pos
        at, after = match.start(), match.end()
        word = text[at] != "["
        if word and (
            (at > 0 and text[at - 1] in WORD) or (after < len(text) and text[after] in WORD)
        ):
            pos = after  # part of a longer identifier (kernel_size, my_kernel)
            continue
        if _in_literal(text, start, at):
            pos = after
            continue
        lo = start
        begin = max(text.rfind(";", lo, at), text.rfind("{", lo, at), text.rfind("}", lo, at)) + 1
        head = _HEAD.match(text, at)
        stop = head.end() if head else after
        if stop >= len(text) or text[stop] not in ";{":
            pos = stop + 1  # unbalanced text: nothing a compiler would accept
            continue
        found = _declaration(text[max(begin, lo) : stop], text[stop] == "{")
        if isinstance(found, _TemplateDefinition):
            out.templates.append((found.name, at))
        elif found is not None:
            out.kernels.append(KernelRecord(found[0], source, found[1], found[2]))
            if found[1] is None:
                out.functions.setdefault(found[0], at)
        pos = start = stop + 1


def scan_kernels(text: str, source: str = "", fast: bool = True) -> list[KernelRecord]:
    """Every function ``text`` (preprocessed Metal, from entry file ``source``) emits, in source
    order; a name seen twice is kept once (the first). ``fast=False`` skips the one-regex path
    (tests compare both).

    Raises ScanError when a ``[[host_name]]`` does not hold string literals."""
    return scan_text(text, source, fast).kernels


def scan_text(text: str, source: str = "", fast: bool = True) -> Scan:
    """:func:`scan_kernels`, with where each kernel's code is written (see :class:`Scan`)."""
    found = Scan([], {}, [])
    out = found.kernels
    pos = 0
    if fast:
        anchor, append = _ANCHOR.search, out.append
        for match in _FAST.finditer(text):
            start = match.start()
            if start < pos or not _fast_ok(text, start):
                continue
            if start - pos >= 6 and anchor(text, pos, start):  # "kernel" is the shortest
                pos = _scan_gap(text, pos, start, source, found)
                if pos > start:
                    continue
            names, func, args = match.group("names", "func", "args")
            if "\\" in names:
                joined = decode_literals(names)
            else:  # only literals and blanks: the contents are every other piece
                joined = "".join(names.split('"')[1::2])
            append(KernelRecord(joined, source, func, _split_args(args)))
            pos = match.end()
    _scan_gap(text, pos, len(text), source, found)
    seen: set[str] = set()
    unique = []
    for item in out:
        if item.name not in seen:
            seen.add(item.name)
            unique.append(item)
    return Scan(unique, found.functions, found.templates)
