"""What a report and ``verify`` say about the platform a library states: functions of several
``VERS`` versions, a Metal version newer than the header's deployment target allows, a
deployment target above the wheel's platform tag. Libraries, binaries and wheels are made in
the test; the expected names come from how the test built them."""

from __future__ import annotations

import hashlib
import json
import re
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest
from clirun import run_cli
from synthetic import new_function, new_library

from builder.errors import UsageError
from builder.metallib import library_bytes
from builder.render.json_docs import report_json_text
from builder.size.load import load_reports
from builder.size.platform_warnings import wheel_tag
from builder.size.saved import read_report

Version = tuple[int, int, int, int]
MSL_31: Version = (2, 6, 3, 1)
MSL_40: Version = (2, 8, 4, 0)


def _metallib(
    path: Path, versions: list[Version], target: tuple[int, int] = (14, 0), os_byte: int = 0x81
) -> Path:
    """A library of ``kernel_I`` per entry of ``versions``, for ``target`` of the OS
    ``os_byte`` (the header's byte 11: 0x81 macOS, 0x82 iOS)."""
    functions = [
        new_function(f"kernel_{i}", b"BC\xc0\xde" + hashlib.sha256(bytes([i])).digest(), version=v)
        for i, v in enumerate(versions)
    ]
    parts = new_library(functions, deployment_target=target)
    raw = parts.raw_version
    parts = replace(parts, raw_version=raw[:7] + bytes([os_byte]) + raw[8:])
    path.write_bytes(library_bytes(parts))
    return path


def _named(sentence: str) -> list[str]:
    """The function names a sentence ends with."""
    return sentence.rsplit(": ", 1)[1].split(", ")


def test_functions_of_another_version_are_named_exactly(tmp_path: Path) -> None:
    versions = [MSL_31, MSL_31, MSL_40, MSL_31, (2, 7, 3, 2), MSL_31, MSL_40]
    (report,) = load_reports(str(_metallib(tmp_path / "mixed.metallib", versions, (26, 0))))
    # the header says macOS 26.0, which runs MSL 4.0: only the version mix is said
    (mixed,) = report.warnings
    assert mixed.startswith("its functions state 3 versions: 4 of 7 state AIR 2.6, MSL 3.1; ")
    named = re.findall(r"(\d+) state (AIR [\d.]+, MSL [\d.]+): ([\w, ]+)", mixed)
    assert named == [
        ("2", "AIR 2.8, MSL 4.0", ", ".join(f"kernel_{i}" for i in (2, 6))),
        ("1", "AIR 2.7, MSL 3.2", "kernel_4"),
    ]


def test_a_metal_version_newer_than_the_deployment_target_allows_is_named(tmp_path: Path) -> None:
    versions = [MSL_31] * 5 + [MSL_40] + [MSL_31] * 2
    (report,) = load_reports(str(_metallib(tmp_path / "one.metallib", versions)))
    (newer,) = [w for w in report.warnings if "needs" in w]
    assert newer.startswith(
        "1 function states MSL 4.0, which needs macOS 26.0 or later, above the header's "
        "deployment target 14.0"
    )
    assert _named(newer) == ["kernel_5"]
    every = load_reports(str(_metallib(tmp_path / "all.metallib", [MSL_40] * 3)))[0].warnings
    said = "every function states MSL 4.0, which needs macOS 26.0 or later, above the header's"
    assert every == [f"{said} deployment target 14.0"]
    most = load_reports(str(_metallib(tmp_path / "most.metallib", [MSL_40] * 3 + [MSL_31])))
    (newer,) = [w for w in most[0].warnings if "needs" in w]  # the most common: not listed
    assert newer == (
        "3 functions state MSL 4.0, which needs macOS 26.0 or later, above the header's "
        "deployment target 14.0: every function but those of MSL 3.1"
    )
    fits = load_reports(str(_metallib(tmp_path / "fits.metallib", [MSL_40] * 3, (26, 2))))
    assert fits[0].warnings == []
    ios = _metallib(tmp_path / "ios.metallib", [MSL_31] * 2, (16, 0), os_byte=0x82)
    said = "every function states MSL 3.1, which needs iOS 17.0 or later, above the header's"
    assert load_reports(str(ios))[0].warnings == [f"{said} deployment target 16.0"]


def test_a_saved_report_keeps_the_groups_and_refuses_a_malformed_one(tmp_path: Path) -> None:
    (report,) = load_reports(str(_metallib(tmp_path / "m.metallib", [MSL_31, MSL_40, MSL_31])))
    saved = json.loads(report_json_text(report))
    back = read_report(saved, "saved.json")
    assert back.warnings == report.warnings and len(back.warnings) == 2
    groups = back.provenance["library"]["version_groups"]
    assert groups[1]["functions"] == ["kernel_1"]
    groups[1]["functions"] = [7]
    with pytest.raises(UsageError, match=r"version_groups\[1\]\.functions\[0\]' is 7"):
        read_report(saved, "saved.json")


