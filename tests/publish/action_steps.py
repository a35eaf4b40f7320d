"""The steps of the composite action (``action.yml``), run as the runner runs them.

A step's script is read from action.yml itself (by indentation: no YAML library is needed for
one block) and run with ``bash --noprofile --norc -eo pipefail FILE``, the command line Actions
uses for ``shell: bash``, with the step's ``env:`` set as the runner sets it from the inputs.
Every ``MLB_*`` variable the script reads must be one its ``env:`` sets.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

__all__ = ["ACTION", "run_step", "step"]

ACTION = Path(__file__).resolve().parents[2] / "action.yml"


def step(step_id: str) -> tuple[str, set[str]]:
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


def run_step(
    step_id: str, step_env: dict[str, str], cwd: Path
) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    """Run a step's script as the runner does, with ``step_env`` (the step's ``env:`` as the
    runner sets it) over this process's environment; the process and the step's outputs."""
    script, declared = step(step_id)
    used = set(re.findall(r"\$\{?(MLB_\w+)", script))
    assert used <= declared, f"the script reads variables its env: does not set: {used - declared}"
    output = cwd / f"github_output_{step_id}"
    output.write_text("")
    script_file = cwd / f"step_{step_id}.sh"
    script_file.write_text(script)
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script_file)],
        env={**os.environ, "GITHUB_OUTPUT": str(output), **step_env},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines())
    return done, outputs
