"""One run, several outputs, one step summary: ``-o size.md -o size.html -o size.json``.

Each file must hold exactly what a run with ``--format`` of its extension prints, and the step
summary must get the markdown, with the gate verdict, once."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from clirun import run_cli

from builder.render.pr_comment import MARKER


def test_three_outputs_and_one_summary(
    pair: tuple[Path, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    base, head = map(str, pair)
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    md, page, doc = tmp_path / "size.md", tmp_path / "size.html", tmp_path / "size.json"
    code, out, err = run_cli(
        [
            "compare",
            base,
            head,
            "--max-growth",
            "1%",
            "-o",
            str(md),
            "-o",
            str(page),
            "-o",
            str(doc),
        ],
        capsys,
    )
    assert code == 1 and out == ""  # everything went to the files
    assert [line.split(" (")[0] for line in err.splitlines() if line.startswith("wrote ")] == [
        f"wrote {md}",
        f"wrote {page}",
        f"wrote {doc}",
    ]
    text = summary.read_text()
    assert text.count(MARKER) == 1 and text.startswith("earlier step\n" + MARKER)
    assert "❌ **FAIL**: --max-growth 1%" in text  # the summary carries the verdict
    monkeypatch.delenv("GITHUB_STEP_SUMMARY")
    for path, fmt in ((md, "markdown"), (page, "html"), (doc, "json")):
        _, alone, _ = run_cli(
            ["compare", base, head, "--max-growth", "1%", "--format", fmt], capsys
        )
        assert path.read_text() == alone, fmt
    assert text.removeprefix("earlier step\n") == md.read_text()
    assert json.loads(doc.read_text())["gates"][0]["passed"] is False
    assert page.read_text().startswith("<!DOCTYPE html>")


def test_report_writes_several_formats_too(
    pair: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table, data = tmp_path / "size.txt", tmp_path / "size.csv"
    code, out, _ = run_cli(["report", str(pair[0]), "-o", str(table), "-o", str(data)], capsys)
    assert code == 0 and out == ""
    _, alone, _ = run_cli(["report", str(pair[0]), "--format", "csv"], capsys)
    assert data.read_text() == alone
    assert "[container overhead]" in table.read_text() and "\x1b" not in table.read_text()


def test_one_output_takes_format_when_given(
    pair: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "report.out"  # no extension to go by: --format decides, as before
    code, _, _ = run_cli(["report", str(pair[0]), "--format", "json", "-o", str(target)], capsys)
    assert code == 0 and json.loads(target.read_text())["schema"] == 3


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["-o", "size.out"],
            "-o size.out: cannot tell the output format from its extension (use .md",
        ),
        (
            ["-o", "a.md", "-o", "b.md", "--format", "json"],
            "--format applies to stdout or to one -o",
        ),
        (["-o", "a.md", "-o", "a.md"], "-o a.md is given twice"),
    ],
)
def test_output_mistakes_fail_before_measuring(
    args: list[str],
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    missing = str(tmp_path / "missing.metallib")  # measuring would fail on this first
    code, out, err = run_cli(["compare", missing, missing, *args], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("error: " + message), err
    assert list(tmp_path.iterdir()) == []


def test_budget_writes_json_markdown_and_table(
    pair: tuple[Path, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    size = pair[1].stat().st_size
    budget = tmp_path / "metallib-size.toml"
    budget.write_text(f'[[budget]]\ntarget = "{pair[1].name}"\nmax-size = {size - 1}\n')
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    code, out, err = run_cli(
        [
            "budget",
            str(budget),
            "-o",
            str(tmp_path / "b.json"),
            "-o",
            str(tmp_path / "b.md"),
            "-o",
            str(tmp_path / "b.txt"),
            "-o",
            str(tmp_path / "b.csv"),
        ],
        capsys,
    )
    assert code == 1 and out == ""
    (check,) = json.loads((tmp_path / "b.json").read_text())["verdicts"]
    assert (check["value"], check["limit"], check["passed"]) == (size, size - 1, False)
    (record,) = csv.DictReader(io.StringIO((tmp_path / "b.csv").read_text()))
    assert (record["key"], record["value"]) == ("max-size", str(size))
    assert (record["limit"], record["passed"]) == (str(size - 1), "false")
    assert summary.read_text() == (tmp_path / "b.md").read_text()
    first = summary.read_text().splitlines()[3]  # marker, heading, blank: then what failed
    assert (
        first.startswith("❌ head.metallib: max-size is")
        and "(**1 of 1 limits exceeded**)" in first
    )
    assert "FAIL" in (tmp_path / "b.txt").read_text()
    code, _, err = run_cli(["budget", str(budget), "-o", str(tmp_path / "b.html")], capsys)
    assert code == 2 and "(use .md, .markdown, .json, .csv, .txt" in err


def test_outputs_are_written_all_or_none_when_one_folder_cannot_be_written(
    pair: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A second ``-o`` under a file (no folder to write in) stops the run before it measures:
    the first ``-o``, which could be written, is not."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    ok, bad = tmp_path / "ok.json", blocker / "size.html"
    code, out, err = run_cli(["report", str(pair[0]), "-o", str(ok), "-o", str(bad)], capsys)
    assert code == 2 and out == ""
    assert err == f"error: cannot write {bad}: Not a directory\n"
    assert not ok.exists() and blocker.read_text() == "not a folder"