@pytest.mark.parametrize(
    "name",
    [
        "mlx_metal-0.32.1-py3-none-macosx_26_0_arm64.whl",
        "torch-2.14.1-cp312-cp312-macosx_14_0_arm64.whl",
        "pkg-1.0-py3-none-macosx_15_0_arm64.macosx_14_0_arm64.whl",
        "pkg-1.0-py3-none-macosx_10_15_universal2.whl",
        "pkg-1.0-cp313-cp313-ios_13_0_arm64_iphoneos.whl",
        "pkg-1.0-py3-none-manylinux_2_28_x86_64.whl",
        "pkg-1.0-1-py3-none-macosx_11_0_arm64.whl",  # a build tag
    ],
)
def test_the_wheel_tag_agrees_with_pip(name: str) -> None:
    from pip._vendor.packaging.utils import parse_wheel_filename  # the reference

    tags = {t.platform for t in parse_wheel_filename(name)[3]}
    for os_name, prefix in (("macOS", "macosx"), ("iOS", "ios")):
        mine = [t for t in tags if t.startswith(prefix + "_")]
        lowest = min(mine, key=lambda t: tuple(int(p) for p in t.split("_")[1:3]), default=None)
        expected = None
        if lowest is not None:
            expected = (lowest, ".".join(lowest.split("_")[1:3]))
        assert wheel_tag(f"/cache/{name}", os_name) == expected


def _wheel(folder: Path, tag: str, members: dict[str, Path]) -> Path:
    folder.mkdir(exist_ok=True)
    path = folder / f"pkg-1.0-py3-none-{tag}.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for name, member in members.items():
            archive.writestr(name, member.read_bytes())
    return path


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("METALLIB_BUILDER_CACHE", str(tmp_path / "cache"))
    return tmp_path


def test_a_library_above_its_wheel_tag_fails_verify(
    cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    above = _metallib(cache / "above.metallib", [MSL_40] * 2, (26, 2))
    wheel = _wheel(cache / "a", "macosx_26_0_arm64", {"pkg/k.metallib": above})
    expected = (
        "deployment target macOS 26.2 is above the wheel's platform tag macosx_26_0_arm64: pip "
        "installs the wheel on macOS 26.0 and later, the library is built for 26.2 and later"
    )
    assert load_reports(str(wheel))[0].warnings == [expected]
    code, out, err = run_cli(["verify", str(wheel)], capsys)
    assert code == 1 and f"FAIL (container): byte offset 12: {expected}" in out
    assert err.strip().splitlines()[-1] == f"error: {expected}"
    code, out, _ = run_cli(["verify", str(wheel), "--format", "json"], capsys)
    doc = json.loads(out)
    assert code == 1 and doc["ok"] is False
    assert doc["problems"] == [{"function": None, "offset": 12, "message": expected}]
    meets = _wheel(
        cache / "b",
        "macosx_26_0_arm64",
        {"pkg/k.metallib": _metallib(cache / "meets.metallib", [MSL_40] * 2, (26, 0))},
    )
    assert load_reports(str(meets))[0].warnings == []
    assert run_cli(["verify", str(meets)], capsys)[0] == 0


def test_a_binary_holding_a_library_that_meets_the_tag_passes_with_a_note(
    cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from binaries import link_dylib

    basic = _metallib(cache / "basic.metallib", [MSL_31] * 2, (14, 0))
    newer = _metallib(cache / "newer.metallib", [MSL_40] * 3, (26, 2))
    newer_too = _metallib(cache / "newer2.metallib", [MSL_40] * 1, (26, 2))
    both = link_dylib(
        cache / "libboth.dylib",
        [("__TEXT,metal_basic", None, basic), ("__TEXT,metal_40", None, newer)],
    )
    wheel = _wheel(cache / "w1", "macosx_14_0_arm64", {"pkg/libboth.dylib": both})
    code, out, _ = run_cli(["verify", str(wheel), "--format", "json"], capsys)
    doc = json.loads(out)
    assert code == 0 and doc["ok"] is True
    first, second = doc["libraries"]
    assert first["notes"] == [] and first["warnings"] == []
    note = (
        "deployment target macOS 26.2 is above the wheel's platform tag macosx_14_0_arm64: this "
        "library loads only on macOS 26.2 and later; its binary also holds __TEXT,metal_basic "
        "(macOS 14.0), which meets the tag"
    )
    assert second["notes"] == [note]
    assert all(r.warnings == [] for r in load_reports(str(wheel)))  # by design: no warning
    # --member asks for the newer one alone: its binary still holds one that meets the tag
    assert run_cli(["verify", str(wheel), "--member", "#2"], capsys)[0] == 0

    above = link_dylib(
        cache / "libabove.dylib",
        [("__TEXT,metal_a", None, newer), ("__TEXT,metal_b", None, newer_too)],
    )
    wheel = _wheel(cache / "w2", "macosx_14_0_arm64", {"pkg/libabove.dylib": above})
    code, out, err = run_cli(["verify", str(wheel)], capsys)
    assert code == 1 and "2 of 2 libraries failed verification" in err
    assert out.count("no other library of its binary (1) meets it") == 2
    reports = load_reports(str(wheel))
    assert [len(r.warnings) for r in reports] == [1, 1]
    assert all("macosx_14_0_arm64" in r.warnings[0] for r in reports)
