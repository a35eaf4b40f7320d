"""Malformed containers that used to pass: stray bytes, repeated tags, names that are not text.

Each case is made byte-wise from a valid library (synthetic, or real functions of an mlx-metal
wheel) and the exact outcome is asserted: which byte offset, which exit code for which command.
The rules (docs/metallib-format.md, "Strictness"):

* bytes that belong to no section or no function: the reader accepts them (``list`` and
  ``report`` count them as overhead, ``slim`` drops them); ``verify`` names the first one, exit 1;
* a tag twice in one function entry or in the header extension: every command refuses, exit 2;
* a name that is not valid UTF-8 or holds a NUL before its end: ``verify`` names it, exit 1;
  every other command refuses, exit 2.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from clirun import run_cli
from synthetic import new_function, new_library, synthetic_parts

from builder.metallib import Metallib, MetallibFormatError, library_bytes, verify
from builder.metallib.native import disabled
from builder.subsets.slim import slim_file


@pytest.fixture(params=["native", "python"])
def parser(request: pytest.FixtureRequest) -> Iterator[str]:
    """Run the test with the C extension (when built) and again with the pure-Python parser."""
    if request.param == "python":
        with disabled():
            yield request.param
    else:
        yield request.param


@pytest.fixture(scope="session")
def small_old_metallib(
    mlx_metallib: Callable[[str, str], Path], tmp_path_factory: pytest.TempPathFactory
) -> bytes:
    """Real functions of mlx-metal 0.30.0: the older writer (no reflection list, no UUID)."""
    out = tmp_path_factory.mktemp("old") / "small.metallib"
    slim_file(mlx_metallib("0.30.0", "macosx_14_0_arm64"), out, keep=["v_copy*", "vv_Add*"])
    return out.read_bytes()


def _synthetic() -> bytes:
    return library_bytes(synthetic_parts(4, dynamic=True))  # every section, HDYN and RLST included


def _real(request: pytest.FixtureRequest, which: str) -> bytes:
    if which == "synthetic":
        return _synthetic()
    return request.getfixturevalue(which)  # type: ignore[no-any-return]


_LIBRARIES = [
    "synthetic",
    pytest.param("small_real_metallib", marks=pytest.mark.realdata),
    pytest.param("small_old_metallib", marks=pytest.mark.realdata),
]


# -- building malformed files ---------------------------------------------------------------------
_HEADER_SECTIONS = {"public metadata": (40, 0), "private metadata": (56, 1), "bitcode": (72, 2)}


def _insert(data: bytes, at: int, junk: bytes, into: str | None = None) -> bytes:
    """``data`` with ``junk`` inserted at ``at`` and every offset after it moved, so that only the
    inserted bytes are wrong. ``into`` names the section that grows to hold them (its functions'
    relative offsets at or after ``at`` move); None leaves them between or after sections."""
    lib = Metallib(data)
    assert at >= lib.extension_span.end, "the header extension and the list cannot hold a gap"
    n = len(junk)
    out = bytearray(data[:at] + junk + data[at:])
    struct.pack_into("<Q", out, 16, len(out))
    for name, (field, _) in _HEADER_SECTIONS.items():
        offset, size = struct.unpack_from("<QQ", data, field)
        if name == into:
            size += n
        elif offset >= at:
            offset += n
        struct.pack_into("<QQ", out, field, offset, size)
    for tag in lib.extension:
        if tag.code in (b"RLST", b"HDYN"):
            offset, size = struct.unpack_from("<QQ", data, tag.offset)
            if into == "reflection list" and tag.code == b"RLST":
                size += n
            elif offset >= at:
                offset += n
            struct.pack_into("<QQ", out, tag.offset, offset, size)
    for fn in lib.functions if into else ():
        if into == "reflection list":
            rflt = fn.table.rflt_rel[fn.index]
            assert lib.reflection_list is not None and rflt is not None
            field, section_start = fn.entry.offset + rflt, lib.reflection_list.offset
        else:
            field_index = _HEADER_SECTIONS[into][1]  # type: ignore[index]
            field = fn.entry.offset + fn.table.offt_rel[fn.index] + 8 * field_index
            section_start = struct.unpack_from("<Q", data, _HEADER_SECTIONS[into][0])[0]  # type: ignore[index]
        value = struct.unpack_from("<Q", data, field)[0]
        if section_start + value >= at:
            struct.pack_into("<Q", out, field, value + n)
    return bytes(out)


_JUNK = bytes(range(16))  # 16 bytes keep every later reflection FlatBuffer 16-aligned


def _problems(data: bytes) -> list[tuple[str | None, int, str]]:
    return [
        (p.function, p.offset, p.message)
        for p in verify(Metallib(data), parallel="inline").problems
    ]


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    return run_cli(args, capsys)


# -- 1. stray bytes between sections, after the last one, inside a section ------------------------
@pytest.mark.parametrize("which", _LIBRARIES)
def test_stray_bytes_after_each_section_fail_verify_only(
    which: str,
    request: pytest.FixtureRequest,
    parser: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    data = _real(request, which)
    lib = Metallib(data)
    assert [r.name for r in lib.regions()].count("gap") == 0
    after = [r for r in lib.sections() if r.end >= lib.extension_span.end]
    assert len(after) >= 4
    for region in after:
        at = region.end
        bad = _insert(data, at, _JUNK)
        kind = "trailing bytes" if at == len(data) else "gap"
        assert _problems(bad) == [
            (None, at, f"{kind}: 16 bytes after the {region.name} belong to no section")
        ]

        path = tmp_path / "bad.metallib"
        path.write_bytes(bad)
        code, out, _ = _run(["verify", str(path), "--format", "json"], capsys)
        assert code == 1
        assert [(p["function"], p["offset"]) for p in json.loads(out)["problems"]] == [(None, at)]
        code, out, err = _run(["verify", str(path)], capsys)
        assert code == 1 and f"FAIL (container): byte offset {at}: {kind}" in out, out + err

        # list and report keep working: the bytes are overhead; slim drops them
        code, out, _ = _run(["list", str(path), "--format", "json"], capsys)
        assert code == 0 and json.loads(out)["function_count"] == len(lib.functions)
        code, out, _ = _run(["report", str(path), "--format", "json"], capsys)
        assert code == 0
        assert {"name": f"gap at {at}", "bytes": 16} in json.loads(out)["overhead"]
        code, _, err = _run(
            ["slim", str(path), "-o", str(tmp_path / "out.metallib"), "--keep", "*"], capsys
        )
        assert code == 0, err
        assert (
            tmp_path / "out.metallib"
        ).read_bytes() == data  # the stray bytes are gone, nothing else


@pytest.mark.parametrize("which", _LIBRARIES)
def test_stray_bytes_inside_a_section_fail_verify(
    which: str, request: pytest.FixtureRequest, parser: str
) -> None:
    data = _real(request, which)
    lib = Metallib(data)
    h = lib.header
    second = lib.functions[1]
    cases = [
        ("public metadata", h.public_metadata.offset),  # before the first piece
        ("private metadata", h.private_metadata.offset),
        ("bitcode", second.module.offset),  # between two modules
        ("bitcode", h.bitcode.end),  # after the last module
    ]
    if lib.reflection_list is not None:
        cases.append(("reflection list", lib.reflection_list.offset + 4))  # after the count
    for section, at in cases:
        bad = _insert(data, at, _JUNK, into=section)
        assert _problems(bad) == [
            (None, at, f"{section}: 16 bytes at {at} belong to no function")
        ], section
        assert len(Metallib(bad).functions) == len(lib.functions)  # the reader still takes it


def test_dynamic_header_with_bytes_after_its_endt(parser: str) -> None:
    data = _synthetic()
    lib = Metallib(data)
    assert lib.dynamic_header is not None
    at = lib.dynamic_header.end
    bad = bytearray(_insert(data, at, _JUNK))
    tag = next(t for t in lib.extension if t.code == b"HDYN")
    struct.pack_into(
        "<Q", bad, tag.offset + 8, lib.dynamic_header.size + 16
    )  # HDYN claims the bytes
    assert _problems(bytes(bad)) == [
        (None, at, "dynamic header: 16 bytes after its ENDT belong to no tag")
    ]


@pytest.mark.realdata
@pytest.mark.parametrize(
    ("version", "platform"), [("0.30.0", "macosx_14_0_arm64"), ("0.32.0", "macosx_26_0_arm64")]
)
def test_whole_real_library_with_trailing_bytes(
    mlx_metallib: Callable[[str, str], Path],
    version: str,
    platform: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The full Apple-built file, 7 bytes appended and declared in the header: verify fails
    there."""
    data = bytearray(mlx_metallib(version, platform).read_bytes())
    end = len(data)
    data += b"\0" * 7
    struct.pack_into("<Q", data, 16, len(data))
    path = tmp_path / "trailing.metallib"
    path.write_bytes(data)
    code, out, _ = _run(["verify", str(path), "--format", "json"], capsys)
    problems = json.loads(out)["problems"]
    assert code == 1 and [(p["function"], p["offset"]) for p in problems] == [(None, end)]
    assert problems[0]["message"].startswith("trailing bytes: 7 bytes after the ")


