"""``embed`` for an MLX-style host, on MLX's real kernel headers (mlx-metal 0.32.0's wheel).

- ``--api cstring`` output links with a translation unit that declares the functions the way MLX's
  ``mlx/backend/metal/jit/includes.h`` does
  (``namespace mlx::core::metal { const char* unary(); }``), and each function returns text the
  host preprocessor reads exactly as it reads the header itself (same token stream; nothing left
  to include). The text stays valid while static destructors run (AddressSanitizer watches).
- ``--depfile`` names exactly the headers ``g++ -H`` reports for the same headers and ``-I``
  folders (Metal's angle headers come from discovery's stand-in folder).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from clirun import run_cli

from builder.kernels.bounded_run import find_compiler
from builder.kernels.preprocess import (
    STANDIN_DIR,
    find_preprocessor,
    metal_defines,
    preprocess_command,
)

KERNELS = "mlx/backend/metal/kernels"
# Header -> the function MLX's jit/includes.h declares for it.
HEADERS = {
    "utils.h": "utils",
    "unary_ops.h": "unary_ops",
    "unary.h": "unary",
    "binary_ops.h": "binary_ops",
    "steel/gemm/gemm.h": "gemm",
}
_ENTRY_MARKER = re.compile(r"^__metallib_builder_entry__ .*$", re.MULTILINE)


def _includes_h(path: Path) -> None:
    """Our own declarations, written as MLX's jit/includes.h writes them."""
    decls = "".join(f"const char* {f}();\n" for f in HEADERS.values())
    path.write_text(f"#pragma once\n\nnamespace mlx::core::metal {{\n\n{decls}\n}}\n", "utf-8")


def _tokens(path: Path, include_dirs: list[Path]) -> list[str]:
    """The host preprocessor's output for ``path`` as Metal would see it, as a token list
    (whitespace and discovery's entry marker aside)."""
    cmd = preprocess_command(find_preprocessor(), [str(path)], include_dirs, metal_defines([]))
    run = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=path.parent)
    assert run.returncode == 0, run.stderr
    return _ENTRY_MARKER.sub("", run.stdout).split()


def test_cstring_api_links_with_mlx_style_declarations(
    mlx_headers: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "jit" / "preambles.cpp"
    headers = [str(mlx_headers / KERNELS / h) for h in HEADERS]
    code, _, err = run_cli(
        [
            "embed",
            *headers,
            "-I",
            str(mlx_headers),
            "-o",
            str(out),
            "--jit-namespace",
            "mlx::core::metal",
            "--jit-api",
            "cstring",
        ],
        capsys,
    )
    assert code == 0, err
    _includes_h(tmp_path / "includes.h")
    calls = "".join(f"  dump(mlx::core::metal::{f}());\n" for f in HEADERS.values())
    (tmp_path / "main.cpp").write_text(
        '#include <cstdio>\n#include <cstring>\n#include "includes.h"\n'
        "static void dump(const char* text) {\n"
        "  std::fwrite(text, 1, std::strlen(text), stdout);\n  std::fputc(0, stdout);\n}\n"
        "// Runs after main returns, while static objects are being destroyed.\n"
        "struct AtExit { ~AtExit() { dump(mlx::core::metal::unary_ops()); } };\n"
        "static AtExit at_exit;\n"
        f"int main() {{\n{calls}"
        "  return mlx::core::metal::utils() == mlx::core::metal::utils() ? 0 : 3;\n}\n",
        encoding="utf-8",
    )
    exe = tmp_path / "show"
    compile_ = subprocess.run(
        [
            find_compiler().path,
            "-std=c++17",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-fsanitize=address",
            str(out),
            str(tmp_path / "main.cpp"),
            "-o",
            str(exe),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert compile_.returncode == 0, compile_.stderr
    run = subprocess.run([str(exe)], capture_output=True, check=False)
    assert run.returncode == 0, run.stderr.decode(errors="replace")[-2000:]
    texts = run.stdout.decode("utf-8").split("\0")[:-1]
    assert len(texts) == len(HEADERS) + 1
    assert texts[-1] == texts[1]  # unary_ops() again, from a static destructor
    isolated = tmp_path / "isolated"  # no -I and nothing beside it: every include was inlined
    isolated.mkdir()
    for (header, function), text in zip(HEADERS.items(), texts):
        assert text.startswith(f'#line 1 "{KERNELS}/{header}"\n'), function
        copy = isolated / f"{function}.h"
        copy.write_text(text, encoding="utf-8")
        original = _tokens(mlx_headers / KERNELS / header, [mlx_headers])
        assert _tokens(copy, []) == original, function


def _g_plus_plus_h(header: Path, include_dirs: list[Path]) -> set[Path]:
    """Every file ``g++ -H`` reports (at any depth) for ``header``, plus the header itself."""
    cmd = [find_compiler().path, "-E", "-H", "-x", "c++", "-std=c++17", "-o", os.devnull]
    cmd += [f"-I{d}" for d in include_dirs] + ["-idirafter", str(STANDIN_DIR), str(header)]
    run = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    reached = re.findall(r"^\.+ (.+)$", run.stderr, re.MULTILINE)
    return {Path(os.path.realpath(p)) for p in [*reached, str(header)]}


def _prerequisites(depfile: Path) -> tuple[str, list[Path]]:
    """Target and prerequisites of a one-rule depfile whose paths need no escapes."""
    text = depfile.read_text(encoding="utf-8").replace("\\\n", " ")
    target, _, rest = text.partition(":")
    return target, [Path(p) for p in rest.split()]


def test_depfile_names_every_header_gcc_reaches(
    mlx_headers: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    names = ["unary.h", "unary_ops.h", "steel/gemm/gemm.h"]
    headers = [mlx_headers / KERNELS / n for n in names]
    out, depfile = tmp_path / "pre.cpp", tmp_path / "pre.d"
    code, _, err = run_cli(
        [
            "embed",
            *map(str, headers),
            "-I",
            str(mlx_headers),
            "-o",
            str(out),
            "--depfile",
            str(depfile),
        ],
        capsys,
    )
    assert code == 0, err
    target, listed = _prerequisites(depfile)
    assert target == str(out)
    assert len(listed) == len(set(listed))  # each file once
    truth = set().union(*(_g_plus_plus_h(h, [mlx_headers]) for h in headers))
    truth = {p for p in truth if p.is_relative_to(mlx_headers.resolve())}  # not the stand-ins
    assert set(listed) == truth
    expm1f = (mlx_headers / KERNELS / "expm1f.h").resolve()
    assert expm1f in truth  # unary_ops.h -> erf.h -> expm1f.h
