"""Reading a kernel name that no rule knows: its dtypes, its op, and the groups made from them.

A name is words joined by ``_``; dtype spellings (``builder.kernels.dtypes.NAME_SPELLINGS``)
are found left to right, the longest at each position, the short words only as whole words, and
each cuts the name where it stands (``v_copyfloat16float32``: ``v``, ``copy``; a short word also
right after the letters ``mask``: torch's ``maskhalf``). Then:

* a **mask's type** is a dtype glued to a word ending in ``mask`` (``maskbool_``, ``maskhalf``),
  or a dtype or ``nomask`` after a longer such word (``outmask_bool_``, ``opmask_nomask``; not
  ``nomask`` itself, and not ``mask_half``: torch's ``index_fill_dense_from_mask_half``);
* the **head** is the words before the first dtype, number (``64``, ``8bit``) or mask word with
  its type; a name with none ends its head before its trailing parameters
  (``tonemap_aces_bm64``), never before its second word. Words with digits in the head are the
  op's (``atan2``, ``log10``, ``bessel_j0``, ``i0``, ``div_true``): parameters follow the op;
* the **parameters** after the head go (:func:`name_parameters`): dtypes, a mask word and its
  type, numbers, letters then digits (``bm64``, ``tptg512``: one to six letters), the flags
  ``true``/``false``/``taligned``/``naligned``, a key of one to six letters before a number or
  flag (``gs_32``, ``b_4``, ``MN_taligned``, ``alN_true``); the other words after the head stay
  (``stable``, ``topk``, ``mask``);
* the **stem** (``--by stem``, ``--by param``) is the head and the words after it in no
  parameter: the name less its parameters, ``abs_dense_castout``, ``sort_block_stable``;
* the **op** (``--by kernel`` without rules) is the head with its layout folded in: its words up
  to the first layout word (:data:`LAYOUT_WORDS`), leading layout words dropped
  (``abs_dense_castout_ilp`` and ``abs_strided`` are ``abs``; ``inner_contiguous_scatter`` is
  ``scatter``).

An empty op is the stem, an empty stem the name itself. docs/report-schema.md ("Naming rules")
states these rules with torch's and MLX's names. The C extension makes the same labels for ASCII
names (``generic_stems``, csrc/stems.c); the Python here is the reference and the path without
it.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple

from builder.errors import UsageError
from builder.kernels.dtypes import NAME_SPELLINGS, WORD_ONLY_SPELLINGS
from builder.metallib.native import native_module

__all__ = [
    "LAYOUT_WORDS",
    "NO_DTYPE",
    "NameParameter",
    "generic_group",
    "generic_groups",
    "generic_stems",
    "name_parameters",
    "parse_dtypes",
    "primary_dtype",
]

NO_DTYPE = "none"

LAYOUT_WORDS = (
    "dense", "strided", "contiguous", "contig", "inner", "innermost", "outer", "narrow", "flat",
    "broadcast", "scalar", "cast", "castout", "lhs", "rhs", "vec", "ilp",
)  # fmt: skip
"""Words that say how a kernel walks memory, not what it computes (PyTorch's ``_dense``,
``_strided``, ``_dense_scalar_lhs_cast``, ``_inner_contiguous``, ``_dense_castout_ilp4``; ggml's
``_vec``): an op ends at the first one. A layout word may end in digits (``ilp4``)."""


_Trie = dict[str, "_Trie"]  # a character -> the rest; "" -> {} where a word ends


def _longest_first(words: Sequence[str]) -> str:
    """A regular expression matching the longest of ``words`` that starts at a position, written
    as a trie (``int(?:8|16(?:_t)?|...)?``): each alternative starts with a different character,
    so the engine rejects a position on its first character instead of trying every spelling."""
    trie: _Trie = {}
    for word in words:
        node = trie
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def emit(node: _Trie) -> str:
        branches = [re.escape(char) + emit(child) for char, child in sorted(node.items()) if char]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else f"(?:{'|'.join(branches)})"
        # greedy: a longer spelling wins over one that ends here
        return f"(?:{body})?" if "" in node else body

    return emit(trie)


# Scanning left to right, the longest spelling at each position: "uint32" is never read as
# "int32". The same matches as an alternation of the spellings, longest first.
_DTYPE_RE = re.compile(_longest_first(tuple(NAME_SPELLINGS)))
_SPELLINGS = tuple(NAME_SPELLINGS)  # for the C extension's generic_stems

_NO_MASK = "nomask"  # a mask word's value when the kernel takes no mask


def _dtype_matches(name: str) -> Iterator[re.Match[str]]:
    """The dtype tokens of ``name``, left to right: a word-only spelling only when it ends a
    token and starts one or follows the letters ``mask`` (torch's ``maskhalf``)."""
    for match in _DTYPE_RE.finditer(name):
        start, end = match.span()
        if match.group() in WORD_ONLY_SPELLINGS and (
            (start and name[start - 1] != "_" and not name.endswith("mask", 0, start))
            or (end < len(name) and name[end] != "_")
        ):
            continue
        yield match


def parse_dtypes(name: str) -> list[str]:
    """Canonical dtypes named in ``name``, in order: ``"v_copyfloat16float32"`` -> both.

    MLX concatenates its own tokens (``float16``, ``bool_``) but separates Metal spellings
    (``float``, ``float16_t``) with underscores; the short words count only as whole tokens.
    """
    return [NAME_SPELLINGS[m.group()] for m in _dtype_matches(name)]


def primary_dtype(name: str) -> str:
    """The dtype a kernel computes in: the first dtype of the name that is neither a mask's type
    (after "mask": ``gemv_outmask_nomask_opmask_bool__float16_...`` -> float16) nor ``bool``
    (a comparison's or logical op's result: torch's ``lt_dense_bool_float8_e4m3fn`` ->
    float8_e4m3fn; MLX's ``v_copybool_uint8`` -> uint8); else the first that is not a mask's
    type (``logical_not_dense_bool_bool`` -> bool), else the first at all (``foo_maskhalf``: the
    only dtype is a mask's), else ``"none"``. A mask's type is :func:`name_parameters`' (the
    module docstring's rule)."""
    found = [
        (value, kind == "mask")
        for kind, _, value in name_parameters(name)
        if kind == "dtype" or (kind == "mask" and value != _NO_MASK)
    ]
    if not found:
        return NO_DTYPE
    unmasked = [word for word, masked in found if not masked]
    computing = [word for word in unmasked if word != "bool"]
    return (computing or unmasked or [found[0][0]])[0]


_NUMBER = re.compile(r"[0-9]+(?:bits?)?")
_PARAMETER = re.compile(r"[0-9]+(?:bits?)?|[A-Za-z]{1,6}[0-9]+|true|false|[tn]aligned")
_KEY = re.compile(r"[A-Za-z]{1,6}")
_VALUE = re.compile(r"[0-9]+|true|false|[tn]aligned")
_KEYED = re.compile(r"([A-Za-z]{1,6})([0-9]+)")
_LAYOUT = frozenset(LAYOUT_WORDS)
_DIGITS = "0123456789"


class NameParameter(NamedTuple):
    """One template parameter a name carries, as the name writes it: ``kind`` is ``dtype``
    (``key`` "dtype"), ``mask`` (a mask's type, ``key`` the word before it: ``outmask``),
    ``keyed`` (``bm64``, ``gs_32``, ``MN_taligned``: ``key`` the letters), ``bits`` (``8bit``:
    ``key`` "bit") or ``bare`` (a number or flag with no key: ``key`` ""). ``value`` is a dtype's
    canonical word, ``nomask``, digits or a flag word."""

    kind: str
    key: str
    value: str


def _marker(
    ends: str, mark: str, joined: str, found: list[str] | None
) -> Callable[[re.Match[str]], str]:
    """The replacement of a dtype token in names joined by a separator (in ``ends`` with ``_``):
    ``mark`` for one standing apart, ``joined`` for one glued to the word before it
    (``copyfloat16``, ``maskbool_``); a word-only spelling stays text unless it ends at a token
    end and starts at one or after the letters ``mask`` (``maskhalf``). ``found`` collects each
    token's canonical word."""

    def replace(match: re.Match[str]) -> str:
        text, (start, end), string = match.group(), match.span(), match.string
        apart = string[start - 1] in ends
        if text in WORD_ONLY_SPELLINGS and (
            string[end] not in ends or not (apart or string.endswith("mask", 0, start))
        ):
            return text  # a short word inside a longer one
        if found is not None:
            found.append(NAME_SPELLINGS[text])
        return f"_{mark if apart else joined}_"

    return replace


def _mask_at(words: Sequence[str], i: int, mark: str, joined: str) -> bool:
    """Whether ``words[i]`` is a mask word followed by the mask's type: a word ending in
    ``mask`` (not ``nomask``) glued to a dtype (``maskbool_``), or longer than ``mask`` and
    followed by a dtype or ``nomask`` (``outmask_bool_``, ``opmask_nomask``)."""
    word = words[i]
    if i + 1 >= len(words) or not word.endswith("mask") or word == _NO_MASK:
        return False
    after = words[i + 1]
    return after == joined or (len(word) > 4 and after in (mark, _NO_MASK))


_Found = tuple[int, int, str, str]  # a parameter: its first word, its value word, kind, key


def _head(words: Sequence[str], mark: str, joined: str) -> int:
    """Where the head ends."""
    number, parameter = _NUMBER.fullmatch, _PARAMETER.fullmatch
    end = 0  # the head: the words before the first dtype, number or mask word with its type
    for i, word in enumerate(words):
        if word in (mark, joined) or (word[0] in _DIGITS and number(word)):
            break
        if _mask_at(words, i, mark, joined):
            break
        end += 1
    else:  # none: before the trailing parameters, never before the second word
        while end > 1 and parameter(words[end - 1]):
            end -= 1
    return end


def _parameters(words: Sequence[str], end: int, mark: str, joined: str) -> list[_Found]:
    """The parameters after the head; the words after it in none are the stem's."""
    number, parameter = _NUMBER.fullmatch, _PARAMETER.fullmatch
    found: list[_Found] = []
    i = end
    while i < len(words):
        word = words[i]
        if _mask_at(words, i, mark, joined):
            found.append((i, i + 1, "mask", word))
            i += 2
            continue
        if word in (mark, joined):
            found.append((i, i, "dtype", "dtype"))
        elif number(word):
            bits = word[-1] not in _DIGITS
            found.append((i, i, "bits", "bit") if bits else (i, i, "bare", ""))
        elif parameter(word):
            keyed = _KEYED.fullmatch(word)
            found.append((i, i, "keyed", keyed.group(1)) if keyed else (i, i, "bare", ""))
        elif i + 1 < len(words) and _KEY.fullmatch(word) and _VALUE.fullmatch(words[i + 1]):
            found.append((i, i + 1, "keyed", word))  # gs_32, MN_taligned: a key and its value
            i += 2
            continue
        i += 1
    return found


def _words(text: str) -> list[str]:
    return [w for w in text.split("_") if w]


def _stem(words: Sequence[str], end: int, found: Sequence[_Found]) -> list[str]:
    """The head and the words after it in no parameter."""
    dropped = {i for first, value, _, _ in found for i in range(first, value + 1)}
    return [*words[:end], *(w for i, w in enumerate(words) if i >= end and i not in dropped)]


def _python_labels(names: Sequence[str], level: int) -> list[str]:
    """Op (0) or stem (1) of every name, as the module docstring states them: the dtypes marked
    in one pass over all names joined by a character none holds (each token a word of its own,
    marked by characters no name holds either), then each name's words read once."""
    sep, mark, joined = _free_characters(names, 3)
    text = _DTYPE_RE.sub(_marker("_" + sep, mark, joined, None), sep + sep.join(names) + sep)
    layouts = _LAYOUT
    labels = []
    for stripped, name in zip(text[1:-1].split(sep), names):
        words = _words(stripped)
        end = _head(words, mark, joined)
        if level == 0:
            op: list[str] = []
            for word in words[:end]:
                if word.rstrip(_DIGITS) in layouts:
                    if op:
                        break
                    continue
                op.append(word)
            if op:
                labels.append("_".join(op))
                continue
        found = _parameters(words, end, mark, joined)
        labels.append("_".join(_stem(words, end, found)) or name)
    return labels


def name_parameters(name: str) -> list[NameParameter]:
    """The template parameters ``name`` carries, in its order, as :func:`generic_stems` reads
    them: its stem is the name less these (``steel_gemm_block_outmask_bool__nn_float16_bm32``:
    ``mask`` outmask=bool, ``dtype`` float16, ``keyed`` bm=32; stem ``steel_gemm_block_nn``)."""
    sep, mark, joined = _free_characters([name], 3)
    dtypes: list[str] = []
    text = _DTYPE_RE.sub(_marker("_" + sep, mark, joined, dtypes), sep + name + sep)
    words = _words(text[1:-1])
    read = iter(dtypes)
    canonical = {i: next(read) for i, w in enumerate(words) if w in (mark, joined)}
    out = []
    found = _parameters(words, _head(words, mark, joined), mark, joined)
    for first, at, kind, key in found:
        word = words[at]
        if at in canonical:
            value = canonical[at]
        elif kind == "bits":
            value = word.rstrip("bits")
        elif kind == "keyed" and first == at:
            value = word[len(key) :]  # bm64
        else:
            value = word
        out.append(NameParameter(kind, key, value))
    return out


def _free_characters(names: Sequence[str], count: int) -> list[str]:
    """``count`` characters none of ``names`` holds, to join and mark them with: NUL and the
    next ones when free (a metallib ends each name with NUL, so no name of a library holds it),
    else the first free ones that no dtype spelling or word can hold (not a letter, a digit or
    ``_``)."""
    first = [chr(i) for i in range(count)]
    if not any(c in n for n in names for c in first):
        return first
    used = set().union(*names)
    found = []
    for char in map(chr, range(sys.maxunicode + 1)):
        if char not in used and not char.isalnum() and char != "_":
            found.append(char)
            if len(found) == count:
                return found
    raise UsageError("names that hold every character cannot be grouped")  # not a real input


def generic_group(name: str) -> str:
    """The op of a name no rule knows: ``"mykernel_float16_bm64_bn32"`` -> ``"mykernel"``,
    ``"atan2_dense_scalar_lhs_cast_half_half"`` -> ``"atan2"``. A readable label, not a claim
    about how the library was built; reports say "generic"."""
    return generic_groups([name])[0]


def generic_groups(names: Sequence[str]) -> list[str]:
    """The op (:func:`generic_group`) of every name: ``--by kernel`` when no rule applies."""
    return _generic(names, 0)


def generic_stems(names: Sequence[str]) -> list[str]:
    """The stem of every name: its head and the words after it that are neither dtypes nor
    parameters (``abs_dense_castout``): ``--by stem``, the level below an op."""
    return _generic(names, 1)


def _generic(names: Sequence[str], level: int) -> list[str]:
    """Op (0) or stem (1) of every name: by the C extension when it is built (ASCII names,
    ``generic_stems`` in csrc/stems.c), else here, name by name."""
    native = getattr(native_module(), "generic_stems", None)
    if native is not None:
        found: list[str] | None = native(
            names, _SPELLINGS, WORD_ONLY_SPELLINGS, LAYOUT_WORDS, level
        )
        if found is not None:
            return found
    return _python_labels(names, level)
