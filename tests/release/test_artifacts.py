"""The release's artifacts made here as the release workflow makes them: the sdist
(``python -m build --sdist``), a wheel built from it by the pip of a clean virtual environment,
``twine check`` on both, then that wheel installed with the test extra into the clean
environment, which runs exactly the ``test-command`` cibuildwheel runs on every wheel (pyproject's
``[tool.cibuildwheel]``: ``--version`` and the tests' quick subset) on the tests the sdist
carries, from a folder outside it, so the installed package is the one imported.

All of it is made once per run for every worker (``artifacts``); each test reads what the steps
left. Building the wheel compiles the C extension and the JIT host library with CMake (the
package index serves scikit-build-core, CMake and Ninja to pip's isolated build); docs/release.md
has the measured cost."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import sysconfig
import tarfile
from pathlib import Path
from typing import Any

import pytest
from support.jit_library import JitLibrary
from support.shared import shared_folder

from builder.files.reading import parse_toml

from .script import SCRIPT, release_checks

pytestmark = [pytest.mark.cmake, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = parse_toml((ROOT / "pyproject.toml").read_bytes(), "pyproject.toml")
CIBW = PYPROJECT["tool"]["cibuildwheel"]
VERSION = PYPROJECT["project"]["version"]
SDIST_NAME = f"metallib_builder-{VERSION}"
# What the tests' own process puts on PATH (tests/conftest.py): the development install's
# scripts, which the clean environment must not see.
OUR_SCRIPTS = sysconfig.get_path("scripts")


def _step(folder: Path, name: str, argv: list[str], **kwargs: Any) -> dict[str, Any]:
    """Run one step, record its output, exit status and CPU in ``steps.json`` (the cost
    docs/release.md gives; no test reads it)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, capture_output=True, text=True, check=False, **kwargs)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    record = {
        "argv": argv,
        "rc": done.returncode,
        "out": done.stdout,
        "err": done.stderr,
        "user": round(after.ru_utime - before.ru_utime, 2),
        "sys": round(after.ru_stime - before.ru_stime, 2),
    }
    path = folder / "steps.json"
    steps = json.loads(path.read_text()) if path.is_file() else {}
    steps[name] = record
    path.write_text(json.dumps(steps, indent=1), encoding="utf-8")
    return record


