"""A run's markdown to where CI readers see it: the step summary (once) and the sticky comment.

``compare`` and ``budget`` call ``publish_markdown`` once per run, after every gate is decided, so
the summary and the comment always carry the verdict. The pull request is looked up before any
measuring (``pull_request_from_env``), so a job missing its token fails in a second, not after a
download.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from builder.publish.github import PullRequest, post_sticky_comment
from builder.publish.summary import append_step_summary

__all__ = ["publish_markdown"]


def publish_markdown(
    markdown: str,
    *,
    marker: str,
    pull_request: PullRequest | None,
    environ: Mapping[str, str] = os.environ,
) -> list[str]:
    """Append ``markdown`` to the step summary (when Actions set one) and, given a pull request,
    create or edit its comment that starts with ``marker``. Returns what was done, one line each,
    for stderr."""
    done = []
    summary = append_step_summary(markdown, environ)
    if summary is not None:
        done.append(f"appended the markdown to the step summary {summary}")
    if pull_request is not None:
        posted = post_sticky_comment(pull_request, markdown, marker)
        where = posted.url or f"comment {posted.comment_id}"
        done.append(
            f"{posted.action} the size comment on pull request #{pull_request.number}: {where}"
        )
    return done
