"""Hostile saved reports: every field replaced by every wrong kind of value, and JSON that only
a parser's limits stop (5,000-digit numbers, 200,000 nested brackets).

A CI job compares against a report it downloaded from an artifact anyone may have written. Each
run must end in exit 0 (a value the report may hold) or exit 2 with one line naming what is
wrong; never a traceback, never exit 1. The report is a real one: ``report --format json`` of a
library written by the project's writer.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.hostile import Cli, assert_one_error_line, library_with

WRONG = [None, -1, 10**400, "text", [], {}, [1], {"a": 1}, True, 1.5, "\x1b[2J"]


@pytest.fixture
def saved(tmp_path: Path, cli: Cli) -> dict[str, Any]:
    library = tmp_path / "lib.metallib"
    library.write_bytes(library_with(["k_a", "k_b", "k_c"]))
    code, out, err = cli("report", library, "--format", "json")
    assert code == 0, err
    doc: dict[str, Any] = json.loads(out)
    assert doc["provenance"]["library"]["air_versions"]  # the fields under attack exist
    return doc


def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every field of a JSON document (the first item of each list standing for the rest)."""
    items = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value[:1])
        if isinstance(value, list)
        else ()
    )
    for key, inner in items:
        yield (*path, key)
        yield from _paths(inner, (*path, key))


def _replaced(doc: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    here: Any = out
    for key in path[:-1]:
        here = here[key]
    here[path[-1]] = value
    return out


def test_every_field_with_every_wrong_value(
    saved: dict[str, Any], tmp_path: Path, cli: Cli
) -> None:
    path = tmp_path / "saved.json"
    fields = list(_paths(saved))
    assert len(fields) > 40
    outcomes = {0: 0, 2: 0}
    for field in fields:
        for value in WRONG:
            path.write_text(json.dumps(_replaced(saved, field, value)))
            for args in (
                ["report", path],
                ["report", path, "--format", "csv"],
                ["compare", path, path, "--format", "markdown"],
            ):
                code, _, err = cli(*args)
                assert code in (0, 2), (field, value, args, err)
                if code == 2:
                    assert_one_error_line(code, err, str(path))
                outcomes[code] += 1
    assert outcomes[0] and outcomes[2] > len(fields)  # both happen: the values are really tried


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("file_size", 10**400, ["'file_size' is a 401-digit number, not a byte count"]),
        ("overhead_bytes", -1, ["'overhead_bytes' is -1, not a byte count"]),
        ("source", [], ["'source' is [], not an object"]),
        ("source.target", 5, ["'source.target' is 5, not a string"]),
        ("provenance", "x", ["'provenance' is 'x', not an object"]),
        ("provenance.tool", 1, ["'provenance.tool' is 1, not an object"]),
        ("provenance.library.air_versions", "2.6", ["'provenance.library.air_versions' is not"]),
        (
            "provenance.build",
            {"options": [[[[[[[[[["deep"]]]]]]]]]]},
            ["'provenance.build' is nested deeper than 8 levels"],
        ),
    ],
)
def test_the_field_is_named(
    field: str, value: Any, words: list[str], saved: dict[str, Any], tmp_path: Path, cli: Cli
) -> None:
    path = tmp_path / "saved.json"
    path.write_text(json.dumps(_replaced(saved, tuple(field.split(".")), value)))
    code, _, err = cli("report", path)
    assert_one_error_line(code, err, "not a usable size report", *words)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('{"schema": 2, "file_size": ' + "9" * 5000 + "}", ["more than 4,300 digits"]),
        ("[" * 200_000 + "]" * 200_000, ["nested too deeply"]),
        ('{"schema": 2, "functions": [' + '{"a": ' * 100_000, ["nested too deeply"]),
        ("\xff\xfe not text", ["not UTF-8"]),
        ('{"schema": 2,', ["cannot read JSON"]),
    ],
)
def test_json_only_a_parser_limit_stops(
    text: str, words: list[str], tmp_path: Path, cli: Cli
) -> None:
    path = tmp_path / "hostile.json"
    path.write_bytes(text.encode("latin-1"))
    for args in (["report", path], ["compare", path, path]):
        code, _, err = cli(*args)
        assert_one_error_line(code, err, str(path), *words)