def _clean_env(venv: Path) -> dict[str, str]:
    """The environment of a user who activated the clean venv: its scripts first on PATH, none
    of this run's interpreter settings."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "PYTHONPYCACHEPREFIX", "PYTHONHOME", "VIRTUAL_ENV")
        and not k.startswith(("PYTEST_", "METALLIB_BUILDER_NATIVE"))
    }
    rest = [p for p in env.get("PATH", "").split(os.pathsep) if p and p != OUR_SCRIPTS]
    return {**env, "PATH": os.pathsep.join([str(venv / "bin"), *rest]), "VIRTUAL_ENV": str(venv)}


def _make(folder: Path) -> None:
    """Each step runs only when the one before it passed; the tests read steps.json."""
    dist, venv, wheels, cwd = (folder / n for n in ("dist", "venv", "wheelhouse", "cwd"))
    cwd.mkdir()
    python = str(venv / "bin" / "python")
    pip = [python, "-m", "pip", "--disable-pip-version-check"]
    env = _clean_env(venv)
    sdist = dist / f"{SDIST_NAME}.tar.gz"
    plan: list[tuple[str, list[str]]] = [
        ("sdist", [sys.executable, "-m", "build", "--sdist", "--outdir", str(dist), str(ROOT)]),
        ("venv", [sys.executable, "-m", "venv", str(venv)]),
        ("wheel", [*pip, "wheel", "--no-deps", "-w", str(wheels), str(sdist)]),
    ]
    for name, argv in plan:
        if _step(folder, name, argv, cwd=cwd, env=env if name != "sdist" else None)["rc"]:
            return
    (wheel,) = wheels.glob("*.whl")
    extras = ",".join(CIBW["test-extras"])
    # --no-compile: byte-code only for what the tests import (they write it in the venv).
    install = [*pip, "install", "--no-compile", f"{wheel}[{extras}]"]
    if _step(folder, "install", install, cwd=cwd, env=env)["rc"]:
        return
    with tarfile.open(sdist) as tar:
        tar.extractall(folder / "src", filter="data")
    project = folder / "src" / SDIST_NAME
    for n, command in enumerate(CIBW["test-command"]):
        line = command.replace("{project}", str(project)).replace("{package}", str(project))
        _step(folder, f"test-command-{n}", ["/bin/sh", "-c", line], cwd=cwd, env=env)
    probe = (
        "import json, builder, builder.metallib.native as n, builder.resources as r; "
        "print(json.dumps({'file': builder.__file__, 'native': n.native_module() is not None, "
        "'metal_src': str(r.metal_src_dir())}))"
    )
    _step(folder, "probe", [python, "-c", probe], cwd=cwd, env=env)
    both = [str(sdist), str(wheel)]
    plain = {**os.environ, "COLUMNS": "1000"}  # one line per file
    twine = [sys.executable, "-m", "twine", "--no-color", "check", "--strict", *both]
    _step(folder, "twine", twine, cwd=cwd, env=plain)
    checked = folder / "checked"  # one folder holding every artifact, as the workflow's dist/
    checked.mkdir()
    for made in both:
        (checked / Path(made).name).hardlink_to(made)
    argv = [sys.executable, str(SCRIPT), "artifacts", str(checked)]
    _step(folder, "release-checks", argv, cwd=cwd)


@pytest.fixture(scope="session")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shared_folder(tmp_path_factory, "release-artifacts", _make)


def _steps(folder: Path) -> dict[str, dict[str, Any]]:
    steps: dict[str, dict[str, Any]] = json.loads((folder / "steps.json").read_text("utf-8"))
    return steps


def _passed(folder: Path, *names: str) -> dict[str, dict[str, Any]]:
    steps = _steps(folder)
    for name in names:
        assert name in steps, f"step {name} did not run: {sorted(steps)}"
        assert steps[name]["rc"] == 0, f"{name}: {steps[name]['out']}{steps[name]['err']}"
    return steps


def test_the_sdist_holds_every_tracked_file_but_the_excluded_ones(artifacts: Path) -> None:
    """The reference is git's list of the checkout's files: the sdist holds each one but those
    under pyproject's sdist.exclude, and nothing a build or a virtual environment leaves."""
    _passed(artifacts, "sdist")
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, text=True, check=False
    )
    if listed.returncode != 0:
        pytest.skip(f"not a git checkout: {listed.stderr.strip()}")
    excluded = tuple(PYPROJECT["tool"]["scikit-build"]["sdist"]["exclude"])
    with tarfile.open(artifacts / "dist" / f"{SDIST_NAME}.tar.gz") as tar:
        held = {m.name.removeprefix(f"{SDIST_NAME}/") for m in tar.getmembers() if m.isfile()}
    tracked = {p for p in listed.stdout.split("\0") if p and (ROOT / p).is_file()}
    assert tracked - held == {p for p in tracked if p.startswith(excluded)}
    assert not {p for p in held if p.startswith(excluded)}
    leftovers = {p for p in held if p.endswith((".so", ".pyc")) or "/_lib/" in p}
    assert not leftovers | {p for p in held if p.startswith((".venv/", "build/", "dist/"))}
    assert "PKG-INFO" in held


def test_twine_check_passes_on_the_sdist_and_the_wheel(artifacts: Path) -> None:
    steps = _passed(artifacts, "twine")
    lines = steps["twine"]["out"].splitlines()
    (wheel,) = (artifacts / "wheelhouse").glob("*.whl")
    for path in (artifacts / "dist" / f"{SDIST_NAME}.tar.gz", wheel):
        assert f"Checking {path}: PASSED" in lines, steps["twine"]["out"]


