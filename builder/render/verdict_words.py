"""The words of the gates on what a library holds (``builder.size.content_gates``): what a
reviewer reads first ("1,569 `*_nax*` functions removed (67.27 MB)", "head holds 0 functions
matching `*_nax*` (base: 1,569)"), in the terminal, a table, markdown or JSON. ``said`` is the
phrase; ``builder.render.text.gate_message`` puts the option in front of it, and the PR comment's
first line (``headline``) joins the failed ones.

Function names come from the library: untrusted, so every one is shown through ``quote``
(``visible`` in quotes for text, ``md_code`` for markdown).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from builder.render.basic_words import human_size, visible

if TYPE_CHECKING:
    from builder.size.verdicts import Verdict

__all__ = ["CONTENT", "FEW", "counts", "option_text", "quoted", "said"]

CONTENT = frozenset(
    {
        "require",
        "fail-on-removed",
        "min-functions",
        "empty-library",
        "max-deployment-target",
        "max-metal-version",
        "fail-on-platform-change",
        "fail-on-missing",
        "max-unattributed",
    }
)
"""The verdicts worded here."""
FEW = 3
"""Names a message shows before "and N more" (JSON lists all)."""
_FUNCTIONS = frozenset({"max-functions", "require", "fail-on-removed", "min-functions"})


def quoted(text: str) -> str:
    """Untrusted text in quotes for the terminal and plain text, control characters escaped."""
    return f"'{visible(text)}'"


def counts(verdict: Verdict) -> str:
    """What ``limit`` and ``value`` count: ``bytes``, ``functions``, ``version`` (then the
    texts are the figures), ``changes`` or ``libraries``."""
    if verdict.name in _FUNCTIONS or verdict.name == "empty-library":
        return "functions"
    if verdict.limit_text is not None:
        return "version"
    if verdict.name == "fail-on-platform-change":
        return "changes"
    if verdict.name == "fail-on-missing":
        return "kernels"
    return "groups" if verdict.name == "fail-on-new-group" else "bytes"


def option_text(verdict: Verdict) -> str:
    """The gate as the command line gives it: ``--require '*_nax*>=1'``, ``--max-deployment-target
    14.0``; ``empty-library`` has no option (it is always checked)."""
    name = verdict.name
    if name == "empty-library":
        return name
    if name == "require" and verdict.pattern is not None:
        return f"--{name} {quoted(f'{verdict.pattern}>={verdict.limit}')}"
    if name == "fail-on-removed" and verdict.pattern not in (None, "*"):
        return f"--{name} {quoted(verdict.pattern or '')}"
    if name == "min-functions":
        return f"--{name} {verdict.limit:,}"
    if name == "max-unattributed":
        return f"--{name} {human_size(verdict.limit)}"
    if verdict.limit_text is not None:
        return f"--{name} {verdict.limit_text}"
    return f"--{name}"


def _listed(names: Sequence[str], quote: Callable[[str], str]) -> str:
    shown = ", ".join(quote(n) for n in names[:FEW])
    more = len(names) - FEW
    return shown + (f" and {more:,} more" if more > 0 else "")


def said(
    verdict: Verdict, who: str, quote: Callable[[str], str] = quoted, *, listed: bool = True
) -> str:
    """The verdict of a content gate as a phrase: what ``who`` (``head``, a budget's name, a
    library) holds against the limit. Sizes are the measured ones (``base_value``); removed
    functions are named (the first few) unless not ``listed`` (a headline)."""
    v, name = verdict, verdict.name
    pattern = quote(v.pattern or "*")
    if name == "require":
        needed = f", at least {v.limit:,} required" if v.limit > 1 or v.passed else ""
        base = "" if v.base_value is None else f" (base: {v.base_value:,})"
        if v.value == 0 and v.base_value == 0:  # matches nothing anywhere: a misspelt glob?
            base = " (base: 0 either; is the glob spelt as the names are?)"
        elif listed and not v.passed and v.names:  # the ones head left out, by name
            base = f" (base: {v.base_value:,}; head lacks {_listed(v.names, quote)})"
        return f"{who} holds {v.value:,} functions matching {pattern}{needed}{base}"
    if name == "fail-on-removed":
        which = "" if v.pattern in (None, "*") else f"{pattern} "
        if v.passed:
            return f"no {which}function of base is missing from {who}"
        size = human_size(v.base_value or 0)
        named = f": {_listed(v.names, quote)}" if listed and v.names else ""
        return f"{v.value:,} {which}functions removed ({size}){named}"
    if name == "min-functions":
        relation = "fewer than" if not v.passed else "at least"
        return f"{who} holds {v.value:,} functions, {relation} {v.limit:,}"
    if name == "empty-library":
        size = human_size(v.base_value or 0)
        return f"{who} holds no function: an empty library ({size}) fails at load time"
    if name == "max-deployment-target":
        relation = "above" if not v.passed else "at most"
        return f"{who}'s deployment target {v.value_text} is {relation} {v.limit_text}"
    if name == "max-metal-version":
        relation = "above" if not v.passed else "at most"
        return f"{who} states Metal language {v.value_text}, {relation} {v.limit_text}"
    if name == "fail-on-platform-change":
        if v.passed:
            return f"{who}'s platform is base's (deployment target, Metal and AIR versions)"
        return f"{who}'s platform changed: {'; '.join(v.names)}"
    if name == "fail-on-missing":  # the kernel tree's (builder.size.tree_match)
        if v.passed:
            return f"{who} holds every kernel of its tree"
        named = f": {_listed(v.names, quote)}" if listed and v.names else ""
        return f"{who} lacks {v.value:,} kernels of its tree{named}"
    if name == "max-unattributed":
        relation = "above" if not v.passed else "at most"
        return (
            f"{who} has {human_size(v.value)} ({v.value:,} bytes) produced by no entry file "
            f"('other'), {relation} {human_size(v.limit)} ({v.limit:,} bytes)"
        )
    raise ValueError(f"not a content verdict: {name}")
