"""The composite action (``action.yml``): its steps are run here as Actions runs them (``bash
--noprofile --norc -eo pipefail FILE``, the inputs in ``env:`` variables), against local files
and the GitHub API stand-in, for each ``command``.

A step's script is read from action.yml itself (by indentation: no YAML library is needed for
one block), and every variable it reads must be one its ``env:`` sets."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from publish.action_steps import ACTION, run_step
from publish.standin_api import StandIn
from support.workflow_lint import assert_lint_clean

from builder.render.pr_comment import MARKER


def _run(step_env: dict[str, str], tmp_path: Path) -> tuple[int, dict[str, str], str]:
    done, outputs = run_step(
        "size",
        {
            "MLB_ARGS": "",
            "MLB_COMMENT": "true",
            "MLB_WARN_ONLY": "false",
            "MLB_BASE": "",
            "MLB_HEAD": "",
            "MLB_PR": "",
            "MLB_OUT": str(tmp_path / "out"),
            **step_env,
        },
        tmp_path,
    )
    return done.returncode, outputs, done.stdout + done.stderr  # the step's log


def test_compare_on_a_pull_request(
    pair: tuple[Path, Path], github: StandIn, tmp_path: Path
) -> None:
    summary = tmp_path / "summary.md"
    base, head = map(str, pair)
    code, outputs, err = _run(
        {
            "MLB_COMMAND": "compare",
            "MLB_BASE": base,
            "MLB_HEAD": head,
            "MLB_ARGS": "--max-growth\n1%\n--top\n5\n",
            "MLB_PR": "17",
            "GITHUB_STEP_SUMMARY": str(summary),
        },
        tmp_path,
    )
    assert code == 0, err  # the step itself passes: the last step enforces the exit code
    assert outputs["exit-code"] == "1" and "size gate failed: --max-growth 1%" in err
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == ["size.html", "size.json", "size.md"]
    assert outputs["markdown"] == str(out / "size.md")
    (comment,) = github.comments
    assert comment["body"] == (out / "size.md").read_text() == summary.read_text()
    assert str(comment["body"]).startswith(MARKER)


def test_budget_and_report_commands(
    pair: tuple[Path, Path], github: StandIn, tmp_path: Path
) -> None:
    code, outputs, err = _run({"MLB_COMMAND": "report", "MLB_HEAD": str(pair[0])}, tmp_path)
    assert (code, outputs["exit-code"]) == (0, "0"), err
    saved = json.loads((tmp_path / "out" / "report.json").read_text())
    assert saved["file_size"] == pair[0].stat().st_size
    (tmp_path / "pyproject.toml").write_text(
        f'[[tool.metallib-builder.budget]]\ntarget = "{pair[1]}"\nmax-size = "1MB"\n'
        f'base = "out/report.json"\nmax-growth = "0"\n'
    )
    code, outputs, err = _run({"MLB_COMMAND": "budget", "MLB_PR": ""}, tmp_path)  # a push
    assert outputs["exit-code"] == "1" and "max-growth 0 B is +" in err
    assert github.requests == []  # not a pull request: no comment
    assert (tmp_path / "out" / "budget.json").is_file()


def test_an_unknown_command_is_reported(tmp_path: Path) -> None:
    done, outputs = run_step(
        "size", {"MLB_COMMAND": "nonsense", "MLB_OUT": str(tmp_path / "out")}, tmp_path
    )
    assert "::error::command must be budget, compare or report, not 'nonsense'" in done.stdout
    assert outputs["exit-code"] == "2"  # unusable input, as the tool itself says it


def _stub_tool(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """A ``metallib-builder`` first on PATH that records its argv (JSON, one run a line) and
    exits 0: it stands in for the tool, so the test sees exactly what the step passes."""
    bin_dir, record = tmp_path / "bin", tmp_path / "argv.jsonl"
    bin_dir.mkdir()
    stub = bin_dir / "metallib-builder"
    stub.write_text(
        f"#!{sys.executable}\nimport json, os, sys\n"
        "with open(os.environ['STUB_ARGV'], 'a') as f:\n"
        "    f.write(json.dumps(sys.argv[1:]) + '\\n')\n"
    )
    stub.chmod(0o755)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "STUB_ARGV": str(record)}
    return env, record


def _argv(record: Path) -> list[list[str]]:
    return [json.loads(line) for line in record.read_text().splitlines()] if record.exists() else []


def test_args_reach_the_tool_one_per_line_exactly(tmp_path: Path) -> None:
    """Globs stay unexpanded, spaces inside a line stay, quotes are text: what a YAML block
    (``args: |``) holds, line by line, is the tool's argv."""
    env, record = _stub_tool(tmp_path)
    (tmp_path / "a_nax.metal").write_text("")  # an unquoted *_nax.metal would expand to it
    args = (
        "--exclude\n*_nax.metal\n  --source-dir  \nkernels dir/with space\r\n\n"
        "-D\nNAME=a  b\n--exclude='*quoted*'\n"
    )
    code, outputs, err = _run(
        {
            **env,
            "MLB_COMMAND": "compare",
            "MLB_BASE": "base report.json",
            "MLB_HEAD": "build",
            "MLB_ARGS": args,
        },
        tmp_path,
    )
    assert (code, outputs["exit-code"]) == (0, "0"), err
    out = tmp_path / "out"
    assert _argv(record) == [
        ["compare", "base report.json", "build", "--exclude", "*_nax.metal", "--source-dir",
         "kernels dir/with space", "-D", "NAME=a  b", "--exclude='*quoted*'",
         "-o", f"{out}/size.md", "-o", f"{out}/size.html", "-o", f"{out}/size.json"]
    ]  # fmt: skip