# -- 2. a tag twice -------------------------------------------------------------------------------
def _tag_at(lib: Metallib, index: int, code: bytes) -> int:
    """Absolute offset of the tag ``code`` (its 4-byte code) in function ``index``'s entry."""
    return next(at - 6 for tag, at, _ in lib.functions[index].tags if tag == code)


@pytest.mark.parametrize(
    ("which", "renamed", "as_code"),
    [
        ("synthetic", b"VERS", b"RFLT"),  # 8-byte payloads, so the entry keeps its size
        ("synthetic", b"MDSZ", b"VERS"),
        pytest.param("small_real_metallib", b"VERS", b"RFLT", marks=pytest.mark.realdata),
        pytest.param("small_real_metallib", b"MDSZ", b"RFLT", marks=pytest.mark.realdata),
        pytest.param("small_old_metallib", b"VERS", b"MDSZ", marks=pytest.mark.realdata),
    ],
)
def test_a_tag_twice_in_an_entry_is_refused_everywhere(
    which: str,
    renamed: bytes,
    as_code: bytes,
    request: pytest.FixtureRequest,
    parser: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    data = bytearray(_real(request, which))
    lib = Metallib(bytes(data))
    victim = 2
    first, original = _tag_at(lib, victim, renamed), _tag_at(lib, victim, as_code)
    data[first : first + 4] = as_code
    second = max(first, original)
    with pytest.raises(MetallibFormatError) as caught:
        _ = Metallib(bytes(data)).functions
    assert caught.value.offset == second
    assert f"second {as_code.decode()} tag" in caught.value.message

    path = tmp_path / "twice.metallib"
    path.write_bytes(data)
    out_path = tmp_path / "out.metallib"
    for args in (
        ["list", str(path)],
        ["verify", str(path)],
        ["report", str(path)],
        ["slim", str(path), "-o", str(out_path), "--keep", "*"],
    ):
        code, _, err = _run(args, capsys)
        assert code == 2 and f"byte offset {second} " in err and err.count("\n") == 1, (args, err)
    assert not out_path.exists()


def test_an_unknown_tag_twice_is_refused_at_the_second(parser: str) -> None:
    data = library_bytes(
        synthetic_parts(3, tags=lambda t: [*t, (b"ZZZZ", b"one"), (b"ZZZZ", b"two")])
    )
    entry = struct.unpack_from("<Q", data, 24)[0] + 4
    size = struct.unpack_from("<I", data, entry)[0]
    second = entry + size - 4 - 9  # the last tag before ENDT: 'ZZZZ' u16 'two'
    assert data[second : second + 4] == b"ZZZZ"
    with pytest.raises(MetallibFormatError) as caught:
        _ = Metallib(data).functions
    assert caught.value.offset == second and caught.value.message == (
        f"function 0: second ZZZZ tag in one entry (the first is at {second - 9})"
    )


@pytest.mark.parametrize(
    "which", ["synthetic", pytest.param("small_real_metallib", marks=pytest.mark.realdata)]
)
def test_a_tag_twice_in_the_header_extension_is_refused(
    which: str, request: pytest.FixtureRequest
) -> None:
    data = bytearray(_real(request, which))
    lib = Metallib(bytes(data))
    # HDYN, RLST and UUID all have 16-byte payloads: rename the last tag as the first
    first, last = lib.extension[0], lib.extension[-1]
    assert first.code != last.code and first.length == last.length == 16
    data[last.offset - 6 : last.offset - 2] = first.code
    with pytest.raises(MetallibFormatError) as caught:
        Metallib(bytes(data))
    assert caught.value.offset == last.offset - 6
    assert caught.value.message == (
        f"header extension: second {first.code.decode()} tag (the first is at {first.offset - 6})"
    )


# -- 3. names that are not text --------------------------------------------------------------------
@pytest.mark.parametrize("which", _LIBRARIES)
@pytest.mark.parametrize(
    ("byte", "what"), [(0xFF, "is not valid UTF-8 (byte 0xff)"), (0x00, "holds a NUL byte")]
)
def test_bad_name_fails_verify_and_is_refused_elsewhere(
    which: str,
    byte: int,
    what: str,
    request: pytest.FixtureRequest,
    parser: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    data = bytearray(_real(request, which))
    lib = Metallib(bytes(data))
    victim = 1
    name_at = _tag_at(lib, victim, b"NAME") + 6
    at = name_at + 3
    original = lib.functions[victim].name
    data[at] = byte
    shown = original[:3] + ("\\xff" if byte else "\\x00") + original[4:]
    problems = _problems(bytes(data))
    assert [(p[0], p[1]) for p in problems] == [(shown, at)]
    assert problems[0][2].startswith(f"name {what}")
    with pytest.raises(MetallibFormatError) as caught:
        _ = Metallib(bytes(data)).functions
    assert caught.value.offset == at
    assert caught.value.message.startswith(f"function {victim}: name '{shown}' {what}")

    path = tmp_path / "name.metallib"
    path.write_bytes(data)
    code, out, _ = _run(["verify", str(path), "--format", "json"], capsys)
    assert code == 1
    assert [(p["function"], p["offset"]) for p in json.loads(out)["problems"]] == [(shown, at)]
    out_path = tmp_path / "out.metallib"
    for args in (
        ["list", str(path), "--format", "json"],
        ["report", str(path)],
        ["slim", str(path), "-o", str(out_path), "--keep", "*"],
    ):
        code, _, err = _run(args, capsys)
        assert code == 2 and f"byte offset {at} " in err and err.count("\n") == 1, (args, err)
    assert not out_path.exists()


def test_names_differing_only_in_bad_bytes_stay_apart(parser: str) -> None:
    """Decoded with replacement, 'k\\xfe' and 'k\\xff' both read 'k\\ufffd'; verify shows them
    apart."""
    parts = new_library(
        [
            new_function(name, b"BC\xc0\xde" + bytes(8), reflection=bytes(16))
            for name in ("ka", "kb")
        ]
    )
    data = bytearray(library_bytes(parts))
    first = data.find(b"ka\0")
    second = data.find(b"kb\0")
    data[first + 1], data[second + 1] = 0xFE, 0xFF
    assert [(p[0], p[1]) for p in _problems(bytes(data))] == [
        ("k\\xfe", first + 1),
        ("k\\xff", second + 1),
    ]


def test_valid_non_ascii_names_are_taken_as_they_are(parser: str) -> None:
    names = ["noyau_é", "核函数", "k\ufffd"]  # U+FFFD itself is valid when encoded properly
    parts = new_library(
        [new_function(name, b"BC\xc0\xde" + bytes(8), reflection=bytes(16)) for name in names]
    )
    lib = Metallib(library_bytes(parts))
    assert [fn.name for fn in lib.functions] == names
    assert verify(lib, parallel="inline").ok
