"""What the writer promises, checked on its output by a reader of its own (issue 24, item 18).

The other writer tests compare two ways into the writer, or read the output back with the
project's reader, which shares the writer's assumptions (it finds a FlatBuffer where alignment
says it must be). Here the output is walked by the few lines below, written from
docs/metallib-format.md: every reflection FlatBuffer starts 16-aligned and holds the function's
own bytes, each RFLT points at its function's piece, the UUID is the MD5 of every byte outside the
bitcode section with the UUID zeroed and RFC 4122 version-3 bits set, and ``write_library``
refuses to rename a file whose size is not the layout's.
"""

from __future__ import annotations

import hashlib
import struct
from pathlib import Path
from typing import Any

import pytest
from synthetic import new_function, new_library, synthetic_functions

from builder.errors import MetallibError
from builder.metallib import Metallib, library_bytes, parts_from_library
from builder.metallib import parts as parts_module
from builder.metallib import writer as writer_module


def _tags(data: bytes, at: int) -> tuple[dict[bytes, tuple[int, bytes]], int]:
    """A tag list from ``at``: code -> (payload offset, payload), and the offset after ENDT."""
    tags: dict[bytes, tuple[int, bytes]] = {}
    while data[at : at + 4] != b"ENDT":
        code = data[at : at + 4]
        wide = code in (b"RBUF", b"SARC", b"SBUF")
        (length,) = struct.unpack_from("<I" if wide else "<H", data, at + 4)
        start = at + (8 if wide else 6)
        tags[code] = (start, data[start : start + length])
        at = start + length
    return tags, at + 4


def _walk(data: bytes) -> dict[str, Any]:
    """The fields this file checks, read from the bytes alone."""
    fl, _, _, _, _, _, bc, bc_size = struct.unpack_from("<8Q", data, 24)
    (count,) = struct.unpack_from("<I", data, fl)
    at, entries = fl + 4, []
    for _ in range(count):
        (size,) = struct.unpack_from("<I", data, at)
        tags, end = _tags(data, at + 4)
        assert end == at + size
        entries.append(tags)
        at = end
    extension, _ = _tags(data, at)
    return {"entries": entries, "extension": extension, "bitcode": (bc, bc_size)}


def _name(tags: dict[bytes, tuple[int, bytes]]) -> str:
    return tags[b"NAME"][1].rstrip(b"\0").decode()


def _check_reflection(data: bytes, flatbuffers: dict[str, bytes]) -> None:
    """Every function's RFLT leads to its own FlatBuffer, 16-aligned, pieces back to back."""
    walked = _walk(data)
    rlst, rlst_size = struct.unpack("<QQ", walked["extension"][b"RLST"][1])
    (pieces,) = struct.unpack_from("<I", data, rlst)
    cursor = 4
    with_piece = [tags for tags in walked["entries"] if b"RFLT" in tags]
    assert pieces == len(with_piece) == len(flatbuffers)
    for tags in with_piece:
        (rflt,) = struct.unpack("<Q", tags[b"RFLT"][1])
        assert rflt == cursor, _name(tags)  # the pieces follow each other in function order
        piece = rlst + rflt
        size, code, length = struct.unpack_from("<I4sI", data, piece)
        flatbuffer = flatbuffers[_name(tags)]
        pad = length - len(flatbuffer)
        start = piece + 12 + pad
        assert code == b"RBUF" and size == 16 + length and 0 <= pad < 16
        assert start % 16 == 0, f"{_name(tags)}: FlatBuffer at {start}"
        assert data[piece + 12 : start] == bytes(pad)
        assert data[start : start + len(flatbuffer)] == flatbuffer
        assert data[start + len(flatbuffer) : piece + size] == b"ENDT"
        cursor += size
    assert cursor == rlst_size and rlst + rlst_size == len(data)


def _expected_uuid(data: bytes) -> bytes:
    """docs/metallib-format.md: MD5 of the file without its bitcode section, UUID zeroed, then
    version 3 (high nibble of byte 6) and the RFC 4122 variant (top bits 10 of byte 8)."""
    walked = _walk(data)
    at, _ = walked["extension"][b"UUID"]
    bc, bc_size = walked["bitcode"]
    zeroed = data[:at] + bytes(16) + data[at + 16 :]
    raw = bytearray(hashlib.md5(zeroed[:bc] + zeroed[bc + bc_size :]).digest())
    raw[6] = 0x30 | (raw[6] & 0x0F)
    raw[8] = 0x80 | (raw[8] & 0x3F)
    return bytes(raw)


def _library(count: int, seed: int, dynamic: bool = False) -> tuple[Metallib, dict[str, bytes]]:
    functions = synthetic_functions(count, seed=seed)
    install = "mlx.metallib" if dynamic else None
    lib = Metallib(library_bytes(new_library(functions, install_name=install)))
    return lib, {f.name: bytes(f.reflection) for f in functions if f.reflection is not None}


