"""The native function-list parser (``csrc/function_list.c``) against the reference
(``reference.py``).

The native parser may decline a list (answer None), never misread one: whenever it returns
columns they must equal the Python parser's, on every real library and on randomly corrupted
ones. Declining is only allowed where the list is not in the plain shape.
"""

from __future__ import annotations

import hashlib
import os
import struct
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from synthetic import new_function, new_library, synthetic_parts

from builder.metallib import (
    FunctionTable,
    LibraryParts,
    Metallib,
    MetallibFormatError,
    Piece,
    library_bytes,
    verify,
)
from builder.metallib.native import disabled, native_module, status
from builder.metallib.reference import function_count, native_table, reference_table
from builder.subsets.slim import slim_file

pytestmark = pytest.mark.picks_container_code

FORCED_OFF = os.environ.get("METALLIB_BUILDER_NATIVE") == "0"
needs_native = pytest.mark.skipif(
    FORCED_OFF or native_module() is None, reason=f"native parser not in use: {status()}"
)

REAL = [
    ("0.28.0", "macosx_14_0_arm64"),
    ("0.29.0", "macosx_14_0_arm64"),
    ("0.29.0", "macosx_15_0_arm64"),
    ("0.30.0", "macosx_14_0_arm64"),
    ("0.31.0", "macosx_14_0_arm64"),
    ("0.32.0", "macosx_14_0_arm64"),
    ("0.32.0", "macosx_26_0_arm64"),
]


Columns = tuple[object, ...]


def _both(data: bytes) -> tuple[Columns | None, Columns | MetallibFormatError]:
    """(native columns or None, Python columns or the error it raised); header errors propagate."""
    lib = Metallib(data)
    where = (lib.data, lib.header, lib.reflection_list)
    try:
        count = function_count(*where)
    except MetallibFormatError as error:
        return None, error
    try:
        expected: Columns | MetallibFormatError = reference_table(*where, count).as_tuple()
    except MetallibFormatError as error:
        expected = error
    found = native_table(*where, count)
    return (None if found is None else found.as_tuple()), expected


def test_native_parser_is_built_and_used() -> None:
    """``pip install .`` builds the extension; the suite must exercise it, not the fallback."""
    if FORCED_OFF:
        pytest.skip("METALLIB_BUILDER_NATIVE=0: the pure-Python parser is under test")
    native = native_module()
    assert native is not None, status()
    assert status().startswith("on, module hashes by OpenSSL, download model in C ("), status()
    assert native.HAS_SHA256, "built without OpenSSL (scripts/setup.sh installs libssl-dev)"
    assert native.HAS_DEFLATE, "built without zlib (scripts/setup.sh installs zlib1g-dev)"


needs_native_sha = pytest.mark.skipif(
    FORCED_OFF or not getattr(native_module(), "HAS_SHA256", 0), reason="native SHA-256 not built"
)


@needs_native_sha
@settings(max_examples=200, deadline=None)
@given(
    data=st.binary(min_size=0, max_size=4096),
    spans=st.lists(st.tuples(st.integers(0, 4096), st.integers(0, 4096)), max_size=40),
    threads=st.integers(0, 20),
)
def test_native_sha256_matches_hashlib(
    data: bytes, spans: list[tuple[int, int]], threads: int
) -> None:
    spans = [(at % (len(data) + 1), n) for at, n in spans]
    spans = [(at, min(n, len(data) - at)) for at, n in spans]
    offsets, sizes = [at for at, _ in spans], [n for _, n in spans]
    expected = b"".join(hashlib.sha256(data[at : at + n]).digest() for at, n in spans)
    assert native_module().sha256_spans(data, offsets, sizes, threads) == expected  # type: ignore[union-attr]


@needs_native_sha
@pytest.mark.parametrize(("offsets", "sizes"), [([0, 5], [4, 6]), ([11], [0]), ([2**64 - 1], [1])])
def test_native_sha256_rejects_spans_outside_the_buffer(
    offsets: list[int], sizes: list[int]
) -> None:
    with pytest.raises(ValueError, match="outside the 10-byte buffer"):
        native_module().sha256_spans(bytes(10), offsets, sizes, 2)  # type: ignore[union-attr]


