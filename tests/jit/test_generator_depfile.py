"""A catalog family's generated host library sources (the one tree JIT path): their depfile names
the package modules the generator ran.

The list is read from the generating process (``builder.files.atomic.own_modules``), not kept by
hand, so a module that shapes the output cannot be missing from it. The reference here is
CPython's own record of what the process imported (``-X importtime``), read independently of the
tool.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import builder
from builder.resources import metal_src_dir

_SCRIPT = """
import sys
from pathlib import Path
from builder.cmake_build import plan, tree_jit
out = Path(sys.argv[1])
plan.main(["--select", "--source-dir", sys.argv[2], "--kernels", "unary", "--build-dir", str(out)])
tree_jit.main(["--plan", str(out / "metal_plan" / "plan.json"), "--out-dir", str(out),
               "--units", "unary", "--depfile", str(out / "unary.d")])
"""


def _depfile_paths(text: str) -> list[str]:
    """The prerequisites of a one-rule Make depfile without escaped characters."""
    body = text.replace("\\\n", " ").split(":", 1)[1]
    return body.split()


def test_the_depfile_names_every_package_module_the_generator_imported(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", _SCRIPT, str(tmp_path), str(metal_src_dir())],
        capture_output=True,
        text=True,
        check=True,
    )
    imported = set(re.findall(r"\|\s+(builder(?:\.\w+)*)\s*$", run.stderr, re.MULTILINE))
    assert "builder.cmake_build.tree_jit" in imported and "builder.jit.writer" in imported
    package = Path(builder.__file__).resolve().parent
    listed = {
        Path(p).resolve()
        for p in _depfile_paths((tmp_path / "unary.d").read_text("utf-8"))
        if Path(p).resolve().is_relative_to(package)
    }
    expected = set()
    for name in imported:
        parts = name.split(".")[1:]
        module = package.joinpath(*parts)
        expected.add(module / "__init__.py" if module.is_dir() else module.with_suffix(".py"))
    assert listed == expected
