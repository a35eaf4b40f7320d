"""The run-time sources an ELF host library returns from ``const char* name()`` functions (a
Linux wheel's ``.so`` built with ``metallib_embed_headers``), read as a Mach-O one's are.

The independent side is LLVM's tools (``binaries.elf_string_returns``): ``llvm-nm -D`` gives
each function, ``llvm-objdump -d`` its whole body (``endbr64``? ``leaq D(%rip), %rax; retq``, or
``adrp x0``, ``add x0, x0, #I``, ``ret``, or lld's ``nop; adr x0``) and the address it returns,
and the string is read from the file at the offset ``llvm-readelf -S`` gives for ``.rodata``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from binaries import cxx_elf, elf_string_returns
from clirun import run_cli

from builder.size.host_strings import host_strings

SOURCE = """
namespace demo { namespace jit {
const char* alpha() { return "#include <metal_stdlib>\\nkernel void alpha() {}\\n"; }
const char* beta() { return "using namespace metal;\\n// beta\\n"; }
const char* one_line() { return "no line break here"; }
}
const char* outside() { return "outside\\nthe namespace"; }
int answer(int x) { return x + 1; }
}
"""

TARGETS = {
    "x86_64": ("x86_64-linux-gnu", ()),
    "x86_64-cet": ("x86_64-linux-gnu", ("-fcf-protection=full",)),  # endbr64 first
    "aarch64": ("aarch64-linux-gnu", ()),
}


def _elf(tmp: Path, name: str) -> Path:
    triple, flags = TARGETS[name]
    source = tmp / "host.cpp"
    source.write_text(SOURCE)
    return cxx_elf(tmp / f"libhost.{name}.so", source, triple=triple, flags=flags)


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_elf_host_strings_match_llvm(tmp_path: Path, name: str) -> None:
    """In the namespace: the three functions returning a string, at LLVM's offsets and sizes;
    without one: only the Metal sources (``one_line`` is a name, ``outside`` no Metal)."""
    so = _elf(tmp_path, name)
    wanted = elf_string_returns(so)
    assert set(wanted) == {
        "_ZN4demo3jit5alphaEv",
        "_ZN4demo3jit4betaEv",
        "_ZN4demo3jit8one_lineEv",
        "_ZN4demo7outsideEv",
    }
    ours = host_strings(so, "demo::jit")
    assert ours is not None
    assert {s.function: (s.offset, s.size) for s in ours} == {
        f"demo::jit::{re.sub(r'^[0-9]+', '', n[13:-2])}": (where, len(raw))
        for n, (where, raw) in wanted.items()
        if n.startswith("_ZN4demo3jit")
    }
    metal = host_strings(so)
    assert metal is not None
    assert {s.function for s in metal} == {"demo::jit::alpha", "demo::jit::beta"}


def test_report_and_sources_of_an_elf_host_library(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``report`` measures the ELF library by its run-time sources (once an ELF holding no
    metallib was exit 2); ``sources`` lists them; their bytes are LLVM's."""
    so = _elf(tmp_path, "x86_64")
    wanted = elf_string_returns(so)
    code, out, err = run_cli(["report", str(so), "--format", "json"], capsys)
    assert code == 0, err
    doc = json.loads(out)
    rows = {u["name"]: u["host_bytes"] for u in doc["jit_units"]}
    assert rows == {
        "demo::jit::alpha": len(wanted["_ZN4demo3jit5alphaEv"][1]),
        "demo::jit::beta": len(wanted["_ZN4demo3jit4betaEv"][1]),
    }
    assert doc["host_library"]["file_size"] == so.stat().st_size
    code, out, err = run_cli(["sources", str(so), "--format", "json"], capsys)
    assert code == 0, err
    listed = {r["function"]: r["bytes"] for r in json.loads(out)["host_sources"]}
    assert listed == rows


def test_an_elf_with_neither_a_metallib_nor_a_source(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "plain.cpp"
    source.write_text("int answer(int x) { return x + 1; }\n")
    so = cxx_elf(tmp_path / "libplain.so", source)
    code, out, err = run_cli(["report", str(so)], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "an ELF binary that holds no metallib" in err and "nor run-time source" in err