def _rlst(data: bytes) -> int:
    return int(struct.unpack("<QQ", _walk(data)["extension"][b"RLST"][1])[0])


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_an_in_place_reflection_list_moved_by_an_odd_amount_is_padded_afresh(
    seed: int, dynamic: bool
) -> None:
    """Dropping the last function leaves the other pieces where they were, back to back from
    the list's start (``in_place``), while the list moves by that function's entry, metadata and
    module: not a multiple of 16 here (asserted), so copying the pieces as they are would leave
    their FlatBuffers off alignment."""
    lib, flatbuffers = _library(7, seed, dynamic)
    kept = range(6)
    out = library_bytes(parts_from_library(lib, kept))
    moved = _rlst(lib.data.tobytes()) - _rlst(out)
    assert moved % 16, f"seed {seed}: the list moves by {moved}, a multiple of 16"
    names = lib.columns().names
    _check_reflection(out, {names[i]: flatbuffers[names[i]] for i in kept})
    assert Metallib(out).columns().names == [names[i] for i in kept]


@pytest.mark.parametrize("extra", range(42))
def test_a_reflection_list_pushed_later_by_the_extension_stays_aligned(extra: int) -> None:
    """Every function kept, so every piece is in place, and a tag of ``extra`` payload bytes
    added to the header extension pushes the list ``6 + extra`` bytes later: by a multiple of
    16 the pieces are copied as they are, by anything else each is padded afresh."""
    lib, flatbuffers = _library(5, seed=extra)
    parts = parts_from_library(lib)
    parts.extension.insert(0, (b"XTRA", bytes(extra)))
    out = library_bytes(parts)
    assert _rlst(out) - _rlst(lib.data.tobytes()) == 6 + extra
    _check_reflection(out, flatbuffers)
    assert _walk(out)["extension"][b"XTRA"][1] == bytes(extra)


def test_a_non_canonical_chunk_is_rewritten_even_when_nothing_moves() -> None:
    """A piece whose size field says 4 bytes more than it holds (the reader takes its span from
    the next RFLT) is written canonical, though every other piece could be copied."""
    lib, flatbuffers = _library(5, seed=3)
    data = bytearray(lib.data.tobytes())
    walked = _walk(bytes(data))
    piece = _rlst(bytes(data)) + struct.unpack("<Q", walked["entries"][2][b"RFLT"][1])[0]
    struct.pack_into("<I", data, piece, struct.unpack_from("<I", data, piece)[0] + 4)
    out = library_bytes(parts_from_library(Metallib(bytes(data))))
    _check_reflection(out, flatbuffers)


def _mixed(name_length: int) -> tuple[Metallib, dict[str, bytes]]:
    """Function 0 without a reflection piece (its name ``name_length`` letters), four with."""
    functions = [new_function("k" * name_length, b"BC\xc0\xde" + bytes(40))]
    functions += synthetic_functions(4, seed=8)
    lib = Metallib(library_bytes(new_library(functions)))
    return lib, {f.name: bytes(f.reflection) for f in functions if f.reflection is not None}


def test_rflt_is_patched_when_only_the_chunks_stay_in_place() -> None:
    """Dropping function 0, which has no piece, moves every entry and section but leaves the
    pieces back to back from the list's start; with a name length that moves the list by a
    multiple of 16 they are copied as they are, and each entry's RFLT is written anew."""
    moves = {}
    for length in range(1, 17):
        lib, flatbuffers = _mixed(length)
        out = library_bytes(parts_from_library(lib, range(1, 5)))
        moves[length] = _rlst(lib.data.tobytes()) - _rlst(out)
        _check_reflection(out, flatbuffers)
    assert any(move % 16 == 0 for move in moves.values()), moves
    assert any(move % 16 for move in moves.values()), moves


