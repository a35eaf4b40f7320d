"""Reports and comparisons of JIT builds: two real builds (``build --jit``, CMake + Ninja + the host
C++ compiler, a few families each), measured in their host libraries.

A build whose families are all JIT has no metallib; its report must show what it does have: each
family's symbol bytes in the host library (with the bytes no family owns, adding up to the file
size), say that this is what was measured and where, and compare two such builds family by
family. The reference figures are independent of the tool: the symbol table as binutils'
``readelf`` prints it (names demangled by binutils), read by the rule docs/build.md states, with
each family's namespace as its generated source declares it.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from clirun import run_cli
from support.shared import shared_folder

from builder.render.text import human_delta, human_size

pytestmark = [pytest.mark.cmake, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
HOST = "libmetal_jit.so"


def _build(build_dir: Path, *selection: str) -> None:
    """``metallib-builder build --jit`` through the real CLI."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "builder",
            "build",
            "--jit",
            "*",
            "-j",
            "2",
            "--format",
            "json",
            "--build-dir",
            str(build_dir),
            *selection,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert done.returncode == 0, done.stderr[-2000:]


def _make_builds(root: Path) -> None:
    _build(root / "a", "--kernels", "unary,copy", "--dtypes", "float32")
    _build(root / "b", "--kernels", "unary,copy,arange", "--dtypes", "float32,float16")


@pytest.fixture(scope="session")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, dict[str, Any]]]:
    """Base: unary and copy for float32. Head: also arange, and float16 (more kernels). Each
    with its reference figures (``_reference``); built once per run, the tests only read them."""
    root = shared_folder(tmp_path_factory, "jit-reports", _make_builds)
    return {name: (root / name, _reference(root / name)) for name in ("a", "b")}


def _reference(build: Path) -> dict[str, Any]:
    """What a JIT build holds, without the tool: its families and their kernels from the manifest,
    and from ``readelf -sW -C`` of the host library each family's symbol bytes (``st_size`` of
    the defined functions and objects with file bytes, each address once, whose demangled name
    has the namespace ``metal_jit/<family>.cpp`` declares, or is the registry entry
    ``family_<name>``), the bytes of the other symbols, and the file size."""
    manifest = json.loads((build / "manifest.json").read_text())
    families = {f["name"]: f for f in manifest["units"]}
    scopes = {}
    for name in families:
        text = (build / "metal_jit" / f"{name}.cpp").read_text()
        declared = re.findall(r"^namespace (mbjit_unit_\w+) \{", text, re.MULTILINE)
        assert len(declared) == 1, (name, declared)
        scopes[declared[0]] = name
    headers = _readelf("-SW", build / HOST)
    rows = re.findall(r"^\s*\[\s*(\d+)\]\s+\S+\s+(\S+)", headers, re.MULTILINE)
    empty = {index for index, kind in rows if kind == "NOBITS"}
    table = _readelf("-sW", build / HOST, "-C").split("Symbol table '.symtab'")[1]
    sizes = dict.fromkeys([*families, "other"], 0)
    seen = set()
    for line in table.splitlines():
        fields = line.split(None, 7)
        if len(fields) < 8 or not fields[0].endswith(":"):
            continue
        value, size, kind, section, name = fields[1], fields[2], fields[3], fields[6], fields[7]
        if kind not in ("FUNC", "OBJECT") or not section.isdigit() or int(size) == 0:
            continue
        if section in empty or (section, value) in seen:
            continue
        seen.add((section, value))
        parts = name.split("::")
        owner = next((scopes[p] for p in parts if p in scopes), None)
        if owner is None and parts[-1].startswith("family_"):
            owner = parts[-1].removeprefix("family_")
        sizes[owner if owner in families else "other"] += int(size)
    return {
        "families": {
            n: {
                "host_bytes": sizes[n],
                "kernels": len(f["host_names"]),
                "embedded_bytes": f["embedded_bytes"],
            }
            for n, f in families.items()
        },
        "other_bytes": sizes["other"],
        "file_size": (build / HOST).stat().st_size,
    }


def _readelf(*args: str | Path) -> str:
    return subprocess.run(
        ["readelf", *map(str, args)], capture_output=True, text=True, check=True
    ).stdout


def _host(reference: dict[str, Any]) -> dict[str, int]:
    return {name: f["host_bytes"] for name, f in reference["families"].items()}


def _has(text: str, part: str) -> bool:
    """``part`` is in rich output, whatever its line wrapping (words and paths get wrapped)."""
    return re.sub(r"\s+", "", part) in re.sub(r"\s+", "", text)


