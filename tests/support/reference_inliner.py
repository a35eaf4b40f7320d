"""The reference inliner (docs/jit.md, "The preamble"), written from the documentation, not from
the product: its own comment finder (one regular expression over the C++ tokens that can hide
``//`` or ``/*``), its own include resolution and its own ``#line`` quoting. Embedded texts are
compared with what it makes from the headers (tests/jit/test_roundtrip.py, the MLX-layout CMake
test in tests/jit/test_embed_cmake.py)."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from functools import cache
from pathlib import Path

__all__ = ["c_quote", "comments", "reference_preamble", "strip_reference"]


_QUOTED = re.compile(r'[ \t]*#[ \t]*include[ \t]*"([^"]+)"')
_PRAGMA_ONCE = re.compile(r"[ \t]*#[ \t]*pragma[ \t]+once\b")
_TOKEN = re.compile(
    r"""(?P<raw>(?:u8|[uUL])?R"(?P<delim>[^()\\\s"]{0,16})\(.*?\)(?P=delim)")
      | (?P<word>[A-Za-z_]\w*)
      | (?P<number>\.?\d(?:'?[\w.])*)
      | (?P<string>"(?:\\.|[^"\\\n])*"?)
      | (?P<char>'(?:\\.|[^'\\\n])*'?)
      | (?P<line_comment>//(?:\\\n|[^\n])*)
      | (?P<block_comment>/\*.*?(?:\*/|\Z))""",
    re.DOTALL | re.VERBOSE,
)


def comments(text: str) -> list[tuple[int, int]]:
    """Spans of the comments: the tokens that can hold ``//`` or ``/*`` are matched whole."""
    return [m.span() for m in _TOKEN.finditer(text) if m["line_comment"] or m["block_comment"]]


def _in_directive(text: str, position: int) -> bool:
    """``position`` lies on a logical line (backslash continuations followed) starting with #."""
    start = text.rfind("\n", 0, position) + 1
    while start > 1 and text[start - 2] == "\\":
        start = text.rfind("\n", 0, start - 1) + 1
    return text[start:position].lstrip().startswith("#")


def strip_reference(text: str) -> str:
    """Comments become one space (line splices inside a directive, newlines elsewhere), then
    trailing blanks go; every newline stays."""
    out, last = [], 0
    for start, end in comments(text):
        newlines = text.count("\n", start, end)
        separator = "\\\n" if _in_directive(text, start) else "\n"
        out += [text[last:start], " " + separator * newlines]
        last = end
    out.append(text[last:])
    return "\n".join(line.rstrip() for line in "".join(out).split("\n"))


def c_quote(name: str) -> str:
    """A C string literal: backslash and quote escaped, anything outside printable ASCII (and
    ``?``) as three-digit octal escapes of its UTF-8 bytes."""
    out = []
    for byte in name.encode("utf-8", "surrogateescape"):
        char = chr(byte)
        if char in '\\"':
            out.append("\\" + char)
        elif 32 <= byte < 127 and char != "?":
            out.append(char)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


@cache
def _source(path: Path, strip: bool) -> tuple[list[str], list[str], list[bool]]:
    """A file's lines as written, its kept lines, and whether each line starts outside comments."""
    text = path.read_bytes().decode("utf-8")
    kept = strip_reference(text) if strip else text
    lines, kept_lines = text.split("\n"), kept.split("\n")
    if text.endswith("\n"):
        lines.pop()
        kept_lines.pop()
    spans = comments(text)
    free, offset, k = [], 0, 0
    for line in lines:
        while k < len(spans) and spans[k][1] <= offset:
            k += 1
        free.append(not (k < len(spans) and spans[k][0] < offset < spans[k][1]))
        offset += len(line) + 1
    return lines, kept_lines, free


def reference_preamble(header: Path, include_dirs: Sequence[Path], strip: bool) -> str:
    """``header`` with its quoted includes inlined, each file where it is first included."""
    dirs = [Path(os.path.realpath(d)) for d in include_dirs]
    done: set[Path] = set()
    out: list[str] = []

    def shown(path: Path) -> str:
        return next(path.relative_to(d).as_posix() for d in dirs if path.is_relative_to(d))

    def inline(path: Path) -> None:
        done.add(path)
        lines, kept, free = _source(path, strip)
        run: list[str] = []
        first = 1

        def flush() -> None:
            if any(line.strip() for line in run):
                out.append(f"#line {first} {c_quote(shown(path))}\n")
                out.extend(line + "\n" for line in run)

        for number, line in enumerate(lines, start=1):
            include = _QUOTED.match(line) if free[number - 1] else None
            if include:
                flush()
                run, first = [], number + 1
                for folder in (path.parent, *dirs):
                    if (folder / include[1]).is_file():
                        target = Path(os.path.realpath(folder / include[1]))
                        break
                else:
                    raise AssertionError(f"{path}:{number}: {include[1]} not found")
                if target not in done:
                    inline(target)
            elif free[number - 1] and _PRAGMA_ONCE.match(line):
                run.append("")
            else:
                run.append(kept[number - 1])
        flush()

    inline(Path(os.path.realpath(header)))
    return "".join(out)
