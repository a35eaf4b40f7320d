"""Functions in more than one library (issue 35, item 8), on two libraries made here: ``report``
of both names the shared functions, those with identical modules and what each holds alone, with
the second library's bytes, in JSON, the terminal, markdown and CSV; the figures are computed
here from the libraries' own bytes (``support.function_lists``, hashlib), not by the tool."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from clirun import run_cli as run
from support.function_lists import Listed, listed
from synthetic import new_function, new_library

from builder.metallib import library_bytes
from builder.size.duplicates import GroupBytes, Held, duplicates

_PIECES = 16
"""Each function's public and private metadata pieces: 8 bytes each (``synthetic``'s empty
piece); the functions here have no reflection piece."""


def _library(path: Path, functions: list[tuple[str, bytes]]) -> Path:
    parts = [new_function(name, b"BC\xc0\xde" + body) for name, body in functions]
    path.write_bytes(library_bytes(new_library(parts)))
    return path


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    """a: ``same`` and ``changed`` shared with b (``same`` with the same bitcode), ``gone`` its
    own; b: a ``changed`` of the same size and other bytes, ``new_one`` and ``new_two``."""
    a = _library(
        tmp_path / "a.metallib",
        [("same", b"x" * 40), ("changed", b"y" * 70), ("gone", b"z" * 30)],
    )
    b = _library(
        tmp_path / "b.metallib",
        [("new_one", b"p" * 90), ("changed", b"w" * 70), ("same", b"x" * 40), ("new_two", b"q")],
    )
    return a, b


def _bytes(f: Listed) -> int:
    return f.entry_bytes + _PIECES + len(f.module)


def _expected(a: Path, b: Path) -> dict[str, object]:
    """The pair's ``duplicates`` entry from the libraries' bytes alone."""
    first, second = listed(a), listed(b)
    names_a, names_b = {f.name for f in first}, {f.name for f in second}
    shared = names_a & names_b
    hashes_a = {f.name: f.sha256 for f in first}
    identical = {f.name for f in second if f.name in shared and f.sha256 == hashes_a[f.name]}

    def only(functions: list[Listed], names: set[str]) -> dict[str, object]:
        alone = [f for f in functions if f.name in names]
        groups = sorted(alone, key=lambda f: (-_bytes(f), f.name))
        return {
            "functions": len(alone),
            "bytes": sum(map(_bytes, alone)),
            "groups": [{"group": f.name, "functions": 1, "bytes": _bytes(f)} for f in groups],
            "names": sorted(names),
        }

    return {
        "first": str(a),
        "second": str(b),
        "functions": len(shared),
        "bytes": sum(_bytes(f) for f in second if f.name in shared),
        "identical_functions": len(identical),
        "identical_bytes": sum(_bytes(f) for f in second if f.name in identical),
        "names": sorted(shared),
        "identical_names": sorted(identical),
        "only_first": only(first, names_a - names_b),
        "only_second": only(second, names_b - names_a),
    }


def test_json_names_shared_and_identical_functions(
    pair: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = pair
    code, out, _ = run(["report", str(a), str(b), "--by", "function", "--format", "json"], capsys)
    assert code == 0
    doc = json.loads(out)
    expected = _expected(a, b)
    assert doc["duplicates"] == [expected]
    assert expected["names"] == ["changed", "same"] and expected["identical_names"] == ["same"]
    # each function's bytes as the report rows say them: the figures above are theirs
    second = {f["name"]: f["bytes"] for f in doc["libraries"][1]["functions"]}
    assert {f.name: _bytes(f) for f in listed(b)} == second


def test_one_target_is_unchanged(
    pair: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """One library: no duplicates anywhere; its document is the one it has among several."""
    a, b = pair
    _, alone, _ = run(["report", str(a), "--format", "json"], capsys)
    _, both, _ = run(["report", str(a), str(b), "--format", "json"], capsys)
    assert json.loads(alone) == json.loads(both)["libraries"][0]
    for fmt in ("markdown", "table", "csv"):
        code, out, _ = run(["report", str(a), "--format", fmt], capsys)
        assert code == 0 and "more than one library" not in out and "only_first" not in out


def test_tables_in_every_format(
    pair: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = pair
    expected = _expected(a, b)
    code, out, _ = run(["report", str(a), str(b), "--format", "csv"], capsys)
    assert code == 0
    [row] = [r for r in csv.DictReader(io.StringIO(out)) if r["first"]]
    only_first, only_second = expected["only_first"], expected["only_second"]
    assert isinstance(only_first, dict) and isinstance(only_second, dict)
    assert row["second"] == str(b)
    assert {k: int(row[k]) for k in ("functions", "bytes", "identical_functions")} == {
        "functions": expected["functions"],
        "bytes": expected["bytes"],
        "identical_functions": expected["identical_functions"],
    }
    assert int(row["only_second_bytes"]) == only_second["bytes"]
    assert int(row["only_first_functions"]) == only_first["functions"]

    code, out, _ = run(["report", str(a), str(b), "--format", "markdown"], capsys)
    assert code == 0
    heading = out.index("### Functions in more than one library")
    rows = [line for line in out[heading:].splitlines() if line.startswith(f"| `{a}`")]
    assert [cell.strip() for cell in rows[0].split("|")[1:-1]][:3] == [f"`{a}`", f"`{b}`", "2"]
    assert (
        f"share 2 functions by name ({expected['bytes']:,} bytes in the second): `changed`, `same`"
        in out
    )
    assert f"identical modules: 1 ({expected['identical_bytes']:,} bytes in the second)" in out
    assert f"only in `{b}`: 2 functions ({only_second['bytes']:,} bytes)" in out

    code, out, _ = run(["report", str(a), str(b)], capsys)
    assert code == 0 and "Functions in more than one library: 1 of 1 pairs" in out


def test_a_saved_report_has_no_hash_tags(
    pair: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A saved report keeps names and bytes but no HASH tags: shared names are still found;
    identical modules are not known (null), never guessed."""
    a, b = pair
    saved = tmp_path / "a.json"
    assert run(["report", str(a), "--format", "json", "-o", str(saved)], capsys)[0] == 0
    code, out, _ = run(["report", str(saved), str(b), "--format", "json"], capsys)
    assert code == 0
    [found] = json.loads(out)["duplicates"]
    expected = _expected(a, b)
    assert (found["functions"], found["bytes"]) == (expected["functions"], expected["bytes"])
    assert (found["identical_functions"], found["identical_bytes"]) == (None, None)
    assert found["identical_names"] is None
    code, out, _ = run(["report", str(saved), str(b), "--format", "markdown"], capsys)
    assert "identical modules: not known" in out


