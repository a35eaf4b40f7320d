"""scripts/release_checks.py as a module, for the tests of tests/release."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

__all__ = ["SCRIPT", "release_checks"]

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "release_checks.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("release_checks", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


release_checks = _load()
