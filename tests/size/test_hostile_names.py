"""Hostile names through the real CLI: spreadsheet formulas, terminal control bytes, rich markup,
markdown and HTML in function names (a real container written by the project's writer) and in
the fields of a saved report (``source.target``, ``grouping``, provenance), which a CI job may
read from an artifact it does not control.

What must hold: CSV text cells cannot start a formula while numbers stay numbers; no
human-facing output carries a raw control byte or lets a newline fake a row; rich never reads a
name as markup; the PR comment keeps every untrusted field inert; JSON keeps names exact.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from clirun import run_cli

from builder.metallib import open_metallib
from builder.render.text import md_code, md_text, visible

FORMULAS = ["=cmd|' /C calc'!A0", "+SUM(1)", "-2+3", "@SUM(A1)", "\tTAB", "\rCR"]
CONTROL = [
    "evil\x1b[31mred\x07bell",
    "line1\n    99  fake_row  kernel  1  2",
    "c1\x9b31m",
    "del\x7f",
    "\u202eevil",
]
MARKUP = ["[bold red]markup[/]", ":x: emoji", "back`tick|pipe<script>alert(1)</script>"]
ORDINARY = ["v_copyfloat32float32", "vv_Addfloat16"]
NAMES = FORMULAS + CONTROL + MARKUP + ORDINARY
# Bytes a terminal acts on; only "\n" (the line ends we print) may appear in text output.
RAW_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202e]")

HOSTILE_TARGET = (
    "evil`|<img src=x onerror=alert(1)>\n| fake | row |\n@octocat [link](http://x) \x1b[2J"
)
HOSTILE_GROUPING = "g</sub><details open>`|\x07\n## heading"


@pytest.fixture
def hostile(write_metallib: Callable[..., Path]) -> Path:
    return write_metallib("hostile.metallib", [(n, 100 + 10 * i) for i, n in enumerate(NAMES)])


@pytest.fixture
def hostile_head(write_metallib: Callable[..., Path]) -> Path:
    """The same names, every second one smaller than in ``hostile`` (negative deltas)."""
    sizes = [(n, 100 + 10 * i - (40 if i % 2 else -16)) for i, n in enumerate(NAMES)]
    return write_metallib("head.metallib", sizes)


def _saved(tmp_path: Path, metallib: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A saved report of ``metallib`` whose target, grouping and provenance are hostile."""
    code, out, _ = run_cli(["report", str(metallib), "--format", "json"], capsys)
    assert code == 0
    doc = json.loads(out)
    doc["source"]["target"] = HOSTILE_TARGET
    doc["grouping"] = HOSTILE_GROUPING
    doc["provenance"] = {"tool": {"name": "x<script>", "version": "1\n- [ ] fake"}}
    path = tmp_path / "saved.json"
    path.write_text(json.dumps(doc))
    return path


def _assert_terminal_safe(text: str) -> None:
    assert not RAW_CONTROL.search(text), repr(RAW_CONTROL.search(text))


# -- the escaping function ----------------------------------------------------------------------
def test_visible_shows_controls_and_leaves_ordinary_names_alone() -> None:
    for name in ORDINARY + ["[container overhead]", "/a b/c.metallib (from x==1)"]:
        assert visible(name) is name
    assert visible("a\x1b[0m\x07\n\r\t\x7f\x9b\x00\u202e\\") == (
        "a\\x1b[0m\\x07\\n\\r\\t\\x7f\\x9b\\x00\\u202e\\\\"
    )
    assert md_code("a`b|c\nd") == "`a'b\\|c\\nd`"
    assert md_text("plain text: 1.2 MB (+3.0%)") == "plain text: 1.2 MB (+3.0%)"
    assert md_text("<b>[x](y)`|@u") == "&lt;b&gt;\\[x\\](y)\\`\\|`@`u"


