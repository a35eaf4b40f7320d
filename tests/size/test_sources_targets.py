"""``sources`` of a wheel (a ``.whl`` or ``PACKAGE==VERSION``): each Mach-O member that returns
run-time sources, named, checked against LLVM's own tools (``support.llvm_strings``) on the
member as ``unzip`` gives it."""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import pytest
from binaries import cxx_dylib, link_elf, nm_addresses
from clirun import run_cli
from support.llvm_strings import function_starts, independent_sources, is_metal_text, wheel_member

from builder.inputs import wheels

_MLX = "mlx/lib/libmlx.dylib"


def write_wheel(path: Path, members: dict[str, bytes]) -> Path:
    """A zip of ``members``, names used verbatim (``../x`` included)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(zipfile.ZipInfo(name, (2024, 1, 1, 0, 0, 0)), data)
    return path


def _llvm_sources(dylib: Path, namespace_prefix: str | None) -> set[tuple[int, int]]:
    """(file offset, bytes incl. NUL) of each source LLVM's tools find: in the mangled
    ``namespace_prefix`` when given, else every function (named or not) whose string is Metal
    source (``is_metal_text``)."""
    named = {a: n for n, a in nm_addresses(dylib).items()}
    starts = {**dict.fromkeys(function_starts(dylib)), **named}
    found = independent_sources(dylib, None, starts)
    if namespace_prefix is None:
        return {(where, len(raw)) for _, where, raw in found.values() if is_metal_text(raw)}
    rx = re.compile(re.escape(namespace_prefix) + r"\d+\w+Ev")
    return {(where, len(raw)) for n, where, raw in found.values() if rx.fullmatch(n or "")}


@pytest.mark.realdata
def test_mlx_metal_spec_and_wheel_list_libmlx(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``sources mlx-metal==0.32.1``: libmlx.dylib's 12 preambles (123,132 B of text), named by
    their member; libjaccl.dylib, which LLVM finds no source in either, is left out."""
    dylib = wheel_member("mlx-metal", "0.32.1", "libmlx.dylib", tmp_path)
    spec = ["mlx-metal==0.32.1", "--platform", "macosx_14_0_arm64"]
    code, _, err = run_cli(
        ["sources", *spec, "--jit-namespace", "mlx::core::metal", "-o", str(tmp_path / "a.json")],
        capsys,
    )
    assert code == 0, err
    doc = json.loads((tmp_path / "a.json").read_text())
    rows = doc["host_sources"]
    assert doc["path"] == "mlx-metal==0.32.1" and {r["member"] for r in rows} == {_MLX}
    assert {(r["offset"], r["bytes"]) for r in rows} == _llvm_sources(dylib, "__ZN3mlx4core5metal")
    assert (len(rows), sum(r["bytes"] - 1 for r in rows)) == (12, 123_132)

    # The same wheel given as a file: the same rows.
    wheel = wheels.download_wheel("mlx-metal", "0.32.1", "macosx_14_0_arm64")
    code, _, err = run_cli(
        [
            "sources",
            str(wheel),
            "--jit-namespace",
            "mlx::core::metal",
            "-o",
            str(tmp_path / "b.json"),
        ],
        capsys,
    )
    assert code == 0, err
    assert json.loads((tmp_path / "b.json").read_text())["host_sources"] == rows

    # Without a namespace: every member LLVM finds source text in, and only those.
    with zipfile.ZipFile(wheel) as archive:
        members = [n for n in archive.namelist() if n.endswith(".dylib")]
    expected: dict[str, set[tuple[int, int]]] = {}
    for member in members:
        (tmp_path / member).parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wheel) as archive:
            (tmp_path / member).write_bytes(archive.read(member))
        found = _llvm_sources(tmp_path / member, None)
        if found:
            expected[member] = found
    code, out, err = run_cli(["sources", *spec, "--format", "json"], capsys)
    assert code == 0, err
    got: dict[str, set[tuple[int, int]]] = {}
    for r in json.loads(out)["host_sources"]:
        got.setdefault(r["member"], set()).add((r["offset"], r["bytes"]))
    assert got == expected and set(got) == {_MLX} and len(members) == 2
    code, table, _ = run_cli(["sources", *spec, "--jit-namespace", "mlx::core::metal"], capsys)
    assert code == 0 and f"{_MLX} of mlx-metal==0.32.1" in " ".join(table.split())


HOST = """
namespace demo { namespace jit {
const char* alpha() { return "kernel void alpha() {}\\n// alpha"; }
const char* beta() { return "#include <metal_stdlib>\\nusing namespace metal;\\n"; }
} }
"""
PLAIN = "int answer(int x) { return x + 1; }\n"


def _wheel(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "host.cpp").write_text(HOST)
    (tmp_path / "plain.cpp").write_text(PLAIN)
    host = cxx_dylib(tmp_path / "libhost.dylib", [tmp_path / "host.cpp"])
    plain = cxx_dylib(tmp_path / "libplain.dylib", [tmp_path / "plain.cpp"])
    members = {
        "pkg/lib/libplain.dylib": plain.read_bytes(),
        "pkg/lib/libhost.dylib": host.read_bytes(),
        "pkg/_native.so": link_elf(tmp_path / "native.so", []).read_bytes(),  # returns none
        "pkg/README.txt": b"not extracted",
    }
    wheel = write_wheel(tmp_path / "pkg-1.0-py3-none-macosx_14_0_arm64.whl", members)
    return wheel, host


def test_synthetic_wheel_lists_only_members_with_sources(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("METALLIB_BUILDER_CACHE", str(tmp_path / "cache"))
    wheel, host = _wheel(tmp_path)
    code, out, err = run_cli(
        ["sources", str(wheel), "--jit-namespace", "demo::jit", "--format", "json"], capsys
    )
    assert code == 0, err
    rows = json.loads(out)["host_sources"]
    assert {r["member"] for r in rows} == {"pkg/lib/libhost.dylib"}
    assert {(r["offset"], r["bytes"]) for r in rows} == _llvm_sources(host, "__ZN4demo3jit")
    assert len(rows) == 2
    # A plain binary given itself keeps ``member`` null.
    code, out, _ = run_cli(["sources", str(host), "--format", "json"], capsys)
    assert code == 0 and {r["member"] for r in json.loads(out)["host_sources"]} == {None}
    # No member in the namespace: exit 2, naming the binaries searched.
    code, out, err = run_cli(["sources", str(wheel), "--jit-namespace", "other"], capsys)
    assert code == 2 and out == ""
    assert "pkg/lib/libplain.dylib, pkg/lib/libhost.dylib, pkg/_native.so" in err


def test_unsafe_wheel_member_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The wheel's binaries go through ``report``'s checked extraction: a name that climbs out
    is refused before anything is written."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("METALLIB_BUILDER_CACHE", str(cache))
    wheel = write_wheel(tmp_path / "w" / "evil-1.0-py3-none-any.whl", {"../libevil.dylib": b"x"})
    code, out, err = run_cli(["sources", str(wheel)], capsys)
    assert code == 2 and out == "" and "refusing to extract" in err
    assert not (cache / "libevil.dylib").exists() and not (tmp_path / "libevil.dylib").exists()


@pytest.mark.parametrize(
    ("target", "message"),
    [("nothing-here", "not a PACKAGE==VERSION"), (".", "a directory")],
)
def test_bad_targets_exit_2(capsys: pytest.CaptureFixture[str], target: str, message: str) -> None:
    code, out, err = run_cli(["sources", target], capsys)
    assert code == 2 and out == "" and message in err
