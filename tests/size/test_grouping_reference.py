"""Kernel groups and dtypes of real libraries against a reference written here: the grouping as
the issue 27 rules state it, with issue 36's ops, stems and bool rule (the naming
rules of docs/report-schema.md), in the plainest form (every MLX rule tried in order on every name,
the share counted over all names, dtype spellings tried longest first at each position). The
tool's grouping is built for speed (one trie for the spellings, rules marked at their end, the
MLX share decided as soon as it is certain, the generic stems in C when the extension is built,
issue 34 item 14); its labels must be these, on both codes (native and pure Python)."""

from __future__ import annotations

import re
from typing import NamedTuple

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
    generic_stems,
    group_names,
)
from builder.size.naming import LAYOUT_WORDS, name_parameters

pytestmark = pytest.mark.both_container_codes  # the generic stems have a C and a Python path

LIBRARIES = [  # (spec, platform, member holds): MLX's own names, and libraries of others
    ("mlx-metal==0.32.4", "macosx_14_0_arm64", "mlx.metallib"),
    ("mlx-metal==0.28.0", "macosx_14_0_arm64", "mlx.metallib"),
    ("torch==2.14.1", "macosx_14_0_arm64", "metal_basic"),
    ("torch==2.14.1", "macosx_14_0_arm64", "metal_40"),
    ("torch==2.12.1", "macosx_14_0_arm64", "metal_basic"),
    # the other projects of ../shared/REAL_DATA.md: names with digits, parameters, ggml's types
    ("metal-flash-sdpa==0.1.2", "macosx_14_0_arm64", "metal_flash_sdpa/_C"),
    ("metal-linalg==2.19.0", "macosx_14_0_arm64", "_metal_linalg_Svd_Bidiag_metallib"),
    ("gpt4all==2.8.2", "macosx_10_15_universal2", "default.metallib"),
]
STARTING = {  # first character -> the spellings that start with it, longest first
    c: sorted((s for s in NAME_SPELLINGS if s[0] == c), key=len, reverse=True)
    for c in {s[0] for s in NAME_SPELLINGS}
}


def dtype_tokens(name: str) -> list[tuple[int, int, str]]:
    """(start, end, spelling) of each dtype token, left to right: at each position the longest
    spelling that starts there, a word-only spelling only between underscores or the ends, or
    between the letters "mask" and an underscore or the end."""
    found, i = [], 0
    while i < len(name):
        word = next((s for s in STARTING.get(name[i], ()) if name.startswith(s, i)), None)
        if word is None:
            i += 1
            continue
        end = i + len(word)
        starts = i == 0 or name[i - 1] == "_" or name[:i].endswith("mask")  # maskhalf
        delimited = starts and (end == len(name) or name[end] == "_")
        if word not in WORD_ONLY_SPELLINGS or delimited:
            found.append((i, end, word))
        i = end
    return found


LAYOUT = {"dense", "strided", "contiguous", "contig", "inner", "innermost", "outer", "narrow"}
LAYOUT |= {"flat", "broadcast", "scalar", "cast", "castout", "lhs", "rhs", "vec", "ilp"}
"""Layout words as docs/report-schema.md lists them (a layout word may end in digits: ilp4)."""
NUMBER = re.compile(r"[0-9]+(bits?)?")
FLAG = re.compile("true|false|taligned|naligned")
PARAMETER = re.compile(r"[0-9]+(bits?)?|[A-Za-z]{1,6}[0-9]+|true|false|taligned|naligned")


class Dtype(NamedTuple):
    spelling: str
    glued: bool  # no "_" between it and the word before it


Word = str | Dtype


def words(name: str) -> list[Word]:
    """The name cut at "_" and at each dtype token, empty pieces dropped."""
    out: list[Word] = []
    last = 0
    for start, end, spelling in dtype_tokens(name):
        out += name[last:start].split("_") + [Dtype(spelling, start > 0 and name[start - 1] != "_")]
        last = end
    out += name[last:].split("_")
    return [w for w in out if w != ""]


def mask_type(ws: list[Word], i: int) -> bool:
    """A word ending in "mask" (not "nomask") glued to a dtype, or longer than "mask" and
    followed by a dtype or "nomask": a mask word followed by its mask's type."""
    w, following = ws[i], ws[i + 1] if i + 1 < len(ws) else None
    if not isinstance(w, str) or not w.endswith("mask") or w == "nomask" or following is None:
        return False
    if isinstance(following, Dtype):
        return following.glued or len(w) > 4
    return len(w) > 4 and following == "nomask"