@needs_native
@pytest.mark.realdata
@pytest.mark.parametrize(("version", "platform"), REAL)
def test_parsers_agree_on_real_libraries(
    mlx_metallib: Callable[[str, str], Path], version: str, platform: str
) -> None:
    found, expected = _both(mlx_metallib(version, platform).read_bytes())
    assert isinstance(expected, tuple)
    assert found is not None, (
        "Apple's writer produces the plain shape; the native parser must take it"
    )
    assert len(found[0]) > 10_000  # type: ignore[arg-type]
    assert found == expected


def _with_tags(
    edit: Callable[[list[tuple[bytes, bytes]]], list[tuple[bytes, bytes]]],
) -> LibraryParts:
    return synthetic_parts(6, tags=edit)


@needs_native
@pytest.mark.parametrize(
    "parts",
    [
        pytest.param(lambda: synthetic_parts(7), id="reflection"),
        pytest.param(lambda: synthetic_parts(7, reflection=False), id="no-reflection"),
        pytest.param(lambda: synthetic_parts(3, dynamic=True), id="format-2.9"),
        pytest.param(lambda: _with_tags(lambda t: [*t, (b"ZZZZ", b"kept")]), id="unknown-tag"),
        pytest.param(lambda: _with_tags(lambda t: [x for x in t if x[0] != b"VERS"]), id="no-VERS"),
        pytest.param(lambda: _with_tags(lambda t: [x for x in t if x[0] != b"TYPE"]), id="no-TYPE"),
        pytest.param(lambda: _with_tags(lambda t: [x for x in t if x[0] != b"MDSZ"]), id="no-MDSZ"),
        pytest.param(
            lambda: _with_tags(lambda t: [(b"TYPE", b"") if x[0] == b"TYPE" else x for x in t]),
            id="empty-TYPE",
        ),
        pytest.param(
            lambda: new_library([new_function("k", b"BC\xc0\xde", reflection=bytes(16))]), id="one"
        ),
        pytest.param(
            lambda: new_library(
                [
                    new_function(n, b"BC\xc0\xde", reflection=bytes(16))
                    for n in ("noyau_\u00e9", "\u6838", "k\ufffd")
                ]
            ),
            id="utf8-names",
        ),
        pytest.param(
            lambda: _with_tags(lambda t: [*t, (b"ZZZ1", b"a"), (b"ZZZ2", b"b")]),
            id="two-unknown-tags",
        ),
    ],
)
def test_parsers_agree_on_valid_shapes(parts: Callable[[], LibraryParts]) -> None:
    found, expected = _both(library_bytes(parts()))
    assert isinstance(expected, tuple)
    assert found == expected


def _unknown_tags(n: int) -> Callable[[list[tuple[bytes, bytes]]], list[tuple[bytes, bytes]]]:
    return lambda t: [*t, *((f"ZZ{k:02}".encode(), b"x") for k in range(n))]


@needs_native
@pytest.mark.parametrize(
    ("edit", "declined"),
    [
        pytest.param(lambda t: t, False, id="plain"),
        pytest.param(
            lambda t: [(b"TYPE", b"\x02\x00") if x[0] == b"TYPE" else x for x in t],
            False,
            id="long-TYPE",
        ),
        pytest.param(_unknown_tags(8), False, id="eight-unknown-tags"),
        pytest.param(_unknown_tags(9), True, id="nine-unknown-tags"),
    ],
)
def test_native_parser_declines_exactly_what_it_cannot_take(
    edit: Callable[[list[tuple[bytes, bytes]]], list[tuple[bytes, bytes]]], declined: bool
) -> None:
    """Valid lists the Python walk takes: the native parser takes them too (same columns), except
    an entry with more unknown tags than the C walk remembers to refuse a repeat (8), which it
    declines. (A name that is not text is the other case: see the bad-name test below.)"""
    found, expected = _both(library_bytes(_with_tags(edit)))
    assert isinstance(expected, tuple)
    assert (found is None) == declined
    assert declined or found == expected


