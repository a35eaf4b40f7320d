"""``metallib_embed_headers`` (cmake/MetallibEmbed.cmake) in a project of its own: configure and
build with the venv's CMake and Ninja, run a program printing the embedded text, and follow an
edit three includes deep (MLX: unary.metal -> unary_ops.h -> erf.h -> expm1f.h) through the depfile.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from builder.cmake_build.cmake import find_tool
from builder.jit.generate import embed_headers
from builder.resources import cmake_dir

KERNELS = "mlx/backend/metal/kernels"
MAIN = """\
#include <cstdio>
#include <cstring>

namespace mlx::core::metal {
const char* unary();
const char* unary_ops();
}

int main() {
  const char* texts[] = {mlx::core::metal::unary(), mlx::core::metal::unary_ops()};
  for (const char* text : texts) {
    std::fwrite(text, 1, std::strlen(text), stdout);
    std::fputc(0, stdout);
  }
  return 0;
}
"""


def _project(root: Path, call: str, main: str = MAIN) -> Path:
    """A consumer project: a static library the preambles go into, and a program using it."""
    src = root / "src"
    src.mkdir(parents=True, exist_ok=True)
    (src / "main.cpp").write_text(main, encoding="utf-8")
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.25)\n"
        "project(embed_consumer LANGUAGES CXX)\n"
        f'list(APPEND CMAKE_MODULE_PATH "{cmake_dir().as_posix()}")\n'
        "include(MetallibEmbed)\n"
        "add_library(preambles STATIC)\n"
        f"{call}\n"
        "add_executable(show main.cpp)\n"
        "target_link_libraries(show PRIVATE preambles)\n",
        encoding="utf-8",
    )
    return src


def _configure(src: Path, build: Path, *defs: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            find_tool("cmake"),
            "-S",
            str(src),
            "-B",
            str(build),
            "-G",
            "Ninja",
            f"-DCMAKE_MAKE_PROGRAM={find_tool('ninja')}",
            *defs,
        ],
        capture_output=True,
        text=True,
        check=False,
    )


def _ninja(build: Path) -> subprocess.CompletedProcess[str]:
    run = subprocess.run(
        [find_tool("ninja"), "-C", str(build)], capture_output=True, text=True, check=False
    )
    assert run.returncode == 0, run.stdout + run.stderr
    return run


def _show(build: Path) -> list[str]:
    out = subprocess.run([str(build / "show")], capture_output=True, check=True).stdout
    return out.decode("utf-8").split("\0")[:-1]


CALL = (
    "metallib_embed_headers(preambles NAMESPACE mlx::core::metal API cstring\n"
    f'  HEADERS "mlx headers/{KERNELS}/unary.h" "mlx headers/{KERNELS}/unary_ops.h"\n'
    '  INCLUDE_DIRECTORIES "mlx headers")'
)


def test_embeds_into_a_target_and_regenerates_through_the_depfile(
    mlx_headers: Path, tmp_path: Path
) -> None:
    src = _project(tmp_path, CALL)
    inc = src / "mlx headers"  # relative to the project's source folder, with a space
    shutil.copytree(mlx_headers / "mlx", inc / "mlx")
    build = tmp_path / "build"
    configure = _configure(src, build, f"-DMETALLIB_BUILDER_PYTHON={sys.executable}")
    assert configure.returncode == 0, configure.stdout + configure.stderr
    _ninja(build)
    headers = [inc / KERNELS / "unary.h", inc / KERNELS / "unary_ops.h"]

    def expected() -> list[str]:
        return [p.text for p in embed_headers(headers, [inc], api="cstring")[1]]

    assert _show(build) == expected()
    assert "no work to do" in _ninja(build).stdout

    expm1f = inc / KERNELS / "expm1f.h"  # unary_ops.h -> erf.h -> expm1f.h
    expm1f.write_text(expm1f.read_text(encoding="utf-8") + "// edited by the test\n", "utf-8")
    rebuild = _ninja(build).stdout
    assert "Embedding 2 header(s) into preambles" in rebuild
    texts = _show(build)
    assert texts == expected() and "// edited by the test" in texts[1]
    assert "no work to do" in _ninja(build).stdout

    # Touched but unchanged: the generator runs, its output keeps its bytes, nothing recompiles.
    (inc / KERNELS / "erf.h").touch()
    touched = _ninja(build).stdout
    assert "Embedding" in touched and "Building CXX" not in touched, touched
    assert "no work to do" in _ninja(build).stdout


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (CALL.replace("API cstring", "API cstring BOGUS 1"), "unknown argument(s) BOGUS 1"),
        (CALL.replace("API cstring", "API wide"), "API 'wide' is neither string nor cstring"),
        (CALL.replace("NAMESPACE mlx::core::metal ", ""), "NAMESPACE <ns> is required"),
        (CALL.replace("mlx::core::metal", "mlx::"), "NAMESPACE 'mlx::' is not a C++ namespace"),
        (
            CALL.replace("mlx::core::metal", "mlx::int::metal"),
            "NAMESPACE 'mlx::int::metal' is not a C++ namespace ('int' is a C++ keyword)",
        ),
        (
            CALL.replace("unary.h", "nope.h"),
            f"HEADERS: 'mlx headers/{KERNELS}/nope.h' is not a file",
        ),
        (
            CALL.replace('INCLUDE_DIRECTORIES "mlx headers"', "INCLUDE_DIRECTORIES"),
            "INCLUDE_DIRECTORIES given without a value",
        ),
        (CALL.replace("(preambles", "(missing"), "no target named 'missing'"),
    ],
)
def test_bad_arguments_stop_the_configure_naming_them(
    mlx_headers: Path, tmp_path: Path, call: str, message: str
) -> None:
    src = _project(tmp_path, call)
    shutil.copytree(mlx_headers / "mlx", src / "mlx headers" / "mlx")
    run = _configure(src, tmp_path / "build", f"-DMETALLIB_BUILDER_PYTHON={sys.executable}")
    assert run.returncode != 0
    assert message in " ".join(run.stderr.split()), run.stderr


def test_a_python_without_the_generator_is_named_at_configure(tmp_path: Path) -> None:
    fake = tmp_path / "python"
    fake.write_text(
        "#!/bin/sh\necho \"ModuleNotFoundError: No module named 'builder'\" >&2\nexit 1\n",
        encoding="utf-8",
    )
    fake.chmod(0o755)
    src = _project(
        tmp_path,
        f"metallib_embed_headers(preambles NAMESPACE ns HEADERS k.h\n"
        f'  INCLUDE_DIRECTORIES . PYTHON "{fake}")',
    )
    (src / "k.h").write_text("int k;\n", encoding="utf-8")
    run = _configure(src, tmp_path / "build")
    assert run.returncode != 0
    said = " ".join(run.stderr.split())
    assert f"{fake} cannot import metallib-builder's generator" in said
    assert "No module named 'builder'" in said and "METALLIB_BUILDER_PYTHONPATH" in said


def test_two_calls_on_one_target_and_the_string_api(tmp_path: Path) -> None:
    """A second call gets its own source (``<target>_2.cpp``), a relative OUTPUT lands in the
    binary folder; API string gives std::string functions; DEFINES come first in the text."""
    main = (
        "#include <cstdio>\n#include <cstring>\n#include <string>\n"
        "namespace one { const char* k(); }\nnamespace two::b { const std::string& k(); }\n"
        "int main() {\n"
        "  std::fwrite(one::k(), 1, std::strlen(one::k()), stdout);\n  std::fputc(0, stdout);\n"
        "  std::fwrite(two::b::k().data(), 1, two::b::k().size(), stdout);\n"
        "  std::fputc(0, stdout);\n  return 0;\n}\n"
    )
    calls = (
        "metallib_embed_headers(preambles NAMESPACE one API cstring HEADERS inc/k.h\n"
        "  INCLUDE_DIRECTORIES inc)\n"
        "metallib_embed_headers(preambles NAMESPACE two::b HEADERS inc/k.h "
        "INCLUDE_DIRECTORIES inc\n"
        "  DEFINES SECOND=2)\n"
        "metallib_embed_headers(preambles NAMESPACE three HEADERS inc/d.h INCLUDE_DIRECTORIES inc\n"
        "  OUTPUT gen/third.cpp)\n"
        "get_target_property(sources preambles METALLIB_EMBED_SOURCES)\n"
        'message(STATUS "embedded: ${sources}")'
    )
    src = _project(tmp_path, calls, main)
    (src / "inc").mkdir()
    (src / "inc/k.h").write_text('#pragma once\n#include "d.h"\nint k = D;\n', encoding="utf-8")
    (src / "inc/d.h").write_text("#define D 4\n", encoding="utf-8")
    build = tmp_path / "build"
    configure = _configure(src, build, f"-DMETALLIB_BUILDER_PYTHON={sys.executable}")
    assert configure.returncode == 0, configure.stdout + configure.stderr
    assert (
        f"embedded: {build}/metallib_embed/preambles.cpp;{build}/metallib_embed/preambles_2.cpp;"
        f"{build}/gen/third.cpp" in configure.stdout
    )
    _ninja(build)
    first, second = _show(build)
    assert first == '#line 1 "d.h"\n#define D 4\n#line 3 "k.h"\nint k = D;\n'
    assert second == "#define SECOND 2\n" + first


ALWAYS = ["utils", "binary_ops", "unary_ops", "ternary_ops", "reduce_utils", "gather"]
"""MLX's unconditional group: its host code uses these even in an AOT build."""


