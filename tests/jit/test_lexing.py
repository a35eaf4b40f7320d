"""Comment handling: literals that look like comments, directives in comments, and comment
stripping that keeps every line where it was (so #line markers stay exact)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import SupportsIndex

from hypothesis import given, settings
from hypothesis import strategies as st

from builder.jit.check import jit_chunks, run_check
from builder.jit.literals import comment_spans, directives, strip_comments
from builder.jit.preamble import inline_preamble
from builder.kernels import load_catalog
from builder.kernels.bounded_run import find_compiler
from builder.kernels.definitions import LineStarts


def _comments(text: str) -> list[str]:
    return [text[a:b] for a, b in comment_spans(text)]


def test_literals_are_not_comments() -> None:
    text = (
        'const char* u = "http://x/*y*/"; // one\n'
        "char c = '/'; char d = '\\''; /* two */\n"
        'auto r = R"d(// not /* a comment)d"; int n = 1\'000; // three\n'
    )
    assert _comments(text) == ["// one", "/* two */", "// three"]


def test_line_comment_continues_over_a_backslash() -> None:
    text = "int a; // x \\\nstill comment\nint b;\n"
    assert _comments(text) == ["// x \\\nstill comment"]
    assert strip_comments(text) == "int a;\n\nint b;\n"


def test_directives_know_block_comments() -> None:
    """Every line that starts outside a comment, by number: not the two inside the block
    comment, and the first one although a comment starts on it."""
    text = '/* start\n#include "x.h"\nend */\n#include "y.h"\n'
    every_line = LineStarts("")
    assert [number for number, _ in directives(text, every_line)] == [1, 4, 5]
    includes = LineStarts(r'#include "([^"]+)"')
    assert [(n, m.group(1)) for n, m in directives(text, includes)] == [(4, "y.h")]
    continued = 'int a; // x \\\n#include "z.h"\n#include "w.h"\n'
    assert [m.group(1) for _, m in directives(continued, includes)] == ["w.h"]


def test_strip_keeps_line_structure_and_token_boundaries() -> None:
    text = "int/**/x; /* a\nb */ int y; // z\n  \n#define M(a) a /* c\n d */ + 1\nint w = M(2);\n"
    out = strip_comments(text)
    assert out.count("\n") == text.count("\n")
    assert out.splitlines()[0] == "int x;"
    assert out.splitlines()[1] == " int y;"
    # a comment inside a directive must not end it: its newline becomes a line splice
    assert "#define M(a) a  \\\n + 1" in out


def test_stripped_preambles_keep_markers_and_pass_the_check() -> None:
    catalog = load_catalog()
    root = catalog.source_dir
    preambles = {}
    for name, spec in catalog.families.items():
        full = inline_preamble([root / spec.header], [root])
        stripped = inline_preamble([root / spec.header], [root], strip=True)
        assert stripped.headers == full.headers
        assert len(stripped.text) < 0.9 * len(full.text)
        assert "//" not in stripped.text and "/*" not in stripped.text
        source: list[str] | None = None  # the file the last #line named, and where we are in it
        at = 0
        for line in stripped.text.splitlines():
            marker = re.match(r'^#line (\d+) "([^"]*)"$', line)
            if marker:
                source = strip_comments((root / marker.group(2)).read_text()).splitlines()
                at = int(marker.group(1))
                continue
            assert source is not None
            expected = source[at - 1]
            assert line == ("" if expected.strip() == "#pragma once" else expected)
            at += 1
        preambles[name] = stripped.text
    result = run_check(
        jit_chunks(catalog, preambles=preambles),
        source_dir=root,
        compiler=find_compiler(),
        syntax_only=True,
    )
    assert result.ok, [d.format() for d in result.diagnostics]


def _reference_spans(text: str) -> list[tuple[int, int]]:
    """An independent lexer for comment spans: a regex alternation over the tokens that matter
    (raw strings, strings, characters, comments), tried at each position left to right. A
    backslash-newline inside a literal is a line splice: the literal goes on."""
    token = re.compile(
        r"""(?P<raw>(?<![A-Za-z0-9_])(?:u8|[uUL])?R"(?P<d>[^()\\\s"]{0,16})\((?s:.*?)\)(?P=d)")"""
        r"""|(?P<block>/\*(?s:.*?)(?:\*/|\Z))"""
        r"""|(?P<line>//(?:[^\n]|\\\n)*?(?=(?<!\\)\n|\Z))"""
        r"""|(?P<sep>(?<=[0-9])')"""
        r"""|(?P<str>"(?:\\(?s:.)|[^"\\\n])*(?:"|(?=\n)|\Z))"""
        r"""|(?P<chr>'(?:\\(?s:.)|[^'\\\n])*(?:'|(?=\n)|\Z))"""
    )
    spans, i = [], 0
    while i < len(text):
        m = token.match(text, i)
        if m is None:
            i += 1
            continue
        if m.lastgroup in ("block", "line"):
            spans.append(m.span())
        i = max(m.end(), i + 1)
    return spans


