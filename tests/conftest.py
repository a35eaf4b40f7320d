"""Shared fixtures: real metallibs from mlx-metal macOS wheels, downloaded once and cached.

The wheels are cached outside the repository (see ``builder.inputs.wheel_cache.cache_dir``).
When the package index cannot be reached the tests that need them are skipped with a loud
reason.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mlx_tree import DATA, MLX_PLATFORM, MLX_VERSION, extract_kernel_headers
from synthetic import Spec, synthetic_bytes

from builder.inputs import wheel_cache, wheels
from builder.metallib.native import disabled

# (version, platform) pairs the format tests cover: both writer generations under format 2.7
# (0.28-0.31 without a reflection list or UUID; 0.32.0 with both) and format 2.9 (macOS 26).
OLD_GENERATION = ("0.30.0", "macosx_14_0_arm64")
NEW_GENERATION = ("0.32.0", "macosx_14_0_arm64")
FORMAT_29 = ("0.32.0", "macosx_26_0_arm64")

# The in-process ``cli`` fixture of the adversarial tests, which sit in several folders.
pytest_plugins = ["support.hostile"]

_failures: dict[tuple[str, str], str] = {}

# The README runs the tests as `.venv/bin/python -m pytest` without activating the venv; its
# scripts (metallib-builder, cmake, ninja from the package index) must be on PATH all the same,
# as they would be for a user who activated it.
os.environ["PATH"] = os.pathsep.join([sysconfig.get_path("scripts"), os.environ.get("PATH", "")])

# Every process of the run reads modules byte-compiled once, by whichever process imported them
# first: the suite starts a Python process for each CLI run, each stand-in compile and each
# build step (over a thousand), and without byte-code each compiled the package anew (0.05-0.1 s
# a process). Where the environment says not to write byte-code (PYTHONDONTWRITEBYTECODE) it
# goes to the virtual environment's pycache/, never into the checkout, unless
# PYTHONPYCACHEPREFIX names another place. Python checks each file against its source's size
# and time before using it (scripts/mutate.py, whose mutants can match both, stamps each one).
os.environ.setdefault("PYTHONPYCACHEPREFIX", os.path.join(sys.prefix, "pycache"))
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.pycache_prefix = os.environ["PYTHONPYCACHEPREFIX"]
sys.dont_write_bytecode = False

# Tables on stdout take their width from COLUMNS and LINES when those are set
# (shutil.get_terminal_size), and pytest-xdist's workers have them (80 x 24); the tests see what
# a pipe gets, as in a single-process run and in CI, whatever the worker or the terminal.
for _size in ("COLUMNS", "LINES"):
    os.environ.pop(_size, None)


@pytest.fixture(scope="session", autouse=True)
def _one_disassembly_per_run(tmp_path_factory: pytest.TempPathFactory) -> None:
    """LLVM's reading of a real binary is made once per run (``support.llvm_strings``)."""
    from support.llvm_strings import share_disassembly

    share_disassembly(tmp_path_factory)


def _fetch(version: str, platform: str) -> Path:
    key = (version, platform)
    if key in _failures:
        pytest.skip(_failures[key])
    try:
        paths = wheels.metallibs_from_spec(f"mlx-metal=={version}", platform)
    except wheel_cache.DownloadError as exc:
        _failures[key] = f"PACKAGE INDEX UNREACHABLE, real-data test skipped: {exc}"
        pytest.skip(_failures[key])
    assert len(paths) == 1, paths
    return paths[0]


@pytest.fixture(scope="session")
def mlx_metallib() -> Callable[[str, str], Path]:
    """Factory: ``mlx_metallib("0.30.0", "macosx_14_0_arm64")`` -> cached path of mlx.metallib."""
    return _fetch


_header_failure: list[str] = []


@pytest.fixture(scope="session")
def mlx_headers() -> Path:
    """The include root (holding ``mlx/backend/metal/kernels/``) of mlx-metal 0.32.0."""
    if _header_failure:
        pytest.skip(_header_failure[0])
    try:
        wheel = wheels.download_wheel("mlx-metal", MLX_VERSION, MLX_PLATFORM)
    except wheel_cache.DownloadError as exc:
        _header_failure.append(f"PACKAGE INDEX UNREACHABLE, real-data test skipped: {exc}")
        pytest.skip(_header_failure[0])
    dest = wheel_cache.cache_dir() / "kernel-headers" / wheel.name.removesuffix(".whl")
    return extract_kernel_headers(wheel, dest)


@pytest.fixture
def mlx_style() -> Path:
    """The MLX-style entry files (tests/data/mlx_style)."""
    return DATA


@pytest.fixture
def write_metallib(tmp_path: Path) -> Callable[..., Path]:
    """Factory: ``write_metallib("a.metallib", [("v_copyfloat32float32", 400), ...])`` -> path
    of a library written by the project's writer (contents derived from the names)."""

    def write(name: str, functions: Spec, **kwargs: object) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(synthetic_bytes(functions, **kwargs))  # type: ignore[arg-type]
        return path

    return write


