"""embed's flags mean what they mean on every other command (issue 34 item 9): ``-I`` is the
tree setting's folder for quoted includes, and embed's '#define' written into its preambles is
``--preamble-define``, with ``-D`` kept as its hidden old spelling for scripts."""

from __future__ import annotations

from pathlib import Path

import pytest
from clirun import run_cli


def _tree(tmp_path: Path) -> Path:
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "util.h").write_text("#define UTIL 1\n")
    header = tmp_path / "k.h"
    header.write_text('#include "util.h"\nint k = X;\n')
    return header


def test_preamble_define_and_its_old_spelling_write_the_same_source(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    header = _tree(tmp_path)
    written: list[str] = []
    for flag in ("--preamble-define", "-D", "--define"):
        out = tmp_path / f"out{len(written)}.cpp"
        args = ["embed", str(header), "-I", str(tmp_path / "inc"), flag, "X=2", "-o", str(out)]
        code, _, err = run_cli(args, capsys)
        assert code == 0, err
        written.append(out.read_text())
    assert written[0] == written[1] == written[2]
    text = written[0]
    # the definition comes first, then the header with its include inlined
    assert text.index("#define X 2\n") < text.index("#define UTIL 1") < text.index("int k = X;")


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["-I", "no-such-folder"], "-I no-such-folder: not a folder"),
        (["--preamble-define", "X=1\n#x"], "--preamble-define must be NAME or NAME=VALUE"),
    ],
)
def test_bad_flags_exit_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], said: str
) -> None:
    header = _tree(tmp_path)
    out = tmp_path / "out.cpp"
    code, stdout, err = run_cli(["embed", str(header), *args, "-o", str(out)], capsys)
    assert code == 2 and stdout == "" and err.count("\n") == 1 and said in err, err
    assert not out.exists()
