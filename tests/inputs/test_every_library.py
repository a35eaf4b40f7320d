"""``list``, ``verify`` and ``history`` take every library of a binary or wheel in turn (issue 33,
item 3), and ``list``/``verify`` take ``PACKAGE==VERSION`` (item 6).

The libraries are made here (the project's writer) and put into Mach-O and ELF binaries with
clang and lld (``.incbin``); what each command must show is read from those standalone files:
their sizes from ``os.stat``, their function names and counts from the container reader of the
file itself, never from the binary the command searched.
"""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import pytest
from binaries import link_dylib, link_elf
from clirun import run_cli as run
from synthetic import synthetic_parts

from builder.inputs.targets import resolve_target
from builder.metallib import library_bytes, open_metallib

pytestmark = pytest.mark.both_container_codes  # reads containers: both codes


def _library(path: Path, count: int, seed: int, *, dynamic: bool = False) -> Path:
    path.write_bytes(library_bytes(synthetic_parts(count, seed=seed, dynamic=dynamic)))
    return path


def _names(path: Path) -> list[str]:
    with open_metallib(path) as lib:
        return list(lib.columns().names)


def _members(target: str) -> list[str]:
    """How the tool names each library of ``target`` (``--member`` takes these names)."""
    return [lib.member or "" for lib in resolve_target(target)]


@pytest.fixture
def two(tmp_path: Path) -> dict[str, Path]:
    """A dylib holding two libraries (5 and 7 functions; one a whole section, one at a symbol)
    and an ELF object holding the same two."""
    a = _library(tmp_path / "a.metallib", 5, 1)
    b = _library(tmp_path / "b.metallib", 7, 2, dynamic=True)
    dylib = link_dylib(
        tmp_path / "libkernels.dylib",
        [("__TEXT,metal_basic", None, a), ("__TEXT,__const", "_second", b)],
    )
    elf = link_elf(tmp_path / "libkernels.so", [(".rodata", "first", a), (".rodata", "other", b)])
    return {"a": a, "b": b, "dylib": dylib, "elf": elf}


@pytest.mark.parametrize("binary", ["dylib", "elf"])
def test_list_shows_every_library_of_a_binary(
    two: dict[str, Path], binary: str, capsys: pytest.CaptureFixture[str]
) -> None:
    target = str(two[binary])
    code, out, err = run(["list", target], capsys)
    assert code == 0, err
    titles = [line for line in out.splitlines() if line.startswith("# ")]
    assert len(titles) == 2
    for title, lib in zip(titles, (two["a"], two["b"])):
        assert title.startswith(f"# {target}")
        assert f": {len(_names(lib))} functions, {lib.stat().st_size} bytes" in title
    rows = [line.split()[1] for line in out.splitlines() if re.match(r"\s+\d+\s", line)]
    assert rows == _names(two["a"]) + _names(two["b"])

    code, out, err = run(["list", target, "--format", "json"], capsys)
    assert code == 0, err
    doc = json.loads(out)  # one document for both
    assert doc["source"] == target and "functions" not in doc
    members = _members(target)
    assert [d["member"] for d in doc["libraries"]] == members and len(members) == 2
    for listed, lib in zip(doc["libraries"], (two["a"], two["b"])):
        assert listed["file_size"] == lib.stat().st_size
        assert [f["name"] for f in listed["functions"]] == _names(lib)
        assert listed["function_count"] == len(_names(lib))

    # --member narrows to one library: the one-library document, as for a .metallib
    code, out, err = run(["list", target, "--member", members[1], "--format", "json"], capsys)
    assert code == 0, err
    one = json.loads(out)
    assert "libraries" not in one and one["member"] == members[1]
    assert [f["name"] for f in one["functions"]] == _names(two["b"])


