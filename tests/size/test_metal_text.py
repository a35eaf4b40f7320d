"""Metal source found in a binary by what it is (``builder.size.metal_text``), wherever it sits:
between start/end symbols (ggml's ``.incbin``), as a string constant no function returns
(candle's), checked against ``llvm-objdump`` and ``llvm-nm`` and a kernel count written here; text
that is not Metal source (torch's ONNX ``QLinearMatMulDoc``) is none."""

from __future__ import annotations

import json
import re
import subprocess
import zipfile
from pathlib import Path

import pytest
from binaries import cxx_dylib, macho_sections, nm_addresses, tool
from clirun import run_cli
from support.real_wheels import libraries_or_skip

from builder.inputs import wheel_cache, wheels
from builder.size.host_strings import run_time_sources

KERNEL_TU = (
    "#include <metal_stdlib>\n"
    "using namespace metal;\n"
    "// kernel void commented_out(device float* x [[buffer(0)]]);\n"
    "kernel void add_one(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
    "  x[i] += 1.0f;\n"
    "}\n"
    "template <typename T> kernel void fill(device T* x [[buffer(0)]]) { x[0] = T(0); }\n"
    'template [[host_name("fill_float")]] kernel void fill<float>(device float*);\n'
)
CANDLE_LIKE = (
    "#include <metal_stdlib>\\n"
    "kernel void neg(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) "
    "{ x[i] = -x[i]; }\\n"
)
PROSE = "Matrix product that behaves like numpy.matmul.\\nThe output is quantized.\\n"
NO_KERNEL = "#include <metal_stdlib>\\nconstant int only_a_header = 1;\\n"