def test_jit_only_report_shows_host_library_symbols(
    builds: dict[str, tuple[Path, dict[str, Any]]], capsys: pytest.CaptureFixture[str]
) -> None:
    build, sizes = builds["a"]
    so = build / HOST
    assert not (build / "mlx.metallib").exists()
    code, out, _ = run_cli(["report", str(build)], capsys)
    assert code == 0
    rows = {m[0]: m for m in re.findall(r"│ (\S[^│]*?) +│ +([\d,]*) │ +[^│]+│ +([\d,]+) │", out)}
    for name, host_bytes in _host(sizes).items():
        assert rows[name][2] == f"{host_bytes:,}", (name, out)
    assert rows["[runtime, shared]"][2] == f"{sizes['other_bytes']:,}"
    assert rows["total"][2] == f"{so.stat().st_size:,}"
    assert "[container overhead]" not in out and " 0 B " not in out
    for part in (
        "symbol sizes (ELF st_size, pyelftools .symtab) in the host library",
        str(so),
        "not metallib bytes",
        "no metallib: every unit is compiled at run time",
    ):
        assert _has(out, part), part
    code, out, _ = run_cli(["report", str(build), "--format", "json"], capsys)
    doc = json.loads(out)
    assert doc["file_size"] == 0 and doc["functions"] == []  # the metallib part keeps its meaning
    assert {j["name"]: j["host_bytes"] for j in doc["jit_units"]} == _host(sizes)
    assert {j["name"]: j["kernel_count"] for j in doc["jit_units"]} == {
        name: f["kernels"] for name, f in sizes["families"].items()
    }
    host = doc["host_library"]
    assert host["file_size"] == so.stat().st_size == sizes["file_size"]
    parts = sum(j["host_bytes"] for j in doc["jit_units"])
    assert parts + host["shared_bytes"] + host["unattributed_bytes"] == host["file_size"]
    code, out, _ = run_cli(["report", str(build), "--format", "csv"], capsys)
    table = list(csv.reader(io.StringIO(out)))[1:]
    assert {r[0] for r in table} == {str(so)} and {r[1] for r in table} == {"jit"}
    assert sum(int(r[4]) for r in table) == so.stat().st_size
    code, out, _ = run_cli(["report", str(build), "--format", "markdown"], capsys)
    assert f"JIT host library {human_size(so.stat().st_size)}" in out
    assert f"| `unary` | {sizes['families']['unary']['kernels']:,} | " in out


