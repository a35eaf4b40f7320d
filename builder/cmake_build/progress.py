"""Ninja's output as progress: ``[n/N] description`` status lines drive a bar, the rest is kept.

Ninja prints one status line per finished edge (``NINJA_STATUS``, set to ``[%f/%t] ``) and, when a
command fails, ``FAILED: <outputs>`` followed by the command and its output. ``NinjaOutput``
parses lines as they arrive; ``failure_text`` returns what a person needs to see when the build
stopped. The display is a rich bar on a terminal and plain status lines otherwise (CI logs).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import TaskID

__all__ = ["NINJA_STATUS", "NinjaOutput", "ProgressDisplay", "Status", "parse_status"]

NINJA_STATUS = "[%f/%t] "
_STATUS = re.compile(r"^\[(\d+)/(\d+)\] (.*)$")


@dataclass(frozen=True)
class Status:
    """One status line: edges finished, edges in total (may grow), and the edge's description."""

    done: int
    total: int
    description: str


def parse_status(line: str) -> Status | None:
    """The status in ``line``, or None for any other output."""
    match = _STATUS.match(line)
    if match is None:
        return None
    return Status(int(match.group(1)), int(match.group(2)), match.group(3).strip())


@dataclass
class NinjaOutput:
    """Everything Ninja printed, divided into status lines and the rest."""

    statuses: list[Status] = field(default_factory=list)
    other: list[str] = field(default_factory=list)

    def feed(self, line: str) -> Status | None:
        status = parse_status(line)
        if status is None:
            self.other.append(line)
        else:
            self.statuses.append(status)
        return status

    @property
    def edges_run(self) -> int:
        return len(self.statuses)

    def failure_text(self) -> str:
        """From the first ``FAILED:`` line on (the failing command and its output), else all."""
        for i, line in enumerate(self.other):
            if line.startswith("FAILED:"):
                return "\n".join(self.other[i:])
        return "\n".join(self.other[-40:])


class ProgressDisplay:
    """A context manager turning statuses into a rich bar (TTY) or plain lines (no TTY)."""

    def __init__(self, console: Console, title: str) -> None:
        self._console = console
        self._title = title
        self._bar: object | None = None
        self._task: TaskID | None = None

    def __enter__(self) -> Callable[[Status], None]:
        if self._console.is_terminal:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("{task.fields[edge]}"),
                console=self._console,
                transient=False,
            )
            progress.start()
            self._task = progress.add_task(self._title, total=None, edge="")
            self._bar = progress
            return self._update_bar
        return self._print_line

    def _update_bar(self, status: Status) -> None:
        from rich.progress import Progress

        assert isinstance(self._bar, Progress) and self._task is not None
        self._bar.update(
            self._task, completed=status.done, total=status.total, edge=status.description
        )

    def _print_line(self, status: Status) -> None:
        self._console.print(
            f"[{status.done}/{status.total}] {status.description}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        from rich.progress import Progress

        if isinstance(self._bar, Progress):
            self._bar.stop()