def _kernels(text: bytes) -> int:
    """The test's own count: each word ``kernel`` followed by a type name, comments (``//`` to
    the end of the line, ``/* */``) cut first."""
    code = re.sub(rb"/\*.*?\*/", b"", text, flags=re.DOTALL)
    code = b"\n".join(line.split(b"//", 1)[0] for line in code.split(b"\n"))
    return len(re.findall(rb"(?<![A-Za-z0-9_])kernel\s+[A-Za-z_]", code))


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A dylib as ggml and candle build theirs: a Metal file put in a section between
    ``_demo_src_start`` and ``_demo_src_end`` with ``.incbin``, a translation unit as a string
    constant, and three strings that are not one (prose a function returns, a header without a
    kernel, and the prose as a constant)."""
    folder = tmp_path_factory.mktemp("metal_text")
    metal = folder / "k.metal"
    metal.write_text(KERNEL_TU)
    source = folder / "host.cpp"
    source.write_text(
        '__asm__(".section __DATA,__demo_src\\n.globl _demo_src_start\\n_demo_src_start:\\n'
        f'.incbin \\"{metal}\\"\\n.globl _demo_src_end\\n_demo_src_end:\\n.text\\n");\n'
        f'extern const char candle_like[] = "{CANDLE_LIKE}";\n'
        f'extern const char no_kernel[] = "{NO_KERNEL}";\n'
        f'const char* prose() {{ return "{PROSE}"; }}\n'
    )
    return cxx_dylib(folder / "libdemo.dylib", [source])


def test_a_section_between_symbols_and_a_string_constant(synthetic: Path) -> None:
    """The ``.incbin`` text, whose bytes are the section's (``llvm-objdump``) and the symbols'
    distance (``llvm-nm``), named by its start symbol; the string constant, named by its
    section; each with the kernels counted here. Neither the header without a kernel nor the
    prose (returned by a function or not) is a source."""
    data = synthetic.read_bytes()
    offset, size = macho_sections(synthetic)[("", "__DATA", "__demo_src")]
    symbols = nm_addresses(synthetic)
    assert size == symbols["_demo_src_end"] - symbols["_demo_src_start"] == len(KERNEL_TU)
    constant = data.find(CANDLE_LIKE.replace("\\n", "\n").encode())
    found = {s.offset: s for s in run_time_sources(synthetic) or []}
    assert set(found) == {offset, constant}
    section_text, string = found[offset], found[constant]
    assert (section_text.size, section_text.place, section_text.function) == (
        size,
        "_demo_src_start",
        None,
    )
    assert section_text.kernels == _kernels(data[offset : offset + size]) == 3
    assert string.size == len(CANDLE_LIKE.replace("\\n", "\n"))
    assert string.place is not None and string.place.startswith("__TEXT,__const at ")
    assert string.kernels == _kernels(data[constant : constant + string.size]) == 1
    # with a namespace only the functions in it are read: no text found by what it is
    assert run_time_sources(synthetic, "demo") == []


@pytest.fixture(scope="module")
def ggml_dylib(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """pywhispercpp 1.5.1's ``libggml-metal.dylib`` (ggml's Metal source in a section), as
    ``unzip`` gives it."""
    try:
        wheel = wheels.download_wheel("pywhispercpp", "1.5.1", "macosx_14_0_arm64")
    except wheel_cache.DownloadError as exc:
        if "cannot be reached" not in str(exc):
            raise
        pytest.skip(f"PACKAGE INDEX UNREACHABLE, real-data test skipped: {exc}")
    out = tmp_path_factory.mktemp("ggml") / "libggml-metal.dylib"
    with zipfile.ZipFile(wheel) as archive:
        out.write_bytes(archive.read("libggml-metal.dylib"))
    return out


@pytest.mark.realdata
def test_ggml_source_in_sources_and_report(
    ggml_dylib: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``sources`` and ``report`` of the dylib: ggml's source, 608,202 B, the size
    ``llvm-objdump --macho --section-headers`` gives ``__DATA,__ggml_metallib``, between the
    symbols ``llvm-nm`` lists, with the kernels counted here in the section's bytes."""
    offset, size = macho_sections(ggml_dylib)[("", "__DATA", "__ggml_metallib")]
    symbols = nm_addresses(ggml_dylib)
    assert size == symbols["_ggml_metallib_end"] - symbols["_ggml_metallib_start"] == 608_202
    headers = subprocess.run(
        [tool("llvm-objdump"), "--macho", "--section-headers", str(ggml_dylib)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    listed = re.search(r"^\s*\d+ __ggml_metallib\s+([0-9a-f]+) ", headers, re.MULTILINE)
    assert listed is not None and int(listed.group(1), 16) == size
    with ggml_dylib.open("rb") as handle:
        handle.seek(offset)
        kernels = _kernels(handle.read(size))
    code, out, err = run_cli(["sources", str(ggml_dylib), "--format", "json"], capsys)
    assert code == 0, err
    rows = {r["place"]: r for r in json.loads(out)["host_sources"]}
    ggml = rows["_ggml_metallib_start"]
    assert (ggml["offset"], ggml["bytes"], ggml["kernels"]) == (offset, size, kernels)
    code, out, err = run_cli(["report", str(ggml_dylib), "--format", "json"], capsys)
    assert code == 0, err
    units = {u["name"]: u for u in json.loads(out)["jit_units"]}
    unit = units["_ggml_metallib_start"]
    assert (unit["host_bytes"], unit["kernel_count"], unit["embedding"]) == (
        size,
        kernels,
        "whole-file",
    )


@pytest.mark.realdata
def test_torch_holds_no_metal_source(capsys: pytest.CaptureFixture[str]) -> None:
    """torch 2.14.1's ``libtorch_cpu.dylib`` holds two metallibs and no Metal source: its ONNX
    ``QLinearMatMulDoc`` (1,192 B of prose returned by a function) is not one."""
    libraries = libraries_or_skip("torch==2.14.1", "macosx_14_0_arm64")
    paths = {lib.path for lib in libraries if lib.path is not None}
    (dylib,) = [path for path in paths if path.name == "libtorch_cpu.dylib"]
    code, out, err = run_cli(["sources", str(dylib), "--format", "json"], capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert (doc["host_sources"], doc["bytes"]) == ([], 0)
