"""compare and the CI gates: real releases, exit codes, the PR-comment markdown snapshot.

The markdown snapshot (``snapshots/compare.md``) is generated from a deterministic synthetic pair
of libraries. After an intended change to the markdown, regenerate it with

    METALLIB_BUILDER_UPDATE_SNAPSHOTS=1 python -m pytest tests/size/test_compare.py -k snapshot

and review the diff before committing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from builder import __version__
from builder.cli.group import main
from builder.metallib import open_metallib
from builder.render.pr_comment import comment_markdown
from builder.settings.validators import parse_limit
from builder.size.compare import compare_reports, pair_reports
from builder.size.load import load_reports
from builder.size.rollup import Rollup, fold
from builder.size.verdicts import Gates, evaluate_gates

SNAPSHOT = Path(__file__).parent / "snapshots" / "compare.md"

BASE = [
    ("v_copyfloat32float32", 300),
    ("v_copyfloat16float16", 200),
    ("vv_Addfloat32", 500),
    ("vv_Addfloat16", 450),
    ("vv_Subtractint8", 300),
    ("steel_gemm_fused_nn_float16_float16_bm64_bn64", 2000),
]
HEAD = [
    ("v_copyfloat32float32", 300),
    ("v_copyfloat16float16", 260),  # grew
    ("vv_Addfloat32", 500),
    ("vv_Addfloat16", 450),
    ("steel_gemm_fused_nn_float16_float16_bm64_bn64", 2000),
    ("steel_gemm_fused_nn_bfloat16_bfloat16_bm64_bn64", 2100),  # added
    ("rope_float32", 700),  # added, in a new group
]


@pytest.fixture
def pair(write_metallib: Callable[..., Path]) -> tuple[Path, Path]:
    return write_metallib("base/mlx.metallib", BASE), write_metallib("head/mlx.metallib", HEAD)


def _sums(functions: list[tuple[str, int, int]]) -> dict[str, tuple[int, int, int]]:
    """(function count, bytes, bitcode bytes) per group, summed here from the function rows."""
    out: dict[str, tuple[int, int, int]] = {}
    for group, size, bitcode in functions:
        count, total, code = out.get(group, (0, 0, 0))
        out[group] = (count + 1, total + size, code + bitcode)
    return out


def test_compare_rows_are_rollups_of_both_sides(pair: tuple[Path, Path]) -> None:
    """A comparison's rows are report rollups (head's measures) carrying base's measures: one
    shape for report and compare, and a folded rest adds up on both sides."""
    (base,), (head,) = load_reports(str(pair[0])), load_reports(str(pair[1]))
    comparison = compare_reports(base, head)
    b = _sums([(f.group, f.bytes, f.bitcode_bytes) for f in base.functions])
    h = _sums([(f.group, f.bytes, f.bitcode_bytes) for f in head.functions])
    *groups, overhead = comparison.groups
    assert all(isinstance(g, Rollup) for g in comparison.groups)
    assert {g.name for g in groups} == set(b) | set(h)
    for g in groups:
        assert (g.function_count, g.bytes, g.bitcode_bytes) == h.get(g.name, (0, 0, 0))
        assert (g.base_function_count, g.base_bytes) == b.get(g.name, (0, 0, 0))[:2]
        assert g.base_bytes is not None and g.delta == g.bytes - g.base_bytes
    assert overhead.overhead and overhead.function_count == overhead.base_function_count == 0
    assert overhead.bytes == os.path.getsize(pair[1]) - sum(v[1] for v in h.values())
    assert overhead.base_bytes == os.path.getsize(pair[0]) - sum(v[1] for v in b.values())
    rest = fold("rest", groups)
    assert (rest.base_function_count, rest.function_count) == (len(BASE), len(HEAD))
    assert (rest.base_bytes, rest.bytes) == (
        sum(v[1] for v in b.values()),
        sum(v[1] for v in h.values()),
    )
    assert rest.download_bytes is None and rest.base_download_bytes is None


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        main(argv)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_compare_synthetic(pair: tuple[Path, Path]) -> None:
    (base,), (head,) = load_reports(str(pair[0])), load_reports(str(pair[1]))
    comparison = compare_reports(base, head)
    assert sum(g.delta for g in comparison.groups) == os.path.getsize(pair[1]) - os.path.getsize(
        pair[0]
    )
    assert {f.name for f in comparison.added} == {n for n, _ in HEAD} - {n for n, _ in BASE}
    assert {f.name for f in comparison.removed} == {n for n, _ in BASE} - {n for n, _ in HEAD}
    assert comparison.new_groups == ["rope"]
    assert comparison.changed[0].name == "v_copyfloat16float16"
    # anything else that changed moved only by reflection alignment padding, not by its module
    base_rows = {f.name: f for f in base.functions}
    head_rows = {f.name: f for f in head.functions}
    for change in comparison.changed[1:]:
        assert base_rows[change.name].bitcode_bytes == head_rows[change.name].bitcode_bytes
        assert abs(change.delta) < 16


def test_gates(pair: tuple[Path, Path]) -> None:
    (base,), (head,) = load_reports(str(pair[0])), load_reports(str(pair[1]))
    comparison = compare_reports(base, head)
    grown = comparison.delta
    assert grown > 0
    ok = evaluate_gates(
        comparison, Gates(max_growth=parse_limit(str(grown)), max_size=comparison.head.file_size)
    )
    assert all(r.passed for r in ok)
    bad = evaluate_gates(
        comparison,
        Gates(
            max_growth=parse_limit(str(grown - 1)),
            max_size=comparison.head.file_size - 1,
            fail_on_new_group=True,
        ),
    )
    assert [r.name for r in bad if not r.passed] == [
        "max-growth",
        "max-size",
        "fail-on-new-group",
    ]
    percent = 100.0 * grown / comparison.base.file_size
    assert evaluate_gates(comparison, Gates(max_growth=parse_limit(f"{percent + 0.01}%")))[0].passed
    assert not evaluate_gates(comparison, Gates(max_growth=parse_limit(f"{percent - 0.01}%")))[
        0
    ].passed


def test_gate_exit_codes(pair: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    base, head = map(str, pair)
    code, out, _ = _run(["compare", base, head, "--max-growth", "10MB", "--format", "json"], capsys)
    assert code == 0
    assert json.loads(out)["gates"][0]["passed"] is True
    code, _, err = _run(["compare", base, head, "--max-growth", "0"], capsys)
    assert code == 1
    assert "--max-growth" in err
    code, _, err = _run(["compare", base, head, "--fail-on-new-group"], capsys)
    assert code == 1
    assert "rope" in err
    code, _, err = _run(["compare", head, head, "--max-growth", "0", "--fail-on-new-group"], capsys)
    assert code == 0


def test_unusable_input_exits_2(
    pair: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = str(pair[0])
    garbage = tmp_path / "garbage.metallib"
    garbage.write_bytes(b"MTLB" + bytes(20))
    truncated = tmp_path / "truncated.metallib"
    truncated.write_bytes(pair[1].read_bytes()[:-7])
    bad_json = tmp_path / "bad.json"
    bad_json.write_text("{}")
    for head in (
        str(tmp_path / "missing.metallib"),
        str(garbage),
        str(truncated),
        str(bad_json),
        "not a target",
    ):
        code, out, err = _run(["compare", base, head, "--max-growth", "100MB"], capsys)
        assert code == 2, (head, err)
        assert err.startswith("error: ") and err.count("\n") == 1
        assert out == ""
    code, _, _ = _run(["compare", base, base, "--max-growth", "lots"], capsys)
    assert code == 2


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--max-growth", "nan%", "--max-growth: 'nan%' is not a percentage"),
        ("--max-growth", "inf%", "--max-growth: 'inf%' is not a percentage"),
        ("--max-download-growth", "-inf%", "--max-download-growth: '-inf%' is not a percentage"),
        ("--max-size", "-3MB", "--max-size: '-3MB': a size limit must not be negative"),
        ("--max-total-size", "-1", "--max-total-size: '-1': a size limit must not be negative"),
        (
            "--max-download-size",
            "-1KB",
            "--max-download-size: '-1KB': a size limit must not be negative",
        ),
        ("--max-size", "5XB", "--max-size: '5XB' is not a size"),
        # a negative growth limit fails every library that did not shrink (exit 1 for no
        # change at all); requiring a smaller library is --max-size's job
        ("--max-growth", "-1%", "--max-growth: '-1%': a growth limit must not be negative"),
        ("--max-growth", "-2819", "--max-growth: '-2819': a growth limit must not be negative"),
    ],
)
def test_a_gate_that_cannot_be_met_by_any_library_is_a_usage_error(
    option: str,
    value: str,
    message: str,
    pair: tuple[Path, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A non-finite percentage used to end in a traceback (exit 1), a negative size in a gate that
    fails on every library (exit 1): both are mistakes in the command line, exit 2 naming the
    option."""
    base, head = map(str, pair)
    code, out, err = _run(["compare", base, head, option, value], capsys)
    assert (code, out) == (2, "")
    assert err.startswith(f"error: {message}") and err.count("\n") == 1
    assert "Traceback" not in err


