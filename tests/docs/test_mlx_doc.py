"""docs/mlx.md, run: its CMake, settings, build requirement and commands are read from the file
and run on MLX v0.32.1's real headers and the real mlx-metal wheels (issue 28 items 4 and 5).

The wheels ship MLX's headers, not its ``.metal`` files, so the commands run in a stand-in
checkout: the headers and ``jit/includes.h`` of the mlx-metal 0.32.1 wheel, and at each of MLX's
42 entry-file paths a file written here that includes its header and defines one kernel of the
real library under its real name. The whole check on MLX's own tree (the doc's table) runs on a
checkout named by METALLIB_BUILDER_MLX_CHECKOUT."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from clirun import run_cli
from support.mlx_doc import DOC, KERNELS, block, metallib_toml, stated_bytes, table_row

from builder.cmake_build.cmake import find_tool
from builder.files.reading import parse_toml
from builder.inputs import wheel_cache, wheels

ROOT = Path(__file__).resolve().parents[2]
VERSION = "0.32.1"
MACOS14, MACOS26 = "macosx_14_0_arm64", "macosx_26_0_arm64"

# One kernel of each MLX v0.32.1 entry file, by its name in the library (checked below).
ENTRY_KERNELS = {
    "arange.metal": "arangeint8",
    "arg_reduce.metal": "argmin_int8",
    "binary.metal": "ss_Addint8",
    "binary_two.metal": "ss_DivModint8",
    "conv.metal": "naive_unfold_nd_float32_1",
    "copy.metal": "s_copyint8int8",
    "dot.metal": "dot_product_float32_it32_tg512_sg16",
    "fence.metal": "fence_wait",
    "fft.metal": "fft_mem_256_float_float2",
    "fp_quantized.metal": "nvfp4_gather_qmv_float_gs_16_b_4",
    "fp_quantized_nax.metal": (
        "nvfp4_gather_qmm_t_nax_float_gs_16_b_4_bm64_bn64_bk64_wm2_wn2_alN_true"
    ),
    "gemv.metal": "gemv_wide_float16_nv2_kl16",
    "gemv_masked.metal": "gemv_outmask_bool__opmask_bool__float32_bm2_bn1_sm4_sn8_tm1_tn4_nc0",
    "layer_norm.metal": "layer_normfloat32",
    "logsumexp.metal": "block_logsumexp_float32",
    "quantized.metal": "affine_quantize_float_gs_64_b_2",
    "quantized_nax.metal": "affine_qmm_n_nax_float_gs_64_b_2_bm64_bn64_bk64_wm2_wn2_batch_1",
    "random.metal": "rbits",
    "reduce.metal": "all_reduce_orbool_",
    "rms_norm.metal": "rmsfloat32",
    "rope.metal": "rope_float16",
    "scaled_dot_product_attention.metal": "sdpa_vector_float_64_64",
    "scan.metal": "contig_scan_inclusive_sum_int8_int8",
    "searchsorted.metal": "searchsorted_int8_left",
    "softmax.metal": "block_softmax_float32",
    "sort.metal": "c_block_sort_int8_int8_bn32_tn4",
    "steel/attn/kernels/steel_attention.metal": (
        "steel_attention_float16_bq32_bk32_bd96_wm4_wn1_maskbool_"
    ),
    "steel/attn/kernels/steel_attention_nax.metal": (
        "steel_attention_float16_bq64_bk32_bd96_wm4_wn1_maskbool_"
    ),
    "steel/conv/kernels/steel_conv.metal": (
        "implicit_gemm_conv_2d_float32_bm32_bn8_bk16_wm4_wn1_channel_l_filter_s"
    ),
    "steel/conv/kernels/steel_conv_3d.metal": (
        "implicit_gemm_conv_3d_float32_bm32_bn8_bk16_wm4_wn1_filter_s"
    ),
    "steel/conv/kernels/steel_conv_general.metal": (
        "implicit_gemm_conv_2d_general_float32_bm32_bn8_bk16_wm4_wn1"
    ),
    "steel/gemm/kernels/steel_gemm_fused.metal": (
        "steel_gemm_fused_nn_float16_float16_bm64_bn32_bk8_wm4_wn1"
    ),
    "steel/gemm/kernels/steel_gemm_fused_nax.metal": (
        "steel_gemm_fused_nax_nn_float16_float16_bm64_bn64_bk256_wm2_wn2"
    ),
    "steel/gemm/kernels/steel_gemm_gather.metal": (
        "steel_gather_mm_nn_float16_float16_bm64_bn64_bk16_wm2_wn2"
    ),
    "steel/gemm/kernels/steel_gemm_gather_nax.metal": (
        "steel_gather_mm_rhs_nax_nn_float16_float16_bm16_bn128_bk128_wm1_wn4"
    ),
    "steel/gemm/kernels/steel_gemm_masked.metal": (
        "steel_gemm_block_outmask_bool__opmask_bool__nn_float16_float16_bm32_bn32_bk16_wm2_wn2"
        "_MN_taligned_K_taligned"
    ),
    "steel/gemm/kernels/steel_gemm_segmented.metal": (
        "steel_segmented_mm_nn_float16_float16_bm64_bn64_bk16_wm2_wn2"
    ),
    "steel/gemm/kernels/steel_gemm_segmented_nax.metal": (
        "steel_segmented_mm_nax_nn_float16_float16_bm64_bn64_bk64_wm2_wn2"
    ),
    "steel/gemm/kernels/steel_gemm_splitk.metal": "steel_gemm_splitk_accum_float16_float32",
    "steel/gemm/kernels/steel_gemm_splitk_nax.metal": (
        "steel_gemm_splitk_nax_nn_float16_float32_bm64_bn64_bk256_wm2_wn2"
    ),
    "ternary.metal": "v_Selectint8",
    "unary.metal": "v_Absint8int8",
}
MACOS14_ONLY_WITHOUT = {e for e in ENTRY_KERNELS if e == "fence.metal" or e.endswith("_nax.metal")}
HEADER_OF = {"scaled_dot_product_attention.metal": "sdpa_vector.h"}
# the first line of the doc's block for mlx/backend/metal/CMakeLists.txt
RUNTIME_CMAKE = (
    "# mlx/backend/metal/CMakeLists.txt: the run-time sources (replaces make_jit_source)"
)


def _toml(text: str) -> dict[str, Any]:
    """``text`` parsed as the tool parses settings (tomllib, or tomli on Python 3.10)."""
    return parse_toml(text.encode("utf-8"), "the TOML text of this test")


def _wheel(platform: str, version: str = VERSION) -> Path:
    try:
        return wheels.download_wheel("mlx-metal", version, platform)
    except wheel_cache.DownloadError as exc:
        pytest.skip(f"PACKAGE INDEX UNREACHABLE, real-data test skipped: {exc}")


def _names(platform: str) -> set[str]:
    from builder.inputs.targets import open_library, resolve_target

    (lib,) = resolve_target(str(_wheel(platform)))
    with open_library(lib) as metallib:
        return set(metallib.columns().names)


def _include_root(dest: Path) -> Path:
    """The 0.32.1 wheel's include root (headers and jit/includes.h), copied to ``dest``."""
    from mlx_tree import extract_kernel_headers

    wheel = _wheel(MACOS14)
    cached = wheel_cache.cache_dir() / "kernel-headers" / wheel.name.removesuffix(".whl")
    shutil.copytree(
        extract_kernel_headers(wheel, cached), dest, ignore=shutil.ignore_patterns(".*")
    )
    with zipfile.ZipFile(wheel) as archive:
        text = archive.read("mlx/include/mlx/backend/metal/jit/includes.h")
    (dest / "mlx/backend/metal/jit").mkdir(parents=True, exist_ok=True)
    (dest / "mlx/backend/metal/jit/includes.h").write_bytes(text)
    return dest


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A stand-in MLX checkout: the wheel's headers, an entry file at each of MLX's entry-file
    paths including its header, one real kernel, and the doc's metallib.toml. The kernel is
    written where MLX writes its kernels' code, in the entry file's header (no header reaches
    another entry file's), so a JIT entry file is embedded as MLX embeds it: its header's
    preamble, no text of its own. Seven AOT-only entry files have no header of their name and
    write their kernel themselves."""
    root = _include_root(tmp_path_factory.mktemp("mlx") / "mlx-checkout")
    kernels = root / KERNELS
    aot_only = _toml(metallib_toml())["build"]["aot-only"]
    for entry, name in ENTRY_KERNELS.items():
        kernel = f"[[kernel]] void {name}() {{}}\n"
        header = kernels / HEADER_OF.get(entry, entry.removesuffix(".metal") + ".h")
        text = f"// stand-in for MLX's {entry}\n"
        if header.is_file():
            with header.open("a", encoding="utf-8") as out:
                out.write(f"// stand-in kernel of {entry}\n{kernel}")
            text += f'#include "{header.relative_to(root).as_posix()}"\n'
        else:
            assert entry in aot_only, entry  # never JIT: no preamble of its own is asked for
            text += kernel
        (kernels / entry).parent.mkdir(parents=True, exist_ok=True)
        (kernels / entry).write_text(text, encoding="utf-8")
    (kernels / "metallib.toml").write_text(metallib_toml(), encoding="utf-8")
    return root


def _run(
    line: str, cwd: Path, variables: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    env = {**os.environ, **(variables or {}), "PATH": path}
    return subprocess.run(
        ["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )


def _commands(first_line: str) -> list[str]:
    return [
        line for line in block("sh", first_line).splitlines() if line and not line.startswith("#")
    ]


@pytest.mark.realdata
def test_the_stand_in_kernels_are_real_and_platform_bound() -> None:
    """Each kernel named above is in the macOS 26 library; all but fence's and the NAX files'
    are in the macOS 14 one, and those are not (what [kernels.requires] says)."""
    macos14, macos26 = _names(MACOS14), _names(MACOS26)
    assert set(ENTRY_KERNELS.values()) <= macos26
    inside = {e for e, name in ENTRY_KERNELS.items() if name in macos14}
    assert inside == set(ENTRY_KERNELS) - MACOS14_ONLY_WITHOUT


@pytest.mark.realdata
def test_the_commands_take_the_platform_from_each_library(checkout: Path) -> None:
    """The doc's report and variants lines, run as written: no -D, no --exclude; the macOS 14
    library is discovered without fence.metal and the NAX files, the macOS 26 one with all 42."""
    lines = _commands(
        "# size per entry file of each released library, platform from the library itself"
    )
    assert not any(" -D" in line or "--exclude" in line for line in lines)
    done = [_run(line, checkout) for line in lines]
    for line, run in zip(lines, done, strict=True):
        assert run.returncode == 0, line + run.stderr
    shown = re.escape(block("", None).strip())  # the line the doc shows, numbers aside
    pattern = re.sub(r"\d[\d,]*", lambda _: r"[\d,]+", shown)
    assert re.search(pattern, done[0].stderr), (pattern, done[0].stderr)
    expected = {
        "report-macos14.json": (
            "MSL 3.1, macOS 14.0 (mlx.metallib's header); left out there: fence.metal, *_nax.metal",
            set(ENTRY_KERNELS) - MACOS14_ONLY_WITHOUT,
        ),
        "report-macos26.json": (
            "MSL 4.0, macOS 26.2 (mlx.metallib's header)\n",
            set(ENTRY_KERNELS),
        ),
    }
    for (name, (platform, entries)), run in zip(expected.items(), done, strict=False):
        assert f" kernels in {len(entries)} entry files, for {platform}" in run.stderr
        groups = {g["name"] for g in json.loads((checkout / name).read_text())["groups"]}
        assert groups - {"other"} == entries  # each stand-in's kernel found in the library
    variants = json.loads(done[2].stdout)
    source = variants["source"]
    assert (source["tree"]["entry_files"], source["tree_kernels_missing"]) == (34, 0)
    held = {h["source"] for h in source["tree"]["held_aot"]}
    aot_only = _toml(metallib_toml())["build"]["aot-only"]
    assert held == set(aot_only) - {"fence.metal"}  # fence.metal is not built on macOS 14
    assert [v["name"] for v in variants["variants"]] == ["all-aot", "jit-mode"]


def test_the_build_requirement_is_this_package() -> None:
    from packaging.requirements import Requirement

    import builder

    requires = _toml(block("toml", "# pyproject.toml"))["build-system"]["requires"]
    ours = _toml((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = [Requirement(r) for r in requires if Requirement(r).name == ours["name"]]
    assert len(wanted) == 1 and wanted[0].specifier.contains(builder.__version__)


def test_the_settings_table_is_the_cmake_calls_headers() -> None:
    """[build.preambles] of the doc's metallib.toml and the doc's three CMake calls name the same
    49 headers in the same order, each function after its header's file name (as the calls
    do): the analysis commands and MLX's build make the same functions."""
    cmake = block("cmake", RUNTIME_CMAKE)
    headers = re.findall(r"\$\{KERNELS\}/(\S+\.h)\b", cmake)
    table = _toml(metallib_toml())["build"]["preambles"]
    assert len(headers) == 49 and list(table.items()) == [(Path(h).stem, h) for h in headers]


