"""Names that drive terminals, and file names that are not UTF-8, in every output format.

ESC starts escape sequences, CR returns to the line's start, BEL rings, U+009B is a one-byte
CSI, U+202E reverses the text after it. CSV used to keep them raw (``cat report.csv`` then runs
them), the ``kernels`` table printed file names raw and split its rows at a newline, and JSON
held lone surrogates for file names that are not UTF-8. The expectations are written out here
by hand: each character and the escape it must show as.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

from support.hostile import Cli, library_with

# (raw piece, how every text output must show it)
PIECES = [
    ("\x1b[31m", "\\x1b[31m"),
    ("\r", "\\r"),
    ("\x07", "\\x07"),
    ("\x9b", "\\x9b"),
    ("\u202e", "\\u202e"),
    ("\n", "\\n"),
]
HOSTILE = [f"k{i}{raw}tail" for i, (raw, _) in enumerate(PIECES)]
SHOWN = [f"k{i}{shown}tail" for i, (_, shown) in enumerate(PIECES)]
RAW_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202e\ud800-\udfff]")


def _strict_strings(value: Any) -> list[str]:
    """Every string of a parsed JSON document, each checked to be valid Unicode (a lone
    surrogate cannot be encoded as UTF-8)."""
    if isinstance(value, str):
        value.encode("utf-8")
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return [s for item in items for s in _strict_strings(item)]


def test_csv_shows_control_characters_escaped(tmp_path: Path, cli: Cli) -> None:
    library = tmp_path / "lib.metallib"
    library.write_bytes(library_with([*HOSTILE, "=cmd|' /C calc'!A0", "plain"]))
    other = tmp_path / "other.metallib"
    other.write_bytes(library_with([*HOSTILE[:3], "plain"]))
    for args in (
        ["report", library, "--by", "function", "--format", "csv"],
        ["compare", library, other, "--by", "function", "--format", "csv"],
    ):
        code, out, err = cli(*args)
        assert code == 0, err
        assert RAW_CONTROL.search(out.replace("\n", "")) is None, args
        cells = {cell for row in csv.reader(io.StringIO(out)) for cell in row}
        assert set(SHOWN) <= cells and "'=cmd|' /C calc'!A0" in cells and "plain" in cells
        assert out.count("\n") == len(list(csv.reader(io.StringIO(out))))  # one line per row


def test_the_kernels_table_escapes_file_names_on_one_row_each(tmp_path: Path, cli: Cli) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    for i, name in enumerate(HOSTILE):
        (tree / f"{name}.metal").write_text(f"kernel void kernel_{i}() {{}}\n")
    code, out, err = cli("kernels", "--source-dir", tree)
    assert code == 0, err
    assert RAW_CONTROL.search(out.replace("\n", "")) is None
    rows = [line for line in out.splitlines() if ".metal" in line]
    assert len(rows) == len(HOSTILE)
    for row, shown in zip(rows, sorted(f"{s}.metal" for s in SHOWN)):
        assert shown in row, (shown, row)
    code, out, _ = cli("kernels", "--source-dir", tree, "--format", "json")
    assert {k["source"] for k in json.loads(out)["kernels"]} == {f"{n}.metal" for n in HOSTILE}


def test_file_names_that_are_not_utf8_are_valid_json(tmp_path: Path, cli: Cli) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    raw = b"caf\xe9-\xff.metal"  # Latin-1 bytes: not UTF-8
    (tree / raw.decode("utf-8", "surrogateescape")).write_text("kernel void latin() {}\n")
    (tree / "ok.metal").write_text("kernel void fine() {}\n")
    library = tmp_path / "lib.metallib"
    library.write_bytes(library_with(["latin", "fine"]))
    shown = "caf\\xe9-\\xff.metal"  # each byte that is not UTF-8 as \xNN (docs/report-schema.md)
    for args in (
        ["kernels", "--source-dir", tree, "--format", "json"],
        ["report", library, "--source-dir", tree, "--by", "source", "--format", "json"],
        ["compare", library, library, "--source-dir", tree, "--by", "source", "--format", "json"],
    ):
        code, out, err = cli(*args)
        assert code == 0, err
        assert shown in _strict_strings(json.loads(out)), args
    for fmt in ("table", "csv", "markdown"):
        code, out, err = cli(
            "report", library, "--source-dir", tree, "--by", "source", "--format", fmt
        )
        assert code == 0 and shown in out, (fmt, out + err)
    schema = Path(__file__).resolve().parents[2] / "docs" / "report-schema.md"
    assert "\\xNN" in schema.read_text()
