"""The versions a library's functions state (``VERS``): ``Provenance.version_groups`` names the
functions apart from the most common version, against the versions each function was built
with in the test."""

from __future__ import annotations

import hashlib

from synthetic import new_function, new_library

from builder.metallib import Metallib, library_bytes
from builder.metallib.reader import library_provenance

Version = tuple[int, int, int, int]
MSL_31: Version = (2, 6, 3, 1)
MSL_40: Version = (2, 8, 4, 0)
MSL_32: Version = (2, 7, 3, 2)


def _library(versions: list[Version | None], target: tuple[int, int] = (14, 0)) -> Metallib:
    """A library of one function per entry of ``versions`` (None: no ``VERS`` tag at all)."""
    functions = []
    for index, version in enumerate(versions):
        name = f"kernel_{index}"
        body = b"BC\xc0\xde" + hashlib.sha256(name.encode()).digest()
        fn = new_function(name, body, version=version or MSL_31)
        if version is None:
            fn.tags = [(code, payload) for code, payload in fn.tags if code != b"VERS"]
        functions.append(fn)
    return Metallib(library_bytes(new_library(functions, deployment_target=target)))


def test_the_functions_apart_from_the_most_common_version_are_named() -> None:
    versions = [MSL_31, MSL_40, MSL_31, MSL_32, MSL_31, MSL_40, MSL_31, None]
    found = library_provenance(_library(versions))
    expected = {v: [f"kernel_{i}" for i, x in enumerate(versions) if x == v] for v in versions}
    groups = found.version_groups
    assert [(g.air_version, g.metal_language_version) for g in groups] == [
        ("2.6", "3.1"),
        ("2.8", "4.0"),
        ("2.7", "3.2"),
    ]
    assert [g.function_count for g in groups] == [4, 2, 1]  # the untagged function in none
    assert groups[0].functions == ()  # the most common: every function the others do not list
    assert list(groups[1].functions) == expected[MSL_40] == ["kernel_1", "kernel_5"]
    assert list(groups[2].functions) == expected[MSL_32] == ["kernel_3"]
    record = found.as_dict()
    assert "functions" not in record["version_groups"][0]  # type: ignore[index]
    assert record["version_groups"][1] == {  # type: ignore[index]
        "air_version": "2.8",
        "metal_language_version": "4.0",
        "function_count": 2,
        "functions": ["kernel_1", "kernel_5"],
    }


def test_a_tie_goes_to_the_version_met_first() -> None:
    groups = library_provenance(_library([MSL_40, MSL_31, MSL_31, MSL_40])).version_groups
    assert [g.metal_language_version for g in groups] == ["4.0", "3.1"]
    assert groups[1].functions == ("kernel_1", "kernel_2")


def test_one_version_records_no_groups_so_the_record_keeps_its_old_shape() -> None:
    found = library_provenance(_library([MSL_40, MSL_40, None]))
    assert found.version_groups == ()
    assert "version_groups" not in found.as_dict()
    assert found.metal_language_versions == ("4.0",)
