"""Bad input is rejected with a MetallibFormatError that names the byte offset; never a crash.

Each corruption class is made on purpose in a valid library; then hypothesis mutates real and
synthetic libraries at random and checks that every outcome is either a clean parse (which then
verifies without crashing) or a format error whose offset lies inside the file.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from synthetic import new_function, new_library, synthetic_parts

from builder.metallib import Metallib, MetallibFormatError, library_bytes, open_metallib, verify
from builder.metallib.native import PARALLEL_MIN, native_module
from builder.metallib.native import status as native_status


def _valid() -> bytearray:
    return bytearray(library_bytes(synthetic_parts(4, dynamic=True)))


def _error(data: bytes | bytearray) -> MetallibFormatError:
    with pytest.raises(MetallibFormatError) as caught:
        lib = Metallib(bytes(data))
        _ = lib.functions
    return caught.value


def test_truncated_file_is_reported_at_the_size_field() -> None:
    data = _valid()
    error = _error(data[:-10])
    assert error.offset == 16 and "truncated" in error.message


def test_file_shorter_than_the_header() -> None:
    assert _error(_valid()[:40]).offset == 40


def test_wrong_magic() -> None:
    data = _valid()
    data[0:4] = b"MTLC"
    error = _error(data)
    assert error.offset == 0 and "magic" in error.message


@pytest.mark.parametrize(
    ("field", "name"), [(24, "function list"), (40, "public metadata"), (72, "bitcode")]
)
def test_section_past_the_end(field: int, name: str) -> None:
    data = _valid()
    struct.pack_into("<Q", data, field + 8, len(data))
    error = _error(data)
    assert error.offset == field and name in error.message


def test_absurd_function_count_allocates_nothing() -> None:
    data = _valid()
    struct.pack_into("<I", data, 88, 0xFFFFFFFF)
    error = _error(data)
    assert error.offset == 88 and "4294967295" in error.message


def test_tag_length_running_past_its_entry() -> None:
    data = _valid()
    name_tag = 88 + 4 + 4  # first entry: u32 count, u32 size, then NAME
    assert data[name_tag : name_tag + 4] == b"NAME"
    struct.pack_into("<H", data, name_tag + 4, 0x7FFF)
    error = _error(data)
    assert error.offset == name_tag and "runs past" in error.message


def test_overlapping_sections() -> None:
    data = _valid()
    public_offset = struct.unpack_from("<Q", data, 40)[0]
    struct.pack_into("<Q", data, 56, public_offset)  # private metadata starts on the public one
    error = _error(data)
    assert "overlaps" in error.message
    assert error.offset == public_offset


def test_module_offset_past_the_bitcode_section() -> None:
    data = _valid()
    lib = Metallib(bytes(data))
    first = lib.functions[0]
    offt = next(at for code, at, _ in first.tags if code == b"OFFT")
    struct.pack_into("<Q", data, offt + 16, lib.header.bitcode.size + 1)
    error = _error(data)
    assert error.offset == first.entry.offset and "bitcode section" in error.message


def test_hash_mismatch_is_a_verify_problem_not_a_parse_error() -> None:
    data = _valid()
    lib = Metallib(bytes(data))
    target = lib.functions[2]
    data[target.module.offset + 30] ^= 0xFF
    report = verify(Metallib(bytes(data)))
    assert report.bad_functions == [target.name]


def _check_outcome(data: bytes) -> None:
    try:
        lib = Metallib(data)
        functions = lib.functions
        lib.regions()
        verify(lib)
        for fn in functions:
            lib.columns().flatbuffer(fn.index)
            _ = fn.tags
    except MetallibFormatError as error:
        assert 0 <= error.offset <= len(data), error


_mutation = st.lists(
    st.tuples(st.integers(min_value=0, max_value=2**31), st.integers(min_value=0, max_value=255)),
    min_size=1,
    max_size=8,
)


@settings(max_examples=300, deadline=None)
@given(mutations=_mutation, cut=st.none() | st.integers(min_value=0, max_value=2**31))
def test_random_mutations_of_synthetic_libraries(
    mutations: list[tuple[int, int]], cut: int | None
) -> None:
    data = _valid()
    for at, value in mutations:
        data[at % len(data)] = value
    if cut is not None:
        data = data[: cut % (len(data) + 1)]
    _check_outcome(bytes(data))


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    mutations=_mutation,
    field=st.sampled_from([16, 24, 32, 40, 48, 56, 64, 72, 80, 88]),
    value=st.integers(0, 2**64 - 1),
)
@pytest.mark.realdata
def test_random_mutations_of_a_real_library(
    small_real_metallib: bytes, mutations: list[tuple[int, int]], field: int, value: int
) -> None:
    data = bytearray(small_real_metallib)
    for at, byte in mutations:
        data[at % len(data)] = byte
    struct.pack_into(
        "<Q" if field != 88 else "<I", data, field, value % (2**64 if field != 88 else 2**32)
    )
    _check_outcome(bytes(data))


@pytest.mark.parametrize("size", [0, 1, 4, 87, 88, 89])
def test_tiny_inputs(size: int, synthetic_bytes: Callable[..., bytes]) -> None:
    with pytest.raises(MetallibFormatError):
        _ = Metallib(synthetic_bytes(2)[:size]).functions


@pytest.mark.picks_container_code
@pytest.mark.parametrize("parallel", ["inline", "native"])
def test_hash_mismatch_found_whichever_way_modules_are_hashed(
    tmp_path: Path, parallel: str
) -> None:
    """Modules are hashed with hashlib or by OpenSSL on two C threads; the verdicts agree.

    The library is above the size at which the native hashing splits the modules between two
    threads, and the victims sit at both ends, so both threads' shares are checked."""
    if parallel == "native" and not getattr(native_module(), "HAS_SHA256", 0):
        pytest.skip(f"native SHA-256 not built: {native_status()}")
    functions = [new_function(f"k{i}", b"BC\xc0\xde" + bytes([i]) * (3 << 20)) for i in range(4)]
    data = bytearray(library_bytes(new_library(functions)))
    assert len(data) > PARALLEL_MIN
    first, *_, last = Metallib(bytes(data)).functions
    for victim in (first, last):
        data[victim.module.offset + 25] ^= 0x10
    path = tmp_path / "bad.metallib"
    path.write_bytes(bytes(data))
    with open_metallib(path) as lib:
        report = verify(lib, parallel=parallel)  # type: ignore[arg-type]
    assert report.bad_functions == [first.name, last.name]
    assert report.hashed_bytes == lib.header.bitcode.size