VENDOR = "# from the checkout's root: the function and its generator into cmake/ (commit them)"
VENDOR_CHECK = (
    "# in CI, after pip install metallib-builder: exit 1 naming the first file that differs"
)
PRE_COMMIT = "# .pre-commit-config.yaml (top level): the vendored files are vendor's to write"
INSTALL = "# CMakeLists.txt (top level): the install of cmake/, without the build-time generator"


def _cmake_dir() -> str:
    """What the doc's setup.py lines hand CMake."""
    scope: dict[str, Any] = {"subprocess": subprocess, "sys": sys, "cmake_args": []}
    exec(  # noqa: S102 - the doc's own lines, as MLX's setup.py would run them
        block("python", "# setup.py, in CMakeBuild.build_extension, beside the other cmake_args"),
        scope,
    )
    (arg,) = scope["cmake_args"]
    folder = arg.removeprefix("-DMetallibBuilder_DIR=")
    assert (Path(folder) / "MetallibBuilderConfig.cmake").is_file()
    return str(arg)


def test_the_alternative_hands_cmake_the_installed_package() -> None:
    """The installed-package alternative: the doc's setup.py lines name this package's CMake
    folder, which the doc's find_package finds (tests/jit/test_embed_cmake.py builds with it)."""
    assert _cmake_dir().startswith("-DMetallibBuilder_DIR=")
    top = block(
        "cmake", "# CMakeLists.txt (top level), in if(MLX_BUILD_METAL), after the mlx target exists"
    )
    assert top == "find_package(MetallibBuilder 0.1 REQUIRED)\n"


