"""Inputs whose cost is in their count, not their bytes: a saved report of a million tiny
functions, a wheel whose central directory lists millions of entries.

Each is refused at its bound with one line naming the variable that allows more
(``METALLIB_BUILDER_MAX_JSON_OBJECTS``, ``METALLIB_BUILDER_MAX_MEMBERS``), and passes when the
variable allows it. The wheels are written here entry by entry with ``struct`` (only the central
directory and its end record: what ``zipfile`` parses before anything else), and checked against
``zipfile`` itself as the reference for how many entries a reader finds. Memory and time are
measured by ``benchmarks/bench_big_inputs.py``, not here.
"""

from __future__ import annotations

import json
import struct
import zipfile
from pathlib import Path
from typing import Any

import pytest
from support.hostile import Cli, assert_one_error_line, library_with

from builder.files.bounds import MAX_JSON_OBJECTS, MAX_MEMBERS
from builder.inputs.wheel_index import directory_entries

WHEEL = "pkg-1.0-py3-none-macosx_14_0_arm64.whl"
_ENTRY = struct.Struct("<4s4B4HL2L5H2L")


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("METALLIB_BUILDER_CACHE", str(folder))
    return folder


# -- saved reports --------------------------------------------------------------------------------
@pytest.fixture
def saved(tmp_path: Path, cli: Cli) -> dict[str, Any]:
    library = tmp_path / "lib.metallib"
    library.write_bytes(library_with(["k_a", "k_b"]))
    code, out, err = cli("report", library, "--format", "json")
    assert code == 0, err
    doc: dict[str, Any] = json.loads(out)
    return doc


def _with_functions(saved: dict[str, Any], path: Path, count: int) -> Path:
    """``saved`` with ``count`` functions of one byte each (totals kept consistent), written
    as compactly as the tool's own JSON: 24 bytes a function."""
    head = dict(saved, function_count=count, file_size=count + saved["overhead_bytes"])
    head.pop("functions")
    body = ",".join(f'{{"name":"k{i}","bytes":1}}' for i in range(count))
    text = json.dumps(head, separators=(",", ":"))[:-1] + ',"functions":[' + body + "]}"
    path.write_text(text)
    return path


def test_a_30_mb_report_of_tiny_functions_is_refused_at_the_default_bound(
    saved: dict[str, Any], tmp_path: Path, cli: Cli
) -> None:
    """The issue's case: 30 MB of functions; each costs hundreds of bytes once parsed."""
    path = _with_functions(saved, tmp_path / "huge.json", 1_300_000)
    assert path.stat().st_size > 30_000_000
    code, _, err = cli("report", path)
    line = assert_one_error_line(
        code, err, str(path), "METALLIB_BUILDER_MAX_JSON_OBJECTS", f"{MAX_JSON_OBJECTS.default:,}"
    )
    assert "exceeds" in line


