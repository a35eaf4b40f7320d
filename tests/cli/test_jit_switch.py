"""The JIT switch on the command line (issue 37, item 1): ``build --jit`` alone builds every unit
JIT, ``build`` (or ``--no-jit``) every unit AOT, ``--jit GLOBS`` / ``--aot GLOBS`` a split; the
option takes a value only when the next word is not an option, so ``--jit --build-dir X`` is
``--jit`` alone (it used to take ``--build-dir`` as its glob and fail on "unexpected extra
argument X"). The request the command builds is caught before anything is planned or built."""

from __future__ import annotations

from pathlib import Path

import pytest
from clirun import run_cli

from builder.cmake_build.plan import make_plan
from builder.cmake_build.plan_model import BuildRequest
from builder.errors import UsageError
from builder.kernels import load_catalog
from builder.resources import metal_src_dir


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[BuildRequest]:
    """The requests ``build`` hands the driver; the driver stops there (exit 2)."""
    seen: list[BuildRequest] = []

    def run_build(request: BuildRequest, **_: object) -> None:
        seen.append(request)
        raise UsageError("caught before planning")

    monkeypatch.setattr("builder.cmake_build.driver.run_build", run_build)
    return seen


@pytest.mark.parametrize(
    ("args", "jit", "aot"),
    [
        (["--jit", "--build-dir", "X"], ("*",), ()),
        (["--build-dir", "X", "--jit"], ("*",), ()),  # at the end
        (["--jit", "a*,b", "--build-dir", "X"], ("a*", "b"), ()),
        (["--jit=a", "--build-dir", "X"], ("a",), ()),
        (["--jit", "a", "--jit", "--build-dir", "X"], ("a", "*"), ()),  # repeatable
        (["--jit", "a", "--jit", "b,c", "--build-dir", "X"], ("a", "b", "c"), ()),
        (["--jit", "-v", "--build-dir", "X"], ("*",), ()),  # a short option is an option too
        (["--build-dir", "X"], (), ()),
        (["--no-jit", "--build-dir", "X"], (), ()),
        (["--aot", "x*", "--build-dir", "X"], (), ("x*",)),
    ],
)
def test_the_switch_reads_as_one(
    asked: list[BuildRequest],
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    jit: tuple[str, ...],
    aot: tuple[str, ...],
) -> None:
    code, out, err = run_cli(["build", *args], capsys)
    assert (code, out, err) == (2, "", "error: caught before planning\n")
    (request,) = asked
    assert (request.values["jit"], request.values["aot"]) == (jit, aot)
    assert request.build_dir == Path("X").resolve()


def test_jit_alone_plans_every_unit_jit(
    asked: list[BuildRequest], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``--jit`` alone on the bundled catalog tree: every family of its catalog.json JIT."""
    run_cli(["build", "--jit", "--build-dir", str(tmp_path / "b")], capsys)
    (request,) = asked
    plan = make_plan(request)
    assert plan.jit == tuple(load_catalog(metal_src_dir()).families) and plan.aot == ()
    assert make_plan(request.replace(jit=())).jit == ()  # and without it, none


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--no-jit", "--jit"], "--no-jit builds every unit AOT and --jit asks for JIT ones"),
        (["--jit", "x", "--no-jit"], "--no-jit builds every unit AOT and --jit asks for JIT ones"),
        (["--no-jit", "--aot", "x"], "--no-jit builds every unit AOT and --aot asks for JIT ones"),
        (["--jit", ""], "--jit '': names no unit"),
    ],
)
def test_contradictions_are_one_line_exit_2(
    asked: list[BuildRequest], capsys: pytest.CaptureFixture[str], args: list[str], said: str
) -> None:
    code, out, err = run_cli(["build", *args, "--build-dir", "X"], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1 and said in err, err
    assert asked == []


def test_variants_jit_still_takes_a_value(capsys: pytest.CaptureFixture[str]) -> None:
    """``variants --from LIB --jit GLOBS`` is one variant per value: a bare --jit there is
    still missing its value, not every entry file."""
    code, _, err = run_cli(["variants", "--from", "x.metallib", "--jit"], capsys)
    assert code == 2 and "'--jit' requires an argument" in err, err


def test_build_help_says_how_the_switch_reads(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["build", "--help"], capsys)
    assert code == 0
    words = " ".join(out.split())
    for said in (
        "--jit [GLOBS]",
        "--jit alone or '*': all; in CMake any boolean too (ON, Y, 1: all; OFF, N, 0: none)",
        "--no-jit Every unit AOT (the default; refused with --jit or --aot).",
        (
            "--jit alone builds every unit JIT, no --jit (or --no-jit) every unit AOT, --jit "
            "GLOBS or --aot GLOBS a split"
        ),
        "metallib-builder build --jit # every unit JIT: no Metal compiler needed",
    ):
        assert said in words, said
