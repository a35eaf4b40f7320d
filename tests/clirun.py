"""Run the CLI in-process, as the console script would, and capture what it prints."""

from __future__ import annotations

import pytest

from builder.cli.group import main

__all__ = ["run_cli"]


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``metallib-builder ARGS`` -> (exit code, stdout, stderr)."""
    try:
        code = main(args)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return int(code or 0), out, err
