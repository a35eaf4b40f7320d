"""Every header of real kernel trees comes back from the generated C++ exactly as docs/jit.md says
it is embedded: the header with its quoted includes inlined (each file once, ``#line`` markers,
``#pragma once`` lines emptied), comments left out only when asked, nothing else edited.

The trees: MLX's kernel headers from three mlx-metal wheels, the bundled catalog tree
(metal_src) and the MLX-style entry files (tests/data/mlx_style). Each configuration renders the
trees through the product, compiles the C++ with AddressSanitizer and UBSan into one program,
runs it, and compares every returned text with what the reference inliner below makes from
the header:

- ``embed`` (``--api string`` and ``--api cstring``, with and without ``--strip-comments``):
  each header's function and the ``preamble(header)`` lookup; the four configurations in one
  program, made once for the run (each source also compiles alone);
- the host JIT library's registry (dedup or not, zlib or not, comments stripped or not): one
  unit per header, its preamble function written by the one writer of run-time C++, read back
  through ``preamble(family)`` and the C API ``mbjit_preamble``.

The reference is written from the documentation, not from the product: its own comment finder
(one regular expression over the C++ tokens that can hide ``//`` or ``/*``), its own include
resolution and its own ``#line`` quoting.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
from mlx_tree import DATA, MLX_PLATFORM, extract_kernel_headers
from support.reference_inliner import c_quote, reference_preamble
from support.sanitized import EMIT, SANITIZE, compile_and_run, texts
from support.shared import shared_folder

from builder.inputs import wheel_cache, wheels
from builder.jit.generate import embed_headers, function_names
from builder.jit.preamble import inline_preamble
from builder.jit.writer import StoredPiece, TableUnit, kernel_table, preamble_code
from builder.kernels.bounded_run import find_compiler
from builder.kernels.catalog import LINE_HEAD
from builder.resources import metal_src_dir

pytestmark = [pytest.mark.realdata, pytest.mark.slow]  # about 2-4 s per configuration, 2 idle cores

MLX_VERSIONS = ("0.30.0", "0.32.0", "0.32.4")
KERNELS = "mlx/backend/metal/kernels"
HOST = metal_src_dir() / "host"


# --- the trees -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tree:
    """Headers to embed and the folders their quoted includes resolve in."""

    label: str
    include_dirs: tuple[Path, ...]
    headers: tuple[Path, ...]

    def names(self) -> list[str]:
        """Each header as the generated source names it (relative to its include folder)."""
        out = []
        for header in self.headers:
            real = Path(os.path.realpath(header))
            folder = next(d for d in self.include_dirs if real.is_relative_to(d.resolve()))
            out.append(real.relative_to(folder.resolve()).as_posix())
        return out


def mlx_root(version: str) -> Path:
    """The include root of an mlx-metal wheel's kernel headers (cached)."""
    try:
        wheel = wheels.download_wheel("mlx-metal", version, MLX_PLATFORM)
    except wheel_cache.DownloadError as exc:
        pytest.skip(f"PACKAGE INDEX UNREACHABLE, real-data test skipped: {exc}")
    return extract_kernel_headers(
        wheel, wheel_cache.cache_dir() / "kernel-headers" / wheel.name[:-4]
    )


def mlx_tree(label: str, root: Path) -> Tree:
    """Every header under MLX's kernels folder, include root ``root``."""
    return Tree(label, (root,), tuple(sorted((root / KERNELS).rglob("*.h"))))


@pytest.fixture(scope="session")
def trees() -> list[Tree]:
    roots = {v: mlx_root(v) for v in MLX_VERSIONS}
    src = metal_src_dir()
    catalog_headers = sorted(p for p in src.rglob("*.h") if not p.is_relative_to(HOST))
    return [
        *(mlx_tree(f"mlx-metal {v}", roots[v]) for v in MLX_VERSIONS),
        Tree("metal_src", (src,), tuple(catalog_headers)),
        Tree("mlx_style", (roots["0.32.0"], DATA), tuple(sorted(DATA.rglob("*.metal")))),
    ]


# --- building and running ----------------------------------------------------------------------


EMBED_CONFIGS = tuple((api, strip) for api in ("string", "cstring") for strip in (False, True))
"""The four ``embed`` configurations, all built into one program (namespace ``rt::c<n>``)."""


