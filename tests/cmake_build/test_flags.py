"""AOT command lines fit for a real Mac: default flags, flags as a proper list, the language
standard, the deployment target on compile and link, `xcrun -sdk <sdk> metal`, and a stand-in
compiler that refuses what Apple's would not take."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from builder.metallib import open_metallib

from .conftest import DEFAULT_FLAGS, METAL, ROOT, XCRUN_DIR

pytestmark = pytest.mark.cmake


def _cli(*args: str, log: Path, path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "METAL_COMPILER"}
    env.update(NO_COLOR="1", METAL_STANDIN_LOG=str(log))
    if path is not None:
        env["PATH"] = path
    return subprocess.run(
        [sys.executable, "-m", "builder", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )


def _calls(log: Path, mode: str) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    return [r for r in rows if r["mode"] == mode]


def _flags(argv: list[str]) -> list[str]:
    """The flags before -D/-I/-c of a compile line, after `-x metal`."""
    assert argv[:2] == ["-x", "metal"], argv
    end = next(i for i, a in enumerate(argv) if a in ("-c", "-I") or a.startswith("-D"))
    return argv[2:end]


def test_comma_separated_cmake_flags_reach_the_compiler_one_by_one(standin_build) -> None:  # type: ignore[no-untyped-def]
    standin_build.defines = {
        "METALLIB_KERNELS": "arange",
        "METALLIB_AOT_FLAGS": "-Wall,-Wextra,-fno-fast-math,-O3",
    }
    standin_build.configure()
    standin_build.ninja()
    (call,) = standin_build.calls("compile")
    assert _flags(call["argv"]) == [*DEFAULT_FLAGS, "-O3"]
    standin_build.defines["METALLIB_AOT_FLAGS"] = "-O2;-ffast-math"  # a CMake list as well
    standin_build.reset_log()
    standin_build.configure()
    standin_build.ninja()
    (call,) = standin_build.calls("compile")
    assert _flags(call["argv"]) == ["-O2", "-ffast-math"]


def test_metal_flags_replace_the_defaults_as_a_list(tmp_path: Path) -> None:
    log = tmp_path / "log"
    build = tmp_path / "b"
    common = (
        "build",
        "--kernels",
        "arange",
        "--build-dir",
        str(build),
        "--metal-compiler",
        str(METAL),
    )
    done = _cli(
        *common,
        "--metal-flags",
        "-O2 -Wno-unused-variable",
        "--metal-flags",
        "-ffast-math",
        log=log,
    )
    assert done.returncode == 0, done.stderr
    (call,) = _calls(log, "compile")
    assert _flags(call["argv"]) == ["-O2", "-Wno-unused-variable", "-ffast-math"]
    log.unlink()
    done = _cli(*common, "--metal-flags", "", log=log)
    assert done.returncode == 0, done.stderr
    assert _flags(_calls(log, "compile")[0]["argv"]) == []  # none at all
    log.unlink()
    done = _cli(*common, log=log)  # not given: back to the defaults, not the cached value
    assert done.returncode == 0, done.stderr
    assert _flags(_calls(log, "compile")[0]["argv"]) == DEFAULT_FLAGS
    bad = _cli(*common, "--metal-flags", "-O2 '-Wall", log=log)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--metal-flags" in bad.stderr


def test_std_and_deployment_target_on_compile_and_link(mlx_tree: Path, tmp_path: Path) -> None:
    log = tmp_path / "log"
    done = _cli(
        "build",
        "--source-dir",
        str(mlx_tree),
        "--build-dir",
        str(tmp_path / "b"),
        "--metal-compiler",
        str(METAL),
        "--std",
        "metal3.2",
        "--deployment-target",
        "15.2",
        log=log,
    )
    assert done.returncode == 0, done.stderr
    for call in _calls(log, "compile"):
        flags = _flags(call["argv"])
        assert flags == [*DEFAULT_FLAGS, "-std=metal3.2", "-mmacosx-version-min=15.2"]
    (link,) = _calls(log, "link")
    assert link["argv"][:2] == ["-mmacosx-version-min=15.2", "-o"]
    with open_metallib(tmp_path / "b" / "mlx.metallib") as lib:
        assert lib.header.deployment_target == (15, 2)  # the link recorded it
        names = {fn.name for fn in lib.functions}
    # -std=metal3.2 is MSL 3.2: the build's discovery and the compiler agree on what it emits
    assert {"v_Cosfloat32float32", "msl32_only"} <= names and "before_msl32" not in names
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert manifest["options"]["METALLIB_STD"] == "metal3.2"
    assert manifest["options"]["METALLIB_DEPLOYMENT_TARGET"] == "15.2"
    assert manifest["options"]["METALLIB_AOT_FLAGS"] == DEFAULT_FLAGS


def test_metallib_toml_states_std_target_and_extra_flags(mlx_tree: Path, tmp_path: Path) -> None:
    toml = mlx_tree / "metallib.toml"
    toml.write_text(
        toml.read_text() + 'std = "metal3.1"\ndeployment-target = "14.0"\n'
        'flags = ["-Wno-c++17-extensions"]\n'
    )
    log = tmp_path / "log"
    done = _cli(
        "build",
        "--source-dir",
        str(mlx_tree),
        "--build-dir",
        str(tmp_path / "b"),
        "--metal-compiler",
        str(METAL),
        log=log,
    )
    assert done.returncode == 0, done.stderr
    flags = _flags(_calls(log, "compile")[0]["argv"])
    assert flags == [
        *DEFAULT_FLAGS,
        "-Wno-c++17-extensions",
        "-std=metal3.1",
        "-mmacosx-version-min=14.0",
    ]
    log.unlink()
    done = _cli(
        "build",
        "--source-dir",
        str(mlx_tree),
        "--build-dir",
        str(tmp_path / "b"),
        "--metal-compiler",
        str(METAL),
        "--std",
        "metal3.2",
        log=log,
    )
    assert done.returncode == 0, done.stderr
    assert "-std=metal3.2" in _flags(_calls(log, "compile")[0]["argv"])


def test_xcrun_runs_the_compiler_of_the_sdk_asked_for(tmp_path: Path) -> None:
    log = tmp_path / "log"
    path = os.pathsep.join([str(XCRUN_DIR), os.environ["PATH"]])
    done = _cli(
        "build",
        "--kernels",
        "arange",
        "--build-dir",
        str(tmp_path / "b"),
        "--sdk",
        "iphoneos",
        "--deployment-target",
        "17.0",
        log=log,
        path=path,
    )
    assert done.returncode == 0, done.stderr
    calls = _calls(log, "compile") + _calls(log, "link")
    assert {c["sdk"] for c in calls} == {"iphoneos"}
    assert "-mios-version-min=17.0" in _calls(log, "compile")[0]["argv"]
    assert _calls(log, "link")[0]["argv"][0] == "-mios-version-min=17.0"
    ninja = (tmp_path / "b" / "build.ninja").read_text()
    assert f"{XCRUN_DIR / 'xcrun'} -sdk iphoneos metal" in ninja


def test_bad_std_or_target_is_one_line(tmp_path: Path) -> None:
    log = tmp_path / "log"
    for option, value, words in (
        ("--std", "metal3", "--std must be a Metal language standard"),
        ("--deployment-target", "fourteen", "--deployment-target must be an OS version"),
    ):
        done = _cli(
            "build",
            "--kernels",
            "arange",
            "--build-dir",
            str(tmp_path / "b"),
            "--metal-compiler",
            str(METAL),
            option,
            value,
            log=log,
        )
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert words in done.stderr and not (tmp_path / "b").exists()


def test_aot_of_a_tree_without_compiler_fails_early(mlx_tree: Path, tmp_path: Path) -> None:
    path = os.pathsep.join(
        p for p in os.environ["PATH"].split(os.pathsep) if not (Path(p) / "xcrun").exists()
    )
    done = _cli(
        "build",
        "--source-dir",
        str(mlx_tree),
        "--build-dir",
        str(tmp_path / "b"),
        log=tmp_path / "log",
        path=path,
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "needs Apple's Metal compiler" in done.stderr and "xcrun not found" in done.stderr
    assert not (tmp_path / "b").exists()


def _standin(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(METAL), *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "METAL_STANDIN_LOG": ""},
    )


def test_the_standin_takes_every_flag_the_rules_pass_and_refuses_others(tmp_path: Path) -> None:
    src = tmp_path / "k.metal"
    src.write_text('#include "k.h"\nkernel void k(device float* x [[buffer(0)]]) { x[0] = K; }\n')
    (tmp_path / "k.h").write_text("#define K 1.0f\n")
    ok = _standin(
        "-x",
        "metal",
        *DEFAULT_FLAGS,
        "-O2",
        "-gline-tables-only",
        "-std=metal3.1",
        "-mmacosx-version-min=14.0",
        "-DA=1",
        "-D",
        "B",
        f"-I{tmp_path}",
        "-I",
        str(tmp_path),
        "-c",
        str(src),
        "-o",
        "k.air",
        "-MMD",
        "-MF",
        "k.d",
        "-MT",
        "k.air",
        "-MP",
        cwd=tmp_path,
    )
    assert ok.returncode == 0, ok.stderr
    assert (tmp_path / "k.air").read_text().splitlines()[-1] == "kernel k"
    assert (tmp_path / "k.d").read_text().split() == [
        "k.air:",
        str(src),
        "\\",
        str(tmp_path / "k.h"),
    ]
    for bad in (["--bogus"], ["-std=c++17"], ["-x", "c"], ["-mfoo=1"], ["-E"]):
        done = _standin(*bad, "-c", str(src), "-o", "k.air", "-MMD", "-MF", "k.d", cwd=tmp_path)
        assert done.returncode == 2 and "metal-standin: error:" in done.stderr, bad
    linked = _standin("-mmacosx-version-min=15.0", "-o", "k.metallib", "k.air", cwd=tmp_path)
    assert linked.returncode == 0, linked.stderr
    with open_metallib(tmp_path / "k.metallib") as lib:
        assert [fn.name for fn in lib.functions] == ["k"] and lib.header.deployment_target == (
            15,
            0,
        )
    assert _standin("-o", "k.metallib", "k.metal", cwd=tmp_path).returncode == 2
