"""Text written to a pipe or a file is not wrapped: a path longer than any terminal stays on one
line, whole, in every title, caption, row and verdict (it was cut at 80 or 100 columns,
mid-word: ``fat`` / ``Mach-O``, ``deeper`` / ``_still``, ``an…`` in a table cell). The CLI runs
as its own process here with stdout a pipe and no COLUMNS, as in a CI log or ``> file``."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from binaries import link_dylib, lipo
from support.spawn import run_cli_process

DEEP = (
    "a_folder_name_long_enough_to_pass_any_terminal/and_another_level_deeper_still"
    "/and_a_third_one_to_be_wider_than_the_widest_table/release"
)


def _piped(args: list[str], cwd: Path) -> tuple[int, list[str]]:
    """``metallib-builder ARGS | cat``: the exit code and stdout's lines."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    done = run_cli_process(args, cwd=cwd, env=env, capture_output=True, text=True)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout.splitlines()


def _whole(path: str, lines: list[str]) -> list[str]:
    """The lines holding ``path`` whole; no line may end in a start of it or start with an end
    of it (a path wrapped onto two lines), nor hold an ellipsis (a cell cut short)."""
    found = [line for line in lines if path in line]
    assert found, "\n".join(lines)
    for line in lines:
        assert "…" not in line, line
        if path in line:
            continue
        text = line.strip(" │┃")
        for k in range(8, len(path) - 7):
            assert not text.endswith(path[:k]) and not text.startswith(path[k:]), (line, path)
    return found


@pytest.fixture
def deep(tmp_path: Path) -> Path:
    folder = tmp_path / DEEP
    folder.mkdir(parents=True)
    return folder


def test_report_of_a_fat_binary_keeps_its_path_whole(
    deep: Path, tmp_path: Path, write_metallib: Callable[..., Path]
) -> None:
    lib = write_metallib("k.metallib", [("kernel_one_float32", 400), ("kernel_two_half", 300)])
    blobs: list[tuple[str, str | None, Path]] = [("__TEXT,metal_basic", "_thing_metallib", lib)]
    thin = [link_dylib(deep / f"libthing_{a}.dylib", blobs, arch=a) for a in ("arm64", "x86_64")]
    fat = lipo(deep / "libthing_universal_release_build.dylib", thin)
    shown = str(fat.relative_to(tmp_path))
    assert len(shown) > 160  # wider than the widest terminal table
    code, lines = _piped(["report", shown, "--member", "#1"], tmp_path)
    assert code == 0, lines
    found = _whole(shown, lines)
    assert any(f"{shown}: fat Mach-O, " in line for line in found)  # the binary's title
    assert any(line.startswith(f"measured in {shown} (bytes ") for line in found)  # caption
    assert all(line == line.rstrip() for line in lines if not line.startswith(("┃", "│")))


def test_compare_and_budget_keep_a_long_path_whole(
    deep: Path, tmp_path: Path, write_metallib: Callable[..., Path]
) -> None:
    base = write_metallib(f"{DEEP}/base_of_the_comparison.metallib", [("kernel_a_float32", 400)])
    head = write_metallib(f"{DEEP}/head_of_the_comparison.metallib", [("kernel_a_float32", 440)])
    b, h = (str(p.relative_to(tmp_path)) for p in (base, head))
    code, lines = _piped(["compare", b, h, "--max-growth", "50%"], tmp_path)
    assert code == 0, lines
    found = _whole(h, lines)
    assert any(line.startswith(f"PASS --max-growth 50%: {h} grew by ") for line in found)
    budget = tmp_path / "metallib-size.toml"
    budget.write_text(f'[[budget]]\ntarget = "{h}"\nmax-size = "1MB"\n')
    code, lines = _piped(["budget", str(budget.name)], tmp_path)
    assert code == 0, lines
    found = _whole(h, lines)  # the budget's row, and the caption naming the file it found
    assert f"measured in {tmp_path / h}" in found and any(
        line.startswith(f"│ {h} │") for line in found
    )


def test_kernels_lists_a_long_entry_file_name_whole(tmp_path: Path) -> None:
    name = "an_entry_file_whose_name_is_longer_than_the_eighty_columns_of_a_pipe_" * 2 + ".metal"
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / name).write_text("[[kernel]] void k(device float* x) { }\n")
    code, lines = _piped(["kernels", "--source-dir", str(tree)], tmp_path)
    assert code == 0, lines
    (row,) = _whole(name, lines)
    assert row.startswith(f"│ {name} │")
