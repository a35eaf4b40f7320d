"""The coverage check counts exactly (issue 24, item 17).

A small tree whose every count is known by hand:

- ``e.metal`` instantiates template ``t`` three times; ``t`` is written in ``b.h``, which
  ``e.metal`` reaches only through ``a.h`` (``e.metal`` -> ``a.h`` -> ``b.h``), so ``e.metal``'s
  run-time preamble (its direct include, ``a.h``) holds ``t`` only if the includes of its
  includes are followed;
- ``p.metal`` writes four non-template kernels itself (it stays AOT);
- ``rt.h`` holds two run-time-only kernel templates and ``rt2.h`` one (no entry file reaches
  them).

The input library of ``variants --from`` lacks ``MISSING`` of ``p.metal``'s kernels.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clirun import run_cli
from support.deadline import deadline
from synthetic import synthetic_bytes

from builder.errors import CheckFailed
from builder.jit.preamble import inlined_files
from builder.jit.tree_preambles import PreambleSpec
from builder.kernels.discovery import load_tree
from builder.kernels.kernel_tree import KernelTree
from builder.subsets.coverage import (
    Coverage,
    Lost,
    check_coverage,
    require_coverage,
)

E_KERNELS = ["t_float", "t_int", "t_half"]
P_KERNELS = ["p0", "p1", "p2", "p3"]
MISSING = ["p1", "p3"]
RUNTIME_ONLY = {"rt.h": 2, "rt2.h": 1}


def _tree(root: Path) -> Path:
    root.mkdir()
    (root / "b.h").write_text("template <typename T>\n[[kernel]] void t(device T* x) { }\n")
    (root / "a.h").write_text('#pragma once\n#include "b.h"\n')
    lines = [
        f'template [[host_name("t_{d}")]] [[kernel]] decltype(t<{d}>) t<{d}>;\n'
        for d in ("float", "int", "half")
    ]
    (root / "e.metal").write_text('#include "a.h"\n' + "".join(lines))
    (root / "p.metal").write_text(
        "".join(f"kernel void {name}(device float* x) {{ }}\n" for name in P_KERNELS)
    )
    (root / "rt.h").write_text(
        "template <typename T>\n[[kernel]] void rt_a(device T* x) { }\n"
        "template <typename T>\n[[kernel]] void rt_b(device T* x) { }\n"
    )
    (root / "rt2.h").write_text("template <typename T>\n[[kernel]] void rt_c(device T* x) { }\n")
    return root


@pytest.fixture(scope="module")
def tree_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _tree(tmp_path_factory.mktemp("coverage") / "tree")


@pytest.fixture(scope="module")
def tree(tree_dir: Path) -> KernelTree:
    return load_tree(tree_dir, jobs=1)


def test_the_tree_is_what_the_counts_below_assume(tree: KernelTree) -> None:
    kernels = {(r.source, r.name) for r in tree.kernels}
    assert kernels == {("e.metal", n) for n in E_KERNELS} | {("p.metal", n) for n in P_KERNELS}
    runtime: dict[str, int] = {}
    for template in tree.runtime_only:
        runtime[template.source] = runtime.get(template.source, 0) + 1
    assert runtime == RUNTIME_ONLY


def _variants(
    tree_dir: Path, library: Path, out: Path, capsys: pytest.CaptureFixture[str]
) -> dict[str, dict[str, int]]:
    code, stdout, err = run_cli(
        [
            "variants",
            "--from",
            str(library),
            "--source-dir",
            str(tree_dir),
            "-o",
            str(out),
            "--jit",
            "e.metal",
            "--format",
            "json",
        ],
        capsys,
    )
    assert code == 0, err
    return {v["name"]: v["coverage"] for v in json.loads(stdout)["variants"]}


def test_kernels_two_includes_deep_ship_in_sources_and_missing_ones_are_counted(
    tree_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``e.metal`` JIT succeeds, its three kernels counted in ``in_sources`` (their template is
    two includes away), and the library's two missing kernels of ``p.metal`` in
    ``not_in_input``."""
    held = [n for n in E_KERNELS + P_KERNELS if n not in MISSING]
    library = tmp_path / "in.metallib"
    library.write_bytes(synthetic_bytes([(name, 300) for name in held]))
    coverage = _variants(tree_dir, library, tmp_path / "out", capsys)
    kernels = len(E_KERNELS) + len(P_KERNELS)
    runtime = sum(RUNTIME_ONLY.values())
    assert coverage == {
        "all-aot": {
            "kernels": kernels,
            "in_metallib": kernels - len(MISSING),
            "in_sources": 0,
            "not_in_input": len(MISSING),
            "runtime_only_templates": runtime,
        },
        "jit-1": {
            "kernels": kernels,
            "in_metallib": len(P_KERNELS) - len(MISSING),
            "in_sources": len(E_KERNELS),
            "not_in_input": len(MISSING),
            "runtime_only_templates": runtime,
        },
    }