def _mlx_layout(root: Path, include_root: Path, groups: dict[str, list[Path]]) -> Path:
    """A project of MLX's shape: the top level creates ``mlx``; ``mlx/backend/metal`` embeds
    three groups into it (unconditional, ``if(MLX_METAL_JIT)``, NAX), the functions called by
    name (LOOKUP OFF), every generated source compiled with jit/includes.h included first."""
    includes_h = include_root / "mlx/backend/metal/jit/includes.h"
    (root / "mlx/backend/metal").mkdir(parents=True)
    (root / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.25)\n"
        "project(mlx_shape LANGUAGES CXX)\n"
        f'list(APPEND CMAKE_MODULE_PATH "{cmake_dir().as_posix()}")\n'
        "include(MetallibEmbed)\n"
        'option(MLX_METAL_JIT "JIT" OFF)\n'
        "add_library(mlx STATIC)\n"
        "target_compile_options(mlx PRIVATE -Wall -Wextra -Werror -include\n"
        f'  "{includes_h.as_posix()}")\n'
        "add_subdirectory(mlx/backend/metal)\n"
        "add_executable(dump dump.cpp)\n"
        f'target_include_directories(dump PRIVATE "{include_root.as_posix()}")\n'
        "target_compile_options(dump PRIVATE -Wall -Wextra -Werror)\n"
        "target_link_libraries(dump PRIVATE mlx)\n",
        encoding="utf-8",
    )

    def call(headers: list[Path]) -> str:
        listed = " ".join(f'"{h.as_posix()}"' for h in headers)
        return (
            "metallib_embed_headers(mlx NAMESPACE mlx::core::metal API cstring LOOKUP OFF\n"
            f'  HEADERS {listed}\n  INCLUDE_DIRECTORIES "{include_root.as_posix()}")\n'
        )

    (root / "mlx/backend/metal/CMakeLists.txt").write_text(
        call(groups["always"])
        + f"if(MLX_METAL_JIT)\n{call(groups['jit'])}endif()\n"
        + call(groups["nax"]),
        encoding="utf-8",
    )
    return root


