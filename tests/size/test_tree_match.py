"""A library against the kernel tree given with ``--source-dir`` (issue 35, items 6 and 7): the
tree's kernels it lacks (``tree_kernels_missing``), the bytes no entry file produces (the 'other'
group, a row never folded), the gates ``--fail-on-missing`` and ``--max-unattributed`` (budget
keys ``fail-on-missing``, ``max-unattributed``), and the mismatch warning in every output.

The tree is tests/data/mlx_style (MLX-style entry files over mlx-metal 0.32.0's real kernel
headers); the names each of its files produces were worked out by hand
(tests/kernels/discovery/expected.py), so every expected set below is a set difference of those
names and the names the test put into the library.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from clirun import run_cli
from kernels.discovery.expected import BY_FILE

from builder.kernels.discovery import load_tree

pytestmark = pytest.mark.realdata

TREE = sorted({name for names in BY_FILE.values() for name in names})
STRAYS = ("stray_kernel_a", "stray_kernel_b", "stray_kernel_c")
"""Functions no entry file of the tree produces."""


def _tree(mlx_style: Path, mlx_headers: Path) -> list[str]:
    return ["--source-dir", str(mlx_style), "-I", str(mlx_headers)]


@pytest.fixture
def libraries(write_metallib: Callable[..., Path]) -> tuple[Path, Path, list[str]]:
    """A base holding every kernel of the tree and one stray function; a head lacking every
    third kernel of the tree, with three strays; and the kernels head lacks."""
    lacks = TREE[::3]
    base = write_metallib("base.metallib", [*((n, 300) for n in TREE), (STRAYS[0], 700)])
    kept = [n for n in TREE if n not in lacks]
    head = write_metallib(
        "head.metallib",
        [*((n, 300) for n in kept), *((s, 700 + 100 * i) for i, s in enumerate(STRAYS))],
    )
    return base, head, lacks


def _other_bytes(report: dict[str, object]) -> int:
    """The 'other' group computed here: the bytes of the functions the tree's files do not
    make, from the report's own per-function bytes."""
    functions = report["functions"]
    assert isinstance(functions, list)
    return sum(f["bytes"] for f in functions if f["name"] not in TREE)


