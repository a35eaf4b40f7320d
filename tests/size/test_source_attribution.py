"""``report``/``compare --by source --source-dir``: a real library's bytes attributed to the entry
files of a kernel tree that has no manifest and no catalog (issue 12, item 3).

The tree is tests/data/mlx_style (our own MLX-style entry files over mlx-metal 0.32.0's real
kernel headers); the library is mlx-metal 0.32.0's. The names each file produces were worked out
by hand (tests/kernels/discovery/expected.py); the ones that mirror shipped kernels are in the
real library, every other function of it belongs to no file of this tree.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from clirun import run_cli
from kernels.discovery.expected import BY_FILE, MIRRORED
from mlx_tree import MLX_PLATFORM, MLX_VERSION

pytestmark = pytest.mark.realdata


def _tree_args(mlx_style: Path, mlx_headers: Path) -> list[str]:
    return ["--source-dir", str(mlx_style), "-I", str(mlx_headers)]


def test_report_by_source_of_a_real_library(
    mlx_metallib: Callable[[str, str], Path],
    mlx_style: Path,
    mlx_headers: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    library = mlx_metallib(MLX_VERSION, MLX_PLATFORM)
    code, out, err = run_cli(
        ["report", str(library), *_tree_args(mlx_style, mlx_headers), "--format", "json"], capsys
    )
    assert code == 0, err
    report = json.loads(out)
    assert report["by"] == "source"  # --source-dir alone means --by source
    assert report["grouping"] == f"discovery:{mlx_style}"
    # the byte invariant: every byte to a function or to the container's overhead
    assert report["file_size"] == library.stat().st_size
    assert (
        sum(f["bytes"] for f in report["functions"]) + report["overhead_bytes"]
        == (report["file_size"])
    )
    group_of = {f["name"]: f["group"] for f in report["functions"]}
    mirrored = {
        name: source for source, names in BY_FILE.items() for name in names if name in MIRRORED
    }
    assert mirrored and all(name in group_of for name in mirrored)
    for name, source in mirrored.items():
        assert group_of[name] == source, name
    others = {name for name, group in group_of.items() if group == "other"}
    assert others == set(group_of) - set(mirrored)
    # what no entry file produces is said on stderr, counted and sized (issue 17)
    unattributed = sum(f["bytes"] for f in report["functions"] if f["name"] not in mirrored)
    assert (
        f"warning: {library}: {len(others):,} of {len(group_of):,} functions "
        f"({unattributed:,} bytes) are produced by no entry file of {mlx_style}"
    ) in err
    # the tree's kernels the real library lacks (issue 35, item 6): the hand-worked names of
    # every file less the library's
    tree = {name for names in BY_FILE.values() for name in names}
    assert report["tree_kernels_missing"] == sorted(tree - set(group_of))
    assert report["tree_kernels_missing"]  # the tree's own kernels, no release ships them
    assert f"{len(report['tree_kernels_missing']):,} of the {len(tree):,} kernels of" in err
    groups = {g["name"]: g for g in report["groups"]}
    for source in {mirrored[n] for n in mirrored}:
        names = [n for n in mirrored if mirrored[n] == source]
        assert groups[source]["function_count"] == len(names)
        assert groups[source]["bytes"] == sum(
            f["bytes"] for f in report["functions"] if f["name"] in names
        )


def test_compare_and_saved_reports_by_source(
    mlx_metallib: Callable[[str, str], Path],
    mlx_style: Path,
    mlx_headers: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    base, head = mlx_metallib("0.30.0", MLX_PLATFORM), mlx_metallib(MLX_VERSION, MLX_PLATFORM)
    saved = tmp_path / "base.json"
    code, out, _ = run_cli(["report", str(base), "--format", "json"], capsys)  # by kernel
    saved.write_text(out)
    code, out, err = run_cli(
        ["compare", str(saved), str(head), *_tree_args(mlx_style, mlx_headers), "--format", "json"],
        capsys,
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["head"]["by"] == doc["base"]["by"] == "source"
    names = {g["name"] for g in doc["groups"]}
    assert {"unary_subset.metal", "binary_subset.metal", "arange_subset.metal", "other"} <= names
    assert (
        sum(g["delta_bytes"] for g in doc["groups"])
        == doc["delta_bytes"]
        == (head.stat().st_size - base.stat().st_size)
    )


def test_tree_options_need_a_tree_and_source_grouping(
    mlx_metallib: Callable[[str, str], Path],
    mlx_style: Path,
    mlx_headers: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    library = str(mlx_metallib(MLX_VERSION, MLX_PLATFORM))
    for argv, words in (
        (["report", library, "-I", str(mlx_headers)], "--source-dir"),
        (["report", library, *_tree_args(mlx_style, mlx_headers), "--by", "kernel"], "--by source"),
        (["report", library, "--by", "source"], "--source-dir"),
    ):
        code, out, err = run_cli(argv, capsys)
        assert code == 2 and out == "" and err.count("\n") == 1 and words in err, (argv, err)


def test_a_tree_that_makes_every_function_warns_nothing(
    write_metallib: Callable[..., Path],
    mlx_style: Path,
    mlx_headers: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    names = sorted(n for names in BY_FILE.values() for n in names)
    library = write_metallib("tree.metallib", [(n, 300) for n in names])
    code, _, err = run_cli(["report", str(library), *_tree_args(mlx_style, mlx_headers)], capsys)
    assert code == 0, err
    assert "warning" not in err
    extra = write_metallib("extra.metallib", [*((n, 300) for n in names), ("stray", 5000)])
    code, _, err = run_cli(["report", str(extra), *_tree_args(mlx_style, mlx_headers)], capsys)
    assert code == 0 and f"warning: {extra}: 1 of {len(names) + 1:,} functions (" in err