def test_the_release_checks_name_what_a_local_build_lacks(artifacts: Path) -> None:
    """``release_checks.py artifacts`` on the sdist and this machine's wheel: twine passes both,
    and the set fails, naming the wheel (``linux_x86_64``, not repaired to a manylinux tag: not
    publishable) and every wheel of the release that is missing."""
    steps = _passed(artifacts, "twine")
    checks = steps["release-checks"]
    assert checks["rc"] == 1, checks["out"] + checks["err"]
    (wheel,) = (artifacts / "wheelhouse").glob("*.whl")
    problems = checks["err"].splitlines()
    wanted = [f"artifacts: {wheel.name}: not an sdist or a wheel of this release's platforms"]
    for python in CIBW["build"]:
        for platform in release_checks.PLATFORMS:
            wanted.append(f"artifacts: 0 wheels for {python[:-2]} on {platform}, want one")
    assert problems == wanted
    assert "twine" not in checks["err"]


def test_the_sdist_installs_in_a_clean_venv_and_passes_the_quick_subset(artifacts: Path) -> None:
    steps = _passed(artifacts, "venv", "wheel", "install", "probe")
    venv = artifacts / "venv"
    probe = json.loads(steps["probe"]["out"])
    # The clean environment's own copy: its site-packages, its compiled extension, its data.
    site = Path(probe["file"]).resolve().parents[1]
    assert site.is_relative_to(venv.resolve()) and site.name == "site-packages"
    assert probe["native"] is True
    assert Path(probe["metal_src"]).resolve() == site / "builder" / "_data" / "metal_src"
    commands = [steps[f"test-command-{n}"] for n in range(len(CIBW["test-command"]))]
    version, quick = commands
    assert version["rc"] == 0 and version["out"].startswith(f"metallib-builder, version {VERSION}")
    assert "native container reader: on" in version["out"]
    assert str(site) in version["out"]
    assert quick["rc"] == 0, quick["out"][-4000:] + quick["err"][-2000:]
    summary = quick["out"].strip().splitlines()[-1]
    assert " passed" in summary and "failed" not in summary and "error" not in summary, summary
    # The tests that check the installed extension ran on it (they skip without it).
    assert "native parser not in use" not in quick["out"]
    assert "native SHA-256 not built" not in quick["out"]


def test_the_installed_host_library_serves_every_family_of_the_catalog(artifacts: Path) -> None:
    """The wheel's JIT host library (built with every unit JIT, as pip install builds it) holds
    every family the installed catalog lists, read through its C API."""
    _passed(artifacts, "install")
    (site,) = (artifacts / "venv" / "lib").glob("python3*/site-packages")
    (library,) = (site / "builder" / "_lib").glob("*metal_jit*")
    catalog = json.loads((site / "builder/_data/metal_src/catalog.json").read_text("utf-8"))
    assert sorted(JitLibrary(library).families()) == sorted(catalog["families"])


def test_the_tag_check_compares_the_pushed_tag_with_the_sdist(artifacts: Path) -> None:
    """``release_checks.py tag`` on the real sdist, as the sdist job runs it after a push of
    the right tag, of a wrong one, and by hand (no tag)."""
    _passed(artifacts, "sdist")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_REF")}

    def tag(**github: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, str(SCRIPT), "tag", str(artifacts / "dist")]
        return subprocess.run(
            argv, capture_output=True, text=True, env={**env, **github}, check=False
        )

    right = tag(GITHUB_REF_TYPE="tag", GITHUB_REF_NAME=f"v{VERSION}")
    assert right.returncode == 0 and right.stdout == f"tag: v{VERSION} names version {VERSION}\n"
    wrong = tag(GITHUB_REF_TYPE="tag", GITHUB_REF_NAME="v9.9.9")
    assert wrong.returncode == 1
    assert (
        wrong.stderr
        == f"tag: the tag is 'v9.9.9', the package's version {VERSION}: tag v{VERSION}\n"
    )
    by_hand = tag()
    assert by_hand.returncode == 0 and "no tag pushed (a run by hand)" in by_hand.stdout