def embed_program(trees: Sequence[Tree]) -> dict[str, str]:
    """Every configuration's ``embed`` source of every tree (namespace ``rt::c<n>::t<k>``) in one
    translation unit, ``embedded.cpp`` (one compile instead of one per tree and configuration;
    each source is whole and in its own namespace), and a main emitting, per configuration and
    header, its function's text and ``preamble(header)`` (a loop over tables of the functions
    and names: 2,800 calls written out took the compiler longer than the sources)."""
    pieces, declarations, calls = [], [], []
    for n, (api, strip) in enumerate(EMBED_CONFIGS):
        returns = "const std::string&" if api == "string" else "const char*"
        for k, tree in enumerate(trees):
            space = f"rt::c{n}::t{k}"
            text, _ = embed_headers(
                tree.headers, tree.include_dirs, namespace=space, strip=strip, api=api
            )
            pieces.append(text)
            functions = function_names(tree.names())
            declarations += [
                f"namespace {space} {{",
                *(f"{returns} {f}();" for f in functions),
                "std::string_view preamble(std::string_view);",
                "}",
            ]
            calls += [
                "  {",
                f"    static {returns} (*const functions[])() = {{",
                *(f"        &{space}::{f}," for f in functions),
                "    };",
                "    static const char* const names[] = {",
                *(f"        {c_quote(name)}," for name in tree.names()),
                "    };",
                f"    emit_each(functions, names, &{space}::preamble);",
                "  }",
            ]
    main = [
        EMIT,
        "#include <cstddef>",
        "#include <string>",
        *declarations,
        "template <class Function, std::size_t N>",
        "static void emit_each(Function (&functions)[N], const char* const (&names)[N],",
        "                      std::string_view (*lookup)(std::string_view)) {",
        "  for (std::size_t i = 0; i < N; ++i) {",
        "    emit(functions[i]());",
        "    emit(lookup(names[i]));",
        "  }",
        "}",
        "int main() {",
        *calls,
        "  return 0;",
        "}",
    ]
    return {"embedded.cpp": "\n".join(pieces), "main.cpp": "\n".join(main) + "\n"}


HEADS = ["#include <cstddef>", "#include <initializer_list>", "#include <string>"]
HEADS += ["#include <string_view>"]
"""The C++ headers each tree's translation unit of the registry program starts with."""


def registry_program(
    trees: Sequence[Tree], dedup: bool, compress: bool, strip: bool
) -> dict[str, str]:
    """The host JIT library with one unit per header (``t<k>_<i>``, its preamble function named
    alike), each tree's functions in one translation unit as the one writer of run-time C++
    writes them, the kernel table, and a main emitting each unit's preamble through the C++ API
    and the C API."""
    heads = [*HEADS, *(["#include <zlib.h>"] if compress else [])]
    sources: dict[str, str] = {}
    families: list[str] = []
    table: list[tuple[TableUnit, str, list[StoredPiece]]] = []
    for k, tree in enumerate(trees):
        entries = []
        for i, header in enumerate(tree.headers):
            family = f"t{k}_{i}"
            preamble = inline_preamble([header], tree.include_dirs, strip=strip)
            entries.append((tree.label, family, preamble))
            table.append((TableUnit(family, family, preamble, ()), "", []))
            families.append(family)
        code = preamble_code(entries, dedup=dedup, compress=compress)
        sources[f"t{k}.cpp"] = "\n".join(
            [*heads, "namespace metal_jit {", "namespace {", *code.definitions, "}"]
            + [*code.functions, "}  // namespace metal_jit", ""]
        )
    sources["table.cpp"] = "\n".join(
        [
            '#include "metal_jit/embedded.h"',
            "namespace metal_jit {",
            *(f"const std::string& {f}();" for f in families),
            *kernel_table(table, "metal_jit", LINE_HEAD, compressed=compress),
            "}  // namespace metal_jit",
            "",
        ]
    )
    names = ", ".join(f'"{f}"' for f in families)
    sources["main.cpp"] = EMIT + "\n".join(
        [
            '#include "metal_jit/registry.h"',
            "int main() {",
            f"  for (const char* family : {{{names}}}) {{",
            "    emit(metal_jit::preamble(family));",
            "    const char* text = nullptr;",
            "    std::size_t size = 0;",
            "    if (mbjit_preamble(family, &text, &size) != 0) return 3;",
            "    emit({text, size});",
            "  }",
            "  return 0;",
            "}",
            "",
        ]
    )
    return sources


