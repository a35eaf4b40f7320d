"""A time limit inside a test, for code whose failure mode is never returning (a search that
stops advancing, a walk that goes round an include cycle): the test fails instead of hanging, so a
mutation run counts such a mutant as caught at once, not at its timeout."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["deadline"]


@contextmanager
def deadline(seconds: float = 10) -> Iterator[None]:
    """Raise ``TimeoutError`` in the body once it has run ``seconds`` (main thread only:
    SIGALRM)."""

    def expired(signum: int, frame: FrameType | None) -> None:
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