def test_mlx_layout_links_three_groups_embedded_from_another_directory(
    tmp_path: Path,
) -> None:
    """Issue 28 item 1 on MLX v0.32.1's real headers (mlx-metal 0.32.1 wheel): every function
    jit/includes.h declares is defined, once, with its declared type (-Werror, includes.h first),
    no other function is defined in the namespace, and each returns the reference inliner's text
    of its header."""
    import re
    import zipfile

    from mlx_tree import MLX_PLATFORM, extract_kernel_headers
    from support.reference_inliner import reference_preamble

    from builder.inputs import wheel_cache, wheels

    try:
        wheel = wheels.download_wheel("mlx-metal", "0.32.1", MLX_PLATFORM)
    except wheel_cache.DownloadError as exc:
        pytest.skip(f"PACKAGE INDEX UNREACHABLE, real-data test skipped: {exc}")
    inc = tmp_path / "include"
    shutil.copytree(
        extract_kernel_headers(wheel, wheel_cache.cache_dir() / "kernel-headers" / wheel.name[:-4]),
        inc,
    )
    with zipfile.ZipFile(wheel) as archive:
        declared_text = archive.read("mlx/include/mlx/backend/metal/jit/includes.h").decode()
    (inc / "mlx/backend/metal/jit").mkdir(parents=True, exist_ok=True)
    (inc / "mlx/backend/metal/jit/includes.h").write_text(declared_text, encoding="utf-8")
    declared = re.findall(r"const char\* (\w+)\(\);", declared_text)
    assert len(declared) == 49

    kernels = inc / KERNELS
    header = {
        name: kernels / "utils.h" if name == "utils" else next(kernels.rglob(f"{name}.h"))
        for name in declared
    }
    groups = {
        "always": [header[n] for n in ALWAYS],
        "nax": [header[n] for n in declared if n.endswith("_nax")],
    }
    groups["jit"] = [header[n] for n in declared if n not in ALWAYS and not n.endswith("_nax")]
    root = _mlx_layout(tmp_path / "src", inc, groups)
    calls = "\n".join(f"  mlx::core::metal::{n}()," for n in declared)
    (root / "dump.cpp").write_text(
        '#include "mlx/backend/metal/jit/includes.h"\n#include <cstdio>\n#include <cstring>\n'
        f"int main() {{\n  const char* texts[] = {{\n{calls}\n  }};\n"
        "  for (const char* text : texts) {\n"
        "    std::fwrite(text, 1, std::strlen(text), stdout);\n    std::fputc(0, stdout);\n  }\n"
        "  return 0;\n}\n",
        encoding="utf-8",
    )
    build = tmp_path / "build"
    configure = _configure(
        root, build, f"-DMETALLIB_BUILDER_PYTHON={sys.executable}", "-DMLX_METAL_JIT=ON"
    )
    assert configure.returncode == 0, configure.stdout + configure.stderr
    _ninja(build)
    texts = subprocess.run([str(build / "dump")], capture_output=True, check=True).stdout
    got = texts.decode("utf-8").split("\0")[:-1]
    assert got == [reference_preamble(header[n], [inc], strip=False) for n in declared]
    nm = subprocess.run(
        ["nm", "-C", "--defined-only", str(build / "libmlx.a")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    defined = set(re.findall(r" T mlx::core::metal::(\w+)\(\)", nm))
    assert defined == set(declared)


def test_a_second_lookup_in_one_namespace_is_named_at_configure(tmp_path: Path) -> None:
    """Two calls that would both define ns::preamble() fail at configure, naming the fix."""
    calls = (
        "metallib_embed_headers(preambles NAMESPACE ns HEADERS k.h INCLUDE_DIRECTORIES .)\n"
        "metallib_embed_headers(preambles NAMESPACE ns HEADERS d.h INCLUDE_DIRECTORIES .)"
    )
    src = _project(tmp_path, calls)
    (src / "k.h").write_text("int k;\n", encoding="utf-8")
    (src / "d.h").write_text("int d;\n", encoding="utf-8")
    run = _configure(src, tmp_path / "build", f"-DMETALLIB_BUILDER_PYTHON={sys.executable}")
    assert run.returncode != 0
    said = " ".join(run.stderr.split())
    assert "an earlier call already defines ns::preamble() for 'preambles'" in said
    assert "LOOKUP OFF" in said