def test_the_object_bound_counts_objects_and_the_variable_raises_it(
    saved: dict[str, Any], tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _with_functions(saved, tmp_path / "many.json", 2000)
    made: list[object] = []

    def count(obj: dict[str, Any]) -> dict[str, Any]:
        made.append(obj)
        return obj

    json.loads(path.read_text(), object_hook=count)  # the reference count
    objects = len(made)
    assert objects > 2000
    monkeypatch.setenv("METALLIB_BUILDER_MAX_JSON_OBJECTS", str(objects - 1))
    for args in (["report", path], ["compare", path, path]):
        code, _, err = cli(*args)
        assert_one_error_line(
            code, err, str(path), f"exceeds {objects - 1:,} objects", MAX_JSON_OBJECTS.variable
        )
    monkeypatch.setenv("METALLIB_BUILDER_MAX_JSON_OBJECTS", str(objects))
    code, out, err = cli("report", path, "--format", "json")
    assert code == 0, err
    back = json.loads(out)
    assert back["function_count"] == 2000
    assert [f["name"] for f in back["functions"]] == [f"k{i}" for i in range(2000)]


def test_the_bound_covers_build_manifests_too(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    build = tmp_path / "build"
    build.mkdir()
    units = ",".join(
        f'{{"name":"u{i}","kind":"entry_file","mode":"jit","embedded_bytes":0}}' for i in range(100)
    )
    monkeypatch.setenv("METALLIB_BUILDER_MAX_JSON_OBJECTS", "100")  # the top level makes 101
    manifest = build / "manifest.json"
    manifest.write_text('{"schema":2,"metallib":null,"units":[' + units + "]}")
    code, _, err = cli("report", build)
    assert_one_error_line(code, err, str(manifest), MAX_JSON_OBJECTS.variable)


def test_a_wrong_function_field_is_still_named(
    saved: dict[str, Any], tmp_path: Path, cli: Cli
) -> None:
    """The fast path over functions keeps the field-naming refusals (the mass test of every
    field is tests/inputs/test_report_json.py)."""
    for key, value, words in [
        ("metadata_bytes", -3, "'functions[].metadata_bytes' is -3, not a byte count"),
        ("bytes", True, "'functions[].bytes' is True, not a byte count"),
        ("group", 7, "'functions[].group' is 7, not a string"),
        ("subgroup", None, "'functions[].subgroup' is None, not a string"),
        ("name", ["x"], "'functions[].name' is ['x'], not a string"),
    ]:
        doc = json.loads(json.dumps(saved))
        doc["functions"][1][key] = value
        path = tmp_path / "bad.json"
        path.write_text(json.dumps(doc))
        code, _, err = cli("report", path)
        assert_one_error_line(code, err, "not a usable size report", words)


# -- wheels ---------------------------------------------------------------------------------------
def _directory_only(path: Path, count: int, *, declared: int | None = None) -> Path:
    """A zip that is nothing but a central directory of ``count`` empty stored entries and its
    end record, which declares ``declared`` entries (default: the truth; capped at 65,535 as
    the plain record is)."""
    records = b"".join(
        _ENTRY.pack(b"PK\x01\x02", 20, 3, 20, 0, 0, 0, 0, 0, 0, 0, 0, len(n), 0, 0, 0, 0, 0, 0) + n
        for n in (b"pkg/f%d" % i for i in range(count))
    )
    stated = min(count if declared is None else declared, 0xFFFF)
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, stated, stated, len(records), 0, 0)
    path.write_bytes(records + end)
    return path


def test_a_directory_of_millions_is_refused_before_zipfile_reads_it(
    tmp_path: Path, cache: Path, cli: Cli
) -> None:
    wheel = _directory_only(tmp_path / WHEEL, MAX_MEMBERS.default + 1)
    with zipfile.ZipFile(wheel) as archive:  # the reference: zipfile finds them all
        assert len(archive.infolist()) == MAX_MEMBERS.default + 1
    for args in (["list", wheel], ["report", wheel]):
        code, out, err = cli(*args)
        assert_one_error_line(
            code, err, str(wheel), f"exceeds {MAX_MEMBERS.default:,} entries", MAX_MEMBERS.variable
        )
        assert out == ""
    assert not (cache / "metallibs").exists() or not any((cache / "metallibs").iterdir())


@pytest.mark.parametrize("declared", [None, 1, 0xFFFF])
def test_the_walk_counts_what_the_end_record_does_not_say(
    declared: int | None, tmp_path: Path, cache: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An end record may understate the count (``zipfile`` reads the directory by its size, not
    its count) or overstate it; both ways the bound holds, at exactly the bound."""
    wheel = _directory_only(tmp_path / WHEEL, 50, declared=declared)
    monkeypatch.setenv("METALLIB_BUILDER_MAX_MEMBERS", "49")
    code, _, err = cli("list", wheel)
    assert_one_error_line(code, err, str(wheel), "exceeds 49 entries", MAX_MEMBERS.variable)
    if declared == 0xFFFF:
        assert "its end record declares 65,535 entries" in err
    monkeypatch.setenv("METALLIB_BUILDER_MAX_MEMBERS", "50" if declared != 0xFFFF else "65535")
    code, _, err = cli("list", wheel)
    assert_one_error_line(code, err, "contains no metallib")  # past the bound: read as a wheel


def _real_zip(path: Path, count: int, *, comment: bytes, zip64: bool, prefix: bytes) -> Path:
    """A zip written by ``zipfile`` (``prefix`` before it, as a self-extractor has)."""
    inner = path.with_suffix(".inner")
    with zipfile.ZipFile(inner, "w", allowZip64=True) as archive:
        for i in range(count):
            archive.writestr(f"pkg/m{i}.txt", b"x" * (i % 7))
        archive.comment = comment
    data = inner.read_bytes()
    if zip64:  # force the ZIP64 end records, as a writer with over 65,535 entries must
        data = _as_zip64(data)
    path.write_bytes(prefix + data)
    return path


def _as_zip64(data: bytes) -> bytes:
    """``data`` (a zip) with a ZIP64 end record and locator before its end record, which then
    says 0xFFFF entries and 0xFFFFFFFF bytes, as the format has it for large archives."""
    at = data.rfind(b"PK\x05\x06")
    (_, _, _, _, entries, size, offset, clen) = struct.unpack_from("<4s4H2LH", data, at)
    end64 = struct.pack(
        "<4sQ2H2L4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, entries, entries, size, offset
    )
    locator = struct.pack("<4sLQL", b"PK\x06\x07", 0, at, 1)
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, clen)
    return data[:at] + end64 + locator + end + data[at + 22 :]


@pytest.mark.parametrize(
    ("comment", "zip64", "prefix"),
    [(b"", False, b""), (b"a comment", False, b""), (b"", True, b""), (b"c", True, b"#!prefix\n")],
)
def test_the_count_is_zipfiles_count(
    comment: bytes, zip64: bool, prefix: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The directory is found where zipfile finds it (comment, ZIP64 records, data before the
    zip), so the count the bound is held to is the count zipfile would parse."""
    path = _real_zip(tmp_path / "z.zip", 30, comment=comment, zip64=zip64, prefix=prefix)
    with zipfile.ZipFile(path) as archive:
        expected = len(archive.infolist())
    assert expected == 30
    with path.open("rb") as handle:
        found = directory_entries(handle)
    assert found is not None and found[0] == expected
    from builder.inputs.wheel_index import check_entries

    monkeypatch.setenv("METALLIB_BUILDER_MAX_MEMBERS", str(expected))
    with path.open("rb") as handle:
        check_entries(handle, path)
    monkeypatch.setenv("METALLIB_BUILDER_MAX_MEMBERS", str(expected - 1))
    with path.open("rb") as handle, pytest.raises(Exception, match=MAX_MEMBERS.variable):
        check_entries(handle, path)


def test_long_names_across_chunks_are_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Entries whose names span the walk's 1 MiB reads are counted once each."""
    from builder.inputs.wheel_index import check_entries

    path = tmp_path / "long.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for i in range(40):
            archive.writestr("d/" + f"{i:03d}" * 20_000, b"")  # 60 kB names: 2.4 MB directory
    with zipfile.ZipFile(path) as archive:
        assert len(archive.infolist()) == 40
    monkeypatch.setenv("METALLIB_BUILDER_MAX_MEMBERS", "40")
    with path.open("rb") as handle:
        check_entries(handle, path)
    monkeypatch.setenv("METALLIB_BUILDER_MAX_MEMBERS", "39")
    with path.open("rb") as handle, pytest.raises(Exception, match="exceeds 39 entries"):
        check_entries(handle, path)