def _spec(tree_dir: Path, *headers: str) -> PreambleSpec:
    return PreambleSpec("p", tuple(tree_dir / h for h in headers), ())


def test_a_build_counts_every_aot_kernel_in_its_metallib(tree: KernelTree, tree_dir: Path) -> None:
    every = _spec(tree_dir, "rt.h", "rt2.h")
    assert check_coverage(tree, [], [every], [tree_dir]) == Coverage(7, 7, 0, 0, 3, ())
    jit = _spec(tree_dir, "a.h", "rt.h", "rt2.h")
    assert check_coverage(tree, ["e.metal"], [jit], [tree_dir]) == Coverage(7, 4, 3, 0, 3, ())


def test_run_time_only_templates_lost_are_counted_per_header(
    tree: KernelTree, tree_dir: Path
) -> None:
    """Without their headers embedded, each run-time-only template is lost, counted under its
    header; the ones whose header is embedded still count as shipped."""
    none = check_coverage(tree, [], [], [tree_dir])
    assert none.runtime_only == 0
    assert sorted(none.lost, key=lambda lost: lost.source) == [
        Lost("rt.h", 2, ("rt.h",)),
        Lost("rt2.h", 1, ("rt2.h",)),
    ]
    one = check_coverage(tree, [], [_spec(tree_dir, "rt2.h")], [tree_dir])
    assert (one.runtime_only, one.lost) == (1, (Lost("rt.h", 2, ("rt.h",)),))
    with pytest.raises(CheckFailed, match=r"^the build would lose 2 kernel\(s\), .*rt\.h: 2 "):
        require_coverage(one, "the build")


def test_a_jit_file_whose_template_is_not_embedded_is_lost(
    tree: KernelTree, tree_dir: Path
) -> None:
    """The same split with a preamble that stops at ``a.h``'s folder-mate ``rt.h`` (not ``b.h``):
    all three kernels of ``e.metal`` lost, code in ``b.h``."""
    coverage = check_coverage(tree, ["e.metal"], [_spec(tree_dir, "rt.h", "rt2.h")], [tree_dir])
    assert coverage.in_sources == 0
    assert coverage.lost == (Lost("e.metal", 3, ("b.h",)),)
    assert not coverage.complete


def test_an_include_cycle_is_walked_once(tmp_path: Path) -> None:
    """``a.h`` and ``b.h`` include each other (``#pragma once`` makes that legal C++): each file
    is read once and the walk ends."""
    (tmp_path / "a.h").write_text('#pragma once\n#include "b.h"\n')
    (tmp_path / "b.h").write_text('#pragma once\n#include "a.h"\n#include "c.h"\n')
    (tmp_path / "c.h").write_text("int c;\n")
    with deadline(10):
        found = inlined_files([tmp_path / "a.h"], [tmp_path])
    assert found == {(tmp_path / n).resolve() for n in ("a.h", "b.h", "c.h")}
