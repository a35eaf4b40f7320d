"""No split loses a kernel (issue 17): every variant of ``variants --from`` ships each function of
the input library in its metallib or as source whose definition is in its ``jit_sources.cpp``.

The input is a library holding every kernel of the MLX-style tree (tests/data/mlx_style, over
mlx-metal's real headers), written by the container writer, so that the tree's own kernel
templates (``tiles/tile_copy.metal``, ``plain_kernels.metal``) are in it; the reference is
independent of the code under test: the input's function names, against the union of the names
in each variant's metallib and the kernels whose template (or function) definition appears in
the text its ``jit_sources.cpp`` embeds. Which code each kernel comes from is written by hand
(``expected.code_of``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from clirun import run_cli
from kernels.discovery.expected import BY_FILE, OWN_TEMPLATES, RUNTIME_ONLY, code_of
from mlx_tree import DATA

from builder.metallib import open_metallib

pytestmark = pytest.mark.realdata

# Bigger functions for the files a planner likes to move: the tiles (4 kernels) save the most
# bytes per kernel; the file writes its kernel template itself, so it goes JIT embedded whole.
SIZES = {
    "tiles/tile_copy.metal": 30_000,
    "fft.metal": 8_000,
    "binary_subset.metal": 3_000,
    "unary_subset.metal": 2_000,
}
NOT_IN_TREE = [("helper_a", 700), ("helper_b", 900)]


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from synthetic import synthetic_bytes

    functions = [
        (name, SIZES.get(source, 500))
        for source, names in sorted(BY_FILE.items())
        for name in sorted(names)
    ]
    path = tmp_path_factory.mktemp("coverage") / "tree.metallib"
    path.write_bytes(synthetic_bytes([*functions, *NOT_IN_TREE]))
    return path


def _names(path: Path) -> list[str]:
    with open_metallib(path) as lib:
        return list(lib.columns().names)


def _embedded_text(cpp: str) -> str:
    """Every text piece a generated source stores, back to back in the file's order, comments
    blanked (MLX writes them inside template parameter lists)."""
    pattern = re.compile(r'char mbjit_t_\w+\[\] = R"([^(]*)\((.*?)\)\1";', re.DOTALL)
    text = "".join(m.group(2) for m in pattern.finditer(cpp))
    return re.sub(r"/\*.*?\*/|//[^\n]*", " ", text, flags=re.DOTALL)


_ATTRS = r"(?:\[\[(?:[^\]]|\](?!\]))*\]\]\s*)*"


def _defines(text: str, kind: str, name: str) -> bool:
    """Whether ``text`` holds the definition of kernel template or function ``name``."""
    head = r"template\s*<[^;{}]*?>\s*" if kind == "template" else ""
    found = re.search(rf"{head}{_ATTRS}(?:kernel\s+)?void\s+{re.escape(name)}\s*\(", text)
    return found is not None


def _text(variant: dict[str, Any]) -> str:
    cpp = variant["jit_sources_file"]
    return _embedded_text(Path(cpp).read_text()) if cpp else ""


def _covered(variant: dict[str, Any]) -> set[str]:
    names = set(_names(Path(variant["metallib"]))) if variant["metallib"] else set()
    text = _text(variant)
    every = {n for names_of in BY_FILE.values() for n in names_of}
    return names | {n for n in every if _defines(text, *code_of(n))}


def _variants(argv: list[str], capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    code, out, err = run_cli([*argv, "--format", "json"], capsys)
    assert code == 0, err
    return list(json.loads(out)["variants"])


def test_every_variant_ships_every_function_of_the_input(
    library: Path, mlx_headers: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    full = library.stat().st_size
    budget = full - len(BY_FILE["tiles/tile_copy.metal"]) * SIZES["tiles/tile_copy.metal"] // 2
    variants = _variants(
        [
            "variants",
            "--from",
            str(library),
            "--source-dir",
            str(DATA),
            "-I",
            str(mlx_headers),
            "-o",
            str(tmp_path / "v"),
            "--jit",
            "tiles/*.metal",
            "--jit",
            "fft.metal,unary_subset.metal",
            "--aot",
            "arange_subset.metal",
            "--ceiling",
            str(budget),
        ],
        capsys,
    )
    assert [v["name"] for v in variants] == ["all-aot", "aot-1", "jit-1", "jit-2", "planned"]
    wanted = set(_names(library))
    lost = {v["name"]: sorted(wanted - _covered(v)) for v in variants}
    assert lost == {v["name"]: [] for v in variants}
    for variant in variants:
        # a JIT file that writes its own templates ships its instantiations too: its whole text
        text = _text(variant)
        for source in set(OWN_TEMPLATES) & set(variant["jit_sources"]):
            cpp = Path(variant["jit_sources_file"]).read_text()
            assert f'#line 1 "{source}"' in cpp, source  # the file itself, from its first line
            assert all(_defines(text, "template", t) for t in OWN_TEMPLATES[source]), source
        # the run-time-only kernel templates are in every variant's sources, all-aot included
        text = _text(variant)
        assert all(_defines(text, "template", t["template"]) for t in RUNTIME_ONLY)
        kernels = sum(len(names) for names in BY_FILE.values())
        assert variant["coverage"] == {
            "kernels": kernels,
            "in_metallib": kernels - variant["jit_kernels"],
            "in_sources": variant["jit_kernels"],
            "not_in_input": 0,
            "runtime_only_templates": len(RUNTIME_ONLY),
        }
    planned = variants[-1]
    assert planned["metallib_bytes"] <= budget and planned["jit_sources"]
    jit_1 = variants[2]
    assert jit_1["jit_sources"] == ["tiles/tile_copy.metal"], jit_1["description"]


def test_the_reference_sees_a_lost_kernel(
    library: Path, mlx_headers: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The check above can fail: a metallib without the tiles and sources without their template
    leave the tiles' kernels uncovered."""
    [variant] = [
        v
        for v in _variants(
            [
                "variants",
                "--from",
                str(library),
                "--source-dir",
                str(DATA),
                "-I",
                str(mlx_headers),
                "-o",
                str(tmp_path / "v"),
                "--jit",
                "fft.metal",
            ],
            capsys,
        )
        if v["name"] == "jit-1"
    ]
    text = _text(variant)
    assert not _defines(text, "template", "tile_copy")
    assert _defines(text, "template", "fft_pass") and _defines(text, "function", "make_twiddles")
    names = set(_names(Path(variant["metallib"])))
    tiles = BY_FILE["tiles/tile_copy.metal"]
    assert tiles <= names  # kept AOT: were they dropped, nothing would cover them
    assert not (tiles & (_covered({**variant, "metallib": None})))


