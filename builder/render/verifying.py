"""``verify``'s output for one library: its problems and verdict as lines, or a JSON object;
and the last line over the libraries of a target that holds several.

Names come from the file: shown through ``visible`` (ESC, BEL, newline escaped) in text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from builder.render.text import human_size, visible

if TYPE_CHECKING:
    from builder.metallib.verify import VerifyReport

__all__ = ["SHOWN_PROBLEMS", "verify_dict", "verify_lines", "verify_verdict"]

SHOWN_PROBLEMS = 50
"""Problems printed per library in text (JSON has every one)."""


def verify_lines(report: VerifyReport, shown: str) -> list[str]:
    """A ``FAIL`` line per problem (the first ``SHOWN_PROBLEMS``), then ``OK:`` or
    ``FAILED:`` naming the library, its functions, format and the module bytes hashed."""
    lines = []
    for problem in report.problems[:SHOWN_PROBLEMS]:
        who = visible(problem.function) if problem.function is not None else "(container)"
        lines.append(f"FAIL {who}: byte offset {problem.offset}: {visible(problem.message)}")
    if len(report.problems) > SHOWN_PROBLEMS:
        lines.append(f"... and {len(report.problems) - SHOWN_PROBLEMS} more problems")
    verdict = "OK" if report.ok else "FAILED"
    lines.append(
        f"{verdict}: {visible(shown)}: {report.function_count} functions, "
        f"format {report.format_version}, "
        f"{report.hashed_bytes} module bytes hashed ({human_size(report.hashed_bytes)})"
    )
    return lines


def verify_verdict(target: str, count: int, failed: Sequence[str]) -> str:
    """The last line over the ``count`` libraries of ``target``: ``OK`` when none failed, else
    ``FAILED`` naming the ones that did."""
    if not failed:
        return f"OK: {visible(target)}: all {count} libraries verified"
    names = ", ".join(visible(name) for name in failed)
    return f"FAILED: {visible(target)}: {len(failed)} of {count} libraries failed ({names})"


def verify_dict(report: VerifyReport, shown: str, member: str | None) -> dict[str, object]:
    """The JSON object of one library (schema 1): its verdict, figures and every problem;
    ``member`` is its name in the target (None: the target is the library)."""
    return {
        "schema": 1,
        "source": shown,
        "member": member,
        "ok": report.ok,
        "file_size": report.file_size,
        "format_version": report.format_version,
        "function_count": report.function_count,
        "hashed_bytes": report.hashed_bytes,
        "problems": [
            {"function": p.function, "offset": p.offset, "message": p.message}
            for p in report.problems
        ],
    }
