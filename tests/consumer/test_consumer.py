"""A consumer project (tests/consumer/project/) that knows metallib-builder only as an installed
CMake package: it is configured with ``-DMetallibBuilder_DIR=$(metallib-builder --cmake-dir)``,
built with Ninja and run. It embeds its own headers with ``metallib_embed_headers``, looks kernels
up through ``MetallibBuilder::metal_jit`` and compiles its ``.metal`` files with
``metallib_add_metallib`` (the stand-in compiler, tests/cmake_build/standin/, as on Linux).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cmake_build.conftest import METAL, ninja_exe
from consumer.installed import cache_entries, cmake_dir, configure_command, run_ninja

from builder.jit.generate import embed_headers
from builder.jit.preamble import inline_preamble
from builder.kernels import load_catalog
from builder.metallib import open_metallib
from builder.resources import metal_src_dir

pytestmark = pytest.mark.cmake

PROJECT = Path(__file__).resolve().parent / "project"
HEADERS = ("consumer/ops.h", "consumer/reduce.h")
DEEP = "consumer/detail/constants.h"  # ops.h -> math.h -> approx.h -> constants.h
KERNELS = {"scale", "sum_float32", "sum_int32"}
DEFAULT_FLAGS = ["-x", "metal", "-Wall", "-Wextra", "-fno-fast-math", "-mmacosx-version-min=14.0"]


class Consumer:
    """A private copy of the consumer project, its build folder and the stand-in's call log."""

    def __init__(self, root: Path) -> None:
        self.src = Path(shutil.copytree(PROJECT, root / "project"))
        self.build = root / "build"
        self.log = root / "standin.log"
        self.include = self.src / "kernels" / "include"

    def env(self, **extra: str) -> dict[str, str]:
        return {**os.environ, "METAL_STANDIN_LOG": str(self.log), **extra}

    def configure(
        self, *defines: str, via: str = "MetallibBuilder_DIR", **env: str
    ) -> subprocess.CompletedProcess[str]:
        """``via``: the variable that gets ``--cmake-dir`` (or CMAKE_PREFIX_PATH)."""
        return subprocess.run(
            [
                *configure_command(self.src, self.build),
                f"-D{via}={cmake_dir()}",
                f"-DMETALLIB_COMPILER={METAL}",
                *defines,
            ],
            capture_output=True,
            text=True,
            check=False,
            env=self.env(**env),
        )

    def ninja(self) -> str:
        return run_ninja(self.build, self.env())

    def run(self, *kernels: str) -> list[str]:
        out = subprocess.run(
            [str(self.build / "consumer"), *kernels], capture_output=True, check=True
        ).stdout
        return out.decode("utf-8").split("\0")[:-1]

    def embed_command(self) -> str:
        """The build's command that runs the generator (interpreter, PYTHONPATH, arguments)."""
        done = subprocess.run(
            [ninja_exe(), "-C", str(self.build), "-t", "commands"],
            capture_output=True,
            text=True,
            check=True,
        )
        (line,) = [c for c in done.stdout.splitlines() if "-m builder.jit embed" in c]
        return line

    def cache(self, name: str) -> str:
        entries = cache_entries(self.build)
        assert name in entries, f"{name} is not in the cache"
        return entries[name]

    def cache_names(self) -> set[str]:
        return set(cache_entries(self.build))

    def expected_headers(self) -> list[str]:
        """What ``embed --api cstring`` makes of the headers now (the generator's own answer)."""
        headers = [self.include / h for h in HEADERS]
        return [p.text for p in embed_headers(headers, [self.include], api="cstring")[1]]

    def compiles(self) -> list[dict[str, Any]]:
        if not self.log.is_file():
            return []
        rows = [json.loads(line) for line in self.log.read_text().splitlines()]
        return [r for r in rows if r["mode"] == "compile"]