def read(name: str) -> tuple[str, str, list[tuple[str, str, str]]]:
    """(op, stem, parameters as (kind, key, value)): the rules of docs/report-schema.md,
    "Naming rules", step by step."""
    ws = words(name)
    # 1. the head: the words before the first dtype, number or mask word with its type ...
    end = len(ws)
    for i, w in enumerate(ws):
        if isinstance(w, Dtype) or NUMBER.fullmatch(w) or mask_type(ws, i):
            end = i
            break
    else:  # ... or, with none, before the trailing parameters (never the first word)
        while end > 1 and PARAMETER.fullmatch(str(ws[end - 1])):
            end -= 1
    head = [str(w) for w in ws[:end]]
    # 2. the parameters after it; the stem is the head and the other words
    stem, found = list(head), []
    i = end
    while i < len(ws):
        w = ws[i]
        following = ws[i + 1] if i + 1 < len(ws) else ""
        if mask_type(ws, i):
            value = following.spelling if isinstance(following, Dtype) else str(following)
            found.append(("mask", str(w), NAME_SPELLINGS.get(value, value)))
            i += 2
        elif isinstance(w, Dtype):
            found.append(("dtype", "dtype", NAME_SPELLINGS[w.spelling]))
            i += 1
        elif m := re.fullmatch("([0-9]+)(bits?)", w):
            found.append(("bits", "bit", m[1]))
            i += 1
        elif re.fullmatch("[0-9]+", w) or FLAG.fullmatch(w):
            found.append(("bare", "", w))
            i += 1
        elif m := re.fullmatch("([A-Za-z]{1,6})([0-9]+)", w):
            found.append(("keyed", m[1], m[2]))
            i += 1
        elif (
            re.fullmatch("[A-Za-z]{1,6}", w)
            and isinstance(following, str)
            and re.fullmatch("[0-9]+|true|false|taligned|naligned", following)
        ):
            found.append(("keyed", w, following))
            i += 2
        else:
            stem.append(w)
            i += 1
    # 3. the op: the head's words up to its first layout word, leading layout words skipped
    op: list[str] = []
    for w in head:
        if w.rstrip("0123456789") in LAYOUT:
            if op:
                break
        else:
            op.append(w)
    stem_label = "_".join(stem) or name
    return "_".join(op) or stem_label, stem_label, found


def stems(name: str) -> tuple[str, str]:
    """(op, stem) of ``name``."""
    op, stem, _ = read(name)
    return op, stem


def generic(name: str) -> str:
    return stems(name)[0]


def kernel_labels(names: list[str]) -> tuple[str, list[str]]:
    rules = [(r.group, re.compile(r.pattern)) for r in builtin_rules("mlx").rules]
    labels = [next((g for g, regex in rules if regex.match(n)), OTHER) for n in names]
    if names and sum(label != OTHER for label in labels) >= MLX_MIN_SHARE * len(names):
        return "rules:builtin:mlx", labels
    return "generic", [generic(n) for n in names]


def primary(name: str) -> str:
    """The first dtype that is no mask's and not bool, else the first no mask's, else the first."""
    found = [(kind, value) for kind, _, value in read(name)[2] if kind in ("dtype", "mask")]
    unmasked = [value for kind, value in found if kind == "dtype"]
    every = [value for _, value in found if value != "nomask"]
    return ([d for d in unmasked if d != "bool"] or unmasked or every or ["none"])[0]


@pytest.mark.realdata
@pytest.mark.parametrize(("spec", "platform", "member"), LIBRARIES)
def test_labels_are_the_references(spec: str, platform: str, member: str) -> None:
    (library,) = [lib for lib in libraries_or_skip(spec, platform) if member in (lib.member or "")]
    with open_library(library) as lib:
        names = list(lib.columns().names)
    kernel = group_names(names, "kernel")
    assert (kernel.method, kernel.labels) == kernel_labels(names)
    assert group_names(names, "dtype").labels == [primary(n) for n in names]
    assert group_names(names, "stem").labels == [stems(n)[1] for n in names]
    assert group_names(names, "param").labels == [stems(n)[1] for n in names]
    assert [list(name_parameters(n)) for n in names] == [read(n)[2] for n in names]
    # metal-flash-sdpa's kernels are MLX's steel attention: MLX's rules know them
    generic = spec.startswith(("torch", "metal-linalg", "gpt4all"))
    expected = "generic" if generic else "rules:builtin:mlx"
    assert kernel.method == expected  # both paths of the choice are checked