def test_saved_jit_report_round_trips_and_is_checked(
    builds: dict[str, tuple[Path, dict[str, Any]]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    build, _ = builds["a"]
    code, out, _ = run_cli(["report", str(build), "--format", "json"], capsys)
    saved = tmp_path / "a.json"
    saved.write_text(out)
    code, again, _ = run_cli(["report", str(saved), "--format", "json"], capsys)
    first, second = json.loads(out), json.loads(again)
    assert second["source"]["kind"] == "report"
    for key in ("jit_units", "host_library", "file_size", "provenance"):
        assert second[key] == first[key], key
    doc = json.loads(out)
    doc["host_library"]["unattributed_bytes"] += 1
    saved.write_text(json.dumps(doc))
    code, out, err = run_cli(["report", str(saved)], capsys)
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert "host_library.file_size says" in err


def test_compare_two_jit_builds_gives_real_deltas(
    builds: dict[str, tuple[Path, dict[str, Any]]], capsys: pytest.CaptureFixture[str]
) -> None:
    (a, sa), (b, sb) = builds["a"], builds["b"]
    size_a, size_b = (a / HOST).stat().st_size, (b / HOST).stat().st_size
    code, out, _ = run_cli(["compare", str(a), str(b), "--format", "json"], capsys)
    assert code == 0
    jit = json.loads(out)["jit"]
    assert jit["measured"] == "host library symbols"
    assert (jit["base_bytes"], jit["head_bytes"]) == (size_a, size_b)
    assert jit["delta_bytes"] == size_b - size_a != 0
    families = {f["name"]: f for f in jit["units"] if not f["overhead"]}
    ha, hb = _host(sa), _host(sb)
    for name in ha:
        assert families[name]["delta_bytes"] == hb[name] - ha[name]
        assert families[name]["delta_percent"] is not None  # in both builds: not "new"
    assert families["arange"]["base_bytes"] == 0 and families["arange"]["delta_percent"] is None
    assert jit["new_units"] == ["arange"]
    assert sum(f["delta_bytes"] for f in jit["units"]) == jit["delta_bytes"]
    code, out, _ = run_cli(["compare", str(a), str(b)], capsys)
    title = out.split("┏")[0]
    assert "(new)" not in out.split("arange")[0]
    assert _has(
        title,
        f"JIT host library {human_size(size_a)} → {human_size(size_b)}, "
        f"{human_delta(size_b - size_a)}",
    )
    code, out, _ = run_cli(["compare", str(a), str(b), "--format", "csv"], capsys)
    total = next(r for r in csv.reader(io.StringIO(out)) if r[0] == "[jit total]")
    assert [int(v) for v in total[3:6]] == [size_a, size_b, size_b - size_a]
    code, out, _ = run_cli(["compare", str(a), str(b), "--format", "markdown"], capsys)
    assert f"**{human_delta(size_b - size_a)} (" in out and "JIT host library" in out
    assert "| `unary` |" in out and "0 B (new)" not in out
    code, out, err = run_cli(["compare", str(a), str(b), "--max-growth", "1%"], capsys)
    assert code == 1 and "--max-growth 1%: the JIT host library of" in err
    code, out, err = run_cli(
        ["compare", str(a), str(b), "--max-growth", "50%", "--fail-on-new-group"], capsys
    )
    assert code == 1 and "new groups in head: arange" in err and "--max-growth" not in err
    code, out, _ = run_cli(["compare", str(a), str(a), "--format", "json"], capsys)
    same = json.loads(out)["jit"]
    assert same["delta_bytes"] == 0 and same["delta_percent"] == 0.0
    assert all(f["delta_bytes"] == 0 and f["delta_percent"] == 0.0 for f in same["units"])


def test_unreadable_host_library_falls_back_to_manifest_bytes(
    builds: dict[str, tuple[Path, dict[str, Any]]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    build, sizes = builds["a"]
    missing = tmp_path / "missing"
    missing.mkdir()
    shutil.copy(build / "manifest.json", missing / "manifest.json")
    stripped = tmp_path / "stripped"
    stripped.mkdir()
    shutil.copy(build / "manifest.json", stripped / "manifest.json")
    subprocess.run(
        ["strip", "--strip-all", "-o", str(stripped / HOST), str(build / HOST)], check=True
    )
    embedded = {name: f["embedded_bytes"] for name, f in sizes["families"].items()}
    for where, why in ((missing, "host library not found"), (stripped, "stripped")):
        code, out, _ = run_cli(["report", str(where)], capsys)
        assert code == 0
        for name, size in embedded.items():
            assert re.search(rf"│ {name} +│ +[\d,]+ │ +[^│]+│ +{size:,} │", out), (name, out)
        assert _has(out, "embedded source bytes per build manifest") and _has(out, why)
        assert _has(out.split("┏")[0], "embedded JIT source")
    code, out, _ = run_cli(["compare", str(build), str(missing), "--format", "json"], capsys)
    jit = json.loads(out)["jit"]  # like with like: both sides in embedded bytes
    assert jit["measured"] == "embedded source (manifest)" and jit["delta_bytes"] == 0
    assert jit["base_bytes"] == sum(embedded.values())


def test_mixed_build_shows_the_metallib_then_its_jit_families(
    builds: dict[str, tuple[Path, dict[str, Any]]],
    tmp_path: Path,
    write_metallib: Callable[..., Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    build, sizes = builds["a"]
    metallib = write_metallib(
        "mixed/lib/kernels.metallib", [("arange_float32", 300), ("arange_float16", 200)]
    )
    mixed = metallib.parent.parent
    shutil.copy(build / HOST, mixed / HOST)
    manifest = json.loads((build / "manifest.json").read_text())
    manifest["metallib"] = "lib/kernels.metallib"
    manifest["units"].append(
        {
            "name": "arange",
            "kind": "catalog_family",
            "mode": "aot",
            "sources": ["arange.h"],
            "host_names": ["arange_float32", "arange_float16"],
            "outputs": [],
            "embedded_bytes": 0,
        }
    )
    (mixed / "manifest.json").write_text(json.dumps(manifest))
    code, out, _ = run_cli(["report", str(mixed)], capsys)
    assert code == 0
    metallib_at, jit_at = out.index("[container overhead]"), out.index("JIT unit")
    assert metallib_at < jit_at  # the metallib's table first, then the host library's
    assert re.search(r"│ arange +│ +2 │", out[:jit_at])
    assert f"{sizes['file_size']:,}" in out[jit_at:]
    code, out, _ = run_cli(["report", str(mixed), "--format", "json"], capsys)
    doc = json.loads(out)
    assert doc["file_size"] == metallib.stat().st_size
    assert sum(f["bytes"] for f in doc["functions"]) + doc["overhead_bytes"] == doc["file_size"]
    assert doc["host_library"]["file_size"] == sizes["file_size"]
    code, out, _ = run_cli(["compare", str(mixed), str(mixed), "--format", "markdown"], capsys)
    assert "<summary>JIT units (JIT host library)" in out


def test_growth_gates_count_the_host_library_of_mixed_builds(
    builds: dict[str, tuple[Path, dict[str, Any]]],
    tmp_path: Path,
    write_metallib: Callable[..., Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Two builds with the same metallib and JIT families beside it: only the host library grew.
    The gates must see that growth (they said "size gates passed" next to "host library +7.9%")."""
    sides = []
    for key in ("a", "b"):
        build, _ = builds[key]
        metallib = write_metallib(f"{key}/lib/kernels.metallib", [("sort_float32", 500)])
        mixed = metallib.parent.parent
        shutil.copy(build / HOST, mixed / HOST)
        manifest = json.loads((build / "manifest.json").read_text())
        manifest["metallib"] = "lib/kernels.metallib"
        (mixed / "manifest.json").write_text(json.dumps(manifest))
        sides.append(mixed)
    a, b = sides
    host_a, host_b = (a / HOST).stat().st_size, (b / HOST).stat().st_size
    lib = (a / "lib/kernels.metallib").stat().st_size
    assert (b / "lib/kernels.metallib").read_bytes() == (a / "lib/kernels.metallib").read_bytes()
    code, out, err = run_cli(
        ["compare", str(a), str(b), "--max-growth", "1%", "--format", "json"], capsys
    )
    assert code == 1 and json.loads(out)["delta_bytes"] == 0  # the metallib did not change
    assert f"(metallib + JIT host library) grew by {human_delta(host_b - host_a)}" in err
    code, _, err = run_cli(
        ["compare", str(a), str(b), "--max-growth", str(host_b - host_a)], capsys
    )
    assert code == 0 and "size gates passed" in err
    code, _, err = run_cli(
        ["compare", str(a), str(b), "--max-total-size", str(lib + host_b - 1)], capsys
    )
    assert code == 1 and f"is {human_size(lib + host_b)} ({lib + host_b:,} bytes)" in err


def test_report_of_a_build_whose_host_library_is_a_dylib(
    builds: dict[str, tuple[Path, dict[str, Any]]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A Mac build: the build's own generated family sources (data only: the shared source,
    which needs the C++ library, is left out), compiled for arm64 macOS (Debian's clang and
    ld64.lld, no SDK: they include no header), are the host library its manifest names.
    ``report`` measures each family in the dylib as in the .so: the same rule, read by
    llvm-objdump here (Mach-O symbols are sized up to the next one), and the rows add up to the
    dylib's size."""
    from binaries import cxx_dylib, macho_symbols

    build, sizes = builds["a"]
    mac = tmp_path / "mac"
    mac.mkdir()
    manifest = json.loads((build / "manifest.json").read_text())
    families = [f["name"] for f in manifest["units"]]
    sources = [build / "metal_jit" / f"{f}.cpp" for f in families]
    dylib = cxx_dylib(mac / "libmetal_jit.dylib", sources)
    manifest["host_library"] = dylib.name
    (mac / "manifest.json").write_text(json.dumps(manifest))
    scopes = {}
    for name, source in zip(families, sources):
        [scope] = re.findall(r"^namespace (mbjit_unit_\w+) \{", source.read_text(), re.MULTILINE)
        scopes[scope] = name
    wanted = dict.fromkeys([*families, "other"], 0)
    for symbol in macho_symbols(dylib):
        parts = symbol.name.split("::")
        owner = next((scopes[p] for p in parts if p in scopes), None)
        wanted[owner or "other"] += symbol.size
    code, out, err = run_cli(["report", str(mac), "--format", "json"], capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert {j["name"]: j["host_bytes"] for j in doc["jit_units"]} == {
        f: wanted[f] for f in families
    }
    host = doc["host_library"]
    assert host["measured_by"] == "Mach-O LC_SYMTAB" and host["shared_bytes"] == wanted["other"]
    assert sum(wanted.values()) + host["unattributed_bytes"] == dylib.stat().st_size
    # the registry strings and tables are the same bytes in both formats; the Family object
    # (pointers) and alignment differ, so the figures are close, not equal
    elf = _host(sizes)
    assert all(abs(wanted[f] - elf[f]) <= 64 for f in families), (wanted, elf)
    code, out, _ = run_cli(["report", str(mac)], capsys)
    assert _has(out, "Mach-O LC_SYMTAB: each symbol up to the next one of its section")
    assert _has(out, str(dylib))
