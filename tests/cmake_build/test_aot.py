"""The catalog tree's AOT path with the stand-in compiler: generated sources compiled by the same
rule as any tree, depfiles, no-op rebuilds, the link through the metal driver, the metallib."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from builder.kernels import load_catalog
from builder.metallib import open_metallib
from builder.records.manifest import read_manifest
from builder.resources import metal_src_dir

pytestmark = pytest.mark.cmake

FAMILIES = ("unary", "binary", "copy")
DTYPES = ("float32", "float16")


def _bump(path: Path) -> None:
    """Make ``path`` newer than every build output (content unchanged; Ninja has ns mtimes)."""
    os.utime(path)


DEFINES = {
    "METALLIB_KERNELS": ",".join(FAMILIES),
    "METALLIB_DTYPES": ",".join(DTYPES),
    "METALLIB_AOT_CHUNK_SIZE": "40",
}


@pytest.fixture
def built(standin_build):  # type: ignore[no-untyped-def]
    """A build of the test's own (a test that rebuilds or touches it)."""
    standin_build.defines = dict(DEFINES)
    standin_build.configure()
    standin_build.ninja()
    return standin_build


@pytest.fixture(scope="session")
def built_once(shared_standin):  # type: ignore[no-untyped-def]
    """The same build, made once per run, for the tests that only read it."""
    return shared_standin(
        "aot-catalog", lambda dest: shutil.copytree(metal_src_dir(), dest), DEFINES
    )


def test_metallib_holds_exactly_the_catalog_host_names(built_once) -> None:  # type: ignore[no-untyped-def]
    expected = [i.host_name for i in load_catalog(built_once.kernel_dir).expand(FAMILIES, DTYPES)]
    with open_metallib(built_once.build_dir / "mlx.metallib") as lib:
        names = [fn.name for fn in lib.functions]
    assert sorted(names) == sorted(expected)
    assert len(names) == len(set(names))


def test_sources_cut_each_family_and_are_compiled_once(built_once) -> None:  # type: ignore[no-untyped-def]
    catalog = load_catalog(built_once.kernel_dir)
    sources = built_once.generated_sources()
    held: dict[str, list[str]] = {}
    for path in sources:
        # named after the first instantiation each holds; the stand-in reads them as any tree
        names = [c for c in built_once.calls("compile") if Path(c["source"]) == path.resolve()]
        assert len(names) == 1, path
        assert path.stem == names[0]["kernels"][0]
        held.setdefault(path.stem.split("_")[0], []).extend(names[0]["kernels"])
    for family in FAMILIES:
        assert sorted(held[family]) == sorted(i.host_name for i in catalog.expand([family], DTYPES))
    assert len(sources) > len(FAMILIES)  # a mean of 40 per source: families are cut
    for call in built_once.calls("compile"):
        argv = call["argv"]
        assert argv[argv.index("-MF") + 1].endswith(".d") and "-MMD" in argv
        assert argv[:5] == ["-x", "metal", "-Wall", "-Wextra", "-fno-fast-math"]


def test_link_consumes_every_air(built_once) -> None:  # type: ignore[no-untyped-def]
    links = built_once.calls("link")
    assert len(links) == 1
    airs = {Path(c["output"]) for c in built_once.calls("compile")}
    assert {Path(p) for p in links[0]["inputs"]} == airs
    assert len(airs) == len(built_once.generated_sources())
    assert links[0]["argv"][:2] == ["-o", str(built_once.build_dir / "mlx.metallib")]


def test_noop_rebuild_runs_nothing(built) -> None:  # type: ignore[no-untyped-def]
    built.reset_log()
    assert "no work to do" in built.ninja("-n").stdout
    built.ninja()
    assert built.calls() == []
    # a reconfigure with the same options rewrites no source, so still nothing to do
    mtimes = {p: p.stat().st_mtime_ns for p in built.generated_sources()}
    built.configure()
    assert {p: p.stat().st_mtime_ns for p in built.generated_sources()} == mtimes
    assert "no work to do" in built.ninja("-n").stdout


