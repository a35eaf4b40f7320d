"""Issue 37 item 5 for ``build``: with ``preamble-set = "table"`` a mixed build (``--jit GLOBS``)
of an MLX-shaped tree links a host library defining every function MLX's ``jit/includes.h``
declares for the platform, whichever entry files it keeps AOT, as the variant of the same split
(``variants --from --jit``) does; MLX's JIT host code (``jit_kernels.cpp``) names them all.

The tree is ``support.mlx_stand_in``'s (the mlx-metal 0.32.1 wheel's real headers and
``jit/includes.h``, a stand-in entry file per MLX v0.32.1 entry file, docs/mlx.md's
metallib.toml, one kernel per entry file that may go JIT); the AOT half is compiled by the test
stand-in Metal compiler. What a host library defines is read with llvm-nm (its dynamic symbols)
and held to ``jit/includes.h``'s declarations, read here; the functions' text by a program that
calls each one, linked once with the build's library and once with the variant's source.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from clirun import run_cli
from support.mlx_doc import KERNELS, metallib_toml
from support.mlx_stand_in import (
    MACOS14,
    MACOS26,
    UNCONDITIONAL,
    VERSION,
    add_kernels,
    declared,
    lay_out,
    member,
    nm_functions,
    wheel,
)

from builder.files.reading import parse_toml
from builder.kernels.bounded_run import find_compiler

from .conftest import METAL, cli_without_metal

pytestmark = [pytest.mark.realdata, pytest.mark.cmake, pytest.mark.slow]

SPLIT = "unary.metal,sort.metal,steel/gemm/*"
"""JIT: three families' entry files (steel_gemm_* with the NAX ones on macOS 26); every other
entry file AOT, ``aot-only`` or not."""
TARGETS = {MACOS14: "14.0", MACOS26: "26.2"}
"""The deployment target a build for each library's platform takes."""


@pytest.fixture(scope="module")
def table_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The include root of the stand-in MLX tree, with a kernel per entry file that may go JIT."""
    return add_kernels(lay_out(tmp_path_factory.mktemp("mlx-table") / "include"))


def _build(root: Path, build_dir: Path, *options: str) -> dict[str, str]:
    """``build`` the tree's kernel folder with the stand-in compiler; each unit's mode."""
    done = cli_without_metal(
        *("build", "--source-dir", str(root / KERNELS), "-I", str(root), *options),
        *("--build-dir", str(build_dir), "--metal-compiler", str(METAL), "-j", "2"),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    plan = json.loads((build_dir / "metal_plan" / "plan.json").read_text(encoding="utf-8"))
    return {u["name"]: u["mode"] for u in plan["units"]}


def _host_functions(build_dir: Path) -> set[str]:
    return nm_functions(build_dir / "libmetal_jit.so", "-D")


def _for(platform: str, root: Path) -> set[str]:
    """What jit/includes.h declares for ``platform``: the NAX functions from macOS 26 only."""
    return {f for f in declared(root) if platform == MACOS26 or not f.endswith("_nax")}


def _texts(functions: set[str], link: list[str], tmp_path: Path, name: str) -> list[str]:
    """Each function's text, as a program declaring it as jit/includes.h does reads it, linked
    with ``link`` (a library or a source)."""
    names = sorted(functions)
    main = tmp_path / f"{name}.cpp"
    declared_ = " ".join(f"const char* {f}();" for f in names)
    calls = "".join(f"  std::fputs({f}(), stdout); std::fputc(0, stdout);\n" for f in names)
    main.write_text(
        f"#include <cstdio>\nnamespace mlx::core::metal {{ {declared_} }}\n"
        f"using namespace mlx::core::metal;\nint main() {{\n{calls}  return 0;\n}}\n",
        encoding="utf-8",
    )
    program = tmp_path / name
    cxx = [find_compiler().path, "-std=c++17", "-Wall", "-Werror", str(main), *link]
    subprocess.run([*cxx, "-o", str(program)], check=True)
    out = subprocess.run([str(program)], capture_output=True, check=True).stdout.decode()
    texts = out.split("\0")[:-1]
    assert len(texts) == len(names)
    return texts


@pytest.mark.parametrize("platform", [MACOS14, MACOS26])
def test_a_mixed_build_defines_every_table_function_as_its_variant_does(
    table_tree: Path, platform: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A build with some entry files JIT and the rest AOT defines, in its host library, every
    function jit/includes.h declares for the platform (41 for macOS 14, 49 from macOS 26); with
    the rule a build took before (the JIT entry files' functions and the ones every build
    carries) it defined 20 of the 41. The variant of the same split defines the same functions,
    each returning the same text."""
    build_dir = tmp_path / "b"
    modes = _build(table_tree, build_dir, "--jit", SPLIT, "--deployment-target", TARGETS[platform])
    aot_only = parse_toml(metallib_toml().encode("utf-8"), "metallib.toml")["build"]["aot-only"]
    jit = {u for u, m in modes.items() if m == "jit"}
    aot = {u for u, m in modes.items() if m == "aot" and u not in aot_only}
    assert {"unary.metal", "sort.metal"} <= jit and aot, modes  # mixed beyond aot-only
    wanted = _for(platform, table_tree)
    assert len(wanted) == (49 if platform == MACOS26 else 41)
    built = _host_functions(build_dir)
    assert built == wanted, (sorted(wanted - built), sorted(built - wanted))

    library = member(wheel("mlx-metal", VERSION, platform), "mlx/lib/mlx.metallib", tmp_path / "m")
    out = tmp_path / "v"
    args = ["variants", "--from", str(library), "--source-dir", str(table_tree / KERNELS)]
    code, _, err = run_cli([*args, "-I", str(table_tree), "--jit", SPLIT, "-o", str(out)], capsys)
    assert code == 0, err
    doc = json.loads((out / "variants.json").read_text(encoding="utf-8"))
    variant = next(v for v in doc["variants"] if v["name"] == "jit-1")
    assert set(variant["jit_sources"]) == jit  # the same split
    source = Path(variant["jit_sources_file"])
    link = [f"-L{build_dir}", "-lmetal_jit", f"-Wl,-rpath,{build_dir}"]
    from_build = _texts(wanted, link, tmp_path, "reads_build")
    from_variant = _texts(wanted, [str(source)], tmp_path, "reads_variant")
    assert from_build == from_variant
    assert all(text.strip() for text in from_build)


def test_all_jit_and_all_aot_builds_define_what_they_did(table_tree: Path, tmp_path: Path) -> None:
    """``build --jit`` (every entry file but the aot-only ones JIT) defines the 41 functions of
    macOS 14, as MLX's JIT build declares them; an AOT build the 12 MLX embeds outside
    ``if(MLX_METAL_JIT)`` (searchsorted.metal left out: its AOT compile would define sort.h's
    stand-in kernel a second time, beside sort.metal's)."""
    jit_dir = tmp_path / "jit"
    modes = _build(table_tree, jit_dir, "--jit", "--deployment-target", "14.0")
    assert "unary.metal" in modes and modes["unary.metal"] == "jit"
    assert _host_functions(jit_dir) == _for(MACOS14, table_tree)
    aot_dir = tmp_path / "aot"
    options = ("--exclude", "searchsorted.metal", "--deployment-target", "14.0")
    modes = _build(table_tree, aot_dir, *options)
    assert set(modes.values()) == {"aot"}
    assert _host_functions(aot_dir) == UNCONDITIONAL