def test_verify_checks_every_library_and_fails_when_one_does(
    two: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dylib = str(two["dylib"])
    code, out, err = run(["verify", dylib], capsys)
    assert code == 0, err
    verdicts = [line for line in out.splitlines() if line.startswith(("OK", "FAILED"))]
    assert len(verdicts) == 3 and verdicts[-1] == f"OK: {dylib}: all 2 libraries verified"
    assert "5 functions" in verdicts[0] and "7 functions" in verdicts[1]

    # the second library with one module byte changed: it still parses whole, so it is found,
    # and it fails verify alone; the first is still checked and reported
    damaged = bytearray(two["b"].read_bytes())
    with open_metallib(two["b"]) as lib:
        name, offset = lib.columns().names[3], lib.columns().module_offsets[3]
    damaged[offset + 20] ^= 0xFF
    bad = tmp_path / "bad.metallib"
    bad.write_bytes(bytes(damaged))
    binary = link_dylib(
        tmp_path / "libdamaged.dylib",
        [("__TEXT,metal_basic", None, two["a"]), ("__TEXT,__const", "_b", bad)],
    )
    target = str(binary)
    members = _members(target)
    code, out, err = run(["verify", target], capsys)
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith(f"OK: {target}") and "5 functions" in lines[0]
    assert lines[1].startswith(f"FAIL {name}: ") and "does not match its HASH tag" in lines[1]
    assert lines[2].startswith(f"FAILED: {target}") and "7 functions" in lines[2]
    assert lines[3].startswith(f"FAILED: {target}: 1 of 2 libraries failed (")
    assert len(lines) == 4 and out.count("FAIL ") == 1
    assert err.count("\n") == 1 and err.startswith("error: 1 of 2 libraries failed verification")
    assert name in err and "Traceback" not in err

    code, out, _ = run(["verify", target, "--format", "json"], capsys)
    assert code == 1
    doc = json.loads(out)
    assert doc["ok"] is False and [d["ok"] for d in doc["libraries"]] == [True, False]
    assert [d["member"] for d in doc["libraries"]] == members
    assert [p["function"] for p in doc["libraries"][1]["problems"]] == [name]
    assert doc["libraries"][0]["problems"] == []

    code, out, _ = run(["verify", target, "--member", members[0]], capsys)
    assert code == 0 and out.startswith(f"OK: {target}") and out.count("\n") == 1
    code, out, _ = run(["verify", target, "--member", members[1], "--format", "json"], capsys)
    assert code == 1 and json.loads(out)["ok"] is False and "libraries" not in json.loads(out)


def test_what_holds_no_functions_is_still_exit_2(
    two: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(["report", str(two["dylib"]), "--format", "json"], capsys)
    assert code == 0, err
    saved = tmp_path / "saved.json"
    saved.write_text(out)
    code, out, err = run(["verify", str(saved)], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "a saved size report holds sizes, not functions" in err
    for command in ("list", "verify"):
        code, _, err = run([command, str(tmp_path / "gone.dylib")], capsys)
        assert code == 2 and "no such file" in err
        code, _, err = run([command, str(two["dylib"]), "--member", "#9"], capsys)
        assert code == 2 and "no metallib '#9'" in err


def test_list_shows_the_functions_a_saved_report_records(
    two: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A saved report is a TARGET of ``list`` too (issue 34 item 9): each library's functions
    with the sizes the report records, in file order; their type is not recorded (null, '-').
    The reference is the reader's own columns of the two libraries."""
    code, out, err = run(["report", str(two["dylib"]), "--format", "json"], capsys)
    assert code == 0, err
    saved = tmp_path / "saved.json"
    saved.write_text(out)
    code, out, err = run(["list", str(saved), "--format", "json"], capsys)
    assert code == 0, err
    libraries = json.loads(out)["libraries"]
    assert len(libraries) == 2
    for listed, path in zip(libraries, (two["a"], two["b"]), strict=True):
        with open_metallib(path) as lib:
            c = lib.columns()
            owned = [
                sum(parts)
                for parts in zip(
                    c.entry_bytes,
                    c.public_md_bytes,
                    c.private_md_bytes,
                    c.module_bytes,
                    c.reflection_bytes,
                )
            ]
            wanted = list(zip(c.names, c.module_bytes, owned))
            version = lib.header.format_version_text
        assert listed["file_size"] == path.stat().st_size and listed["format_version"] == version
        assert [(f["name"], f["bitcode_bytes"], f["bytes"]) for f in listed["functions"]] == wanted
        assert {f["type"] for f in listed["functions"]} == {None}
    code, out, err = run(["list", str(saved), "--sort", "size"], capsys)
    assert code == 0, err
    rows = [line.split() for line in out.splitlines() if re.match(r"\s+\d+\s", line)]
    assert {row[2] for row in rows} == {"-"} and len(rows) == 5 + 7
    first = [int(row[3]) for row in rows[:5]]
    assert first == sorted(first, reverse=True)


def _wheel(tmp_path: Path, two: dict[str, Path]) -> Path:
    """A wheel with two .metallib members and a dylib member holding two more."""
    c = _library(tmp_path / "c.metallib", 3, 3)
    wheel = tmp_path / "kern-1.0-cp312-cp312-macosx_14_0_arm64.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.write(two["a"], "kern/lib/a.metallib")
        archive.write(c, "kern/shaders/c.metallib")
        archive.write(two["dylib"], "kern/lib/libkernels.dylib")
        archive.writestr("kern/__init__.py", "")
    return wheel


def test_a_wheel_and_its_package_version_list_and_verify_every_member(
    two: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from builder.inputs import wheels

    monkeypatch.setenv("METALLIB_BUILDER_CACHE", str(tmp_path / "cache"))
    wheel = _wheel(tmp_path, two)
    asked: list[tuple[str, str, str]] = []

    def download(name: str, version: str, platform: str, *, quiet: bool = True) -> Path:
        asked.append((name, version, platform))
        return wheel

    monkeypatch.setattr(wheels, "download_wheel", download)
    files = {  # what each library is, by the file it was made from
        "a.metallib": two["a"],
        "c.metallib": tmp_path / "c.metallib",
    }
    for target in (str(wheel), "kern==1.0"):
        extra = ["--platform", "macosx_15_0_arm64"] if "==" in target else []
        code, out, err = run(["list", target, "--format", "json", *extra], capsys)
        assert code == 0, err
        libraries = json.loads(out)["libraries"]
        members = [d["member"] for d in libraries]
        assert len(members) == 4 and len(set(members)) == 4
        assert all(m.startswith("kern/") for m in members)
        by_member = {d["member"]: d for d in libraries}
        for member_name, file in files.items():
            [found] = [d for m, d in by_member.items() if m.endswith(member_name)]
            assert [f["name"] for f in found["functions"]] == _names(file)
            assert found["source"] == f"{target}:{found['member']}"
        inside = [d for m, d in by_member.items() if "libkernels.dylib" in m]
        assert [d["file_size"] for d in inside] == [
            two["a"].stat().st_size,
            two["b"].stat().st_size,
        ]
        code, out, err = run(["verify", target, *extra], capsys)
        assert code == 0, err
        assert out.splitlines()[-1] == f"OK: {target}: all 4 libraries verified"
        code, out, err = run(
            ["verify", target, "--member", "kern/shaders/c.metallib", *extra], capsys
        )
        assert code == 0 and out.count("\n") == 1 and "3 functions" in out
    assert asked == [("kern", "1.0", "macosx_15_0_arm64")] * 3


def test_history_of_binaries_is_one_history_per_library(
    two: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Three releases of a dylib: the second library grows by two functions in release 2 and
    is gone in release 3. Each library has its own points; none is the sum of both."""
    releases = [two["dylib"]]
    a2 = two["a"]
    b2 = _library(tmp_path / "b2.metallib", 9, 2, dynamic=True)
    (tmp_path / "r2").mkdir()
    (tmp_path / "r3").mkdir()
    releases.append(
        link_dylib(
            tmp_path / "r2" / "libkernels.dylib",
            [("__TEXT,metal_basic", None, a2), ("__TEXT,__const", "_second", b2)],
        )
    )
    releases.append(
        link_dylib(tmp_path / "r3" / "libkernels.dylib", [("__TEXT,metal_basic", None, a2)])
    )
    targets = list(map(str, releases))
    code, out, err = run(["history", *targets, "--format", "json"], capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert "points" not in doc
    first, second = doc["libraries"]
    assert first["library"] == _members(targets[0])[0]
    assert second["library"] == _members(targets[0])[1]
    assert [p["target"] for p in first["points"]] == targets
    assert [p["bytes"] for p in first["points"]] == [two["a"].stat().st_size] * 3
    assert [p["target"] for p in second["points"]] == targets[:2]
    assert [p["bytes"] for p in second["points"]] == [
        two["b"].stat().st_size,
        b2.stat().st_size,
    ]
    assert [p["function_count"] for p in second["points"]] == [7, 9]

    code, out, err = run(["history", *targets[:2], "--member", second["library"]], capsys)
    assert code == 0, err
    code, out, err = run(
        ["history", *targets[:2], "--member", second["library"], "--format", "json"], capsys
    )
    assert code == 0, err
    assert [p["bytes"] for p in json.loads(out)["points"]] == [
        two["b"].stat().st_size,
        b2.stat().st_size,
    ]

    code, out, err = run(["history", *targets], capsys)
    assert code == 0, err
    flat = " ".join(out.split())  # the table may wrap its title
    assert f"Size history of {first['library']} in 3 targets" in flat
    assert f"Size history of {second['library']} in 2 targets" in flat

    page = tmp_path / "history.html"
    code, _, err = run(["history", *targets, "-o", str(page)], capsys)
    assert code == 0, err
    html = page.read_text()
    total = html.split("<svg")[1]
    assert total.count("<polyline") == 2  # a line per library in the total chart
    # per library its history table and the table of the groups each step moved
    moved = "<h3>Groups that moved most, each step</h3>"
    assert html.count("<h2>") == 2 and html.count(moved) == 2 and html.count("<table>") == 4
