"""A wheel whose metallib's deployment target is above the wheel's platform tag, on the real
wheels: mlx-metal 0.32.1's macosx_26_0 wheel holds a library for macOS 26.2 (verify fails,
report and compare warn), its macosx_14_0 wheel meets its tag, and torch 2.14.1's
libtorch_cpu.dylib holds ``metal_40`` for 26.2 beside ``metal_basic`` for 14.0 by design (verify
passes with a note). The expected versions are read here from the header bytes and the wheel's
file name (pip's own parser), not from the tool."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from clirun import run_cli
from support.real_wheels import libraries_or_skip

from builder.inputs.targets import Library

pytestmark = pytest.mark.realdata

MLX = "mlx-metal==0.32.1"
TORCH = "torch==2.14.1"
MAC_26, MAC_14 = "macosx_26_0_arm64", "macosx_14_0_arm64"


def _target(lib: Library) -> str:
    """The deployment target at header bytes 12-15 (u16 major, u16 minor)."""
    assert lib.path is not None
    offset = lib.window.offset if lib.window is not None else 0
    with open(lib.path, "rb") as handle:
        handle.seek(offset + 12)
        major, minor = struct.unpack("<HH", handle.read(4))
    return f"{major}.{minor}"


def _tag(lib: Library) -> str:
    from pip._vendor.packaging.utils import parse_wheel_filename

    assert lib.wheel is not None
    (tag,) = {t.platform for t in parse_wheel_filename(Path(lib.wheel).name)[3]}
    return tag


@pytest.fixture(scope="module")
def wheels() -> dict[str, list[Library]]:
    """The libraries of the three wheels (downloaded once into the shared cache)."""
    return {
        "mlx 26": libraries_or_skip(MLX, MAC_26),
        "mlx 14": libraries_or_skip(MLX, MAC_14),
        "torch": libraries_or_skip(TORCH, MAC_14),
    }


def test_mlx_macos_26_wheel_fails_verify_naming_both_versions(
    wheels: dict[str, list[Library]], capsys: pytest.CaptureFixture[str]
) -> None:
    (lib,) = wheels["mlx 26"]
    target, tag = _target(lib), _tag(lib)
    assert (target, tag) == ("26.2", MAC_26)  # the real case: a 26.2 library tagged 26.0
    code, out, err = run_cli(["verify", MLX, "--platform", MAC_26], capsys)
    assert code == 1
    line = err.strip().splitlines()[-1]
    assert line.startswith(f"error: deployment target macOS {target} is above the wheel's")
    assert f"platform tag {tag}: pip installs the wheel on macOS 26.0 and later" in line
    assert "FAILED: mlx-metal==0.32.1:mlx/lib/mlx.metallib" in out
    code, out, _ = run_cli(["verify", MLX, "--platform", MAC_26, "--format", "json"], capsys)
    doc = json.loads(out)
    assert code == 1 and doc["ok"] is False
    (problem,) = doc["problems"]
    assert problem["offset"] == 12 and f"{target} is above" in problem["message"]


def test_mlx_macos_26_report_and_compare_warn(
    wheels: dict[str, list[Library]], capsys: pytest.CaptureFixture[str]
) -> None:
    (lib,) = wheels["mlx 26"]
    code, out, err = run_cli(["report", MLX, "--platform", MAC_26, "--format", "json"], capsys)
    (warning,) = json.loads(out)["warnings"]
    assert code == 0 and warning.startswith(
        f"deployment target macOS {_target(lib)} is above the wheel's platform tag {_tag(lib)}"
    )
    assert f"warning: mlx-metal==0.32.1:mlx/lib/mlx.metallib: {warning}" in err
    (base,) = wheels["mlx 14"]  # its extracted file: no wheel, no tag
    code, _, err = run_cli(["compare", str(base.path), MLX, "--platform", MAC_26], capsys)
    assert code == 0 and err.count(warning) == 1  # the head's


def test_mlx_macos_14_wheel_meets_its_tag(
    wheels: dict[str, list[Library]], capsys: pytest.CaptureFixture[str]
) -> None:
    (lib,) = wheels["mlx 14"]
    assert (_target(lib), _tag(lib)) == ("14.0", MAC_14)
    code, out, _ = run_cli(["verify", MLX, "--platform", MAC_14, "--format", "json"], capsys)
    doc = json.loads(out)
    assert code == 0 and doc["ok"] and doc["notes"] == [] and doc["warnings"] == []


def test_torch_passes_with_a_note_on_its_macos_26_library(
    wheels: dict[str, list[Library]], capsys: pytest.CaptureFixture[str]
) -> None:
    targets = {lib.identity: _target(lib) for lib in wheels["torch"]}
    assert targets == {"__TEXT,metal_basic": "14.0", "__TEXT,metal_40": "26.2"}
    code, out, _ = run_cli(["verify", TORCH, "--platform", MAC_14, "--format", "json"], capsys)
    doc = json.loads(out)
    assert code == 0 and doc["ok"] is True
    notes = {lib["member"].rpartition("#")[2]: lib["notes"] for lib in doc["libraries"]}
    assert notes["__TEXT,metal_basic"] == []
    (note,) = notes["__TEXT,metal_40"]
    assert note.startswith("deployment target macOS 26.2 is above the wheel's platform tag")
    assert "also holds __TEXT,metal_basic (macOS 14.0), which meets the tag" in note
