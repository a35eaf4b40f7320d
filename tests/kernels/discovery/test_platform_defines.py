"""A tree that states its Metal version only as a define (issue 33 item 20): ``defines =
["__METAL_VERSION__=320"]`` without ``metal-version`` is the platform discovery assumes, so the
entry files ``[kernels.requires]`` keeps for MSL 3.2 (MLX's ``fence.metal``) are discovered.

The entry files guard their kernels with ``#if __METAL_VERSION__ >= N`` as well: a kernel is
listed only when the define reached the preprocessor and the requirement kept its file, so the
two agree on the version (the file-level check alone would pass a define that never arrived)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clirun import run_cli

from builder.kernels.discovery import load_tree
from builder.kernels.platforms import left_out

REQUIRES = """
[kernels.requires]
"fence.metal" = { metal-version = 320 }
"*_nax.metal" = { metal-version = 400 }
"""
FILES = {
    "common.metal": "kernel void common_k() {}\n",
    "fence.metal": "#if __METAL_VERSION__ >= 320\nkernel void fence_k() {}\n#endif\n",
    "sub/big_nax.metal": "#if __METAL_VERSION__ >= 400\nkernel void nax_k() {}\n#endif\n",
}


def _tree(root: Path, kernels_table: str) -> Path:
    for name, text in {**FILES, "metallib.toml": kernels_table + REQUIRES}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


@pytest.mark.parametrize(
    ("version", "kernels", "skipped"),
    [
        (310, {"common_k"}, ("fence.metal", "*_nax.metal")),
        (320, {"common_k", "fence_k"}, ("*_nax.metal",)),
        (400, {"common_k", "fence_k", "nax_k"}, ()),
    ],
)
def test_a_version_define_without_metal_version_is_the_platform(
    tmp_path: Path, version: int, kernels: set[str], skipped: tuple[str, ...]
) -> None:
    root = _tree(tmp_path, f'[kernels]\ndefines = ["__METAL_VERSION__={version}"]\n')
    tree = load_tree(root)
    assert {k.name for k in tree.kernels} == kernels
    assert left_out(tree.config) == skipped
    assert tree.config.platform is not None and tree.config.platform.metal_version == version
    assert tree.to_json()["platform"]["left_out"] == list(skipped)


def test_the_define_is_what_the_kernels_command_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same tree through the CLI: fence_k is listed, the NAX kernel is not, and the
    platform is MSL 3.2 with the NAX files left out."""
    root = _tree(tmp_path, '[kernels]\ndefines = ["__METAL_VERSION__=320"]\n')
    code, out, err = run_cli(["kernels", "--source-dir", str(root), "--format", "json"], capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert {k["name"] for k in doc["kernels"]} == {"common_k", "fence_k"}
    assert (doc["platform"]["metal_version"], doc["platform"]["left_out"]) == (320, ["*_nax.metal"])
