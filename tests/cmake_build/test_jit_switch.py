"""The JIT switch in CMake (issue 37, item 1): ``METALLIB_JIT`` takes the globs or any CMake
boolean, read as CMake's ``if(<constant>)`` reads one: true (``ON``, ``YES``, ``TRUE``, ``Y``, a
non-zero number) builds every unit JIT, false (``OFF``, ``NO``, ``FALSE``, ``N``, ``0``, empty)
none, in any case. The expected readings are CMake's documented constants, written here."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from builder.cmake_build.cmake import find_tool
from builder.kernels import load_catalog

from .conftest import ROOT, StandinBuild

SPELLINGS = {
    "ON": ["*"],
    "on": ["*"],
    "Yes": ["*"],
    "y": ["*"],
    "TRUE": ["*"],
    "1": ["*"],
    "2": ["*"],
    "0.5": ["*"],
    "OFF": [],
    "off": [],
    "No": [],
    "n": [],
    "false": [],
    "0": [],
    "0.0": [],
    "IGNORE": [],
    "": [],
    "*": ["*"],
    "unary,co*": ["unary", "co*"],
    "unary;copy": ["unary", "copy"],
    "on,unary": ["on", "unary"],  # a list is globs, booleans or not
    "1.metal": ["1.metal"],
    "[o]n": ["[o]n"],  # a unit named like a boolean, by a glob
}


def test_every_cmake_boolean_spelling_reads_as_all_or_none(tmp_path: Path) -> None:
    """One ``cmake -P`` run words each value as the build request's JSON (the module's
    ``metallib_build_request``, what a plain CMake run hands the planner)."""
    script = tmp_path / "print.cmake"
    lines = [f'include("{ROOT}/cmake/MetallibBuildOptions.cmake")']
    for index, value in enumerate(SPELLINGS):
        escaped = value.replace(";", "\\;")
        lines += [
            f'set(METALLIB_JIT "{escaped}")',
            "metallib_build_request(json)",
            'string(JSON jit GET "${json}" jit)',
            f'message(NOTICE "{index}=${{jit}}")',
        ]
    script.write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = subprocess.run(
        [find_tool("cmake"), "-P", str(script)], capture_output=True, text=True, check=True
    )
    read = dict(line.split("=", 1) for line in done.stderr.splitlines())
    assert {value: json.loads(read[str(i)]) for i, value in enumerate(SPELLINGS)} == SPELLINGS


@pytest.mark.cmake
@pytest.mark.parametrize(("value", "jit"), [("On", True), ("no", False)])
def test_a_configure_plans_every_unit_by_the_boolean(
    standin_build: StandinBuild, cxx_available: None, value: str, jit: bool
) -> None:
    """A plain configure with the stand-in compiler: ``-DMETALLIB_JIT=On`` plans every selected
    family JIT, ``no`` every one AOT (the catalog's families are the reference)."""
    families = ["arange", "copy"]
    standin_build.defines = {"METALLIB_JIT": value, "METALLIB_KERNELS": ",".join(families)}
    standin_build.configure()
    plan = json.loads((standin_build.build_dir / "metal_plan" / "plan.json").read_text())
    assert plan["request"]["jit"] == (["*"] if jit else [])
    modes = {u["name"]: u["mode"] for u in plan["units"]}
    assert set(modes) == set(families) <= set(load_catalog(standin_build.kernel_dir).families)
    assert set(modes.values()) == {"jit" if jit else "aot"}