def test_touched_header_rebuilds_only_its_includers(built) -> None:  # type: ignore[no-untyped-def]
    binary_sources = {p.name for p in built.generated_sources() if p.name.startswith("binary_")}
    built.reset_log()
    _bump(built.kernel_dir / "binary" / "binary_ops.h")  # included by binary.h only
    built.ninja()
    assert built.compiled_sources() == binary_sources
    assert len(built.calls("link")) == 1

    built.reset_log()
    _bump(built.kernel_dir / "unary" / "unary_ops.h")
    built.ninja()
    assert built.compiled_sources() == {
        p.name for p in built.generated_sources() if p.name.startswith("unary_")
    }

    built.reset_log()
    _bump(built.kernel_dir / "common" / "types.h")  # reached by every family
    built.ninja()
    assert built.compiled_sources() == {p.name for p in built.generated_sources()}


def test_depfile_lists_headers_reached_through_includes(built_once) -> None:  # type: ignore[no-untyped-def]
    call = next(
        c for c in built_once.calls("compile") if Path(c["source"]).name.startswith("unary_")
    )
    headers = {
        Path(h).relative_to(built_once.kernel_dir.resolve()).as_posix() for h in call["headers"]
    }
    assert {"unary/unary.h", "unary/unary_ops.h", "common/types.h"} <= headers
    assert not any(h.startswith("binary/") for h in headers)


def test_manifest_describes_the_build(built_once) -> None:  # type: ignore[no-untyped-def]
    manifest = built_once.manifest()
    catalog = load_catalog(built_once.kernel_dir)
    assert manifest["metallib"] == "mlx.metallib"
    assert [f["name"] for f in manifest["units"]] == list(FAMILIES)
    for fam in manifest["units"]:
        assert fam["mode"] == "aot"
        assert fam["host_names"] == [i.host_name for i in catalog.expand([fam["name"]], DTYPES)]
        assert fam["sources"] == [catalog.families[fam["name"]].header]
        assert "mlx.metallib" in fam["outputs"]
        assert all(not Path(o).is_absolute() for o in fam["outputs"] + fam["generated_sources"])
        on_disk = sum((built_once.build_dir / s).stat().st_size for s in fam["generated_sources"])
        assert fam["generated_bytes"] == on_disk
    assert (
        manifest["files"]["metallib"]["bytes"]
        == (built_once.build_dir / "mlx.metallib").stat().st_size
    )
    assert manifest["options"]["METALLIB_DTYPES"] == list(DTYPES)
    assert "stand-in" in manifest["toolchain"]["compiler_version"]
    # the size report's reader accepts it and maps every function to its family
    parsed = read_manifest(built_once.build_dir / "manifest.json")
    assert set(parsed.unit_of().values()) == set(FAMILIES)


def test_compiler_launcher_wraps_every_compile(standin_build) -> None:  # type: ignore[no-untyped-def]
    from builder.cmake_build.cmake import find_tool

    launcher = f"{find_tool('cmake')};-E;env;METAL_STANDIN_TAG=launched"
    standin_build.defines = {
        "METALLIB_KERNELS": "arange,softmax",
        "METALLIB_COMPILER_LAUNCHER": launcher,
    }
    standin_build.configure()
    standin_build.ninja()
    compiles = standin_build.calls("compile")
    assert len(compiles) == 2 and all(c["tag"] == "launched" for c in compiles)
    assert standin_build.calls("link")[0]["tag"] is None  # the launcher wraps compiles only
    assert standin_build.manifest()["toolchain"]["launcher"] == launcher  # recorded whole


def test_broken_include_fails_the_compile(standin_build) -> None:  # type: ignore[no-untyped-def]
    header = standin_build.kernel_dir / "arange" / "arange.h"
    header.write_text('#include "common/missing.h"\n' + header.read_text())
    standin_build.defines = {"METALLIB_KERNELS": "arange"}
    standin_build.configure()
    done = standin_build.ninja(check=False)
    assert done.returncode != 0
    assert "FAILED:" in done.stdout and "common/missing.h" in done.stdout
