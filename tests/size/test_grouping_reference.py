"""Kernel groups and dtypes of real libraries against a reference written here: the grouping as
the issue 27 rules state it, in the plainest form (every MLX rule tried in order on every name,
the share counted over all names, dtype spellings tried longest first at each position). The
tool's grouping is built for speed (one trie for the spellings, rules marked at their end, the
MLX share decided as soon as it is certain, the generic stems in C when the extension is built,
issue 34 item 14); its labels must be these, on both codes (native and pure Python)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.real_wheels import libraries_or_skip

from builder.inputs.targets import open_library
from builder.kernels.dtypes import NAME_SPELLINGS, WORD_ONLY_SPELLINGS
from builder.metallib import native
from builder.size.grouping import (
    MLX_MIN_SHARE,
    OTHER,
    builtin_rules,
    generic_group,
    generic_groups,
    group_names,
)

pytestmark = pytest.mark.both_container_codes  # the generic stems have a C and a Python path

LIBRARIES = [  # (spec, platform, member holds): MLX's own names, and two libraries of another
    ("mlx-metal==0.32.4", "macosx_14_0_arm64", "mlx.metallib"),
    ("mlx-metal==0.28.0", "macosx_14_0_arm64", "mlx.metallib"),
    ("torch==2.14.1", "macosx_14_0_arm64", "metal_basic"),
    ("torch==2.14.1", "macosx_14_0_arm64", "metal_40"),
]
STARTING = {  # first character -> the spellings that start with it, longest first
    c: sorted((s for s in NAME_SPELLINGS if s[0] == c), key=len, reverse=True)
    for c in {s[0] for s in NAME_SPELLINGS}
}


def dtype_tokens(name: str, skip_masks: bool = False) -> list[tuple[int, int, str]]:
    """(start, end, spelling) of each dtype token, left to right: at each position the longest
    spelling that starts there, a word-only spelling only between underscores or the ends."""
    found, i = [], 0
    while i < len(name):
        word = next((s for s in STARTING.get(name[i], ()) if name.startswith(s, i)), None)
        if word is None:
            i += 1
            continue
        end = i + len(word)
        delimited = (i == 0 or name[i - 1] == "_") and (end == len(name) or name[end] == "_")
        before = name[:i]
        mask = before.endswith(("mask", "mask_")) and not before.endswith(("nomask", "nomask_"))
        if (word not in WORD_ONLY_SPELLINGS or delimited) and not (skip_masks and mask):
            found.append((i, end, word))
        i = end
    return found


def generic(name: str) -> str:
    out, last = [], 0
    for start, end, _ in dtype_tokens(name):
        out.append(name[last:start] + "_")
        last = end
    stripped = "".join(out) + name[last:]
    numeric = re.compile(r"^(?:\d+|[A-Za-z]{1,6}\d+|true|false)$")
    tokens = [t for t in stripped.split("_") if t and not numeric.match(t)]
    return "_".join(tokens) or name


def kernel_labels(names: list[str]) -> tuple[str, list[str]]:
    rules = [(r.group, re.compile(r.pattern)) for r in builtin_rules("mlx").rules]
    labels = [next((g for g, regex in rules if regex.match(n)), OTHER) for n in names]
    if names and sum(label != OTHER for label in labels) >= MLX_MIN_SHARE * len(names):
        return "rules:builtin:mlx", labels
    return "generic", [generic(n) for n in names]


def primary(name: str) -> str:
    tokens = dtype_tokens(name, skip_masks=True) or dtype_tokens(name)
    return NAME_SPELLINGS[tokens[0][2]] if tokens else "none"


@pytest.mark.realdata
@pytest.mark.parametrize(("spec", "platform", "member"), LIBRARIES)
def test_labels_are_the_references(spec: str, platform: str, member: str) -> None:
    (library,) = [lib for lib in libraries_or_skip(spec, platform) if member in (lib.member or "")]
    with open_library(library) as lib:
        names = list(lib.columns().names)
    kernel = group_names(names, "kernel")
    assert (kernel.method, kernel.labels) == kernel_labels(names)
    assert group_names(names, "dtype").labels == [primary(n) for n in names]
    expected = "generic" if "torch" in spec else "rules:builtin:mlx"
    assert kernel.method == expected  # both paths of the choice are checked


ODD_NAMES = [
    "a_12\x00b",  # a NUL: the names are joined by another character
    "x\n_12",  # a newline ends a token as "$" lets it: "12\n" is numeric, "x\n" is not
    "12\n",
    "float_12\n_y",
    "\x00",
    "",
    "_",
    "__",
    "k_float16_bm64_bn32",
    "a\x01b_float",
    "tq1_0_x",
    "maskbool",
    "x_bool_",
    "xuint8_t",
    "a_true_false_1",
]


def test_generic_stems_of_odd_names() -> None:
    """The stems of names that hold the characters the names are joined by, alone and together,
    are the reference's, name by name."""
    assert generic_groups(ODD_NAMES) == [generic(n) for n in ODD_NAMES]
    assert generic_groups(ODD_NAMES[2:]) == [generic(n) for n in ODD_NAMES[2:]]
    assert [generic_group(n) for n in ODD_NAMES] == [generic(n) for n in ODD_NAMES]


SOUP = [*NAME_SPELLINGS, "_", "__", "x", "u", "mask", "nomask", "12", "bm64", "true", "\n", "\x00"]
"""Pieces of names: every dtype spelling (so that spellings touch, overlap and hold one
another), token ends, numeric tokens, the mask words and the characters names are joined by."""
SOUP += ["false", "abcdefg1", "Ab12", "T", "2\n\n", "\u0663", "\u00e9"]
"""Numeric tokens at the letters' limit and beyond, letters that are not ASCII, and a digit that
is not ASCII (Python's \\d takes it; the C path declines names that are not ASCII)."""


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.sampled_from(SOUP), max_size=7).map("".join), min_size=1, max_size=30))
def test_generic_stems_of_spelling_soup(names: list[str]) -> None:
    """Names made of spellings run together: the stems found for all names at once are the
    reference's, name by name (a short word inside a longer one stays, one between token ends
    goes). The ASCII names alone too: one name that is not ASCII sends all to Python."""
    assert generic_groups(names) == [generic(n) for n in names]
    ascii_names = [n for n in names if n.isascii()]
    assert generic_groups(ascii_names) == [generic(n) for n in ascii_names]


@pytest.mark.picks_container_code
def test_the_extension_decides_ascii_names_and_declines_others() -> None:
    """With the extension, ASCII names' stems come from C (the tests above then compare C with
    the reference); a name that is not ASCII sends every name to the Python path."""
    module = native.native_module()
    if module is None:
        pytest.skip(f"native code not in use: {native.status()}")
    assert hasattr(module, "generic_stems"), f"{module.__file__}: built before stems.c, reinstall"
    spellings, names = tuple(NAME_SPELLINGS), ["k_float16_bm64", "copyint32", "abc_true"]
    assert module.generic_stems(names, spellings, WORD_ONLY_SPELLINGS) == [
        generic(n) for n in names
    ]
    assert module.generic_stems([*names, "k_\u0663"], spellings, WORD_ONLY_SPELLINGS) is None