def test_the_consumer_builds_and_runs_against_the_installed_package(tmp_path: Path) -> None:
    """As documented: an activated virtual environment, nothing but MetallibBuilder_DIR."""
    consumer = Consumer(tmp_path)
    configure = consumer.configure(VIRTUAL_ENV=sys.prefix)
    assert configure.returncode == 0, configure.stdout + configure.stderr
    package = cmake_dir()
    # The generator runs with FindPython3's interpreter (the venv's first) and the package's own
    # folder on PYTHONPATH; neither is a cache variable.
    python, pythonpath = _generator(consumer.embed_command())
    assert python.parent == Path(sys.prefix) / "bin"
    assert (pythonpath / "builder" / "jit" / "generate.py").is_file()
    assert not any(name.startswith("METALLIB_BUILDER_") for name in consumer.cache_names())
    consumer.ninja()

    catalog = load_catalog()
    picks = [catalog.expand([family])[0] for family in ("unary", "softmax", "binary")]
    library, count, ops, reduce, *sources = consumer.run(*(i.host_name for i in picks))

    # The host JIT library the program loaded is the installed one, with the whole catalog.
    assert Path(library).resolve() == (package.parents[1] / "_lib" / Path(library).name).resolve()
    assert int(count) == len(catalog.expand())
    root = metal_src_dir()
    for inst, source in zip(picks, sources, strict=True):
        preamble = inline_preamble([root / catalog.families[inst.family].header], [root]).text
        assert source == preamble + inst.instantiation_line() + "\n"

    # Its own headers, embedded at build time, are what embed makes of them.
    assert [ops, reduce] == consumer.expected_headers()
    assert '#line 1 "consumer/detail/constants.h"' in ops

    # Its .metal files: each compiled once with the default flags, one library of its kernels.
    compiles = consumer.compiles()
    assert sorted(Path(c["source"]).name for c in compiles) == ["scale.metal", "sum.metal"]
    for call in compiles:
        assert call["argv"][: len(DEFAULT_FLAGS)] == DEFAULT_FLAGS
    with open_metallib(consumer.build / "consumer_kernels.metallib") as lib:
        assert {fn.name for fn in lib.functions} == KERNELS
        assert lib.header.deployment_target == (14, 0)
    assert "no work to do" in consumer.ninja()


def test_an_edit_three_includes_deep_regenerates_on_the_next_build(tmp_path: Path) -> None:
    """Found through CMAKE_PREFIX_PATH, with an interpreter that has no metallib-builder of its
    own: the package path the config derives is all it needs to import the generator."""
    # the interpreter the venv was made from
    base = Path(sys._base_executable)  # type: ignore[attr-defined]
    alone = subprocess.run(
        [str(base), "-c", "import builder.jit"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert alone.returncode != 0, f"{base} imports builder by itself; the test proves nothing"
    consumer = Consumer(tmp_path)
    configure = consumer.configure(f"-DMETALLIB_BUILDER_PYTHON={base}", via="CMAKE_PREFIX_PATH")
    assert configure.returncode == 0, configure.stdout + configure.stderr
    assert Path(consumer.cache("MetallibBuilder_DIR")) == cmake_dir()
    consumer.ninja()
    assert consumer.run()[2:] == consumer.expected_headers()

    consumer.log.unlink()
    deep = consumer.include / DEEP
    deep.write_text(deep.read_text(encoding="utf-8") + "// edited three includes deep\n", "utf-8")
    rebuilt = consumer.ninja()
    assert "Embedding 2 header(s) into consumer" in rebuilt
    texts = consumer.run()[2:]
    assert texts == consumer.expected_headers()
    assert all("// edited three includes deep" in text for text in texts)  # reduce.h via ops.h
    # Both entry files reach the header too: their .air files follow it (the compiler's depfile).
    assert sorted(Path(c["source"]).name for c in consumer.compiles()) == [
        "scale.metal",
        "sum.metal",
    ]
    assert "no work to do" in consumer.ninja()


def _generator(command: str) -> tuple[Path, Path]:
    """The interpreter and the PYTHONPATH of the generator's command line."""
    words = shlex.split(command)
    (path,) = [w.partition("=")[2] for w in words if w.startswith("PYTHONPATH=")]
    return Path(words[words.index("-m") - 1]), Path(path)


def test_an_interpreter_that_cannot_import_the_generator_is_named(tmp_path: Path) -> None:
    fake = tmp_path / "python"
    fake.write_text(
        "#!/bin/sh\necho \"ModuleNotFoundError: No module named 'builder'\" >&2\nexit 1\n",
        encoding="utf-8",
    )
    fake.chmod(0o755)
    said = _refused(Consumer(tmp_path), f"-DMETALLIB_BUILDER_PYTHON={fake}")
    assert f"{fake} cannot import metallib-builder's generator (builder.jit.generate)" in said, said
    assert "No module named 'builder'" in said


def test_no_interpreter_at_all_is_named(tmp_path: Path) -> None:
    said = _refused(Consumer(tmp_path), "-DPython3_EXECUTABLE=/nonexistent/python3")
    assert "no Python 3.10+ interpreter found to run metallib-builder's generator" in said, said


def _refused(consumer: Consumer, *defines: str) -> str:
    """Configure, which must fail at the first metallib_embed_headers (find_package runs no
    Python) naming both variables; the message."""
    configure = consumer.configure(*defines)
    said = " ".join(configure.stderr.split())
    assert configure.returncode != 0, configure.stdout
    assert "metallib_embed_headers(consumer): " in said, said
    assert "(find_package)" not in said  # not in the call stack: finding the package runs none
    assert "Set METALLIB_BUILDER_PYTHON to a Python 3.10+ interpreter" in said
    assert "METALLIB_BUILDER_PYTHONPATH on its PYTHONPATH" in said
    assert not (consumer.build / "build.ninja").exists()
    return said
