"""The seeded fuzz pass of ``benchmarks/fuzz_binaries.py``, small enough for every CI run: 150
mutated binaries and wheels (thin, fat and ELF binaries holding metallibs, a host library, a
wheel; built here with clang and lld), each given to ``list``, ``verify``, ``report``,
``sources``, ``slim`` and ``compare``, each command ending in its normal result or exit 2 and one
line. (The full pass is run by hand; its figures are in docs/security.md.)

The script runs as a child process: it forks one process per input, which a process with other
threads (a pytest-xdist worker) should not do."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "fuzz_binaries.py"

pytestmark = pytest.mark.slow


def test_150_seeded_inputs_end_in_no_traceback(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--inputs", "150", "--seed", "2033", "--jobs", "2"]
        + ["--no-real", "--json", "--keep", str(tmp_path / "failed")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr
    result = json.loads(done.stdout)
    assert result["tracebacks"] == 0, json.dumps(result["examples"], indent=1)
    assert result["hangs"] == [] and result["killed"] == []
    assert done.returncode == 0
    assert result["inputs"] == 150 and result["commands"] == 6 * 150
    assert set(result["per_seed"]) == {"thin Mach-O", "fat Mach-O", "ELF", "host library", "wheel"}
    # the mutations reach past the readers: every command both succeeds and refuses some inputs
    for command in ("list", "verify", "report", "sources", "slim", "compare"):
        assert result["exits"].get(f"{command} 0", 0) > 0, command
        assert result["exits"].get(f"{command} 2", 0) > 0, command
