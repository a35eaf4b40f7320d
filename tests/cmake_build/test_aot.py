"""The AOT path with the stand-in compiler: depfiles, no-op rebuilds, the link, the metallib."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from builder.kernels import load_catalog
from builder.manifest import read_manifest
from builder.metallib import open_metallib

pytestmark = pytest.mark.cmake

FAMILIES = ("unary", "binary", "copy")
DTYPES = ("float32", "float16")


def _bump(path: Path) -> None:
    """Make ``path`` newer than every build output (content unchanged; Ninja has ns mtimes)."""
    os.utime(path)


@pytest.fixture
def built(standin_build):  # type: ignore[no-untyped-def]
    standin_build.defines = {
        "METAL_KERNELS": ",".join(FAMILIES),
        "METAL_DTYPES": ",".join(DTYPES),
        "METAL_AOT_CHUNK_SIZE": "40",
    }
    standin_build.configure()
    standin_build.ninja()
    return standin_build


def test_metallib_holds_exactly_the_catalog_host_names(built) -> None:  # type: ignore[no-untyped-def]
    expected = [i.host_name for i in load_catalog(built.kernel_dir).expand(FAMILIES, DTYPES)]
    with open_metallib(built.build_dir / "mlx.metallib") as lib:
        names = [fn.name for fn in lib.functions]
    assert sorted(names) == sorted(expected)
    assert len(names) == len(set(names))


def test_sources_are_chunked_per_family(built) -> None:  # type: ignore[no-untyped-def]
    catalog = load_catalog(built.kernel_dir)
    sources = {p.name for p in built.generated_sources()}
    for family in FAMILIES:
        count = len(catalog.expand([family], DTYPES))
        assert {f"{family}_{k}.metal" for k in range(math.ceil(count / 40))} <= sources
    assert len(sources) == sum(math.ceil(len(catalog.expand([f], DTYPES)) / 40) for f in FAMILIES)
    # every source was compiled exactly once, each with its own depfile
    assert sorted(built.compiled_sources()) == sorted(sources)
    for call in built.calls("metal"):
        argv = call["argv"]
        assert argv[argv.index("-MF") + 1].endswith(".d") and "-MMD" in argv


def test_link_consumes_every_air(built) -> None:  # type: ignore[no-untyped-def]
    links = built.calls("metallib")
    assert len(links) == 1
    airs = {Path(c["output"]) for c in built.calls("metal")}
    assert {Path(p) for p in links[0]["inputs"]} == airs
    assert len(airs) == len(built.generated_sources())


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
    assert len(built.calls("metallib")) == 1

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


def test_depfile_lists_headers_reached_through_includes(built) -> None:  # type: ignore[no-untyped-def]
    call = next(c for c in built.calls("metal") if Path(c["source"]).name == "unary_0.metal")
    headers = {Path(h).relative_to(built.kernel_dir.resolve()).as_posix() for h in call["headers"]}
    assert {"unary/unary.h", "unary/unary_ops.h", "common/types.h"} <= headers
    assert not any(h.startswith("binary/") for h in headers)


def test_manifest_describes_the_build(built) -> None:  # type: ignore[no-untyped-def]
    manifest = built.manifest()
    catalog = load_catalog(built.kernel_dir)
    assert manifest["metallib"] == "mlx.metallib"
    assert [f["name"] for f in manifest["families"]] == list(FAMILIES)
    for fam in manifest["families"]:
        assert fam["mode"] == "aot"
        assert fam["host_names"] == [i.host_name for i in catalog.expand([fam["name"]], DTYPES)]
        assert fam["sources"] == [catalog.families[fam["name"]].header]
        assert "mlx.metallib" in fam["outputs"]
        assert all(not Path(o).is_absolute() for o in fam["outputs"] + fam["generated_sources"])
        on_disk = sum((built.build_dir / s).stat().st_size for s in fam["generated_sources"])
        assert fam["generated_bytes"] == on_disk
    assert (
        manifest["files"]["metallib"]["bytes"] == (built.build_dir / "mlx.metallib").stat().st_size
    )
    assert manifest["options"]["METAL_DTYPES"] == list(DTYPES)
    assert "stand-in" in manifest["toolchain"]["compiler_version"]
    # the size report's reader accepts it and maps every function to its family
    parsed = read_manifest(built.build_dir / "manifest.json")
    assert set(parsed.family_of().values()) == set(FAMILIES)


def test_compiler_launcher_wraps_every_compile(standin_build) -> None:  # type: ignore[no-untyped-def]
    from builder.cmake_build.cmake import find_tool

    launcher = f"{find_tool('cmake')};-E;env;METAL_STANDIN_TAG=launched"
    standin_build.defines = {"METAL_KERNELS": "arange,softmax",
                             "METAL_COMPILER_LAUNCHER": launcher}  # fmt: skip
    standin_build.configure()
    standin_build.ninja()
    compiles = standin_build.calls("metal")
    assert len(compiles) == 2 and all(c["tag"] == "launched" for c in compiles)
    assert standin_build.calls("metallib")[0]["tag"] is None  # the launcher wraps compiles only


def test_broken_include_fails_the_compile(standin_build) -> None:  # type: ignore[no-untyped-def]
    header = standin_build.kernel_dir / "arange" / "arange.h"
    header.write_text('#include "common/missing.h"\n' + header.read_text())
    standin_build.defines = {"METAL_KERNELS": "arange"}
    standin_build.configure()
    done = standin_build.ninja(check=False)
    assert done.returncode != 0
    assert "FAILED:" in done.stdout and "common/missing.h' file not found" in done.stdout