def _computed_include_tree(root: Path) -> Path:
    """An entry file whose kernel template is in a header it includes through a macro: the
    preprocessor finds it, the inliner leaves ``#include NAME`` to the run-time compiler."""
    (root / "k.h").write_text("template <typename T>\n[[kernel]] void k(device T* x) { }\n")
    (root / "macro.metal").write_text(
        '#define KERNELS_HEADER "k.h"\n#include KERNELS_HEADER\n'
        'template [[host_name("k_float")]] [[kernel]] decltype(k<float>) k<float>;\n'
        'template [[host_name("k_int")]] [[kernel]] decltype(k<int>) k<int>;\n'
    )
    (root / "plain.metal").write_text("kernel void p(device float* x) { }\n")
    return root


def test_a_split_that_loses_kernels_is_refused(
    write_metallib: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "tree").mkdir()
    tree = _computed_include_tree(tmp_path / "tree")
    library = write_metallib("k.metallib", [("k_float", 400), ("k_int", 400), ("p", 300)])
    out = tmp_path / "out"
    code, stdout, err = run_cli(
        [
            "variants",
            "--from",
            str(library),
            "--source-dir",
            str(tree),
            "-o",
            str(out),
            "--jit",
            "plain.metal",
        ],
        capsys,
    )
    assert code == 0, err  # plain.metal's kernel is its own preamble: nothing lost
    code, stdout, err = run_cli(
        [
            "variants",
            "--from",
            str(library),
            "--source-dir",
            str(tree),
            "-o",
            str(tmp_path / "lost"),
            "--jit",
            "macro.metal",
        ],
        capsys,
    )
    assert code == 1 and stdout == "" and err.count("\n") == 1, err
    assert "variant jit-1 would lose 2 kernel(s)" in err
    assert "macro.metal: 2 kernel(s), code in k.h" in err
    assert not (tmp_path / "lost").exists()  # refused before anything is written