def _repeat(
    code: bytes, payload: bytes
) -> Callable[[list[tuple[bytes, bytes]]], list[tuple[bytes, bytes]]]:
    return lambda t: (
        [*t, (code, payload)]
        if any(x[0] == code for x in t)
        else [*t, (code, payload), (code, payload)]
    )


@needs_native
@pytest.mark.parametrize(
    ("edit", "code"),
    [
        pytest.param(_repeat(b"NAME", b"again\0"), b"NAME", id="second-NAME"),
        pytest.param(_repeat(b"HASH", bytes(32)), b"HASH", id="second-HASH"),
        pytest.param(_repeat(b"RFLT", bytes(8)), b"RFLT", id="second-RFLT"),
        pytest.param(_repeat(b"TYPE", b"\x02"), b"TYPE", id="second-TYPE"),
        pytest.param(_repeat(b"ZZZZ", b"kept"), b"ZZZZ", id="unknown-tag-twice"),
        pytest.param(_repeat(b"SARC", b"wide"), b"SARC", id="wide-tag-twice"),
    ],
)
def test_a_repeated_tag_is_declined_by_native_and_refused_by_python(
    edit: Callable[[list[tuple[bytes, bytes]]], list[tuple[bytes, bytes]]], code: bytes
) -> None:
    """A tag twice in one entry: the C parser declines, the Python walk raises at the second tag
    (the last one in these entries: 4 + payload bytes before the closing ENDT)."""
    data = library_bytes(_with_tags(edit))
    found, expected = _both(data)
    assert found is None
    assert isinstance(expected, MetallibFormatError)
    entry = struct.unpack_from("<Q", data, 24)[0] + 4
    size = struct.unpack_from("<I", data, entry)[0]
    second = data.rfind(code, entry, entry + size)
    assert expected.offset == second and f"second {code.decode()} tag" in expected.message


@needs_native
@pytest.mark.parametrize(
    ("name", "bad"),
    [(b"k\xff\0", 1), (b"ab\0c\0", 2), (b"\xed\xa0\x80\0", 0), (b"k\xe6\xa0\0", 1)],
    ids=["invalid-byte", "inner-NUL", "surrogate", "truncated-sequence"],
)
def test_a_bad_name_is_declined_by_native_and_collected_by_python(name: bytes, bad: int) -> None:
    data = library_bytes(
        _with_tags(lambda t: [(b"NAME", name) if x[0] == b"NAME" else x for x in t])
    )
    found, expected = _both(data)
    assert found is None
    assert isinstance(expected, tuple)
    table = Metallib(data).columns(accept_bad_names=True)
    names_at = [
        at + 6
        for at in range(len(data))
        if data[at : at + 4] == b"NAME" and data[at + 6 : at + 6 + len(name)] == name
    ]
    assert [(b.function, b.offset) for b in table.bad_names] == [
        (i, at + bad) for i, at in enumerate(names_at)
    ]


@needs_native
@pytest.mark.parametrize(
    "corrupt",
    [
        pytest.param(lambda d, fl: struct.pack_into("<I", d, fl + 4, 7), id="entry-size-too-small"),
        pytest.param(
            lambda d, fl: struct.pack_into("<I", d, fl + 4, 1 << 30), id="entry-size-too-big"
        ),
        pytest.param(lambda d, fl: struct.pack_into("<H", d, fl + 12, 0xFFFF), id="tag-past-entry"),
        pytest.param(lambda d, fl: d.__setitem__(slice(fl + 8, fl + 12), b"XXXX"), id="no-NAME"),
    ],
)
def test_native_parser_declines_corrupt_lists(corrupt: Callable[[bytearray, int], None]) -> None:
    data = bytearray(library_bytes(synthetic_parts(4)))
    function_list = struct.unpack_from("<Q", data, 24)[0]
    corrupt(data, function_list)
    found, expected = _both(bytes(data))
    assert found is None
    assert isinstance(expected, MetallibFormatError), "the Python parser accepted a corrupt list"


