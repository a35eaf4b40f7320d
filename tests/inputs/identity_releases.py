"""Two releases of a dylib linked here (clang + ld64.lld) whose libraries are reordered, added and
removed, and the independent reading of what each library's identity must be: its offset by
searching the binary for its bytes, the symbol there by ``llvm-nm``, its section by
``llvm-objdump``, and the documented rule (symbol, else a section it has alone, else its
number)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from binaries import link_dylib, macho_sections, nm_addresses
from clirun import run_cli as run
from synthetic import synthetic_bytes

__all__ = ["SPECS", "cli_json", "make_releases", "reference", "releases"]

SPECS = {
    "alpha": [("alpha_k", 2000)],
    "beta1": [("beta_a", 3000), ("beta_b", 1000)],
    "beta2": [("beta_a", 3000), ("beta_b", 1000), ("beta_c", 1500)],
    "gamma": [("gamma_k", 4000), ("gamma_j", 700)],
    "basic": [("basic_k", 500)],
}


def releases(folder: Path) -> dict[str, Path]:
    """The files ``make_releases`` writes into ``folder``: each library of ``SPECS`` by its
    name, and each release's dylib as ``r1``, ``r2``."""
    files = {name: folder / f"{name}.metallib" for name in SPECS}
    return {**files, "r1": folder / "r1" / "libk.dylib", "r2": folder / "r2" / "libk.dylib"}


def make_releases(folder: Path) -> None:
    """Two releases of ``libk.dylib``: release 1 holds alpha, beta, basic; release 2 drops
    alpha, puts gamma first (so the first library of each release is another one) and beta
    gains a function. alpha, beta and gamma carry a symbol in ``__TEXT,__const``; basic is the
    whole of ``__TEXT,metal_basic``, with no symbol (as torch keeps its libraries)."""
    files = releases(folder)
    for name, spec in SPECS.items():
        files[name].write_bytes(synthetic_bytes(spec))
    for version, first, beta in ((1, "alpha", "beta1"), (2, "gamma", "beta2")):
        out = files[f"r{version}"]
        out.parent.mkdir()
        linked = link_dylib(
            out,
            [
                ("__TEXT,__const", f"_k_{first}_metallib", files[first]),
                ("__TEXT,__const", "_k_beta_metallib", files[beta]),
                ("__TEXT,metal_basic", None, files["basic"]),
            ],
        )
        assert linked == out


def reference(binary: Path, blobs: list[Path]) -> list[tuple[int, str]]:
    """(offset, identity) of each library, in file order, read without the tool: the offset is
    where its bytes are, the symbol the one llvm-nm puts at that address (a dylib is linked at
    0), the section llvm-objdump's that holds it; the rule is the documented one."""
    data = binary.read_bytes()
    offsets = sorted(data.find(blob.read_bytes()) for blob in blobs)
    at = {address: name for name, address in nm_addresses(binary).items()}
    sections = macho_sections(binary)

    def section_of(offset: int) -> str:
        return next(
            f"{seg},{sect}"
            for (_, seg, sect), (start, size) in sections.items()
            if start <= offset < start + size
        )

    holders = [section_of(o) for o in offsets]
    out = []
    for number, offset in enumerate(offsets, 1):
        if offset in at:
            out.append((offset, at[offset]))
        elif holders.count(section_of(offset)) == 1:
            out.append((offset, section_of(offset)))
        else:
            out.append((offset, str(number)))
    return out


def cli_json(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code, out, err = run([*args, "--format", "json"], capsys)
    assert code == 0, err
    doc: dict[str, Any] = json.loads(out)
    return doc
