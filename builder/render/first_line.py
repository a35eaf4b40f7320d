"""The first line of the PR comment and of the markdown, after the heading and before any
table: what failed, in a reviewer's words (issue 35: "1,569 NAX functions removed"), so that
nobody has to open the tables to learn why the check is red."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from builder.render.text import clip, human_delta, human_size, limit_text, md_code
from builder.render.verdict_words import CONTENT, said
from builder.size.verdicts import GROWTH

if TYPE_CHECKING:
    from builder.size.verdicts import Verdict

__all__ = ["HEADLINE", "headline", "size_words"]

HEADLINE = 3
"""Failed verdicts the first line words; the rest are counted (each is listed below it)."""
_CAP = 1200
_NAME_CAP = 160


def headline(
    verdicts: Sequence[tuple[Verdict, str]],
    passed: str,
    words: Callable[[Verdict, str], str] | None = None,
) -> str | None:
    """Every failed verdict in a reviewer's words (``❌ 1,569 `*_nax*` functions removed
    (67.27 MB)``), the first few and how many more; or ``✅ all N {passed}``; None without
    verdicts. Each of ``verdicts`` comes with who it is about (``head``, a library, a budget:
    markdown); ``words`` words the others (the size limits; default: ``compare``'s gates)."""
    if not verdicts:
        return None
    failed = [(v, who) for v, who in verdicts if not v.passed]
    if not failed:
        return f"✅ all {len(verdicts)} {passed}"
    other = words or size_words
    shown = [
        said(v, who, lambda name: md_code(name, _NAME_CAP), listed=False)
        if v.name in CONTENT
        else other(v, who)
        for v, who in failed[:HEADLINE]
    ]
    more = len(failed) - HEADLINE
    text = "; ".join(shown) + (f"; and {more:,} more" if more > 0 else "")
    return clip(f"❌ {text}", _CAP)


def size_words(verdict: Verdict, who: str) -> str:
    """A failed size gate of ``compare`` as a reviewer reads it: ``head grew by +2.82 kB
    (+53.59%), more than 5% (263 B)``, ``new groups in head: `rope```."""
    v = verdict
    if v.name in GROWTH and v.growth is not None:
        percent = "" if v.percent is None else f" ({v.percent:+.2f}%)"
        what = f"the download of {who}" if v.name == "max-download-growth" else who
        allowed = f"{limit_text(v.growth)} ({human_size(v.limit)})"
        return f"{what} grew by {human_delta(v.value)}{percent}, more than {allowed}"
    if v.name == "fail-on-new-group":
        return f"new groups in {who}: " + ", ".join(md_code(g, _NAME_CAP) for g in v.new_groups)
    return f"{who} is {human_size(v.value)}, above {human_size(v.limit)} (--{v.name})"