def test_step_summary(
    pair: tuple[Path, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    code, out, _ = _run(["compare", *map(str, pair), "--format", "csv"], capsys)
    assert code == 0
    assert out.startswith("group,")
    text = summary.read_text()
    assert text.startswith(
        "earlier step\n<!-- metallib-builder:size-comment -->\n### Metallib size"
    )


def test_unwritable_step_summary_is_one_error(
    pair: tuple[Path, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path))  # a folder: cannot be appended to
    code, _, err = _run(["compare", *map(str, pair)], capsys)
    assert code == 2
    assert err.count("\n") == 1 and "GITHUB_STEP_SUMMARY" in err and str(tmp_path) in err


def test_error_lines_show_control_characters_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hostile = tmp_path / "lib\x1b[2J\x07.metallib"  # a file name that would clear the screen
    code, _, err = _run(["compare", str(hostile), str(hostile)], capsys)
    assert code == 2
    assert "\x1b" not in err and "\x07" not in err and "\\x1b[2J\\x07" in err


def test_markdown_snapshot(pair: tuple[Path, Path], tmp_path: Path) -> None:
    (base,), (head,) = load_reports(str(pair[0])), load_reports(str(pair[1]))
    comparison = compare_reports(base, head)
    gates = evaluate_gates(comparison, Gates(max_growth=parse_limit("5%"), fail_on_new_group=True))
    text = comment_markdown([(comparison, gates)]).replace(str(tmp_path), "<tmp>")
    text = text.replace(f"metallib-builder {__version__};", "metallib-builder <version>;")
    if os.environ.get("METALLIB_BUILDER_UPDATE_SNAPSHOTS"):
        SNAPSHOT.write_text(text, encoding="utf-8")
    assert text == SNAPSHOT.read_text(encoding="utf-8")


def test_pairing(write_metallib: Callable[..., Path]) -> None:
    a = load_reports(str(write_metallib("a.metallib", BASE)))
    b = load_reports(str(write_metallib("b.metallib", HEAD)))
    assert pair_reports(a, b) == [(a[0], b[0])]  # one each: paired whatever their names
    # two against one: b pairs with itself by name, a is on the base side only (removed)
    assert pair_reports(a + b, b) == [(b[0], b[0]), (a[0], None)]
    assert pair_reports(b, a + b) == [(b[0], b[0]), (None, a[0])]


@pytest.mark.realdata
def test_compare_real_releases(
    mlx_metallib: Callable[[str, str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    base_path = mlx_metallib("0.29.0", "macosx_14_0_arm64")
    head_path = mlx_metallib("0.30.0", "macosx_14_0_arm64")
    with open_metallib(base_path) as lib:
        base_names = {fn.name for fn in lib.functions}
    with open_metallib(head_path) as lib:
        head_names = {fn.name for fn in lib.functions}
    code, out, _ = _run(["compare", str(base_path), str(head_path), "--format", "json"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert doc["added"]["count"] == len(head_names - base_names)
    assert doc["removed"]["count"] == len(base_names - head_names)
    size_delta = os.path.getsize(head_path) - os.path.getsize(base_path)
    assert doc["delta_bytes"] == size_delta
    assert sum(g["delta_bytes"] for g in doc["groups"]) == size_delta
    assert sum(g["head_bytes"] for g in doc["groups"]) == os.path.getsize(head_path)
    (base,), (head,) = load_reports(str(base_path)), load_reports(str(head_path))
    comparison = compare_reports(base, head)
    assert {f.name for f in comparison.added} == head_names - base_names
    assert {f.name for f in comparison.removed} == base_names - head_names
    largest_added = max(
        (f for f in head.functions if f.name not in base_names), key=lambda f: f.bytes
    )
    assert doc["added"]["largest"][0]["bytes"] == largest_added.bytes


def test_note_when_groupings_differ(pair: tuple[Path, Path]) -> None:
    (base,) = load_reports(str(pair[0]))
    (head,) = load_reports(str(pair[1]), by="dtype")
    comparison = compare_reports(base, head)
    assert comparison.notes and "different groupings" in comparison.notes[0]
    assert "note: base is grouped by kernel" in comment_markdown([(comparison, ())])
    (same,) = load_reports(str(pair[1]))
    assert compare_reports(base, same).notes == []


def test_several_library_pairs_give_one_json_document_and_one_csv_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Wheels holding two metallibs each pair by member path; the JSON wraps the comparisons the
    way ``report`` wraps several libraries, and the CSV has one header and a library column."""
    import zipfile

    from synthetic import synthetic_bytes

    monkeypatch.setenv("METALLIB_BUILDER_CACHE", str(tmp_path / "cache"))
    wheels = []
    for side, spec in (("base", BASE), ("head", HEAD)):
        path = tmp_path / side / "pkg-1.0-py3-none-macosx_14_0_arm64.whl"
        path.parent.mkdir()
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("pkg/lib/a.metallib", synthetic_bytes(spec))
            archive.writestr("pkg/lib/b.metallib", synthetic_bytes(spec[:1]))  # same in both
        wheels.append(str(path))
    code, out, err = _run(["compare", *wheels, "--format", "json"], capsys)
    assert code == 0, err
    doc = json.loads(out)  # one document, not two in a row
    assert doc["schema"] == 2 and doc["kind"] == "comparisons"
    members = [lib["head"]["member"] for lib in doc["libraries"]]
    assert members == ["pkg/lib/a.metallib", "pkg/lib/b.metallib"]
    assert doc["libraries"][1]["delta_bytes"] == 0 and doc["libraries"][0]["delta_bytes"] > 0
    code, out, err = _run(["compare", *wheels, "--format", "csv"], capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert (
        lines[0].startswith("library,change,group,")
        and sum(line.startswith("library,") for line in lines) == 1
    )
    assert {tuple(line.split(",")[:2]) for line in lines[1:]} == {
        ("pkg/lib/a.metallib", "paired"),
        ("pkg/lib/b.metallib", "paired"),
    }


def test_join_matches_rows_by_name_whatever_they_are() -> None:
    """The one join of base and head: a row on one side only counts 0 on the other, rows by
    |delta| (then head bytes, then name), overhead rows last, and the deltas add up."""
    from builder.size.rollup import Rollup, join, overhead_row

    base = [Rollup("gone", 2, 500, 0), Rollup("kept", 3, 900, 0), overhead_row("[shared]", 40)]
    head = [Rollup("kept", 3, 1000, 0), Rollup("new", 1, 100, 0), overhead_row("[shared]", 70)]
    rows = join(base, head)
    assert [(r.name, r.base_bytes, r.bytes, r.delta) for r in rows] == [
        ("gone", 500, 0, -500),
        ("kept", 900, 1000, 100),
        ("new", 0, 100, 100),
        ("[shared]", 40, 70, 30),
    ]
    assert [r.base_function_count for r in rows] == [2, 3, 0, 0] and rows[-1].overhead
    assert sum(r.delta for r in rows) == sum(r.bytes for r in head) - sum(r.bytes for r in base)
    assert all(r.download_bytes is None for r in rows)
    with_download = join([Rollup("a", 1, 10, 0, 4)], [Rollup("b", 1, 20, 0, 6)], downloads=True)
    assert [(r.name, r.base_download_bytes, r.download_bytes) for r in with_download] == [
        ("b", 0, 6),
        ("a", 4, 0),
    ]