# -- list and verify ----------------------------------------------------------------------------
def test_list_table_shows_names_escaped_one_row_each(
    hostile: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(["list", str(hostile)], capsys)
    assert code == 0
    _assert_terminal_safe(out)
    lines = out.splitlines()
    assert len(lines) == 2 + len(NAMES)  # title, header, one line per function: no fake rows
    for index, (line, name) in enumerate(zip(lines[2:], NAMES)):
        assert line.split()[0] == str(index)
        assert visible(name) in line
    assert "evil\\x1b[31mred\\x07bell" in out and "line1\\n    99  fake_row" in out
    code, out, _ = run_cli(["list", str(hostile), "--format", "json"], capsys)
    assert [f["name"] for f in json.loads(out)["functions"]] == NAMES  # JSON keeps names exact


def test_verify_text_and_error_show_names_escaped(
    hostile: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.metallib"
    data = bytearray(hostile.read_bytes())
    with open_metallib(hostile) as lib:
        columns = lib.columns()
        for name in ("evil\x1b[31mred\x07bell", "line1\n    99  fake_row  kernel  1  2"):
            index = columns.names.index(name)
            data[columns.module_offsets[index] + columns.module_bytes[index] // 2] ^= 0xFF
    broken.write_bytes(bytes(data))
    code, out, err = run_cli(["verify", str(broken)], capsys)
    assert code == 1
    _assert_terminal_safe(out + err)
    fails = [line for line in out.splitlines() if line.startswith("FAIL ")]
    assert len(fails) == 2 and len(out.splitlines()) == 3
    assert fails[0].startswith("FAIL evil\\x1b[31mred\\x07bell: byte offset ")
    assert fails[1].startswith("FAIL line1\\n    99  fake_row  kernel  1  2: byte offset ")
    assert "evil\\x1b[31mred\\x07bell" in err and len(err.splitlines()) == 1
    code, out, _ = run_cli(["verify", str(broken), "--format", "json"], capsys)
    names = {p["function"] for p in json.loads(out)["problems"]}
    assert "evil\x1b[31mred\x07bell" in names


# -- CSV ----------------------------------------------------------------------------------------
def test_report_csv_text_cells_cannot_start_a_formula(
    hostile: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(["report", str(hostile), "--by", "function", "--format", "csv"], capsys)
    assert code == 0
    rows = list(csv.reader(io.StringIO(out)))
    groups = {row[2]: row for row in rows[1:]}
    for name in ["=cmd|' /C calc'!A0", "+SUM(1)", "-2+3", "@SUM(A1)"]:
        assert "'" + name in groups, name
    assert "\\tTAB" in groups and "\\rCR" in groups  # escaped: they no longer start with TAB/CR
    for name in CONTROL + MARKUP + ORDINARY:
        assert visible(name) in groups, name  # control characters escaped, the rest as it is
    assert "evil\\x1b[31mred\\x07bell" in groups and "c1\\x9b31m" in groups
    assert "\\u202eevil" in groups and "line1\\n    99  fake_row  kernel  1  2" in groups
    assert RAW_CONTROL.search(out.replace("\n", "")) is None  # cat report.csv runs nothing
    for row in rows[1:]:
        assert not row[2].startswith(("=", "+", "-", "@", "\t", "\r"))
        int(row[4])  # bytes stay plain numbers
    assert sum(int(row[4]) for row in rows[1:]) == hostile.stat().st_size


def test_compare_csv_guards_names_and_keeps_negative_numbers(
    hostile: Path, hostile_head: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["compare", str(hostile), str(hostile_head), "--by", "function", "--format", "csv"]
    code, out, _ = run_cli(args, capsys)
    assert code == 0
    rows = list(csv.reader(io.StringIO(out)))
    deltas = {row[0]: row for row in rows[1:]}
    assert "'=cmd|' /C calc'!A0" in deltas and "'-2+3" in deltas
    negative = [row for row in rows[1:] if int(row[5]) < 0]
    assert negative, "the fixture must shrink some functions"
    for row in negative:
        assert row[5].startswith("-") and row[6].startswith("-")  # not "'-56"
        float(row[6])
    total = rows[-1]
    assert total[0] == "[total]"
    assert int(total[5]) == hostile_head.stat().st_size - hostile.stat().st_size


# -- rich tables --------------------------------------------------------------------------------
def test_report_and_compare_tables_escape_names_and_markup(
    hostile: Path, hostile_head: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(["report", str(hostile), "--by", "function", "--top", "0"], capsys)
    assert code == 0
    _assert_terminal_safe(out)
    for name in NAMES:
        if "\n" not in name:  # rich wraps long cells; the fake-row name is checked below
            assert visible(name) in out, name
    assert "[bold red]markup[/]" in out and ":x: emoji" in out and "❌" not in out
    rows = [line for line in out.splitlines() if line.startswith("│")]
    assert not any("fake_row  kernel" in r and "line1" not in r for r in rows)
    saved = _saved(tmp_path, hostile, capsys)
    code, out, err = run_cli(["compare", str(saved), str(hostile_head), "--max-size", "1"], capsys)
    assert code == 1
    _assert_terminal_safe(out + err)
    assert "\\x1b[2J" in out and "\\n| fake | row |" in out.replace("\n", "")
    assert "<details open>`|\\x07\\n## heading" in out.replace("\n", "")  # the grouping note
    assert "note: base is grouped by kernel (g</sub><details open>`|\\x07\\n## heading)" in err
    assert "error: size gate failed: --max-size 1 B" in err and len(err.splitlines()) == 2


# -- PR comment and report markdown -------------------------------------------------------------
def test_pr_comment_keeps_saved_report_fields_inert(
    hostile: Path, hostile_head: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = _saved(tmp_path, hostile, capsys)
    args = [
        "compare",
        str(saved),
        str(hostile_head),
        "--format",
        "markdown",
        "--top",
        "0",
        "--max-growth",
        "1%",
        "--warn-only",
    ]
    code, out, _ = run_cli(args, capsys)
    assert code == 0
    _assert_terminal_safe(out)
    outside_code = re.sub(r"`[^`\n]*`", "", out)
    for tag in ("<img", "<script", "<details open>", "</sub><"):
        assert tag not in outside_code, tag
    assert out.count("<details>") == out.count("</details>")
    assert out.count("</sub>") == out.count("<sub>") == 1
    lines = out.splitlines()
    assert not [line for line in lines if line.startswith(("| fake", "## heading", "- [ ]"))]
    assert "@octocat" not in outside_code  # only inside code: no mention
    headline = next(line for line in lines if line.startswith("**"))
    assert md_code(HOSTILE_TARGET) in headline
    assert f"({md_text(HOSTILE_GROUPING)})" in out  # the note about the differing grouping
    for line in lines:
        if line.startswith("| `"):  # a table row: every pipe but the cell borders is escaped
            cells = re.split(r"(?<!\\)\|", line)
            assert len(cells) in (5, 6, 7), line
    code, out, _ = run_cli(
        ["report", str(saved), "--format", "markdown", "--by", "function", "--top", "0"], capsys
    )
    assert code == 0
    _assert_terminal_safe(out)
    assert out.startswith(f"### Size of {md_code(HOSTILE_TARGET)}\n")
    outside_code = re.sub(r"`[^`\n]*`", "", out)
    assert "<details" not in outside_code and "<script" not in outside_code
    assert "<img" not in outside_code and "@" not in outside_code.replace("`@`", "")
    for name in NAMES:
        assert f"| {md_code(name)} |" in out, name


def test_jit_family_names_from_a_manifest_are_escaped_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    build = tmp_path / "build"
    build.mkdir()
    units = [
        {
            "name": name,
            "kind": "entry_file",
            "mode": "jit",
            "host_names": [],
            "embedded_bytes": 100 + i,
        }
        for i, name in enumerate(FORMULAS + CONTROL + MARKUP)
    ]
    manifest = {"schema": 2, "metallib": None, "host_library": "libmetal_jit.so", "units": units}
    (build / "manifest.json").write_text(json.dumps(manifest))
    code, out, _ = run_cli(["report", str(build), "--top", "0"], capsys)
    assert code == 0
    _assert_terminal_safe(out)
    assert "[bold red]markup[/]" in out and "evil\\x1b[31mred\\x07bell" in out
    code, out, _ = run_cli(["report", str(build), "--format", "markdown", "--top", "0"], capsys)
    _assert_terminal_safe(out)
    for name in FORMULAS + CONTROL + MARKUP:
        assert f"| {md_code(name)} |" in out, name
    code, out, _ = run_cli(["report", str(build), "--format", "csv"], capsys)
    rows = list(csv.reader(io.StringIO(out)))[1:]
    assert {row[2] for row in rows} >= {"'" + name for name in FORMULAS[:4]}
    assert {row[2] for row in rows} >= {visible(name) for name in FORMULAS[4:] + CONTROL}
    assert not [row for row in rows if row[2].startswith(("=", "+", "-", "@", "\t", "\r"))]
