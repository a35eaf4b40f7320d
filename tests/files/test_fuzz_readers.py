"""The seeded fuzz pass of ``benchmarks/fuzz_readers.py``, small enough for every CI run: 500
mutated budget files, pyproject.toml files, metallib.toml files and saved report JSON, each
accepted or refused with the tool's own one-line error. (The full pass, 21,000 inputs, is run by
hand; its figure is in docs/security.md.)"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "fuzz_readers.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fuzz_readers", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_500_seeded_inputs_end_in_no_traceback(tmp_path: Path) -> None:
    result = _script().run(500, seed=2024, keep=tmp_path / "failed")
    assert result.tracebacks == [], "\n\n".join(result.tracebacks[:3])
    assert result.inputs == 500 and len(result.per_reader) == 4
    # the mutations reach past the parsers: some inputs are still valid, most are refused
    assert 0 < result.refused < result.inputs