def test_the_install_leaves_the_generator_out(tmp_path: Path) -> None:
    """MLX's install of its cmake/ folder, with the doc's two patterns, after the doc's vendor
    command: MLX's own modules are installed, the vendored files are not."""
    src = tmp_path / "src"
    (src / "cmake").mkdir(parents=True)
    (src / "cmake/extension.cmake").write_text("# MLX's own\n", encoding="utf-8")
    for line in _commands(VENDOR):
        done = _run(line, src)
        assert done.returncode == 0, done.stderr
    assert (src / "cmake/MetallibEmbed.cmake").is_file()
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.25)\nproject(mlx LANGUAGES NONE)\n"
        'set(CMAKE_MODULE_PATH "${PROJECT_SOURCE_DIR}/cmake")\n'
        "set(MLX_CMAKE_INSTALL_MODULE_DIR share/cmake/MLX)\n" + block("cmake", INSTALL),
        encoding="utf-8",
    )
    build, prefix = tmp_path / "build", tmp_path / "prefix"
    cmake = find_tool("cmake")
    subprocess.run([cmake, "-S", src, "-B", build], capture_output=True, check=True)
    subprocess.run([cmake, "--install", build, "--prefix", prefix], capture_output=True, check=True)
    installed = sorted(p.relative_to(prefix).as_posix() for p in prefix.rglob("*") if p.is_file())
    assert installed == ["share/cmake/MLX/extension.cmake"]


