"""``metallib-builder vendor DIR``: MetallibEmbed.cmake and a generator needing only Python's
standard library, written into a project's folder (issue 37, item 4). The vendored generator,
run by an interpreter that cannot import the package (``python -I -S``), writes the bytes
``python -m builder.jit embed`` writes, on the real headers of an mlx-metal wheel; ``--check``
tells a current copy from a stale, edited or foreign one."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.isolated_python import isolated_python

import builder
from builder.cmake_build.cmake import find_tool
from builder.resources import cmake_dir

KERNELS = "mlx/backend/metal/kernels"
HEADERS = ["utils.h", "unary.h", "steel/gemm/gemm.h", "quantized.h", "indexing/gather.h"]


def _vendor(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "builder", "vendor", *map(str, args)],
        capture_output=True,
        text=True,
        check=False,
    )


def _files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def vendored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("project") / "cmake"
    done = _vendor(folder)
    assert done.returncode == 0, done.stderr
    return folder


def test_the_copy_is_reproducible_and_names_its_version(vendored: Path, tmp_path: Path) -> None:
    """Two folders, two runs: the same bytes; each file's first line names this version; a
    second run writes nothing (no file's time changes, so a build regenerates nothing)."""
    other = tmp_path / "elsewhere" / "cmake"
    assert _vendor(other).returncode == 0
    files = _files(vendored)
    assert files == _files(other)
    assert "MetallibEmbed.cmake" in files and "metallib_embed/metallib_embed.py" in files
    first = f"# Vendored from metallib-builder {builder.__version__} ("
    assert all(data.startswith(first.encode()) for data in files.values())
    times = {p: p.stat().st_mtime_ns for p in other.rglob("*")}
    again = _vendor(other)
    assert again.returncode == 0 and "unchanged" in again.stderr
    assert {p: p.stat().st_mtime_ns for p in other.rglob("*")} == times


def test_the_modules_are_the_package_s_own(vendored: Path) -> None:
    """Each vendored module is the package's file with one header of two lines before it, and the
    set is closed: every builder module a vendored module imports is vendored too."""
    package = Path(builder.__file__).resolve().parent.parent
    modules = sorted((vendored / "metallib_embed").rglob("builder/**/*.py"))
    assert len(modules) > 5
    for path in modules:
        relative = path.relative_to(vendored / "metallib_embed")
        lines = path.read_bytes().split(b"\n", 2)
        assert lines[2] == (package / relative).read_bytes()


def test_the_copy_holds_embed_s_rules_not_the_settings(vendored: Path) -> None:
    """embed reads its namespace and API by the rules themselves, so the copy holds those rules
    (``builder.settings.text_rules``) and none of the settings: no declarations, no Setting
    model, no other validators, no JSON documents, no tree settings. (That the copy is enough
    is the next test's: it runs without the package.)"""
    folder = vendored / "metallib_embed"
    modules = {p.relative_to(folder).as_posix() for p in folder.rglob("builder/**/*.py")}
    assert "builder/settings/text_rules.py" in modules
    assert {m for m in modules if m.startswith("builder/settings/")} == {
        "builder/settings/__init__.py",
        "builder/settings/text_rules.py",
    }
    assert "builder/files/dataclass_json.py" not in modules
    assert "builder/kernels/runtime_sources.py" not in modules


def test_the_vendored_generator_runs_without_the_package(vendored: Path, tmp_path: Path) -> None:
    """Under ``python -I -S`` (builder not importable: asserted) the script names its version
    and embeds a tree as the package does: the copied modules import nothing outside them."""
    python = isolated_python(tmp_path / "bin")
    script = vendored / "metallib_embed/metallib_embed.py"
    version = subprocess.run(
        [python, script, "--version"], capture_output=True, text=True, check=True
    )
    assert version.stdout == f"metallib-builder {builder.__version__} (vendored)\n"
    tree = tmp_path / "tree"
    (tree / "common").mkdir(parents=True)
    (tree / "k.h").write_text('#pragma once\n#include "common/a.h"\nint k; // k\n')
    (tree / "common/a.h").write_text("/* a */ int a;\n")
    outputs = []
    for name, command in (
        ("package", [sys.executable, "-m", "builder.jit"]),
        ("vendored", [python, script]),
    ):
        out = tmp_path / f"{name}.cpp"
        done = subprocess.run(
            [*command, "embed", tree / "k.h", "-I", tree, "-o", out, "--strip-comments"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1] and b'#line 1 "common/a.h"' in outputs[0]
    # a builder imported before the script runs (as an editable install's import hook, which
    # comes before sys.path, would give it one): the script refuses to run another than its own
    run = "import builder, runpy, sys; sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0])"
    other = subprocess.run(
        [sys.executable, "-c", run, script, "--version"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert other.returncode == 2 and "not the vendored copy" in other.stderr


def test_the_cmake_function_is_the_package_s(vendored: Path) -> None:
    """metallib_embed_headers itself is the package's text: only the generator part differs, and
    it asks FindPython3 for an interpreter only, never for the package."""
    ours = (cmake_dir() / "MetallibEmbed.cmake").read_text()
    theirs = (vendored / "MetallibEmbed.cmake").read_text()

    def function(text: str) -> str:
        found = re.search(
            r"^function\(metallib_embed_headers .*?^endfunction\(\)\n",
            text,
            re.MULTILINE | re.DOTALL,
        )
        assert found is not None
        return found.group(0)

    assert function(theirs) == function(ours)
    assert "find_package(Python3 3.10 QUIET COMPONENTS Interpreter)" in theirs
    assert "MetallibBuilder" not in theirs.replace("metallib-builder", "")
    assert "include(" not in re.sub(r"#.*", "", theirs)


@pytest.mark.realdata
@pytest.mark.parametrize(
    "flags",
    [
        ["--jit-api", "cstring", "--no-jit-lookup", "--jit-namespace", "mlx::core::metal"],
        ["--strip-comments", "-D", "MLX_METAL_JIT=1"],
    ],
)
def test_the_vendored_generator_writes_the_package_s_bytes(
    vendored: Path, mlx_headers: Path, tmp_path: Path, flags: list[str]
) -> None:
    """Under an interpreter that cannot import builder, the vendored script writes the source and
    depfile ``python -m builder.jit embed`` writes, byte for byte, and refuses a missing include
    with the same line."""
    python = isolated_python(tmp_path / "bin")
    headers = [str(mlx_headers / KERNELS / h) for h in HEADERS]
    args = ["embed", *headers, "-I", str(mlx_headers), "-o", "out.cpp", "--depfile", "out.d"]
    runs = {}
    for name, command in (
        ("package", [sys.executable, "-m", "builder.jit"]),
        ("vendored", [str(python), str(vendored / "metallib_embed/metallib_embed.py")]),
    ):
        cwd = tmp_path / name
        cwd.mkdir()
        done = subprocess.run([*command, *args, *flags], cwd=cwd, capture_output=True, check=False)
        assert done.returncode == 0, done.stderr
        runs[name] = ((cwd / "out.cpp").read_bytes(), (cwd / "out.d").read_bytes())
        assert not list(vendored.rglob("__pycache__"))  # nothing written into the project
    assert runs["vendored"] == runs["package"]
    assert runs["package"][0].count(b"#line 1 ") >= len(HEADERS)
    broken = tmp_path / "broken.h"
    broken.write_text('#include "missing.h"\n')
    errors = [
        subprocess.run(
            [*command, "embed", str(broken), "-I", str(tmp_path), "-o", str(tmp_path / "x.cpp")],
            capture_output=True,
            text=True,
            check=False,
        )
        for command in (
            [sys.executable, "-m", "builder.jit"],
            [str(python), str(vendored / "metallib_embed/metallib_embed.py")],
        )
    ]
    assert [e.returncode for e in errors] == [2, 2]
    assert errors[0].stderr == errors[1].stderr and "missing.h" in errors[0].stderr


def _copy(vendored: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(vendored, tmp_path / "cmake"))


def test_check_says_current(vendored: Path) -> None:
    done = _vendor("--check", vendored)
    assert done.returncode == 0 and "current" in done.stderr, done.stderr


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ("edit", "metallib_embed/builder/jit/preamble.py: edited: line 50 differs"),
        ("version", "metallib_embed/builder/jit/writer.py: vendored from metallib-builder 0.0.1"),
        ("remove", "metallib_embed/builder/errors.py: missing"),
        ("add", "metallib_embed/builder/extra.py: not written by metallib-builder vendor"),
        ("cmake", "MetallibEmbed.cmake: edited: line 3 differs"),
    ],
)
def test_check_names_the_file_and_what_differs(
    vendored: Path, tmp_path: Path, change: str, says: str
) -> None:
    folder = _copy(vendored, tmp_path)
    gen = folder / "metallib_embed/builder"
    if change == "edit":
        lines = (gen / "jit/preamble.py").read_text().splitlines(keepends=True)
        lines[49] = "# a local change\n"
        (gen / "jit/preamble.py").write_text("".join(lines))
    elif change == "version":
        text = (gen / "jit/writer.py").read_text()
        (gen / "jit/writer.py").write_text(text.replace(builder.__version__, "0.0.1", 1))
    elif change == "remove":
        (gen / "errors.py").unlink()
    elif change == "add":
        (gen / "extra.py").write_text("x = 1\n")
    else:
        rows = (folder / "MetallibEmbed.cmake").read_text().split("\n")
        rows[2] = "# MetallibEmbed, changed"
        (folder / "MetallibEmbed.cmake").write_text("\n".join(rows))
    done = _vendor("--check", folder)
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()
    assert says in line and str(folder) in line
    assert _vendor(folder).returncode == 0  # vendor again: current
    assert _vendor("--check", folder).returncode == 0


def test_a_folder_that_is_not_vendored(tmp_path: Path) -> None:
    """--check of a folder with no vendored copy is exit 2; vendor into a folder whose
    MetallibEmbed.cmake is the project's own replaces nothing (exit 2)."""
    done = _vendor("--check", tmp_path)
    assert done.returncode == 2 and "not a vendored folder" in done.stderr
    own = tmp_path / "MetallibEmbed.cmake"
    own.write_text("# the project's own\n")
    done = _vendor(tmp_path)
    assert done.returncode == 2 and "not written by metallib-builder vendor" in done.stderr
    assert own.read_text() == "# the project's own\n" and not (tmp_path / "metallib_embed").exists()


@pytest.mark.realdata
def test_a_project_builds_with_the_vendored_files_and_no_package(
    vendored: Path, mlx_headers: Path, tmp_path: Path
) -> None:
    """A CMake project with only the vendored folder, configured with an interpreter that cannot
    import builder and no PYTHONPATH: it builds, the program prints the reference inliner's text,
    and an edit of an included header regenerates through the depfile."""
    python = isolated_python(tmp_path / "bin")
    src = tmp_path / "src"
    shutil.copytree(vendored, src / "cmake")
    shutil.copytree(mlx_headers / "mlx", src / "mlx")
    (src / "main.cpp").write_text(
        "#include <cstdio>\nnamespace mlx::core::metal { const char* unary_ops(); }\n"
        "int main() { std::fputs(mlx::core::metal::unary_ops(), stdout); }\n"
    )
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.25)\nproject(p LANGUAGES CXX)\n"
        'set(CMAKE_MODULE_PATH "${PROJECT_SOURCE_DIR}/cmake")\ninclude(MetallibEmbed)\n'
        "add_executable(show main.cpp)\n"
        "metallib_embed_headers(show NAMESPACE mlx::core::metal API cstring LOOKUP OFF\n"
        f"  HEADERS {KERNELS}/unary_ops.h INCLUDE_DIRECTORIES .)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    build = tmp_path / "build"
    configure = subprocess.run(
        [find_tool("cmake"), "-S", str(src), "-B", str(build), "-G", "Ninja",
         f"-DCMAKE_MAKE_PROGRAM={find_tool('ninja')}", f"-DPython3_EXECUTABLE={python}"],
        capture_output=True, text=True, check=False, env=env,
    )  # fmt: skip
    assert configure.returncode == 0, configure.stdout + configure.stderr

    def show() -> bytes:
        done = subprocess.run(
            [find_tool("ninja"), "-C", str(build)], capture_output=True, env=env, check=False
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return subprocess.run([str(build / "show")], capture_output=True, check=True).stdout

    from support.reference_inliner import reference_preamble

    def expected() -> bytes:
        return reference_preamble(src / KERNELS / "unary_ops.h", [src], strip=False).encode()

    assert show() == expected()
    deep = src / KERNELS / "expm1f.h"  # included by unary_ops.h
    deep.write_text(deep.read_text() + "\n// edited\n")
    shown = show()  # (the reference reads each file once: the package's embed is the reference now)
    from builder.jit.generate import embed_headers

    (preamble,) = embed_headers([src / KERNELS / "unary_ops.h"], [src])[1]
    assert b"// edited" in shown and shown == preamble.text.encode()


@pytest.mark.parametrize("broken", ["interpreter", "mixed"])
def test_a_generator_that_cannot_run_stops_the_configure(
    vendored: Path, tmp_path: Path, broken: str
) -> None:
    """An interpreter that cannot run the script (METALLIB_BUILDER_PYTHON=/bin/false), or a
    generator folder of another version than the module (a copy mixed by hand), stop the
    configure with one error naming the interpreter and the script, not the build later."""
    src = tmp_path / "src"
    shutil.copytree(vendored, src / "cmake")
    (src / "k.h").write_text("int k;\n")
    (src / "main.cpp").write_text("int main() {}\n")
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.25)\nproject(p LANGUAGES CXX)\n"
        "include(cmake/MetallibEmbed.cmake)\nadd_executable(show main.cpp)\n"
        "metallib_embed_headers(show NAMESPACE ns HEADERS k.h INCLUDE_DIRECTORIES .)\n"
    )
    defs = [f"-DPython3_EXECUTABLE={sys.executable}"]
    if broken == "interpreter":
        defs.append("-DMETALLIB_BUILDER_PYTHON=/bin/false")
    else:
        init = src / "cmake/metallib_embed/builder/__init__.py"
        init.write_text(init.read_text().replace(f'"{builder.__version__}"', '"0.0.1"'))
    configure = subprocess.run(
        [find_tool("cmake"), "-S", str(src), "-B", str(tmp_path / "build"), "-G", "Ninja",
         f"-DCMAKE_MAKE_PROGRAM={find_tool('ninja')}", *defs],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert configure.returncode != 0
    error = " ".join(configure.stderr.split())
    assert (
        "metallib_embed_headers(show): " in error and "cannot run the vendored generator" in error
    )
    assert (
        "/bin/false" if broken == "interpreter" else "metallib-builder 0.0.1 (vendored)"
    ) in error