# The container code has two paths that must give the same results: the C extension and the
# pure-Python code (builder.metallib.native). Every test of tests/metallib runs on both, and
# every test of a module marked ``both_container_codes`` (commands that read containers), but those
# marked ``picks_container_code``: they choose the path themselves (and compare the two). The
# tests of killed, concurrent and failed writes (tests/files) run once: the container code
# changes how an input is parsed and hashed (covered on both codes by tests/metallib, whose
# test_native also runs list, verify and slim both ways), never how an output is written or a
# signal met.
CONTAINER_TESTS = Path(__file__).resolve().parent / "metallib"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    definition = metafunc.definition
    folder = Path(str(definition.path)).resolve().parent
    if (
        folder == CONTAINER_TESTS or definition.get_closest_marker("both_container_codes")
    ) and definition.get_closest_marker("picks_container_code") is None:
        metafunc.parametrize("container_code", ["native", "python"], indirect=True)


@pytest.fixture(autouse=True)
def container_code(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    """Which code reads containers in this test: ``native`` (the C extension, as installed) or
    ``python`` (extension off, in this process and in the CLI it starts, as
    ``METALLIB_BUILDER_NATIVE=0`` does for a user)."""
    code: str = getattr(request, "param", "native")
    if code == "native":
        yield code
        return
    monkeypatch.setenv("METALLIB_BUILDER_NATIVE", "0")
    with disabled():
        yield code


def _uncollected(config: pytest.Config, found: set[Path]) -> str | None:
    """A whole-suite run must collect every ``test_*.py`` under tests/: the files it did not, as
    the error to stop with (None for a partial run, which is the user's choice).

    pytest silently skips folders it thinks are not tests (``build``, ``venv``, ``dist``, dot
    folders: its ``norecursedirs`` default), which once kept 26 tests out of CI unnoticed.
    """
    tests = Path(__file__).resolve().parent
    option = config.option
    whole = [Path(a).resolve() for a in config.args] == [tests]
    if not whole or option.keyword or option.markexpr or option.deselect:
        return None
    missed = sorted(p for p in tests.rglob("test_*.py") if p.resolve() not in found)
    if not missed:
        return None
    return "test files that pytest did not collect: " + ", ".join(
        str(p.relative_to(tests)) for p in missed
    )


def pytest_collection_finish(session: pytest.Session) -> None:
    """The check of a single-process run (with pytest-xdist, the controller checks below)."""
    if hasattr(session.config, "workerinput"):  # an xdist worker: it sees the same items
        return
    why = _uncollected(session.config, {Path(str(item.path)).resolve() for item in session.items})
    if why:
        raise pytest.UsageError(why)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """The check under pytest-xdist, where the controller collects nothing itself: each worker
    reports its test ids (relative to the rootdir). An error raised in a worker would surface as
    an internal error without the message, hence ``pytest.exit`` here."""
    root = Path(str(node.config.rootpath))
    why = _uncollected(node.config, {(root / i.split("::")[0]).resolve() for i in ids})
    if why:
        pytest.exit(why, returncode=pytest.ExitCode.USAGE_ERROR)


# The quick subset (``-m quick``): what a built wheel or an installed sdist runs to show that the
# installed package works (docs/release.md): the installed C extension and its contract with the
# Python code, the container code on synthetic libraries (both codes), hashing, the CLI, the
# installed data folder and CMake package and the console script. No download, no CMake build,
# no LLVM or clang: a few seconds. Its tests are those of these files that carry none of the
# markers of SLOWER (their tests that download or build stay out of it).
QUICK = (
    "test_resources.py",
    "metallib/test_native_contract.py",
    "metallib/test_native.py",
    "metallib/test_synthetic.py",
    "metallib/test_hashing.py",
    "cli/test_container_cli.py",
    "cli/test_usage_and_slim.py",
    "consumer/test_cmake_dir.py",
)
SLOWER = ("realdata", "cmake", "slow", "browser")


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Marks the quick subset's tests ``quick``. A run that selects by ``quick`` stops with a
    usage error when a file of QUICK is gone, so the subset never shrinks unnoticed."""
    tests = Path(__file__).resolve().parent
    quick = {(tests / name).resolve() for name in QUICK}
    gone = sorted(str(p.relative_to(tests)) for p in quick if not p.is_file())
    if gone and "quick" in (config.option.markexpr or ""):
        raise pytest.UsageError(f"tests/conftest.py QUICK names files that are gone: {gone}")
    for item in items:
        if Path(str(item.path)).resolve() in quick and not any(
            item.get_closest_marker(name) for name in SLOWER
        ):
            item.add_marker(pytest.mark.quick)


def _hypothesis_profile() -> None:
    """Property tests judge their inputs, not the machine: on 2 busy cores data generation can
    be slow, so Hypothesis's timing checks (deadline, too_slow) are off; the number of examples
    stays."""
    from hypothesis import HealthCheck, settings

    settings.register_profile(
        "metallib-builder", deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )
    settings.load_profile("metallib-builder")


_hypothesis_profile()