def test_a_chunk_whose_padding_stays_is_copied_not_rebuilt(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pieces are rebuilt only where their padding changes (the others are copied)."""
    lib, flatbuffers = _library(12, seed=21)
    names = lib.columns().names
    source = lib.data.tobytes()
    rebuilt: list[int] = []
    real = parts_module.reflection_piece  # what the writer calls, by its own name

    def counted(pad: int, flatbuffer: Any) -> bytes:
        rebuilt.append(pad)
        return real(pad, flatbuffer)

    monkeypatch.setattr(writer_module, "reflection_piece", counted)
    kept_pads = 0
    for kept in ([0, 2, 3, 5, 8, 11], [1, 4, 5, 6, 7], [3, 9, 10]):
        rebuilt.clear()
        out = library_bytes(parts_from_library(lib, kept))
        _check_reflection(out, {names[i]: flatbuffers[names[i]] for i in kept})
        before = {_name(t): _pad(source, t) for t in _walk(source)["entries"]}
        after = {_name(t): _pad(out, t) for t in _walk(out)["entries"]}
        changed = sum(before[name] != pad for name, pad in after.items())
        assert len(rebuilt) == changed, kept
        kept_pads += len(after) - changed
    assert kept_pads, "no piece kept its padding: the copy was not exercised"


def _pad(data: bytes, tags: dict[bytes, tuple[int, bytes]]) -> int:
    piece = _rlst(data) + int(struct.unpack("<Q", tags[b"RFLT"][1])[0])
    return -(piece + 12) % 16


@pytest.mark.parametrize("code", [b"SBUF", b"XTRA"])
def test_an_extension_tag_is_laid_out_with_its_own_length_field(code: bytes) -> None:
    """``SBUF`` has a u32 length (8 bytes of tag header), other tags a u16 (6 bytes)."""
    lib, flatbuffers = _library(3, seed=6)
    parts = parts_from_library(lib, [0, 2])
    parts.extension.insert(0, (code, b"payload"))
    out = library_bytes(parts)
    assert _walk(out)["extension"][code][1] == b"payload"
    names = lib.columns().names
    _check_reflection(out, {names[i]: flatbuffers[names[i]] for i in (0, 2)})
    assert Metallib(out).columns().names == [names[0], names[2]]


@pytest.mark.parametrize(
    "kept", [[0, 2, 4], [1, 2, 3, 4, 5, 6], [6], [0, 1, 2, 3, 4, 5, 6]], ids=str
)
def test_every_subset_keeps_each_flatbuffer_aligned_and_its_own(kept: list[int]) -> None:
    lib, flatbuffers = _library(7, seed=11)
    out = library_bytes(parts_from_library(lib, kept))
    names = lib.columns().names
    _check_reflection(out, {names[i]: flatbuffers[names[i]] for i in kept})


@pytest.mark.parametrize("dynamic", [False, True])
def test_a_subset_uuid_is_the_md5_of_everything_outside_the_bitcode(dynamic: bool) -> None:
    lib, _ = _library(9, seed=5, dynamic=dynamic)
    for kept in ([0, 3, 8], [1], list(range(8)), list(range(1, 9))):
        out = library_bytes(parts_from_library(lib, kept))
        uuid = _walk(out)["extension"][b"UUID"][1]
        assert uuid == _expected_uuid(out), kept
        assert uuid[6] >> 4 == 3 and uuid[8] >> 6 == 0b10


def test_keeping_every_function_keeps_the_input_uuid() -> None:
    lib, _ = _library(5, seed=2)
    data = lib.data.tobytes()
    original = _walk(data)["extension"][b"UUID"][1]
    out = library_bytes(parts_from_library(lib))
    assert _walk(out)["extension"][b"UUID"][1] == original and out == data


@pytest.mark.realdata
def test_a_real_subset_uuid_is_recomputed(small_real_metallib: bytes) -> None:
    lib = Metallib(small_real_metallib)
    count = len(lib.columns())
    out = library_bytes(parts_from_library(lib, range(0, count, 3)))
    assert _walk(out)["extension"][b"UUID"][1] == _expected_uuid(out)


def _misbehaving_write_to(monkeypatch: pytest.MonkeyPatch, change: int) -> None:
    """The writer ends ``change`` bytes off its own layout (a bug the size check exists for)."""
    real = writer_module.write_to

    def write_to(parts: Any, out: Any) -> Any:
        lay = real(parts, out)
        if change < 0:
            out.truncate(out.tell() + change)
        else:
            out.write(bytes(change))
        return lay

    monkeypatch.setattr(writer_module, "write_to", write_to)


@pytest.mark.parametrize("change", [-1, 3])
def test_write_library_refuses_a_file_of_another_size_than_its_layout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: int
) -> None:
    lib, _ = _library(4, seed=1)
    parts = parts_from_library(lib, [0, 2])
    expected = len(library_bytes(parts))
    target = tmp_path / "out.metallib"
    target.write_bytes(b"previous output")
    _misbehaving_write_to(monkeypatch, change)
    with pytest.raises(MetallibError) as caught:
        writer_module.write_library(parts, target)
    assert str(caught.value) == (
        f"{target}: wrote {expected + change} bytes, layout says {expected}"
    )
    assert target.read_bytes() == b"previous output"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.metallib"]


def test_check_written_takes_a_device_at_its_word(tmp_path: Path) -> None:
    """A character device has no size to compare (``slim -o /dev/null``)."""
    lib, _ = _library(3, seed=4)
    lay = writer_module.layout(parts_from_library(lib))
    with open("/dev/null", "wb") as out:
        writer_module.check_written(out, lay, "/dev/null")
    short = tmp_path / "short"
    with open(short, "wb") as out:
        out.write(b"x")
        with pytest.raises(MetallibError, match=f"wrote 1 bytes, layout says {lay.file_size}$"):
            writer_module.check_written(out, lay, short)