_PIECES = [
    "// c\n",
    "/* b */",
    "/*\n*/",
    '"s//t"',
    "'/'",
    "'\\''",
    "1'000",
    'R"(x//y)"',
    'u8R"d(/*)d"',
    'fooR"(',
    'LR"(a)"',
    "x",
    " ",
    "\n",
    "\\\n",
    "/",
    "*",
    '"',
    "'",
    "R",
    "u8",
    "_",
]


@settings(max_examples=300)
@given(st.lists(st.sampled_from(_PIECES), max_size=40))
def test_spans_match_an_independent_lexer(pieces: list[str]) -> None:
    text = "".join(pieces)
    assert comment_spans(text) == _reference_spans(text), text


def test_raw_prefix_is_the_whole_identifier() -> None:
    """``u8R"`` opens a raw string, ``xu8R"`` and ``fooR"`` do not (they are a name and a
    string), so a ``//`` inside decides the rest of the line differently."""
    assert _comments('u8R"(//)" // c') == ["// c"]
    assert _comments('fooR"(//)" // c') == ["// c"]
    assert _comments('xu8R"d(" // c\n') == ["// c"]


class _Counted(str):
    """A text that counts the characters the scan reads: one per index, the length of each
    slice, the stretch each ``find``/``rfind`` searched and each prefix compared. A count of
    work, not a time: the same on a busy machine as on an idle one."""

    read = 0

    def __repr__(self) -> str:  # what an assertion shows: not the whole text
        return f"<text of {len(self):,} characters, {self.read:,} read>"

    def __getitem__(self, key: SupportsIndex | slice) -> str:
        got = str.__getitem__(self, key)
        self.read += max(len(got), 1)
        return got

    def __iter__(self) -> Iterator[str]:
        self.read += len(self)
        return str.__iter__(self)

    def _span(self, start: SupportsIndex | None, end: SupportsIndex | None) -> tuple[int, int]:
        return slice(start, end).indices(len(self))[:2]

    def find(
        self, sub: str, start: SupportsIndex | None = None, end: SupportsIndex | None = None
    ) -> int:
        lo, hi = self._span(start, end)
        at = str.find(self, sub, lo, hi)
        self.read += (at + len(sub) if at >= 0 else hi) - lo
        return at

    def rfind(
        self, sub: str, start: SupportsIndex | None = None, end: SupportsIndex | None = None
    ) -> int:
        lo, hi = self._span(start, end)
        at = str.rfind(self, sub, lo, hi)
        self.read += hi - (at if at >= 0 else lo)
        return at

    def startswith(self, prefix: str | tuple[str, ...], *args: SupportsIndex | None) -> bool:
        self.read += max(map(len, prefix)) if isinstance(prefix, tuple) else len(prefix)
        return str.startswith(self, prefix, *args)


def test_scan_work_grows_linearly() -> None:
    """Issue 27: the scan reads each character a bounded number of times, so 10x the text is
    10x the characters read (a scan that searched back from the file's start at every quote,
    as before issue 27, reads ~100x). The time it takes is in benchmarks/bench_lexing.py."""
    line = 'x = "a//b"; c = \'/\'; n = 1\'000; // note\n/* b */ s = R"(r)"; t = u8R"d(x)d";\n'
    small, large = _Counted(line * 400), _Counted(line * 4000)
    spans = comment_spans(small), comment_spans(large)
    assert spans == (comment_spans(line * 400), comment_spans(line * 4000))  # as on a str
    assert len(spans[1]) == 10 * len(spans[0]) > 0
    assert small.read <= 2 * len(small)  # each character read about once
    assert large.read <= 10 * small.read * 1.01, (large.read, small.read)
