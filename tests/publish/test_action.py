"""The composite action (``action.yml``): its measuring step is run here as Actions runs it, with
bash, against local files and the GitHub API stand-in, for each ``command``.

The step's script is read from action.yml itself (by indentation: no YAML library is needed for
one block), and every variable it reads must be one its ``env:`` sets."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

from standin_api import StandIn

from builder.render.pr_comment import MARKER

ACTION = Path(__file__).resolve().parents[2] / "action.yml"


def _step(step_id: str) -> tuple[str, set[str]]:
    """The ``run:`` script of the step with ``id: step_id`` and the names its ``env:`` sets."""
    lines = ACTION.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == f"id: {step_id}")
    indent = len(lines[start]) - len(lines[start].lstrip())
    end = next(
        (
            i
            for i in range(start + 1, len(lines))
            if lines[i].strip() and len(lines[i]) - len(lines[i].lstrip()) < indent
        ),
        len(lines),
    )
    block = lines[start:end]
    env_at = block.index(" " * indent + "env:")
    run_at = block.index(" " * indent + "run: |")
    names = {line.split(":")[0].strip() for line in block[env_at + 1 : run_at]}
    script = "\n".join(line[indent + 2 :] for line in block[run_at + 1 :])
    return script, names


def _run(step_env: dict[str, str], tmp_path: Path) -> tuple[int, dict[str, str], str]:
    script, declared = _step("size")
    used = set(re.findall(r"\$\{?(MLB_\w+)", script))
    assert used <= declared, f"the script reads variables its env: does not set: {used - declared}"
    output = tmp_path / "github_output"
    output.write_text("")
    env = {
        **os.environ,
        "GITHUB_OUTPUT": str(output),
        "MLB_ARGS": "",
        "MLB_COMMENT": "true",
        "MLB_WARN_ONLY": "false",
        "MLB_BASE": "",
        "MLB_HEAD": "",
        "MLB_PR": "",
        "MLB_OUT": str(tmp_path / "out"),
        **step_env,
    }
    done = subprocess.run(
        ["bash", "-c", script],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines())
    return done.returncode, outputs, done.stderr


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
            "MLB_ARGS": "--max-growth 1% --top 5",
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
    script, _ = _step("size")
    output = tmp_path / "github_output"
    output.write_text("")
    done = subprocess.run(
        ["bash", "-c", script],
        capture_output=True,
        text=True,
        check=False,
        env={
            **os.environ,
            "GITHUB_OUTPUT": str(output),
            "MLB_COMMAND": "nonsense",
            "MLB_OUT": str(tmp_path / "out"),
        },
        timeout=60,
    )
    assert "::error::command must be budget, compare or report, not 'nonsense'" in done.stdout
    assert "exit-code=1" in output.read_text()