def test_libraries_that_share_no_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _library(tmp_path / "a.metallib", [("one", b"1" * 10)])
    b = _library(tmp_path / "b.metallib", [("two", b"2" * 10)])
    code, out, _ = run(["report", str(a), str(b), "--format", "json"], capsys)
    assert code == 0 and json.loads(out)["duplicates"] == []
    code, out, _ = run(["report", str(a), str(b)], capsys)
    assert "no function name is in more than one of the 2 libraries" in out


def test_no_target_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["report"], capsys)
    assert code == 2 and out == "" and "TARGET" in err


def test_a_name_held_twice_counts_once_and_its_bytes_twice() -> None:
    """A library may hold two functions of one name: the name is one shared function; the
    second library's bytes are of both; identical when one of them has a module of the first's
    (size and HASH tag), and only its bytes count; a function without a HASH tag is identical
    to none."""
    tag, other, none = b"\1" * 32, b"\2" * 32, None
    a = Held(
        "a",
        ["x", "x", "y", "w"],
        [10, 20, 30, 5],
        ["g"] * 4,
        [(8, tag), (8, other), (8, tag), none],
    )
    b = Held(
        "b",
        ["x", "z", "x", "w"],
        [100, 200, 300, 7],
        ["g", "h", "g", "g"],
        [(8, b"\3" * 32), (8, tag), (8, other), none],
    )
    [found] = duplicates([a, b])
    assert (found.functions, found.bytes) == (2, 100 + 300 + 7)
    assert (found.identical_names, found.identical_functions, found.identical_bytes) == (
        ["x"],
        1,
        300,
    )
    assert (found.only_first.names, found.only_first.bytes) == (["y"], 30)
    assert found.only_second.groups == [GroupBytes("h", 1, 200)]
    unknown = Held("c", ["x"], [1], ["g"], None)
    [(first, second)] = [(d.first, d.identical_functions) for d in duplicates([unknown, b])]
    assert (first, second) == ("c", None)
