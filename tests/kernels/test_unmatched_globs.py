"""A glob that selects nothing is an error, not a silent no-op (issue 24, item 8).

``--exclude '*_nax.metal'`` arriving with its quotes (a CI runner's argument splitting), or a
typo in ``exclude``/``aot-only`` of metallib.toml, used to match nothing and measure what it meant
to skip. Every command that takes tree options now stops with exit 2 and one line naming the
glob, the key it came from and what it was matched against; nothing is written.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.hostile import Cli, assert_one_error_line, library_with


def _tree(tmp_path: Path) -> tuple[Path, Path]:
    tree = tmp_path / "tree"
    (tree / "steel").mkdir(parents=True)
    (tree / "a.metal").write_text("kernel void ka() {}\n")
    (tree / "steel" / "gemm.metal").write_text('#include "gemm.h"\nkernel void kg() {}\n')
    (tree / "steel" / "gemm.h").write_text("// a header\n")
    library = tmp_path / "lib.metallib"
    library.write_bytes(library_with(["ka", "kg"]))
    (tmp_path / "out").mkdir()
    return tree, library


def _nothing_written(out: Path) -> None:
    assert not any(out.iterdir()), list(out.iterdir())


def _commands(tree: Path, library: Path, out: Path) -> dict[str, list[object]]:
    return {
        "kernels": ["kernels", "--source-dir", tree],
        "report": ["report", library, "--source-dir", tree, "-o", out / "r.json"],
        "compare": ["compare", library, library, "--source-dir", tree, "-o", out / "c.md"],
        "history": ["history", library, "--source-dir", tree, "-o", out / "h.json"],
        "variants --from": ["variants", "--from", library, "--source-dir", tree, "-o", out / "v"],
        "build": ["build", "--source-dir", tree, "--build-dir", out / "b"],
    }


COMMANDS = ["kernels", "report", "compare", "history", "variants --from", "build"]


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("glob", ["'*_nax.metal'", "*_nax.metal", "steel/*.metl"])
def test_an_exclude_that_matches_nothing_is_named(
    command: str, glob: str, tmp_path: Path, cli: Cli
) -> None:
    tree, library = _tree(tmp_path)
    out = tmp_path / "out"
    args = _commands(tree, library, out)[command]
    code, _, err = cli(*args, "--exclude", "a.metal", "--exclude", glob)
    assert_one_error_line(
        code,
        err,
        f"--exclude {glob!r} matches no entry file or header of {tree}",
        "(2 entry files, 1 header)",
    )
    _nothing_written(out)


@pytest.mark.parametrize("command", COMMANDS)
def test_an_exclude_in_metallib_toml_that_matches_nothing_is_named(
    command: str, tmp_path: Path, cli: Cli
) -> None:
    tree, library = _tree(tmp_path)
    (tree / "metallib.toml").write_text('[kernels]\nexclude = ["steel/*", "fence.metal"]\n')
    out = tmp_path / "out"
    code, _, err = cli(*_commands(tree, library, out)[command])
    assert_one_error_line(
        code, err, f"{tree / 'metallib.toml'}: [kernels] exclude 'fence.metal' matches no"
    )
    _nothing_written(out)


def test_an_exclude_may_name_a_header_only(tmp_path: Path, cli: Cli) -> None:
    """An exclude also keeps a header out of the run-time-only search: naming only headers
    is a use, not a typo."""
    tree, _ = _tree(tmp_path)
    code, _, err = cli("kernels", "--source-dir", tree, "--exclude", "steel/*.h")
    assert code == 0, err


@pytest.mark.parametrize("option", ["--jit", "--aot"])
def test_a_variant_glob_that_matches_nothing_names_the_tree(
    option: str, tmp_path: Path, cli: Cli
) -> None:
    tree, library = _tree(tmp_path)
    out = tmp_path / "out"
    args = _commands(tree, library, out)["variants --from"]
    code, _, err = cli(*args, "--exclude", "a.metal", option, "a.metal")
    assert_one_error_line(
        code,
        err,
        f"{option} 'a.metal' matches no entry file of {tree}",
        "(1 entry file, after exclusions)",
    )
    _nothing_written(out)


@pytest.mark.parametrize("command", ["variants --from", "build"])
def test_an_aot_only_glob_that_matches_nothing_is_named(
    command: str, tmp_path: Path, cli: Cli
) -> None:
    tree, library = _tree(tmp_path)
    (tree / "metallib.toml").write_text('[build]\naot-only = ["a.metal", "steel/gem.metal"]\n')
    out = tmp_path / "out"
    args = _commands(tree, library, out)[command]
    code, _, err = cli(*args, "--jit", "*.metal")
    assert_one_error_line(
        code,
        err,
        f"{tree / 'metallib.toml'}: [build] aot-only 'steel/gem.metal' matches no entry file",
        "(2 entry files)",
    )
    _nothing_written(out)
    # one that names an excluded file only keeps nothing AOT, and is fine
    (tree / "metallib.toml").write_text('[build]\naot-only = ["a.metal"]\n')
    code, _, err = cli(*_commands(tree, library, out)["kernels"], "--exclude", "a.metal")
    assert code == 0, err
