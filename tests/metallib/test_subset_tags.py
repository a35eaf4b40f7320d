"""Functions and libraries a rewrite cannot keep (issue 24, item 19).

A function with an ``SOFF`` tag points into an embedded-source section the writer does not lay
out, so keeping it is refused, naming it; keeping the other functions of the same library works.
``SOFF`` is found by a byte search over the function list that also meets the four bytes by
chance (here in a function's name), so the search must step past every match: each call runs
under a timer, and a search that stops advancing fails instead of hanging.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from clirun import run_cli
from support.deadline import deadline
from synthetic import synthetic_parts

from builder.errors import MetallibUnsupportedError
from builder.metallib import Metallib, library_bytes, parts_from_library, verify

Tags = list[tuple[bytes, bytes]]


def _with_soff(soff: set[int], count: int = 6) -> tuple[bytes, list[str]]:
    """A library of ``count`` functions, those at ``soff`` with an SOFF tag; function 1 holds
    the bytes ``SOFF`` in its name only."""
    seen = iter(range(count))

    def edit(tags: Tags) -> Tags:
        index = next(seen)
        if index == 1:
            tags = [(b"NAME", b"kernel_SOFF_in_name\0"), *tags[1:]]
        if index in soff:
            tags = [*tags[:-1], (b"SOFF", bytes(8)), tags[-1]]  # before RFLT, as Apple orders
        return tags

    data = library_bytes(synthetic_parts(count, tags=edit))
    return data, list(Metallib(data).columns().names)


@pytest.mark.parametrize("soff", [{2}, {0}, {5}, {2, 4}], ids=str)
def test_functions_without_soff_are_kept_and_one_with_it_is_refused(soff: set[int]) -> None:
    data, names = _with_soff(soff)
    lib = Metallib(data)
    others = [i for i in range(len(names)) if i not in soff]
    assert 1 in others  # the name holding "SOFF" does not make its function refused
    with deadline():
        out = library_bytes(parts_from_library(lib, others))
    written = Metallib(out)
    assert written.columns().names == [names[i] for i in others]
    assert verify(written, parallel="inline").ok
    for index in soff:
        for chosen in ([index], [*others, index], None):
            with deadline(), pytest.raises(MetallibUnsupportedError) as caught:
                parts_from_library(lib, chosen)
            first = names[min(soff if chosen is None else {index})]
            assert str(caught.value) == (
                f"<memory>: function {first!r} has an SOFF tag (embedded source); rewriting "
                "such libraries is not supported"
            )


def test_a_library_without_soff_whose_names_hold_it_is_rewritten() -> None:
    data, names = _with_soff(set())
    lib = Metallib(data)
    with deadline():
        assert library_bytes(parts_from_library(lib)) == data
        sub = library_bytes(parts_from_library(lib, [1, 3]))
    assert Metallib(sub).columns().names == [names[1], names[3]]


@pytest.mark.parametrize("code", [b"HSRD", b"HSRC", b"VLST", b"ILST", b"SLST"])
def test_a_library_with_a_section_the_writer_cannot_lay_out_is_refused(code: bytes) -> None:
    parts = synthetic_parts(3)
    parts.extension.insert(0, (code, bytes(16)))
    lib = Metallib(library_bytes(parts))
    with pytest.raises(MetallibUnsupportedError, match=f"with {code.decode()} sections"):
        parts_from_library(lib, [0])


def test_slim_keeps_the_others_and_refuses_the_soff_function(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, names = _with_soff({3})
    source = tmp_path / "in.metallib"
    source.write_bytes(data)
    out = tmp_path / "out.metallib"
    with deadline(60):
        code, _, err = run_cli(["slim", str(source), "-o", str(out), "--drop", names[3]], capsys)
    assert code == 0, err
    with Metallib(out.read_bytes()) as written:
        assert written.columns().names == [n for n in names if n != names[3]]
    refused = tmp_path / "refused.metallib"
    with deadline(60):
        code, stdout, err = run_cli(
            ["slim", str(source), "-o", str(refused), "--keep", "*"], capsys
        )
    assert code == 2 and stdout == "" and err.count("\n") == 1, err
    assert f"function {names[3]!r} has an SOFF tag" in err and "Traceback" not in err
    assert not refused.exists()


@pytest.mark.parametrize("indices", [[6], [-1], [0, 6], [-1, 2]], ids=str)
def test_an_index_outside_the_library_is_refused(indices: list[int]) -> None:
    """A negative index would otherwise pick a function from the end, silently."""
    lib = Metallib(library_bytes(synthetic_parts(6)))
    with pytest.raises(IndexError) as caught:
        parts_from_library(lib, indices)
    assert str(caught.value) == "function index out of range 0..5"