def _agree(data: bytes) -> bool:
    """Native columns, when the native parser answers, equal the Python parser's; True when it
    answered (so there was something to compare)."""
    try:
        found, expected = _both(data)
    except MetallibFormatError:
        return False  # the header was rejected before any list parsing
    if found is None:
        return False
    assert found == expected
    return True


def _compared_enough(compared: list[bool], at_least: int) -> None:
    """A mutation test must compare, not only see both parsers give up: at least ``at_least`` of
    its examples reached a comparison (a test whose every example was declined checks nothing).
    The floors sit far below what a run compares, so they do not depend on hypothesis's luck."""
    assert sum(compared) >= at_least, f"{sum(compared)} of {len(compared)} examples compared"


_mutation = st.lists(
    st.tuples(st.integers(min_value=0, max_value=2**31), st.integers(min_value=0, max_value=255)),
    min_size=1,
    max_size=6,
)


@needs_native
def test_parsers_agree_on_mutated_synthetic_libraries() -> None:
    compared: list[bool] = []

    @settings(max_examples=400, deadline=None)
    @given(mutations=_mutation, reflection=st.booleans())
    def mutate(mutations: list[tuple[int, int]], reflection: bool) -> None:
        data = bytearray(library_bytes(synthetic_parts(5, reflection=reflection)))
        function_list = struct.unpack_from("<Q", data, 24)[0]
        size = struct.unpack_from("<Q", data, 32)[0] + 4
        for at, value in mutations:  # aim at the function list, where the parsers differ
            data[function_list + at % size] = value
        compared.append(_agree(bytes(data)))

    mutate()
    _compared_enough(compared, 20)  # about 90 of 400: most mutations make the list unparsable


@needs_native
@pytest.mark.realdata
def test_parsers_agree_on_mutated_real_libraries(small_real_metallib: bytes) -> None:
    compared: list[bool] = []

    @settings(max_examples=150, deadline=None)
    @given(
        mutations=_mutation,
        field=st.sampled_from([40, 48, 56, 64, 72, 80]),
        value=st.integers(0, 2**40),
    )
    def mutate(mutations: list[tuple[int, int]], field: int, value: int) -> None:
        data = bytearray(small_real_metallib)
        function_list = struct.unpack_from("<Q", data, 24)[0]
        size = struct.unpack_from("<Q", data, 32)[0] + 4
        for at, byte in mutations:
            data[function_list + at % size] = byte
        if value % 3 == 0:  # sometimes move a section too
            struct.pack_into("<Q", data, field, value)
        compared.append(_agree(bytes(data)))

    mutate()
    _compared_enough(compared, 1)  # about 10 of 150: moved sections make most unreadable


# -- verify's structural screen: native and Python must give the same verdicts ------------------
def _verdicts(data: bytes) -> list[tuple[str | None, int, str]] | str:
    try:
        lib = Metallib(data)
        return [(p.function, p.offset, p.message) for p in verify(lib, parallel="inline").problems]
    except MetallibFormatError as error:
        return f"format error at {error.offset}"


def _same_verdicts(data: bytes) -> list[tuple[str | None, int, str]] | str:
    native = _verdicts(data)
    with disabled():
        python = _verdicts(data)
    assert native == python
    return native


@pytest.fixture(scope="session")
def metadata_real_metallib(
    mlx_metallib: Callable[[str, str], Path], tmp_path_factory: pytest.TempPathFactory
) -> bytes:
    """Real functions of the macOS 26 library whose public metadata pieces hold tags (CNST)."""
    out = tmp_path_factory.mktemp("real26") / "small.metallib"
    slim_file(
        mlx_metallib("0.32.0", "macosx_26_0_arm64"),
        out,
        keep=["affine_gather_qmm_rhs_nax_nt_float_gs_128_b_2*", "v_copy*float32"],
    )
    return out.read_bytes()


