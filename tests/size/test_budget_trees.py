"""Budgets as MLX would write them (issue 24 items 13 and 14): grouped by source file against a
release, with the tree's per-platform flags, and every error naming the file and the budget.

The values are checked against ``report --source-dir`` of the same library with the same flags
on the command line: the budget's tree keys must mean what those options mean. The library is
mlx-metal 0.32.0's (cached by the test suite), the tree our MLX-style entry files over that
wheel's own headers (tests/data/mlx_style).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from mlx_tree import DATA, MLX_PLATFORM, MLX_VERSION
from support.hostile import Cli, budget_error, library_with

pytestmark = pytest.mark.realdata


def _groups(cli: Cli, library: Path, *flags: object) -> dict[str, int]:
    code, out, err = cli("report", library, "--source-dir", DATA, *flags, "--format", "json")
    assert code == 0, err
    return {g["name"]: g["bytes"] for g in json.loads(out)["groups"]}


def _table(groups: dict[str, int]) -> str:
    return "{ " + ", ".join(f'"{name}" = {size}' for name, size in groups.items()) + " }"


def _verdicts(out: str) -> dict[tuple[str, str], dict[str, object]]:
    return {(c["budget"], c["group"] or c["key"]): c for c in json.loads(out)["verdicts"]}


def test_a_source_budget_grows_against_a_release(
    mlx_metallib: Callable[[str, str], Path], mlx_headers: Path, tmp_path: Path, cli: Cli
) -> None:
    """The issue's case: ``by = "source"`` with ``source-dir`` and ``base =
    "mlx-metal==0.32.0"`` stopped with "--by source needs the kernel tree ... (add --source-dir
    DIR)" although the budget gave one: the base was grouped without the tree."""
    library = mlx_metallib(MLX_VERSION, MLX_PLATFORM)
    groups = _groups(cli, library, "-I", mlx_headers)
    assert groups["unary_subset.metal"] > 0
    path = tmp_path / "metallib-size.toml"
    path.write_text(
        f'[[budget]]\nname = "mlx by file"\ntarget = "{library}"\nby = "source"\n'
        f'source-dir = "{DATA}"\ninclude-dirs = ["{mlx_headers}"]\n'
        f'base = "mlx-metal=={MLX_VERSION}"\nmax-growth = "0%"\n'
        f'groups = {{ "unary_subset.metal" = {groups["unary_subset.metal"]} }}\n'
    )
    code, out, err = cli("budget", path, "--format", "json")
    assert code == 0, err
    verdicts = _verdicts(out)
    assert verdicts[("mlx by file", "max-growth")]["value"] == 0  # the same library
    assert verdicts[("mlx by file", "unary_subset.metal")]["value"] == groups["unary_subset.metal"]


def test_tree_keys_mean_what_the_command_line_options_mean(
    mlx_metallib: Callable[[str, str], Path], mlx_headers: Path, tmp_path: Path, cli: Cli
) -> None:
    """``defines``, ``exclude`` and ``config`` (MLX's per-platform flags: ``-D
    __METAL_VERSION__=400``, ``--exclude '*_nax.metal'``) were unknown keys, exit 2."""
    library = mlx_metallib(MLX_VERSION, MLX_PLATFORM)
    (tmp_path / "ci").mkdir()
    (tmp_path / "ci" / "metallib.toml").write_text(
        f'[kernels]\ninclude-dirs = ["{mlx_headers}"]\n'
        'defines = ["__METAL_VERSION__=320"]\nexclude = ["binary_subset.metal"]\n'
    )
    cases = {
        "defines": (
            f'include-dirs = ["{mlx_headers}"]\ndefines = ["__METAL_VERSION__=320"]',
            ["-I", mlx_headers, "-D", "__METAL_VERSION__=320"],
        ),
        "exclude": (
            f'include-dirs = ["{mlx_headers}"]\nexclude = ["unary_subset.metal"]',
            ["-I", mlx_headers, "--exclude", "unary_subset.metal"],
        ),
        "config": ('config = "ci/metallib.toml"', ["--config", tmp_path / "ci" / "metallib.toml"]),
    }
    expected = {name: _groups(cli, library, *flags) for name, (_, flags) in cases.items()}
    assert "versioned.metal" in expected["defines"]  # the flags change what is measured
    assert "unary_subset.metal" not in expected["exclude"]
    assert "binary_subset.metal" not in expected["config"]
    text = "".join(
        f'[[budget]]\nname = "{name}"\ntarget = "{library}"\nby = "source"\n'
        f'source-dir = "{DATA}"\n{keys}\ngroups = {_table(expected[name])}\n\n'
        for name, (keys, _) in cases.items()
    )
    (tmp_path / "metallib-size.toml").write_text(text)
    code, out, err = cli("budget", tmp_path / "metallib-size.toml", "--format", "json")
    assert code == 0, err
    verdicts = _verdicts(out)
    for name, groups in expected.items():
        measured = {g: verdicts[(name, g)]["value"] for g in groups}
        assert measured == groups, name


@pytest.mark.parametrize(
    ("keys", "files", "words"),
    [
        ('target = "none.metallib"\nmax-size = 1', {}, ["none.metallib: no such file"]),
        ('target = "bad.metallib"\nmax-size = 1', {"bad.metallib": b"MTLB" + b"\0" * 60}, []),
        (
            'target = "a.metallib"\nbase = "gone.json"\nmax-growth = "1%"',
            {},
            ["gone.json: no such file"],
        ),
        (
            'target = "a.metallib"\nby = "source"\nsource-dir = "tree"\ngroups = { x = 1 }',
            {"tree/a.metal": b"kernel void a() {}\n", "tree/metallib.toml": b"[kernels]\nx = 1\n"},
            ["tree/metallib.toml: unknown key in [kernels]: 'x'"],
        ),
        (
            'target = "a.metallib"\nsource-dir = "tree"\nconfig = "no.toml"\nmax-size = 1',
            {"tree/a.metal": b"kernel void a() {}\n"},
            ["'config'", "no.toml: no such file"],
        ),
        (
            'target = "a.metallib"\nexclude = ["x.metal"]\nmax-size = 1',
            {},
            ["'exclude' is for the tree named by 'source-dir'"],
        ),
        (
            'target = "a.metallib"\nsource-dir = "."\ndefines = ["=1"]\nmax-size = 1',
            {},
            ["'defines' must be NAME or NAME=VALUE, without control characters, got '=1'"],
        ),
    ],
    ids=["missing-target", "bad-library", "missing-base", "bad-tree", "no-config", "no-tree", "-D"],
)
def test_every_budget_error_names_the_file_and_the_budget(
    keys: str, files: dict[str, bytes], words: list[str], tmp_path: Path, cli: Cli
) -> None:
    (tmp_path / "a.metallib").write_bytes(library_with(["k_float"]))
    for name, data in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    path = tmp_path / "metallib-size.toml"
    path.write_text(f'[[budget]]\nname = "gate"\n{keys}\n')
    code, out, err = cli("budget", path)
    assert out == ""
    line = budget_error(code, err, f"{path}: [[budget]] #1 (gate): ", *words)
    assert line.count("[[budget]]") == 1, line
