"""Every byte goes to one function or to named overhead; totals equal the file size."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from synthetic import synthetic_bytes

from builder.metallib import Metallib, Piece, Region, Span, open_metallib
from builder.size.attribution import attribute, piece_spans, range_map


def _independent_total(lib: Metallib) -> int:
    """Sum of the reader's own per-function sizes plus the regions no function touches."""
    return sum(len(fn.stored(piece)) for fn in lib.functions for piece in Piece)


@given(
    names=st.lists(
        st.from_regex(r"[a-z]{1,12}_(float16|int32|bool_)?", fullmatch=True),
        unique=True,
        max_size=12,
    ),
    sizes=st.lists(st.integers(0, 300), min_size=12, max_size=12),
    reflection=st.booleans(),
    install_name=st.sampled_from([None, "lib.metallib"]),
)
@settings(max_examples=60, deadline=None)
def test_totals_invariant_synthetic(
    names: list[str], sizes: list[int], reflection: bool, install_name: str | None
) -> None:
    data = synthetic_bytes(
        list(zip(names, sizes)), reflection=reflection, install_name=install_name
    )
    lib = Metallib(data)
    result = attribute(lib)
    result.check()
    assert attribute(lib, verify=True) == result
    assert sum(fn.bytes for fn in result.functions) + result.overhead_bytes == len(data)
    assert [fn.name for fn in result.functions] == names
    # each function owns exactly what the reader says it owns
    owned = [sum(len(fn.stored(piece)) for piece in Piece) for fn in lib.functions]
    assert [fn.bytes for fn in result.functions] == owned
    assert [fn.module for fn in result.functions] == [fn.module.size for fn in lib.functions]
    names_of_overhead = {o.name for o in result.overhead}
    assert "header" in names_of_overhead
    assert all(o.bytes > 0 for o in result.overhead)


def test_overhead_is_named_by_region() -> None:
    data = synthetic_bytes([("a_float32", 40), ("b_int8", 70)], install_name="x.metallib")
    result = attribute(Metallib(data))
    by_name = {o.name: o.bytes for o in result.overhead}
    assert by_name["header"] == 88
    assert by_name["function list framing"] == 4  # the u32 count
    assert by_name["reflection list framing"] == 4  # the RLST count
    assert by_name["dynamic header"] == len(b"NAME") + 2 + len(b"x.metallib\0") + len(b"ENDT")
    assert "header extension" in by_name


def test_range_map_first_piece_wins() -> None:
    """Overlapping pieces (not produced by Apple's writer) are never counted twice."""
    regions = [Region("header", 0, 10), Region("data", 10, 90)]
    spans: list[list[Span | None]] = [
        [Span(10, 20), Span(20, 20), Span(10, 5)],  # 2nd overlaps the 1st, 3rd inside the 1st
        [None, Span(60, 40), None],  # runs to the end of the file
    ]
    per_region, sizes = range_map(spans, regions)
    assert sizes == [[20, 10, 0], [0, 40, 0]]
    assert per_region == [0, 70]


def test_range_map_splits_across_regions() -> None:
    regions = [Region("a", 0, 10), Region("b", 10, 10)]
    per_region, sizes = range_map([[Span(5, 10)]], regions)
    assert sizes == [[10]] and per_region == [5, 5]


REAL = [
    ("0.30.0", "macosx_14_0_arm64"),
    ("0.32.0", "macosx_14_0_arm64"),
    ("0.32.0", "macosx_26_0_arm64"),
]


@pytest.mark.realdata
@pytest.mark.parametrize(("version", "platform"), REAL)
def test_totals_invariant_real(
    mlx_metallib: Callable[[str, str], Path], version: str, platform: str
) -> None:
    path = mlx_metallib(version, platform)
    with open_metallib(path) as lib:
        result = attribute(lib)
        result.check()
        assert attribute(lib, verify=True) == result  # sizes-only and offset paths agree
        assert result.file_size == os.path.getsize(path)
        function_bytes = sum(fn.bytes for fn in result.functions)
        assert function_bytes + result.overhead_bytes == os.path.getsize(path)
        assert function_bytes == _independent_total(lib)
        # the fast path and the general range map agree byte for byte
        _, general = range_map(piece_spans(lib.functions), lib.regions())
        fast = [
            [getattr(fn, piece) for fn in result.functions]
            for piece in ("entry", "public_md", "private_md", "module", "reflection")
        ]
        assert general == fast
        # the bitcode section belongs to functions alone
        assert sum(fn.module for fn in result.functions) == lib.header.bitcode.size


def test_gap_between_sections_is_named_overhead() -> None:
    """Move the bitcode section 16 bytes later (header offsets patched): the hole is overhead."""
    import struct

    data = bytearray(synthetic_bytes([("a_float32", 40), ("b_int8", 70)], reflection=False))
    bitcode_offset = struct.unpack_from("<Q", data, 72)[0]
    patched = data[:bitcode_offset] + bytes(16) + data[bitcode_offset:]
    struct.pack_into("<Q", patched, 16, len(patched))  # file size
    struct.pack_into("<Q", patched, 72, bitcode_offset + 16)  # bitcode section offset
    lib = Metallib(bytes(patched))
    result = attribute(lib)
    result.check()
    assert attribute(lib, verify=True) == result
    gaps = [o for o in result.overhead if o.name.startswith("gap")]
    assert [(g.name, g.offset, g.bytes) for g in gaps] == [
        (f"gap at {bitcode_offset}", bitcode_offset, 16)
    ]
    assert result.overhead_bytes == attribute(Metallib(bytes(data))).overhead_bytes + 16


# -- a broken invariant is a bug in this tool: one clear line, exit 2, never a traceback ----------
def test_inconsistent_totals_raise_internal_error() -> None:
    from builder.metallib import InternalError
    from builder.size.attribution import Attribution

    broken = Attribution(100, "2.7", ["k"], ([10], [8], [8], [40], [0]), [], "lib.metallib")
    with pytest.raises(InternalError) as caught:
        broken.check()
    assert caught.value.exit_code == 2
    assert str(caught.value) == (
        "lib.metallib: byte offset 100 (0x64): internal error, a bug in metallib-builder "
        "(please report it with this line): attributed 66 bytes, the file has 100"
    )


def test_a_broken_invariant_in_report_is_one_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Regions that do not tile the file (the reader guarantees they do) leave bytes unaccounted:
    ``report`` says it is a bug here, naming the file and offset, and exits 2."""
    from clirun import run_cli

    path = tmp_path / "lib.metallib"
    path.write_bytes(synthetic_bytes([("a_float32", 40), ("b_int8", 70)]))
    tiles = Metallib.regions
    monkeypatch.setattr(
        Metallib, "regions", lambda self: [r for r in tiles(self) if r.name != "header"]
    )
    code, out, err = run_cli(["report", str(path), "--format", "json"], capsys)
    assert code == 2 and out == ""
    assert err == (
        f"error: {path}: byte offset {path.stat().st_size} (0x{path.stat().st_size:x}): "
        "internal error, "
        "a bug in metallib-builder (please report it with this line): attributed "
        f"{path.stat().st_size - 88} bytes, the file has {path.stat().st_size}\n"
    )
