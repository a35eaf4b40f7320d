"""Functions in more than one library on real wheels (issue 35, item 8): torch 2.14.1's
``libtorch_cpu.dylib`` (``metal_basic`` and ``metal_40``: every MPS kernel compiled twice),
metal-linalg 2.19.0's 13 libraries in one ``.so``, and what mlx-metal 0.32.1's macOS 26 library
adds over its macOS 14 one (NAX and the rest). Each expected figure is computed here: names and
modules from the libraries' bytes (``support.function_lists``), modules compared by hashlib,
bytes summed over the report's own function rows. Each target is reported once per module."""

from __future__ import annotations

import json
import zipfile
from fnmatch import fnmatch
from itertools import combinations
from pathlib import Path
from typing import Any

import pytest
from support.function_lists import Listed, listed, listed_bytes
from support.real_wheels import libraries_or_skip

from builder.cli.group import main
from builder.inputs.targets import Library

from .conftest import mlx_wheel

PLATFORM = "macosx_14_0_arm64"


def _report(args: list[str], out: Path) -> Any:
    """``report ARGS --format json`` as read back (JSON data, typed as such: Any)."""
    assert main(["report", *args, "--format", "json", "-o", str(out)]) in (0, None)
    return json.loads(out.read_text(encoding="utf-8"))


def _functions(lib: Library) -> list[Listed]:
    assert lib.path is not None and lib.window is not None
    return listed(lib.path, lib.window.offset, lib.window.size)


def _pair(
    first: list[Listed], second: list[Listed], sizes: dict[str, int]
) -> tuple[list[str], int, list[str], int]:
    """Shared names, the second library's bytes of them (``sizes``: its report rows), the
    shared names whose modules hash the same, and their bytes in the second."""
    a = {f.name: f.sha256 for f in first}
    shared = sorted(a.keys() & {f.name for f in second})
    same = sorted(f.name for f in second if a.get(f.name) == f.sha256)
    return shared, sum(sizes[n] for n in shared), same, sum(sizes[n] for n in same)


@pytest.fixture(scope="module")
def torch(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Library], Any]:
    libs = libraries_or_skip("torch==2.14.1", PLATFORM)
    assert libs[0].path is not None
    out = tmp_path_factory.mktemp("torch") / "report.json"
    return libs, _report([str(libs[0].path)], out)


def test_torch_states_its_two_libraries_duplicated_functions(
    torch: tuple[list[Library], Any],
) -> None:
    libs, doc = torch
    basic, v40 = (_functions(lib) for lib in libs)
    assert all(f.hash_tag == f.sha256 for f in [*basic, *v40])  # the tags the tool compares
    libraries = doc["libraries"]
    sizes = {f["name"]: f["bytes"] for f in libraries[1]["functions"]}
    shared, size, same, same_size = _pair(basic, v40, sizes)
    [found] = doc["duplicates"]
    labels = [lib["source"]["target"] + "#" + lib["source"]["identity"] for lib in libraries]
    assert [found["first"], found["second"]] == labels
    assert labels[0].endswith("#__TEXT,metal_basic") and labels[1].endswith("#__TEXT,metal_40")
    assert found["names"] == shared and found["functions"] == len(shared) > 16_000
    assert found["bytes"] == size
    assert found["identical_names"] == same and found["identical_bytes"] == same_size
    only_40 = sorted({f.name for f in v40} - {f.name for f in basic})
    assert found["only_second"]["names"] == only_40
    assert found["only_second"]["bytes"] == sum(sizes[n] for n in only_40)
    assert found["only_first"]["functions"] == len({f.name for f in basic} - set(shared))


def test_metal_linalg_pairs(tmp_path: Path) -> None:
    """Every pair of the 13 libraries that shares a name, and no other, in the libraries'
    order, with identical modules by hashlib."""
    libs = libraries_or_skip("metal-linalg==2.19.0", PLATFORM)
    assert len(libs) == 13 and libs[0].path is not None
    doc = _report([str(libs[0].path)], tmp_path / "linalg.json")
    libraries = doc["libraries"]
    rows = [{f["name"]: f["bytes"] for f in lib["functions"]} for lib in libraries]
    functions = [_functions(lib) for lib in libs]
    expected = []
    for i, j in combinations(range(len(libs)), 2):
        shared, size, same, same_size = _pair(functions[i], functions[j], rows[j])
        if shared:
            expected.append((i, j, shared, size, same, same_size))
    assert expected, "metal-linalg's libraries share names"
    found = doc["duplicates"]
    labels = [lib["source"]["target"] + "#" + lib["source"]["identity"] for lib in libraries]
    assert [
        (
            labels.index(d["first"]),
            labels.index(d["second"]),
            d["names"],
            d["bytes"],
            d["identical_names"],
            d["identical_bytes"],
        )
        for d in found
    ] == expected


def _wheel_library(wheel: Path) -> list[Listed]:
    """mlx-metal's metallib read out of its wheel with zipfile: no tool on the path."""
    with zipfile.ZipFile(wheel) as archive:
        return listed_bytes(archive.read("mlx/lib/mlx.metallib"))


def test_what_mlx_macos_26_adds_over_macos_14(tmp_path: Path) -> None:
    """Two wheel files of one release as two targets, a rule naming NAX functions as such:
    the names only the macOS 26 library holds, NAX and the rest, with their bytes."""
    old, new = mlx_wheel("0.32.1", PLATFORM), mlx_wheel("0.32.1", "macosx_26_0_arm64")
    rules = tmp_path / "nax.rules"
    rules.write_text("nax  .*_nax\n", encoding="utf-8")
    doc = _report([str(old), str(new), "--rules", str(rules)], tmp_path / "mlx.json")
    libraries = doc["libraries"]
    sizes = {f["name"]: f["bytes"] for f in libraries[1]["functions"]}
    first, second = _wheel_library(old), _wheel_library(new)
    added = sorted({f.name for f in second} - {f.name for f in first})
    nax = [n for n in added if fnmatch(n, "*_nax*")]
    rest = [n for n in added if n not in nax]
    assert nax and rest
    [found] = doc["duplicates"]
    assert (found["first"], found["second"]) == (
        f"{old}:mlx/lib/mlx.metallib",
        f"{new}:mlx/lib/mlx.metallib",
    )
    shared, size, same, _ = _pair(first, second, sizes)
    assert (found["names"], found["bytes"], found["identical_names"]) == (shared, size, same)
    groups = [
        {"group": "nax", "functions": len(nax), "bytes": sum(sizes[n] for n in nax)},
        {"group": "other", "functions": len(rest), "bytes": sum(sizes[n] for n in rest)},
    ]
    groups.sort(key=lambda g: -int(g["bytes"]))
    assert found["only_second"] == {
        "functions": len(added),
        "bytes": sum(sizes[n] for n in added),
        "groups": groups,
        "names": added,
    }
    removed = sorted({f.name for f in first} - {f.name for f in second})
    assert found["only_first"]["names"] == removed