def test_pre_commit_leaves_the_vendored_files_alone(tmp_path: Path) -> None:
    """The doc's pre-commit exclude (a Python regular expression, searched in each path from the
    checkout's root, as pre-commit does) matches every file vendor writes into cmake/, and none
    of MLX's own."""
    pattern = re.compile(_yaml_pairs(block("yaml", PRE_COMMIT))["exclude"])
    for line in _commands(VENDOR):
        done = _run(line, tmp_path)
        assert done.returncode == 0, done.stderr
    written = [p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()]
    assert len(written) > 20 and all(pattern.search(w) for w in written)
    mlx_own = ["cmake/extension.cmake", "CMakeLists.txt", "mlx/backend/metal/CMakeLists.txt",
               "python/mlx/__init__.py", "cmake/FindNCCL.cmake", "setup.py"]  # fmt: skip
    assert not any(pattern.search(f) for f in mlx_own)


def _yaml_pairs(text: str) -> dict[str, str]:
    """The doc's one-key YAML block (``key: value`` lines, comments left out)."""
    pairs = (line.split(": ", 1) for line in text.splitlines() if line and line[0] != "#")
    return {key: value for key, value in pairs}


@pytest.mark.realdata
@pytest.mark.parametrize("jit", ["ON", "OFF"])
def test_the_cmake_change_defines_what_includes_h_declares(tmp_path: Path, jit: str) -> None:
    """The doc's CMake in an MLX-shaped project over the wheel's headers, through the files the
    doc's vendor command writes into its cmake/, configured and built with an interpreter that
    cannot import builder (asserted) and no PYTHONPATH: with MLX_METAL_JIT the library defines
    exactly the 49 functions jit/includes.h declares (compiled -Werror with includes.h first),
    each returning the reference inliner's text; without it, the first 12. The doc's CI check
    then finds the vendored copy current."""
    from support.isolated_python import isolated_python
    from support.reference_inliner import reference_preamble

    src = _include_root(tmp_path / "src")
    includes = src / "mlx/backend/metal/jit/includes.h"
    for line in _commands(VENDOR):
        done = _run(line, src)
        assert done.returncode == 0, done.stderr
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.25)\nproject(mlx LANGUAGES CXX)\n"
        'set(CMAKE_MODULE_PATH "${PROJECT_SOURCE_DIR}/cmake")  # as MLX\'s\n'
        'option(MLX_METAL_JIT "JIT" OFF)\nadd_library(mlx STATIC)\n'
        f'target_compile_options(mlx PRIVATE -Wall -Wextra -Werror -include "{includes}")\n'
        "add_subdirectory(mlx/backend/metal)\n",
        encoding="utf-8",
    )
    metal = src / "mlx/backend/metal"
    metal.joinpath("CMakeLists.txt").write_text(
        block("cmake", RUNTIME_CMAKE),
        encoding="utf-8",
    )
    for name in ("jit_kernels.cpp", "nojit_kernels.cpp"):
        metal.joinpath(name).write_text("namespace mlx::core::metal {}\n", encoding="utf-8")
    build = tmp_path / "build"
    python = isolated_python(tmp_path / "bin")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    configure = subprocess.run(
        [find_tool("cmake"), "-S", str(src), "-B", str(build), "-G", "Ninja",
         f"-DCMAKE_MAKE_PROGRAM={find_tool('ninja')}", f"-DMLX_METAL_JIT={jit}",
         "-DMLX_METAL_VERSION=400", "-DMACOS_SDK_VERSION=26.2",
         "-DCMAKE_OSX_DEPLOYMENT_TARGET=26.2", f"-DPython3_EXECUTABLE={python}"],
        capture_output=True, text=True, check=False, env=env,
    )  # fmt: skip
    assert configure.returncode == 0, configure.stdout + configure.stderr
    assert "metallib_embed/metallib_embed.py" in (build / "build.ninja").read_text()
    ninja = subprocess.run(
        [find_tool("ninja"), "-C", str(build)], capture_output=True, text=True, check=False, env=env
    )
    assert ninja.returncode == 0, ninja.stdout + ninja.stderr
    nm = subprocess.run(
        ["nm", "-C", "--defined-only", str(build / "libmlx.a")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    defined = re.findall(r" T mlx::core::metal::(\w+)\(\)", nm)
    declared = re.findall(r"const char\* (\w+)\(\);", includes.read_text())
    # without MLX_METAL_JIT: the 12 that mlx-metal's own (non-JIT) libmlx.dylib holds
    assert len(declared) == 49 and set(defined) == (
        set(declared) if jit == "ON" else set(_dylib_preambles(tmp_path))
    )
    kernels = src / KERNELS
    heads = {
        name: kernels / "utils.h" if name == "utils" else next(kernels.rglob(f"{name}.h"))
        for name in defined
    }
    dump = tmp_path / "dump.cpp"
    dump.write_text(
        "#include <cstdio>\n#include <cstring>\nnamespace mlx::core::metal {\n"
        + "".join(f"const char* {n}();\n" for n in defined)
        + "}\nint main() {\n"
        + "".join(
            f"  std::fputs(mlx::core::metal::{n}(), stdout); std::fputc(0, stdout);\n"
            for n in defined
        )
        + "}\n"
    )
    exe = tmp_path / "dump"
    subprocess.run(
        ["g++", "-std=c++17", str(dump), str(build / "libmlx.a"), "-o", str(exe)], check=True
    )
    texts = subprocess.run([str(exe)], capture_output=True, check=True).stdout.decode().split("\0")
    assert texts[:-1] == [reference_preamble(heads[n], [src], strip=False) for n in defined]
    for line in _commands(VENDOR_CHECK):
        done = _run(line, src)
        assert done.returncode == 0 and "current" in done.stderr, done.stderr


@pytest.mark.realdata
def test_the_ci_gates(checkout: Path, tmp_path: Path) -> None:
    """The doc's CI lines for the macOS 14 job, run as written: main's report of the real 0.32.1
    wheel is saved; a pull request whose wheel is the same passes every gate and budget, one whose
    wheel is 0.32.4's fails both (growth on compare; max-size and max-functions on budget). The
    growth the doc gives as the reason main, not a release, is the base is the one compare
    measures between the two wheels."""
    main_lines = _commands(
        "# a push to main, after the wheel build: the report pull requests compare with "
        "(upload main/ as the artifact metallib-size-main-$PLATFORM)"
    )
    pr_lines = _commands(
        "# a pull request, after the wheel build: main's report (the artifact, downloaded into "
        "main/), then the gates"
    )
    matrix = re.findall(r"`(macosx_\d+_0_arm64)` and `([\d.]+)`", DOC)
    assert [p for p, _ in matrix] == [MACOS14, "macosx_15_0_arm64", MACOS26]  # all three wheels
    env = {"PLATFORM": MACOS14, "DEPLOYMENT_TARGET": dict(matrix)[MACOS14]}
    budget = f"metallib-size-{MACOS14}.toml"
    (checkout / budget).write_text(block("toml", f"# {budget}"))
    dist = checkout / "dist"

    def wheel_in_dist(version: str) -> None:
        shutil.rmtree(dist, ignore_errors=True)
        dist.mkdir()
        wheel = _wheel(MACOS14, version)
        shutil.copy(wheel, dist / wheel.name)

    wheel_in_dist(VERSION)
    shutil.rmtree(checkout / "main", ignore_errors=True)
    (checkout / "main").mkdir()
    saved = [_run(line, checkout, env) for line in main_lines]
    assert [d.returncode for d in saved] == [0], saved[0].stderr[-600:]
    for version, code in ((VERSION, 0), ("0.32.4", 1)):
        wheel_in_dist(version)
        done = [_run(line, checkout, env) for line in pr_lines]
        assert [d.returncode for d in done] == [code, code], done[1].stderr[-600:]
        assert (checkout / "size.md").is_file() and (checkout / "budget.md").is_file()
        if code:
            assert "growth" in done[0].stderr
            assert "error: budget exceeded: mlx-metal, macOS 14: max-size is" in done[1].stderr
    sizes = json.loads((checkout / "size.json").read_text(encoding="utf-8"))
    base, head = sizes["base"]["file_size"], sizes["head"]["file_size"]
    assert stated_bytes(r"grew the macOS 14 library by [\d.]+%, ([\d,]+) → ([\d,]+)") == (
        base,
        head,
    )
    assert f"by {100 * (head - base) / base:.1f}%" in " ".join(DOC.split())


def _dylib_preambles(folder: Path) -> dict[str, str]:
    """The preambles mlx-metal 0.32.1's libmlx.dylib (a build without MLX_METAL_JIT) holds,
    read with what ``metallib-builder sources`` runs: name -> text."""
    from builder.size.host_strings import host_strings

    with zipfile.ZipFile(_wheel(MACOS14)) as archive:
        data = archive.read("mlx/lib/libmlx.dylib")
    path = folder / "libmlx.dylib"
    path.write_bytes(data)
    found = host_strings(path, "mlx::core::metal") or []
    return {
        s.function.rsplit("::", 1)[1]: data[s.offset : s.offset + s.size - 1].decode()
        for s in found
        if s.function
    }


def _files(text: str, marker: str) -> tuple[list[str], dict[str, list[str]]]:
    """A preamble's lines per file (``marker`` names the file a run of lines comes from), without
    blank lines, ``#line``, quoted includes and ``#pragma once``; and the files' order by their
    first such line."""
    lines: dict[str, list[str]] = {}
    order: list[str] = []
    where = None
    for line in text.splitlines():
        found = re.fullmatch(marker, line)
        if found:
            where = found.group(1)
            continue
        if where is None or not line.strip() or line.startswith("#line "):
            continue
        if re.match(r'\s*#\s*include\s*"', line) or line.strip() == "#pragma once":
            continue
        if where not in lines:
            order.append(where)
        lines.setdefault(where, []).append(line)
    return order, lines


@pytest.mark.realdata
def test_the_differences_from_make_compiled_preamble(tmp_path: Path) -> None:
    """The 12 preambles of mlx-metal 0.32.1's libmlx.dylib against the tool's: the same lines of
    the same files; banners, #line numbering and file order as the doc says; the sizes it says."""
    from builder.jit.preamble import inline_preamble

    inc = _include_root(tmp_path / "inc")
    theirs = _dylib_preambles(tmp_path)
    assert len(theirs) == 12
    kernels = inc / KERNELS
    banner = r"///////////////////////////////////////////////////////////////////////////////"
    ours: dict[str, str] = {}
    moved = 0
    for name, text in theirs.items():
        header = kernels / "utils.h" if name == "utils" else next(kernels.rglob(f"{name}.h"))
        ours[name] = inline_preamble([header], [inc]).text
        assert text.startswith(
            f"\n// Copyright © 2025 Apple Inc.\n\n// Auto generated source for {KERNELS}/"
        )
        # MLX's rules of slashes sit only around its banners: drop those lines with them
        cleaned = re.sub(rf"{banner}\n(// Contents from \"[^\"]*\"\n){banner}\n", r"\1", text)
        cleaned = cleaned.removesuffix(f"{banner}\n").removesuffix(banner)
        their_order, their_lines = _files(cleaned, r'// Contents from "(.*)"')
        our_order, our_lines = _files(ours[name], r'#line \d+ "(.*)"')
        assert their_lines == our_lines, name
        moved += their_order != our_order
        assert "// Contents from" not in ours[name] and "Auto generated" not in ours[name]
        assert len(re.findall(r'^#line 1 "', text, flags=re.MULTILINE)) == len(their_order)
        for number, path, rest in re.findall(
            r'^#line (\d+) "(.*)"\n(.*)$', ours[name], flags=re.MULTILINE
        ):
            line = (inc / path).read_text().splitlines()[int(number) - 1]
            assert rest == ("" if line == "#pragma once" else line)  # the file's own numbering
    assert moved > 0  # MLX's order differs for the preambles made of several files
    assert stated_bytes(r"([\d,]+) bytes for the 12 against MLX's ([\d,]+)") == (
        sum(len(t.encode()) for t in ours.values()),
        sum(len(t.encode()) for t in theirs.values()),
    )


CHECKOUT = os.environ.get("METALLIB_BUILDER_MLX_CHECKOUT")


@pytest.mark.realdata
@pytest.mark.skipif(
    not CHECKOUT, reason="set METALLIB_BUILDER_MLX_CHECKOUT to a checkout of MLX v0.32.1"
)
@pytest.mark.parametrize("platform", [MACOS14, "macosx_15_0_arm64", MACOS26])
def test_mlx_own_tree_matches_each_library_exactly(tmp_path: Path, platform: str) -> None:
    """The doc's table, on MLX's own tree with the doc's metallib.toml: report leaves 0 bytes
    unattributed and variants --from finds every function and no kernel the library lacks, with
    no -D and no --exclude; the variants embed the bytes the doc's table of them says (measured
    there on the stand-in tree: MLX's own gives the same)."""
    root = Path(str(CHECKOUT))
    settings = root / KERNELS / "metallib.toml"
    settings.write_text(metallib_toml(), encoding="utf-8")
    tool = [sys.executable, "-m", "builder"]
    tree = ["--source-dir", KERNELS, "-I", ".", "--platform", platform]
    report = subprocess.run([*tool, "report", f"mlx-metal=={VERSION}", *tree, "--format", "json"],
                            cwd=root, capture_output=True, text=True, check=True)  # fmt: skip
    doc = json.loads(report.stdout)
    assert "other" not in {g["name"] for g in doc["groups"]}
    # the tree matches the library: no warning but the wheel-tag one (macOS 26.2 in a 26.0 wheel)
    assert [w for w in doc.get("warnings", []) if "above the wheel's platform tag" not in w] == []
    variants = subprocess.run([*tool, "variants", "--from", f"mlx-metal=={VERSION}", *tree, "-o",
                               str(tmp_path / "v"), "--format", "json"],
                              cwd=root, capture_output=True, text=True, check=True)  # fmt: skip
    written = json.loads(variants.stdout)
    source = written["source"]
    cells = table_row(platform)
    entries, kernels, functions = (int(c.replace(",", "")) for c in cells[3:6])
    assert (source["tree"]["entry_files"], source["tree"]["kernels"], source["function_count"]) == (
        entries, kernels, functions,
    )  # fmt: skip
    assert (
        (source["not_in_tree"], source["tree_kernels_missing"])
        == (0, 0)
        == tuple(int(c) for c in cells[6:8])
    )
    # the doc's table of what the run-time sources weigh: its rows for this platform
    rows = {MACOS14: ["all-aot", "jit-mode"], MACOS26: ["jit-mode"]}.get(platform, [])
    weighed = {v["name"]: v for v in written["variants"]}
    for name in rows:
        row = f"`{name}`, macOS {platform.split('_')[1]}"
        stated = dict(zip(table_row("variant"), table_row(row), strict=True))
        assert (int(stated["functions"]), int(stated["embedded bytes"].replace(",", ""))) == (
            len(weighed[name]["preambles"]),
            weighed[name]["embedded_bytes"],
        ), row


# MLX v0.32.1's mlx/backend/metal/kernels/CMakeLists.txt, build_kernel_base's METAL_FLAGS (less
# `-x metal`, which the `.metal` suffix implies): the reference the doc's `flags` are held to.
MLX_METAL_FLAGS = (
    "-Wall",
    "-Wextra",
    "-fno-fast-math",
    "-Wno-c++17-extensions",
    "-Wno-c++20-extensions",
    "-Wmetal-addr-spaces",
)


@pytest.mark.realdata
def test_an_aot_build_of_the_tree_compiles_with_mlx_flags(checkout: Path, tmp_path: Path) -> None:
    """The doc's metallib.toml gives an AOT build MLX's own flags, in MLX's order: the build's
    default flags and then the tree's ``[build] flags``, as the plan hands them to CMake."""
    from builder.cmake_build.plan import make_plan
    from builder.cmake_build.plan_model import BuildRequest

    request = BuildRequest().replace(
        source_dir=checkout / KERNELS, include_dirs=(checkout,), build_dir=tmp_path
    )
    plan = make_plan(request)
    assert plan.compiles, "an AOT build compiles the tree's entry files"
    assert (*plan.request.metal_flags, *plan.flags) == MLX_METAL_FLAGS


def test_the_vendored_figures_are_what_vendor_writes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/mlx.md's diff table and docs/jit.md state the vendored copy's lines, files and bytes:
    they are what `vendor` writes now, counted here as `wc -lc` counts them (a module added to or
    edited in embed's imports changes them, and this test says which figure to update)."""
    out = tmp_path / "cmake"
    code, _, err = run_cli(["vendor", str(out)], capsys)
    assert code == 0, err
    cmake = (out / "MetallibEmbed.cmake").read_bytes()
    cmake_lines = cmake.count(b"\n")
    generator = sorted(p for p in (out / "metallib_embed").rglob("*") if p.is_file())
    lines = sum(p.read_bytes().count(b"\n") for p in generator)
    size = sum(p.stat().st_size for p in generator)
    modules = sum(1 for p in generator if p.name != "metallib_embed.py")
    stated = " ".join(DOC.split())
    assert (
        f"| `cmake/MetallibEmbed.cmake` (vendored) | {cmake_lines:,} "
        f"({len(cmake):,} bytes) |" in stated
    )
    assert (
        f"| `cmake/metallib_embed/` (vendored: the script and {modules} modules) | {lines:,} in "
        f"{len(generator)} files ({size:,} bytes) |" in stated
    )
    jit = " ".join((ROOT / "docs" / "jit.md").read_text(encoding="utf-8").split())
    assert (
        f"{len(generator) + 1} files, {len(cmake) + size:,} bytes (`MetallibEmbed.cmake` "
        f"{cmake_lines:,} lines, {len(cmake):,} bytes; the script and {modules} modules, "
        f"{lines:,} lines, {size:,} bytes)" in jit
    )