@needs_native
@pytest.mark.realdata
def test_screen_passes_tagged_metadata_pieces(metadata_real_metallib: bytes) -> None:
    lib = Metallib(metadata_real_metallib)
    table = lib.columns()
    assert any(size > 8 for size in table.public_md_bytes), (
        "the fixture must hold non-empty metadata"
    )
    columns = [
        column for piece in list(Piece)[1:] for column in (table.offsets(piece), table.sizes(piece))
    ]
    assert native_module().screen_functions(lib.data, *columns) == []  # type: ignore[union-attr]
    assert _same_verdicts(metadata_real_metallib) == []


@needs_native
@settings(max_examples=300, deadline=None)
@given(mutations=_mutation, reflection=st.booleans())
def test_screen_verdicts_agree_on_mutated_synthetic_libraries(
    mutations: list[tuple[int, int]], reflection: bool
) -> None:
    data = bytearray(library_bytes(synthetic_parts(5, reflection=reflection)))
    public = struct.unpack_from("<Q", data, 40)[0]  # mutate from the metadata on: the screened part
    for at, value in mutations:
        data[public + at % (len(data) - public)] = value
    _same_verdicts(bytes(data))


@needs_native
@pytest.mark.realdata
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(mutations=_mutation)
def test_screen_verdicts_agree_on_mutated_real_libraries(
    metadata_real_metallib: bytes, mutations: list[tuple[int, int]]
) -> None:
    data = bytearray(metadata_real_metallib)
    public = struct.unpack_from("<Q", data, 40)[0]
    for at, value in mutations:
        data[public + at % (len(data) - public)] = value
    _same_verdicts(bytes(data))


# -- reflection piece facts for a rewrite: native and Python agree -------------------------------
def _piece_facts(data: bytes) -> tuple[list[int | None], list[bool]] | None:
    """The reflection piece facts, native and Python alike (None when the library is rejected)."""
    try:
        lib = Metallib(data)
        table = lib.columns()
    except MetallibFormatError:
        return None
    found = table.reflection_payloads()
    with disabled():
        expected = FunctionTable(lib.data, table.as_tuple()).reflection_payloads()  # a fresh cache
    assert found == expected
    return found


@needs_native
def test_reflection_piece_facts_agree_on_mutated_libraries() -> None:
    compared: list[bool] = []

    @settings(max_examples=200, deadline=None)
    @given(mutations=_mutation)
    def mutate(mutations: list[tuple[int, int]]) -> None:
        data = bytearray(library_bytes(synthetic_parts(6)))
        rlst = data.find(b"RBUF") - 4  # mutate the reflection list: sizes, payload lengths, padding
        for at, value in mutations:
            data[rlst + at % (len(data) - rlst)] = value
        compared.append(_piece_facts(bytes(data)) is not None)

    mutate()
    _compared_enough(compared, 100)  # nearly all 200


@needs_native
@pytest.mark.realdata
def test_reflection_piece_facts_agree_on_a_real_library(metadata_real_metallib: bytes) -> None:
    facts = _piece_facts(metadata_real_metallib)
    assert facts is not None
    sizes, canonical = facts
    assert all(canonical) and all(size is not None and size > 0 for size in sizes)


# -- the commands give the same output with and without the extension ----------------------------
@needs_native
@pytest.mark.realdata
def test_commands_agree_with_and_without_the_extension(
    metadata_real_metallib: bytes, tmp_path: Path
) -> None:
    import subprocess
    import sys

    source = tmp_path / "in.metallib"
    source.write_bytes(metadata_real_metallib)
    outputs = {}
    for native_flag in ("1", "0"):
        env = {**os.environ, "METALLIB_BUILDER_NATIVE": native_flag}
        slim_out = tmp_path / f"slim-{native_flag}.metallib"
        runs = [
            ["list", str(source), "--format", "json"],
            ["verify", str(source), "--format", "json"],
            ["slim", str(source), "-o", str(slim_out), "--drop", "v_copy*", "--format", "json"],
        ]
        texts = []
        for args in runs:
            done = subprocess.run(
                [sys.executable, "-m", "builder", *args],
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
            assert done.returncode == 0, done.stderr
            texts.append(done.stdout.replace(f"slim-{native_flag}", "slim-X"))
        outputs[native_flag] = (texts, slim_out.read_bytes())
    assert outputs["1"] == outputs["0"]
