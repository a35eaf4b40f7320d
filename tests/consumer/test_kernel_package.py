"""examples/kernel-package: a Python package with its own kernel tree, built as its users build it
(``pip wheel``: scikit-build-core runs its CMakeLists.txt, which finds metallib-builder's CMake
package through ``--cmake-dir``), then reported and gated by its committed budget.

On Linux the wheel ships the run-time sources in a host library (``KPKG_JIT=ON``). What the tool
says of it is checked against LLVM's reading of that library (``binaries.elf_string_returns``:
each exported function's returned ``.rodata`` string) and against the kernel files as this test
reads them. One wheel build for the module, in this environment (``--no-build-isolation``: no
download); measured at about 6 s of wall time, 3.5 s of CPU.
"""

from __future__ import annotations

import json
import platform
import re
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from binaries import elf_string_returns
from clirun import run_cli

pytestmark = pytest.mark.cmake

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "kernel-package"
MEMBER = "kernel_package/libkpkg_sources.so"
ENTRIES = {"activations.metal", "axpy.metal", "reduce.metal"}
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


@dataclass(frozen=True)
class Built:
    project: Path
    """The example's copy: its ``dist/`` holds the wheel, beside the committed budget."""
    wheel: Path
    unpacked: Path
    strings: dict[str, bytes]
    """Entry file -> the string LLVM finds its function returning (NUL included)."""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    try:
        import scikit_build_core  # noqa: F401
    except ImportError:
        pytest.fail("scikit-build-core is not installed: pip install -e '.[test]'")
    root = tmp_path_factory.mktemp("kernel-package")
    project = Path(shutil.copytree(EXAMPLE, root / "kernel-package"))
    pip = [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-index"]
    done = subprocess.run(
        [*pip, "--disable-pip-version-check", "-w", "dist", "."],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (wheel,) = (project / "dist").glob("*.whl")
    unpacked = root / "unpacked"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(unpacked)
    strings = {}
    for symbol, (_, raw) in elf_string_returns(unpacked / MEMBER).items():
        named = re.fullmatch(r"_ZN4kpkg3jit\d+(\w+)Ev", symbol)
        if named:
            strings[f"{named[1]}.metal"] = raw
    return Built(project, wheel, unpacked, strings)


def _chain(path: Path, folders: list[Path], seen: list[Path]) -> list[Path]:
    """``path`` and the files its quoted includes reach, each once, as this test resolves them
    (the including file's folder, then ``folders``)."""
    if path in seen:
        return seen
    seen.append(path)
    for name in _INCLUDE.findall(path.read_text(encoding="utf-8")):
        found = next(f / name for f in [path.parent, *folders] if (f / name).is_file())
        _chain(found, folders, seen)
    return seen


def test_the_wheel_ships_its_kernels_as_run_time_sources(built: Built) -> None:
    """A wheel for this platform holding the module and the host library; each entry file's
    source, as LLVM finds it in the library, holds every line of the files it includes and no
    quoted include; the module hands out the same text through ctypes."""
    machine = platform.machine()
    assert built.wheel.name == f"kernel_package-0.1.0-py3-none-linux_{machine}.whl"
    with zipfile.ZipFile(built.wheel) as archive:
        package = {n for n in archive.namelist() if n.startswith("kernel_package/")}
    assert package == {"kernel_package/__init__.py", "kernel_package/_built.py", MEMBER}

    assert set(built.strings) == ENTRIES
    kernels = built.project / "kernels"
    for entry, raw in built.strings.items():
        text = raw[:-1].decode("utf-8")
        assert raw.endswith(b"\0") and '#include "' not in text
        assert text.count("#include <metal_stdlib>") == 1
        files = _chain(kernels / entry, [kernels, kernels / "include"], [])
        assert len(files) == 3  # the entry file, its family's header, common.h
        for source in files:
            at = 0
            for line in source.read_text(encoding="utf-8").splitlines():
                if line.strip() and not _INCLUDE.match(line) and "#pragma once" not in line:
                    found = text.find(line, at)
                    assert found >= 0, f"{entry}: {source.name}: {line!r} missing or out of order"
                    at = found + len(line)

    script = (
        "import json, kernel_package as k\n"
        "try:\n    k.source('missing.metal')\nexcept KeyError as e:\n    missing = str(e)\n"
        "print(json.dumps([k.MODE, list(k.ENTRY_FILES), "
        "{e: k.source(e) for e in k.ENTRY_FILES}, missing]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=built.unpacked,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    mode, names, sources, missing = json.loads(done.stdout)
    assert mode == "jit" and set(names) == ENTRIES
    assert sources == {e: raw[:-1].decode("utf-8") for e, raw in built.strings.items()}
    assert "'missing.metal' is not an entry file of kernel-package" in missing


def test_report_finds_each_run_time_source(
    built: Built, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``report WHEEL --member`` with the example's tree: one row per entry file, named by it,
    with LLVM's bytes and the kernels written in it; the rows and the rest make the file.
    Without ``--member`` the same document: the wheel holds no metallib, so its one binary
    holding run-time sources is what it is measured by. ``compare`` of the wheel with itself
    pairs that library: every row unchanged, LLVM's bytes on both sides."""
    monkeypatch.setenv("METALLIB_BUILDER_CACHE", str(built.project.parent / "cache"))
    kernels = built.project / "kernels"
    code, out, err = run_cli(
        ["report", str(built.wheel), "--member", MEMBER, "--source-dir", str(kernels)]
        + ["-I", str(kernels / "include"), "--format", "json"],
        capsys,
    )
    assert code == 0, err
    doc = json.loads(out)
    rows = {u["name"]: (u["host_bytes"], u["kernel_count"]) for u in doc["jit_units"]}
    assert rows == {
        entry: (len(raw), raw.count(b"[[kernel]]")) for entry, raw in built.strings.items()
    }
    size = (built.unpacked / MEMBER).stat().st_size
    host = doc["host_library"]
    assert host["file_size"] == size
    assert host["unattributed_bytes"] == size - sum(len(r) for r in built.strings.values())
    assert doc["source"]["member"] == MEMBER and "made from no header" not in err
    tree = ["--source-dir", str(kernels), "-I", str(kernels / "include")]
    code, out, err = run_cli(["report", str(built.wheel), *tree, "--format", "json"], capsys)
    assert code == 0, err
    assert json.loads(out) == doc
    code, out, err = run_cli(
        ["compare", str(built.wheel), str(built.wheel), *tree, "--format", "json"], capsys
    )
    assert code == 0, err
    compared = json.loads(out)
    assert compared["base"]["member"] == compared["head"]["member"] == MEMBER
    jit = compared["jit"]
    assert jit["base_bytes"] == jit["head_bytes"] == size
    units = {u["name"]: (u["base_bytes"], u["head_bytes"]) for u in jit["units"]}
    rest = size - sum(len(r) for r in built.strings.values())
    wanted = {entry: (len(raw), len(raw)) for entry, raw in built.strings.items()}
    assert units == {**wanted, "[rest of the host library]": (rest, rest)}


def test_the_committed_budget_passes_and_a_tightened_one_fails(
    built: Built, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``metallib-builder budget`` in the example's folder: every limit of metallib-size.toml
    (whose target is the wheel, no member named) holds, measured as LLVM measures; the same file
    with reduce.metal's limit one byte under its size exits 1 naming that limit."""
    monkeypatch.setenv("METALLIB_BUILDER_CACHE", str(built.project.parent / "cache"))
    monkeypatch.chdir(built.project)
    code, out, err = run_cli(["budget", "--format", "json"], capsys)
    assert code == 0, err
    doc = json.loads(out)
    values = {(v["key"], v["group"]): v["value"] for v in doc["verdicts"]}
    size = (built.unpacked / MEMBER).stat().st_size
    wanted: dict[tuple[str, str | None], int] = {("max-size", None): size}
    wanted.update({("groups", entry): len(raw) for entry, raw in built.strings.items()})
    assert values == wanted

    reduce = len(built.strings["reduce.metal"])
    text = (built.project / "metallib-size.toml").read_text(encoding="utf-8")
    assert re.search(r"^\s*member\s*=", text, re.MULTILINE) is None  # the wheel as a whole
    tight = re.sub(r'"reduce\.metal" = "[^"]*"', f'"reduce.metal" = {reduce - 1}', text)
    tight = tight.replace('target = "dist/', 'target = "../dist/')
    assert tight.count(str(reduce - 1)) == 1 and "../dist/" in tight
    (built.project / "tight").mkdir()
    (built.project / "tight" / "metallib-size.toml").write_text(tight, encoding="utf-8")
    code, out, err = run_cli(["budget", "tight/metallib-size.toml", "--format", "json"], capsys)
    assert code == 1, err
    failed = [(v["group"], v["value"], v["limit"]) for v in json.loads(out)["verdicts"]]
    assert [f for f in failed if f[1] > f[2]] == [("reduce.metal", reduce, reduce - 1)]
    kb = f"{reduce / 1000:.2f} kB, limit {(reduce - 1) / 1000:.2f} kB"
    assert f"error: budget exceeded: kernel-package, Linux: group reduce.metal is {kb}" in err