ODD_NAMES = [
    "a_12\x00b",  # a NUL: the names are joined by another character
    "x\n_12",  # a newline is a character like another: "12\n" is no number
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
    "atan2_gs_32",  # no dtype: the op ends at the number, "gs" is the op's
    "dense_strided_float",  # nothing but layout words: the op is the stem
    "abs_ilp4_float_gs_32_b_4_stable",
    # a mask word and its type, alignment flags (issue 36): parameters, not the stem's words
    "steel_gemm_block_outmask_bool__opmask_nomask_tt_float32_float32_bm64_MN_taligned",
    "sdpa_vector_half_128_64_maskhalf",
    "index_fill_dense_from_mask_half",  # "mask" apart from a dtype: a word and a dtype
    "x_nomask_float",
    "k_float_alN_true_hgs_false_true",
]


def test_generic_stems_of_odd_names() -> None:
    """The stems of names that hold the characters the names are joined by, alone and together,
    are the reference's, name by name."""
    assert generic_groups(ODD_NAMES) == [generic(n) for n in ODD_NAMES]
    assert generic_groups(ODD_NAMES[2:]) == [generic(n) for n in ODD_NAMES[2:]]
    assert [generic_group(n) for n in ODD_NAMES] == [generic(n) for n in ODD_NAMES]
    assert generic_stems(ODD_NAMES) == [stems(n)[1] for n in ODD_NAMES]
    assert [name_parameters(n) for n in ODD_NAMES] == [read(n)[2] for n in ODD_NAMES]


SOUP = [*NAME_SPELLINGS, "_", "__", "x", "u", "mask", "nomask", "12", "bm64", "true", "\n", "\x00"]
"""Pieces of names: every dtype spelling (so that spellings touch, overlap and hold one
another), token ends, numeric tokens, the mask words and the characters names are joined by."""
SOUP += ["false", "abcdefg1", "Ab12", "T", "2\n\n", "\u0663", "\u00e9"]
SOUP += ["dense", "ilp4", "inner_", "8bit", "16bits", "gs", "atan2", "_4", "9bitx"]
SOUP += ["outmask", "_opmask_", "taligned", "MN_", "alN", "half"]
"""Numeric tokens at the letters' limit and beyond, letters that are not ASCII, and a digit that
is not ASCII (the C path declines names that are not ASCII); layout words, widths in bits,
keys and an op with digits; mask words and alignment flags."""


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.sampled_from(SOUP), max_size=7).map("".join), min_size=1, max_size=30))
def test_generic_stems_of_spelling_soup(names: list[str]) -> None:
    """Names made of spellings run together: the stems found for all names at once are the
    reference's, name by name (a short word inside a longer one stays, one between token ends
    goes). The ASCII names alone too: one name that is not ASCII sends all to Python."""
    assert generic_groups(names) == [generic(n) for n in names]
    assert generic_stems(names) == [stems(n)[1] for n in names]
    assert [name_parameters(n) for n in names] == [read(n)[2] for n in names]
    ascii_names = [n for n in names if n.isascii()]
    assert generic_groups(ascii_names) == [generic(n) for n in ascii_names]
    assert generic_stems(ascii_names) == [stems(n)[1] for n in ascii_names]


@pytest.mark.picks_container_code
def test_the_extension_decides_ascii_names_and_declines_others() -> None:
    """With the extension, ASCII names' stems come from C (the tests above then compare C with
    the reference); a name that is not ASCII sends every name to the Python path."""
    module = native.native_module()
    if module is None:
        pytest.skip(f"native code not in use: {native.status()}")
    assert hasattr(module, "generic_stems"), f"{module.__file__}: built before stems.c, reinstall"
    spellings, names = tuple(NAME_SPELLINGS), ["k_float16_bm64", "copyint32", "abc_dense_true"]
    for level in (0, 1):
        found = module.generic_stems(names, spellings, WORD_ONLY_SPELLINGS, LAYOUT_WORDS, level)
        assert found == [stems(n)[level] for n in names]
    odd = [*names, "k_\u0663"]
    assert module.generic_stems(odd, spellings, WORD_ONLY_SPELLINGS, LAYOUT_WORDS, 0) is None