def test_an_option_and_its_value_on_one_line_is_refused(tmp_path: Path) -> None:
    """The old one-line form would reach the tool as one argument: the step says how to write
    it instead, and the tool is not run."""
    env, record = _stub_tool(tmp_path)
    _, outputs, log = _run(
        {**env, "MLB_COMMAND": "budget", "MLB_ARGS": "--max-growth 1% --fail-on-new-group"},
        tmp_path,
    )
    assert outputs["exit-code"] == "2" and _argv(record) == []
    assert "args takes one argument per line: '--max-growth' and its value go on two lines" in log


def test_a_head_glob_must_match_exactly_one_path(tmp_path: Path) -> None:
    env, record = _stub_tool(tmp_path)
    dist = tmp_path / "dist dir"
    dist.mkdir()
    (dist / "pkg-1.0-py3-none-any.whl").write_text("")
    step_env = {**env, "MLB_COMMAND": "report", "MLB_HEAD": "dist dir/*.whl"}
    code, outputs, err = _run(step_env, tmp_path)
    assert (code, outputs["exit-code"]) == (0, "0"), err
    assert _argv(record)[0][:2] == ["report", "dist dir/pkg-1.0-py3-none-any.whl"]
    (dist / "pkg-2.0-py3-none-any.whl").write_text("")
    _, outputs, log = _run(step_env, tmp_path)
    assert outputs["exit-code"] == "2" and len(_argv(record)) == 1
    assert "::error::head 'dist dir/*.whl' matches 2 paths; it must match exactly one" in log
    for wheel in dist.iterdir():
        wheel.unlink()
    _, outputs, log = _run(step_env, tmp_path)
    assert outputs["exit-code"] == "2" and len(_argv(record)) == 1
    assert "::error::head 'dist dir/*.whl' matches 0 paths; it must match exactly one" in log


def test_action_yml_passes_the_schema_and_zizmor() -> None:
    """The GitHub action schema (check-jsonschema's own copy, offline) and zizmor's audits
    (offline): no finding at all, so no template injection and every action pinned by commit."""
    assert_lint_clean(ACTION, "vendor.github-actions")