@pytest.fixture(scope="session")
def registry_object(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The registry (metal_src/host/registry.cpp) compiled once for the run, zlib on, with the
    sanitizers."""

    def make(folder: Path) -> None:
        subprocess.run(
            [
                find_compiler().path,
                "-std=c++17",
                "-O0",
                *SANITIZE,
                "-DMETAL_JIT_HAVE_ZLIB=1",
                "-I",
                str(HOST / "include"),
                "-c",
                str(HOST / "registry.cpp"),
                "-o",
                str(folder / "registry.o"),
            ],
            check=True,
        )

    return shared_folder(tmp_path_factory, "roundtrip-registry", make) / "registry.o"


@pytest.fixture(scope="session")
def precompiled_heads(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """HEADS precompiled once for the run with the flags of ``compile_and_run``: each tree's
    translation unit of the registry program is given it with ``-include`` (what it includes
    first anyway), which saves parsing the C++ library's headers 40 times."""

    def make(folder: Path) -> None:
        (folder / "heads.h").write_text("\n".join(HEADS) + "\n", encoding="utf-8")
        subprocess.run(
            [find_compiler().path, "-std=c++17", "-O0", *SANITIZE, "-x", "c++-header"]
            + [str(folder / "heads.h"), "-o", str(folder / "heads.h.gch")],
            check=True,
        )

    return shared_folder(tmp_path_factory, "roundtrip-heads", make) / "heads.h"


@pytest.fixture(scope="session")
def references(
    trees: list[Tree], tmp_path_factory: pytest.TempPathFactory
) -> Callable[[bool], list[str]]:
    """The reference text of every header of every tree, in order (stripped or not), made once
    for the run."""

    def make(folder: Path) -> None:
        for strip in (False, True):
            made = [reference_preamble(h, t.include_dirs, strip) for t in trees for h in t.headers]
            (folder / f"strip-{strip}.json").write_text(json.dumps(made), encoding="utf-8")

    folder = shared_folder(tmp_path_factory, "roundtrip-references", make)

    @cache
    def get(strip: bool) -> list[str]:
        made: list[str] = json.loads((folder / f"strip-{strip}.json").read_text(encoding="utf-8"))
        return made

    return get


def mismatches(trees: Sequence[Tree], got: Sequence[str], want: Sequence[str]) -> list[str]:
    """One line per returned text that is not the reference: where it first differs."""
    labels = [f"{t.label}: {name}" for t in trees for name in t.names()]
    per_header = len(got) // len(want)
    assert len(got) == per_header * len(want) and len(want) == len(labels)
    bad = []
    for index, text in enumerate(got):
        expected = want[index // per_header]
        if text != expected:
            at = next(
                (i for i, (a, b) in enumerate(zip(text, expected)) if a != b),
                min(len(text), len(expected)),
            )
            bad.append(
                f"{labels[index // per_header]} (read {index % per_header}): "
                f"{len(text)} of {len(expected)} characters, first difference at {at}"
            )
    return bad


def test_trees_are_real(trees: list[Tree]) -> None:
    """The data the round trips cover: every header of each tree (a guard against empty
    globs), MLX's quantized headers among them (``inline constexpr`` in their text)."""
    counts = {t.label: len(t.headers) for t in trees}
    assert all(counts[f"mlx-metal {v}"] >= 80 for v in MLX_VERSIONS), counts
    assert counts["metal_src"] >= 20 and counts["mlx_style"] >= 5, counts
    quantized = next(h for h in trees[0].headers if h.name == "quantized.h")
    assert "inline constexpr" in quantized.read_text(encoding="utf-8")


@pytest.fixture(scope="session")
def embed_output(trees: list[Tree], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The texts the four-configuration ``embed`` program emitted, made once for the run."""

    def make(folder: Path) -> None:
        sources = embed_program(trees)
        output = compile_and_run(folder / "build", sources)
        (folder / "output.bin").write_bytes(output)

    return shared_folder(tmp_path_factory, "roundtrip-embed", make) / "output.bin"


@pytest.mark.parametrize("strip", [False, True], ids=["", "strip"])
@pytest.mark.parametrize("api", ["string", "cstring"])
def test_embed_returns_each_header_exactly(
    api: str,
    strip: bool,
    trees: list[Tree],
    references: Callable[[bool], list[str]],
    embed_output: Path,
) -> None:
    emitted = texts(embed_output.read_bytes())
    each = len(emitted) // len(EMBED_CONFIGS)
    assert each * len(EMBED_CONFIGS) == len(emitted)
    n = EMBED_CONFIGS.index((api, strip))
    assert mismatches(trees, emitted[n * each : (n + 1) * each], references(strip)) == []


def test_each_embed_source_compiles_alone(trees: list[Tree], tmp_path: Path) -> None:
    """The four configurations share one translation unit above, where one source's includes
    could cover another's missing ones: each configuration's source compiles on its own too."""
    cxx = find_compiler().path
    for n, (api, strip) in enumerate(EMBED_CONFIGS):
        tree = trees[3]  # metal_src: the smallest; the includes are the same for every tree
        text, _ = embed_headers(
            tree.headers, tree.include_dirs, namespace=f"rt::c{n}", strip=strip, api=api
        )
        source = tmp_path / f"c{n}.cpp"
        source.write_text(text, encoding="utf-8")
        done = subprocess.run(
            [cxx, "-std=c++17", "-fsyntax-only", str(source)],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, f"{api} strip={strip}: {done.stderr[-3000:]}"


@pytest.mark.parametrize("strip", [False, True], ids=["", "strip"])
@pytest.mark.parametrize("compress", [False, True], ids=["raw", "zlib"])
@pytest.mark.parametrize("dedup", [True, False], ids=["dedup", "no-dedup"])
def test_registry_returns_each_header_exactly(
    dedup: bool,
    compress: bool,
    strip: bool,
    trees: list[Tree],
    references: Callable[[bool], list[str]],
    registry_object: Path,
    precompiled_heads: Path,
    tmp_path: Path,
) -> None:
    sources = registry_program(trees, dedup, compress, strip)
    pch = ["-Winvalid-pch", "-include", str(precompiled_heads)]
    flags = {f"t{k}.cpp": pch for k in range(len(trees))}
    output = compile_and_run(tmp_path, sources, [str(registry_object), "-lz"], flags)
    assert mismatches(trees, texts(output), references(strip)) == []