def test_a_json_file_past_the_size_bound(
    saved: dict[str, Any], tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "saved.json"
    path.write_text(json.dumps(saved))
    monkeypatch.setenv("METALLIB_BUILDER_MAX_JSON", "1kB")
    code, _, err = cli("report", path)
    assert_one_error_line(code, err, "exceeds 1,000 bytes", "METALLIB_BUILDER_MAX_JSON")
    monkeypatch.setenv("METALLIB_BUILDER_MAX_JSON", "1MB")
    code, _, err = cli("report", path)
    assert code == 0, err


def test_a_hostile_build_manifest_is_one_line_too(tmp_path: Path, cli: Cli) -> None:
    build = tmp_path / "build"
    build.mkdir()
    manifest = build / "manifest.json"
    for text, words in [
        ("[" * 200_000, ["cannot read build manifest", "nested too deeply"]),
        (
            '{"schema": 2, "metallib": null, "units": [{"name": "f", "kind": "entry_file", '
            '"mode": "jit", "embedded_bytes": ' + "1" * 400 + "}]}",
            ["'units[0].embedded_bytes' is a 400-digit number"],
        ),
    ]:
        manifest.write_text(text)
        code, _, err = cli("report", build)
        assert_one_error_line(code, err, str(manifest), *words)


def _build_folder(root: Path, metallib: str | None, host: str | None = None) -> Path:
    """A build folder whose manifest names ``metallib`` and ``host`` (one JIT unit when a host
    library is named, so that it is measured)."""
    build = root / "build"
    build.mkdir(exist_ok=True)
    units = (
        [{"name": "u", "kind": "entry_file", "mode": "jit", "embedded_bytes": 5}] if host else []
    )
    doc = {"schema": 2, "metallib": metallib, "host_library": host, "units": units}
    (build / "manifest.json").write_text(json.dumps(doc))
    return build


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("metallib", "/etc/passwd", ["'/etc/passwd'"]),
        ("metallib", "../outside.metallib", ["'../outside.metallib'"]),
        ("metallib", "{outside}", ["outside.metallib"]),  # absolute, to a real metallib
        ("metallib", "out.metallib", ["(a link to", "outside.metallib"]),  # a link out
        ("metallib", "sub/../../outside.metallib", ["'sub/../../outside.metallib'"]),
        ("host_library", "/etc/passwd", ["'/etc/passwd'"]),
        ("host_library", "../outside.metallib", ["'../outside.metallib'"]),
    ],
)
def test_a_manifest_names_files_in_its_build_folder_only(
    key: str, value: str, words: list[str], tmp_path: Path, cli: Cli
) -> None:
    """Outside the folder is refused even where the file is a valid metallib (so the refusal is
    the confinement, not a failed read), with one line naming the manifest and the key and
    nothing of the file's bytes."""
    outside = tmp_path / "outside.metallib"
    outside.write_bytes(library_with(["k_out"]))
    value = value.format(outside=outside)
    build = _build_folder(tmp_path, value if key == "metallib" else None, None)
    if key == "host_library":
        build = _build_folder(tmp_path, None, value)
    (build / "out.metallib").symlink_to(outside)
    passwd_start = Path("/etc/passwd").read_bytes()[:8]  # "root:x:0"
    for args in (["report", build], ["report", build / "manifest.json"], ["compare", build, build]):
        code, out, err = cli(*args)
        line = assert_one_error_line(
            code, err, str(build / "manifest.json"), f"{key!r} is", "outside the build folder"
        )
        for word in words:
            assert word in line
        assert "k_out" not in out + err
        assert passwd_start.decode() not in line and passwd_start[:4].hex(" ") not in line


def test_files_inside_the_build_folder_are_read(tmp_path: Path, cli: Cli) -> None:
    """Inside stays allowed however it is written: through ``..`` that comes back, by an
    absolute path, through a link that stays inside."""
    build = tmp_path / "build"
    (build / "lib").mkdir(parents=True)
    (build / "lib" / "real.metallib").write_bytes(library_with(["k_in"]))
    (build / "link.metallib").symlink_to(build / "lib" / "real.metallib")
    for value in (
        "lib/../lib/real.metallib",
        str(build / "lib" / "real.metallib"),
        "link.metallib",
    ):
        _build_folder(tmp_path, value)
        code, out, err = cli("report", build, "--format", "json")
        assert code == 0, (value, err)
        assert [f["name"] for f in json.loads(out)["functions"]] == ["k_in"]
