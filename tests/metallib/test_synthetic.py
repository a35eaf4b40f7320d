"""Writer and reader agree on libraries built from parts; subsets behave as specified."""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Callable

import pytest
from synthetic import new_library, synthetic_functions, synthetic_parts

from builder.metallib import Metallib, Piece, library_bytes, parts_from_library, verify


@pytest.mark.parametrize("reflection", [True, False])
@pytest.mark.parametrize("dynamic", [True, False])
def test_parts_survive_write_and_read(reflection: bool, dynamic: bool) -> None:
    functions = synthetic_functions(7, reflection=reflection)
    parts = new_library(functions, install_name="mlx.metallib" if dynamic else None)
    data = library_bytes(parts)
    lib = Metallib(data)
    assert lib.file_size == len(data) == struct.unpack_from("<Q", data, 16)[0]
    assert [fn.name for fn in lib.functions] == [fn.name for fn in functions]
    for fn, part in zip(lib.functions, functions):
        assert bytes(fn.stored(Piece.MODULE)) == part.module
        assert fn.hash == hashlib.sha256(part.module).digest()
        flatbuffer = lib.columns().flatbuffer(fn.index)
        assert (None if flatbuffer is None else bytes(flatbuffer)) == part.reflection
        if fn.reflection is not None:  # every flatbuffer starts 16-aligned in the file
            assert (fn.reflection.offset + 12 + (-(fn.reflection.offset + 12) % 16)) % 16 == 0
    assert (lib.dynamic_header is not None) == dynamic
    assert (lib.uuid is not None) == reflection
    assert verify(lib).ok
    regions = lib.regions()
    assert all(r.name != "gap" for r in regions)
    assert sum(r.size for r in regions) == len(data)
    # re-reading and re-writing reproduces the bytes
    assert library_bytes(parts_from_library(lib)) == data


def test_subset_recomputes_layout_and_derives_uuid(synthetic_bytes: Callable[..., bytes]) -> None:
    data = synthetic_bytes(9, seed=3)
    lib = Metallib(data)
    keep = [1, 4, 8]
    sub_bytes = library_bytes(parts_from_library(lib, keep))
    sub = Metallib(sub_bytes)
    assert [fn.name for fn in sub.functions] == [lib.functions[i].name for i in keep]
    assert verify(sub).ok
    assert sub.uuid is not None and lib.uuid is not None and sub.uuid != lib.uuid
    assert sub.uuid[6] >> 4 == 3  # RFC 4122 version 3
    # deterministic: same input and selection, same bytes; other selection, other UUID
    assert library_bytes(parts_from_library(lib, keep)) == sub_bytes
    other = Metallib(library_bytes(parts_from_library(lib, [1, 4])))
    assert other.uuid != sub.uuid
    # keeping everything keeps the UUID: an identity rewrite
    assert library_bytes(parts_from_library(lib, range(9))) == data


def test_selection_order_does_not_matter(synthetic_bytes: Callable[..., bytes]) -> None:
    lib = Metallib(synthetic_bytes(6))
    assert library_bytes(parts_from_library(lib, [5, 0, 3])) == library_bytes(
        parts_from_library(lib, [0, 3, 5, 3])
    )


def test_unknown_tags_are_kept_byte_for_byte() -> None:
    functions = synthetic_functions(3)
    functions[1].tags.insert(2, (b"ZZZZ", b"\x01\x02\x03"))
    parts = new_library(functions)
    parts.extension.insert(0, (b"QQQQ", b"opaque"))
    data = library_bytes(parts)
    lib = Metallib(data)
    payload = next(data[at : at + n] for code, at, n in lib.functions[1].tags if code == b"ZZZZ")
    assert payload == b"\x01\x02\x03"
    assert lib.extension[0].code == b"QQQQ"
    assert library_bytes(parts_from_library(lib)) == data
    assert verify(lib).ok


def test_parts_from_a_library_are_its_table() -> None:
    """A rewrite reads the library's own columns: nothing is copied or re-decoded."""
    data = library_bytes(synthetic_parts(5, seed=7))
    lib = Metallib(data)
    assert parts_from_library(lib).functions is lib.columns()
    subset = parts_from_library(lib, [3, 1]).functions
    assert subset.names == [lib.columns().names[1], lib.columns().names[3]]
    assert subset.hashes == lib.columns().hash(1) + lib.columns().hash(3)
    for new, old in zip(subset, [lib.functions[1], lib.functions[3]]):
        assert (new.module, new.public_md, new.private_md, new.reflection, new.tags) == (
            old.module,
            old.public_md,
            old.private_md,
            old.reflection,
            old.tags,
        )
        flatbuffer = lib.columns().flatbuffer(old.index)
        assert flatbuffer is not None and bytes(subset.flatbuffer(new.index) or b"") == bytes(
            flatbuffer
        )


def test_new_functions_are_laid_out_as_a_library_holds_them() -> None:
    """``new_library`` lays new functions out in memory, entries and pieces back to back with
    OFFT, RFLT and MDSZ set, so the writer copies them like a library it keeps whole."""
    functions = synthetic_functions(4)
    functions[2].tags.insert(1, (b"ZZZZ", b"kept"))
    table = new_library(functions).functions
    for fn, part in zip(table, functions):
        assert fn.name == part.name and fn.type == 2 and fn.version == (2, 6, 3, 1)
        assert fn.hash == hashlib.sha256(part.module).digest()
        assert bytes(table.data[fn.module.offset : fn.module.end]) == part.module
        assert bytes(table.flatbuffer(fn.index) or b"") == part.reflection
        entry = [(code, bytes(table.data[at : at + n])) for code, at, n in fn.tags]
        assert [code for code, _ in entry] == [code for code, _ in part.tags]
        assert dict(entry)[b"MDSZ"] == struct.pack("<Q", len(part.module))
        assert dict(entry)[b"OFFT"] == struct.pack(
            "<QQQ",
            fn.public_md.offset - table.public_md_offsets[0],
            fn.private_md.offset - table.private_md_offsets[0],
            fn.module.offset - table.module_offsets[0],
        )