def test_report_counts_and_names_the_tree_kernels_the_library_lacks(
    libraries: tuple[Path, Path, list[str]],
    mlx_style: Path,
    mlx_headers: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, head, lacks = libraries
    discovered = {k.name for k in load_tree(mlx_style, include_dirs=[mlx_headers]).kernels}
    assert discovered == set(TREE)  # discovery finds the names worked out by hand
    expected = sorted(discovered - {*TREE[1::3], *TREE[2::3]})  # the tree less the library's
    assert expected == sorted(lacks) and expected

    code, out, err = run_cli(
        ["report", str(head), *_tree(mlx_style, mlx_headers), "--format", "json"], capsys
    )
    assert code == 0, err
    report = json.loads(out)
    assert report["tree_kernels_missing"] == expected
    said = (
        f"{len(expected):,} of the {len(TREE):,} kernels of {mlx_style} for the library's platform"
    )
    first = ", ".join(expected[:5]) + ", ..."
    assert any(said in w and first in w for w in report["warnings"]), report["warnings"]
    assert f"warning: {head}: {said} are not in the library: {first}" in err
    for fmt in ("table", "markdown"):
        code, out, _ = run_cli(
            ["report", str(head), *_tree(mlx_style, mlx_headers), "--format", fmt], capsys
        )
        assert code == 0 and said in out and first in out, (fmt, out)

    # a library holding every kernel of the tree lacks none, and says nothing of it
    code, out, err = run_cli(
        ["report", str(libraries[0]), *_tree(mlx_style, mlx_headers), "--format", "json"], capsys
    )
    assert code == 0 and json.loads(out)["tree_kernels_missing"] == []
    assert "are not in the library" not in err
    tree = _tree(mlx_style, mlx_headers)
    code, out, _ = run_cli(["report", str(libraries[0]), *tree, "--format", "markdown"], capsys)
    assert code == 0 and "every kernel of the tree is in the library" in out
    # without a tree: no figure at all (omitted, not an empty list)
    code, out, _ = run_cli(["report", str(head), "--format", "json"], capsys)
    assert code == 0 and "tree_kernels_missing" not in json.loads(out)


def test_fail_on_missing_fails_naming_the_kernels_and_passes_when_none_lack(
    libraries: tuple[Path, Path, list[str]],
    mlx_style: Path,
    mlx_headers: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    base, head, lacks = libraries
    tree = _tree(mlx_style, mlx_headers)
    code, out, err = run_cli(["compare", str(base), str(head), *tree, "--fail-on-missing"], capsys)
    assert code == 1, err
    failed = [line for line in err.splitlines() if line.startswith("error: size gate failed")]
    assert len(failed) == 1
    first = ", ".join(f"'{n}'" for n in lacks[:3])
    assert (
        f"--fail-on-missing: {head} lacks {len(lacks):,} kernels of its tree: {first} and "
        in (failed[0])
    )
    # what head lacks that base holds: every one of them, base holding the whole tree
    assert f"base 0, head {len(lacks):,}; {len(lacks):,} that base holds are not in head" in out

    code, out, err = run_cli(
        ["compare", str(base), str(head), *tree, "--fail-on-missing", "--format", "json"], capsys
    )
    doc = json.loads(out)
    assert code == 1 and doc["head"]["tree_kernels_missing"] == lacks
    assert doc["base"]["tree_kernels_missing"] == []
    assert [g["passed"] for g in doc["gates"]] == [False]

    # the other way round, head holds every kernel of the tree
    code, out, err = run_cli(["compare", str(head), str(base), *tree, "--fail-on-missing"], capsys)
    assert code == 0, err
    assert f"PASS --fail-on-missing: {base} holds every kernel of its tree" in out
    # no tree: the gate cannot be measured, exit 2 and one line
    code, out, err = run_cli(["compare", str(base), str(head), "--fail-on-missing"], capsys)
    assert code == 2 and err.count("\n") == 1 and "fail-on-missing needs the kernel tree" in err


def test_max_unattributed_fails_above_the_other_group_and_passes_at_it(
    libraries: tuple[Path, Path, list[str]],
    mlx_style: Path,
    mlx_headers: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    base, head, _ = libraries
    tree = _tree(mlx_style, mlx_headers)
    code, out, _ = run_cli(["report", str(head), *tree, "--format", "json"], capsys)
    other = _other_bytes(json.loads(out))
    assert other > 0
    groups = {g["name"]: g for g in json.loads(out)["groups"]}
    assert groups["other"]["bytes"] == other  # the row is the group computed here
    for limit, exit_code in ((other, 0), (other - 1, 1)):
        code, out, err = run_cli(
            ["compare", str(base), str(head), *tree, "--max-unattributed", str(limit)], capsys
        )
        assert code == exit_code, err
        verdict = "PASS" if exit_code == 0 else "FAIL"
        assert f"{verdict} --max-unattributed " in out
        assert f": {head} has " in out and f"({other:,} bytes) produced by no entry file" in out
    # grouped by anything but source, no row says it: exit 2
    code, _, err = run_cli(
        ["compare", str(base), str(head), "--by", "kernel", "--max-unattributed", "1"], capsys
    )
    assert code == 2 and "max-unattributed" in err and err.count("\n") == 1


def test_the_other_row_is_never_folded_into_the_rest(
    write_metallib: Callable[..., Path],
    mlx_style: Path,
    mlx_headers: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The smallest group, 'other', is still a row of its own with --top 1, in the report's
    table and markdown and in compare's table and comment."""
    library = write_metallib("lib.metallib", [*((n, 3000) for n in TREE), ("stray", 10)])
    smaller = write_metallib("small.metallib", [*((n, 2000) for n in TREE), ("stray", 20)])
    tree = _tree(mlx_style, mlx_headers)
    code, out, _ = run_cli(["report", str(library), *tree, "--format", "json"], capsys)
    groups = json.loads(out)["groups"]
    assert len(groups) >= 4 and groups[-1]["name"] == "other"  # the smallest group
    other = groups[-1]
    for fmt, row in (
        ("markdown", f"| `other` | {other['function_count']} |"),
        ("table", " other "),
    ):
        code, out, _ = run_cli(
            ["report", str(library), *tree, "--top", "1", "--format", fmt], capsys
        )
        assert code == 0 and "rest (" in out and row in out, out
    code, out, _ = run_cli(
        ["compare", str(smaller), str(library), *tree, "--top", "1", "--format", "markdown"], capsys
    )
    assert code == 0 and "| `other` |" in out and "| rest (" in out
    code, out, _ = run_cli(["compare", str(smaller), str(library), *tree, "--top", "1"], capsys)
    assert code == 0 and " other " in out and "rest (" in out


def test_a_tree_that_does_not_match_is_said_in_every_output(
    libraries: tuple[Path, Path, list[str]],
    mlx_style: Path,
    mlx_headers: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The mismatch stderr warns of (functions no entry file produces) is in the report's
    markdown and JSON, in compare's markdown (the PR comment), its step summary and its JSON."""
    base, head, _ = libraries
    tree = _tree(mlx_style, mlx_headers)
    code, out, _ = run_cli(["report", str(head), *tree, "--format", "json"], capsys)
    other = _other_bytes(json.loads(out))
    sentence = (
        f"{len(STRAYS)} of {len(TREE) - len(TREE[::3]) + len(STRAYS):,} functions ({other:,} "
        f"bytes) are produced by no entry file of {mlx_style} and land in 'other'"
    )
    report_md, report_json, compare_md = (tmp_path / n for n in ("r.md", "r.json", "c.md"))
    compare_json, summary = tmp_path / "c.json", tmp_path / "summary.md"
    code, _, err = run_cli(
        ["report", str(head), *tree, "-o", str(report_md), "-o", str(report_json)], capsys
    )
    assert code == 0 and f"warning: {head}: {sentence}" in err
    assert f"warning: {sentence}" in report_md.read_text()
    assert any(w.startswith(sentence) for w in json.loads(report_json.read_text())["warnings"])

    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    code, _, err = run_cli(
        ["compare", str(base), str(head), *tree, "-o", str(compare_md), "-o", str(compare_json)],
        capsys,
    )
    assert code == 0 and f"warning: {head}: {sentence}" in err
    for text in (compare_md.read_text(), summary.read_text()):
        assert f"- ⚠️ warning: head: {sentence}" in text
    doc = json.loads(compare_json.read_text())
    assert any(w.startswith(sentence) for w in doc["head"]["warnings"])
    assert all("head.metallib" not in w for w in doc["head"]["warnings"])  # no label in it


def test_budget_keys_fail_on_missing_and_max_unattributed(
    libraries: tuple[Path, Path, list[str]],
    mlx_style: Path,
    mlx_headers: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, head, lacks = libraries
    code, out, _ = run_cli(
        ["report", str(head), *_tree(mlx_style, mlx_headers), "--format", "json"], capsys
    )
    other = _other_bytes(json.loads(out))
    budget = tmp_path / "metallib-size.toml"

    def run(keys: str) -> tuple[int, str, str]:
        budget.write_text(
            f'[[budget]]\nname = "head"\ntarget = "{head}"\nby = "source"\n'
            f'source-dir = "{mlx_style}"\ninclude-dirs = ["{mlx_headers}"]\n{keys}\n'
        )
        return run_cli(["budget", str(budget), "--format", "json"], capsys)

    code, out, err = run(f"fail-on-missing = true\nmax-unattributed = {other}")
    assert code == 1, err
    said = f"head: {head}: {len(STRAYS)} of "
    assert [w for w in json.loads(out)["warnings"] if w.startswith(said)], out  # as stderr
    assert f"warning: {said}" in err
    verdicts = {v["key"]: v for v in json.loads(out)["verdicts"]}
    assert verdicts["fail-on-missing"]["value"] == len(lacks)
    assert verdicts["fail-on-missing"]["counts"] == "kernels"
    assert verdicts["max-unattributed"]["value"] == other and verdicts["max-unattributed"]["passed"]
    first = ", ".join(f"'{n}'" for n in lacks[:3])
    assert f"budget exceeded: head lacks {len(lacks):,} kernels of its tree: {first} and" in err
    assert verdicts["fail-on-missing"]["names"] == lacks  # JSON lists them all
    code, out, err = run(f"max-unattributed = {other - 1}")
    said_limit = f"({other:,} bytes) produced by no entry file ('other'), above "
    assert code == 1 and "budget exceeded: head has " in err and said_limit in err
    assert f"({other - 1:,} bytes)" in err
    code, out, _ = run_cli(["budget", str(budget), "--format", "markdown"], capsys)
    assert code == 1 and f"- ⚠️ warning: {said}" in out

    budget.write_text(f'[[budget]]\ntarget = "{head}"\nfail-on-missing = true\n')
    code, _, err = run_cli(["budget", str(budget)], capsys)
    assert code == 2 and "'fail-on-missing' needs 'source-dir'" in err
    budget.write_text(f'[[budget]]\ntarget = "{head}"\nmax-unattributed = "1MB"\n')
    code, _, err = run_cli(["budget", str(budget)], capsys)
    assert code == 2 and "'max-unattributed' limits the bytes no entry file produces" in err


def test_history_says_what_each_library_lacks_of_the_tree(
    libraries: tuple[Path, Path, list[str]],
    mlx_style: Path,
    mlx_headers: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    base, head, lacks = libraries
    code, out, err = run_cli(
        ["history", str(base), str(head), *_tree(mlx_style, mlx_headers), "--format", "json"],
        capsys,
    )
    assert code == 0, err
    points = json.loads(out)["points"]
    assert [p["tree_kernels_missing"] for p in points] == [[], lacks]
    assert all(
        any(f"of {mlx_style} and land in 'other'" in w for w in p["warnings"]) for p in points
    )
    assert f"warning: {head}: {len(lacks):,} of the {len(TREE):,} kernels of" in err


def test_a_builds_jit_kernels_count_as_held(
    write_metallib: Callable[..., Path],
    mlx_style: Path,
    mlx_headers: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A build compiles its JIT units' kernels at run time: they are in its host library, not
    its metallib, and the tree's kernels the build lacks are the rest (a hand-written build
    folder: its manifest and metallib)."""
    jit_file, *aot_files = sorted(BY_FILE)
    jit = sorted(BY_FILE[jit_file])
    aot = sorted(n for f in aot_files for n in BY_FILE[f])
    built, left_out = aot[1:], aot[:1]  # one AOT kernel did not make it into the metallib
    metallib = write_metallib("build/lib/kernels.metallib", [(n, 300) for n in built])
    build = metallib.parent.parent
    units: list[dict[str, object]] = [
        {"name": jit_file, "mode": "jit", "sources": [jit_file], "host_names": jit},
        {"name": "aot", "mode": "aot", "sources": aot_files, "host_names": built},
    ]
    manifest: dict[str, object] = {
        "schema": 2,
        "tree": {"kind": "discovered", "library": "kernels"},
    }
    manifest |= {"metallib": "lib/kernels.metallib", "units": units}
    for unit in units:
        unit |= {"outputs": [], "embedded_bytes": 0}
    (build / "manifest.json").write_text(json.dumps(manifest))
    code, out, err = run_cli(
        ["report", str(build), *_tree(mlx_style, mlx_headers), "--format", "json"], capsys
    )
    assert code == 0, err
    expected = sorted(set(TREE) - set(built) - set(jit))
    assert json.loads(out)["tree_kernels_missing"] == expected == left_out


def test_a_real_library_slimmed_of_a_files_kernels_fails_on_missing(
    mlx_metallib: Callable[[str, str], Path],
    mlx_style: Path,
    mlx_headers: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """mlx-metal 0.32.0's library, and a copy made with ``slim --drop`` without the kernels of
    unary_subset.metal: compare fails on exactly those, and the base's own missing ones (the
    tree's kernels no release ships) are missing on both sides."""
    from kernels.discovery.expected import UNARY
    from mlx_tree import MLX_PLATFORM, MLX_VERSION

    real = mlx_metallib(MLX_VERSION, MLX_PLATFORM)
    slimmed = tmp_path / "slim.metallib"
    drops = [arg for name in sorted(UNARY) for arg in ("--drop", name)]
    code, _, err = run_cli(["slim", str(real), *drops, "-o", str(slimmed)], capsys)
    assert code == 0, err
    tree = _tree(mlx_style, mlx_headers)
    code, out, err = run_cli(
        ["compare", str(real), str(slimmed), *tree, "--fail-on-missing", "--format", "json"],
        capsys,
    )
    assert code == 1, err
    doc = json.loads(out)
    base_missing = doc["base"]["tree_kernels_missing"]
    assert set(base_missing).isdisjoint(UNARY) and base_missing  # the real library holds them
    assert doc["head"]["tree_kernels_missing"] == sorted({*base_missing, *UNARY})
    [gate] = doc["gates"]
    assert gate["name"] == "--fail-on-missing" and not gate["passed"]
    assert f"lacks {len(base_missing) + len(UNARY):,} kernels of its tree" in gate["message"]
