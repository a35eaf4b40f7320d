"""The preamble inliner: inclusion order, each file once, angle includes kept, #line markers that
point at the real lines, and errors that name the including file and line."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from builder.errors import UsageError
from builder.jit.preamble import IncludeError, inline_preamble
from builder.kernels import load_catalog
from builder.resources import metal_src_dir

_MARKER = re.compile(r'^#line (\d+) "([^"]*)"$')
_QUOTED = re.compile(r'^\s*#\s*include\s*"([^"]+)"')

TREE = {
    "fam/fam.h": (
        "// family\n#pragma once\n#include <metal_stdlib>\n"
        '#include "common/a.h"\n#include "common/b.h"\n\ntemplate <typename T> void f();\n'
    ),
    "common/a.h": '#pragma once\n#include "common/b.h"\nint a = B;\n',
    "common/b.h": "#pragma once\n#include <metal_stdlib>\n#define B 2\n",
}


def _check_markers(text: str, root: Path) -> None:
    """Every line after a ``#line N "f"`` marker is line N, N+1, ... of f."""
    current: tuple[list[str], int] | None = None
    for line in text.splitlines():
        match = _MARKER.match(line)
        if match:
            source = (root / match.group(2)).read_text(encoding="utf-8").splitlines()
            current = (source, int(match.group(1)))
            continue
        if current is None:
            continue
        source, number = current
        expected = source[number - 1]
        if expected.strip() == "#pragma once":
            expected = ""
        assert line == expected, f"line {number}: {line!r} != {expected!r}"
        current = (source, number + 1)


def test_inlines_in_inclusion_order_each_file_once(kernel_tree: Callable[..., Path]) -> None:
    root = kernel_tree(TREE)
    pre = inline_preamble([root / "fam/fam.h"], [root])
    assert pre.headers == ("fam/fam.h", "common/a.h", "common/b.h")
    text = pre.text
    assert text.count("#define B 2") == 1  # b.h inlined once though included twice
    assert text.index("#define B 2") < text.index("int a = B;") < text.index("void f();")
    assert "#pragma once" not in text
    assert not any(_QUOTED.match(line) for line in text.splitlines())
    assert text.count("#include <metal_stdlib>") == 2  # angle includes stay as written
    _check_markers(text, root)


def test_fragments_depend_only_on_their_file(kernel_tree: Callable[..., Path]) -> None:
    root = kernel_tree({**TREE, "other.h": '#include "common/b.h"\nint o;\n'})
    one = {f.key: f.text for f in inline_preamble([root / "fam/fam.h"], [root]).fragments}
    two = {f.key: f.text for f in inline_preamble([root / "other.h"], [root]).fragments}
    shared = set(one) & set(two)
    assert shared == {"common/b.h:1"}
    assert all(one[k] == two[k] for k in shared)


def test_missing_quoted_include_names_file_and_line(kernel_tree: Callable[..., Path]) -> None:
    root = kernel_tree({"k.h": '#pragma once\n\n#include "common/nope.h"\n'})
    with pytest.raises(IncludeError, match=r'k\.h:3: quoted include "common/nope\.h" not found'):
        inline_preamble([root / "k.h"], [root])


def test_nested_missing_include_names_the_nested_file(kernel_tree: Callable[..., Path]) -> None:
    root = kernel_tree({"k.h": '#include "a.h"\n', "a.h": 'int x;\n#include "gone.h"\n'})
    with pytest.raises(IncludeError, match=r"a\.h:2: "):
        inline_preamble([root / "k.h"], [root])


def test_directives_in_comments_and_cycles(kernel_tree: Callable[..., Path]) -> None:
    root = kernel_tree(
        {
            "k.h": '/* old:\n#include "gone.h"\n*/\n// #include "gone.h"\n#include "a.h"\nint k;\n',
            "a.h": '#include "k.h"\nint a;\n',  # a cycle: k.h is already being inlined
        }
    )
    pre = inline_preamble([root / "k.h"], [root])
    assert pre.headers == ("k.h", "a.h")
    assert '#include "gone.h"' in pre.text  # inside the comment, kept as text
    _check_markers(pre.text, root)


def test_defines_come_first(kernel_tree: Callable[..., Path]) -> None:
    root = kernel_tree(TREE)
    pre = inline_preamble([root / "fam/fam.h"], [root], ["JIT=1", "FLAG"])
    assert pre.text.startswith("#define JIT 1\n#define FLAG 1\n#line 1 ")
    with pytest.raises(UsageError, match="not a macro name"):
        inline_preamble([root / "fam/fam.h"], [root], ["1BAD=2"])


def _transitive(root: Path, header: str) -> set[str]:
    """Quoted includes reachable from ``header``, found independently of the inliner."""
    seen, todo = set(), [header]
    while todo:
        rel = todo.pop()
        if rel in seen:
            continue
        seen.add(rel)
        for line in (root / rel).read_text(encoding="utf-8").splitlines():
            match = _QUOTED.match(line)
            if match:
                todo.append(match.group(1))
    return seen


def test_every_family_of_the_library() -> None:
    root = metal_src_dir()
    catalog = load_catalog(root)
    for name, spec in catalog.families.items():
        pre = inline_preamble([root / spec.header], [root])
        assert pre.headers[0] == spec.header
        assert set(pre.headers) == _transitive(root, spec.header), name
        assert len(pre.headers) == len(set(pre.headers))
        assert not any(_QUOTED.match(line) for line in pre.text.splitlines())
        marked = {m.group(2) for m in map(_MARKER.match, pre.text.splitlines()) if m}
        assert marked == set(pre.headers)
        _check_markers(pre.text, root)
