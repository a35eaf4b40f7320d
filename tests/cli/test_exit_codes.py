"""Exit 1 is a failed gate or check and nothing else: a bug (an exception the tool did not
expect) is exit 3 with its traceback and one ``error:`` line; ``--debug`` lets it through. (A
closed output pipe: tests/publish/test_closed_pipe.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from clirun import run_cli
from synthetic import synthetic_bytes

import builder.render.library


def _boom(*args: object, **kwargs: object) -> None:
    raise RuntimeError("a bug planted by the test")


def test_a_bug_is_exit_3_not_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    lib = tmp_path / "a.metallib"
    lib.write_bytes(synthetic_bytes([("k", 100)]))
    assert run_cli(["list", str(lib)], capsys)[0] == 0
    monkeypatch.setattr(builder.render.library, "function_rows", _boom)
    code, out, err = run_cli(["list", str(lib)], capsys)
    assert code == 3 and out == ""
    assert "Traceback" in err and "RuntimeError: a bug planted by the test" in err
    assert err.splitlines()[-1].startswith("error: internal error in metallib-builder")
    with pytest.raises(RuntimeError, match="planted"):
        run_cli(["--debug", "list", str(lib)], capsys)
