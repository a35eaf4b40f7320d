"""``build --jit-namespace/--jit-api/--jit-lookup`` (and their ``METALLIB_JIT_*`` cache
variables): the run-time sources' C++ interface, over metallib.toml's ``[build]`` as on
``variants --from``. Checked on the host library a build links (nm, and a program that calls
each function as ``const char*``), not on the generated text."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from support.reference_inliner import reference_preamble
from support.whole_file_trees import candle_tree

from builder.kernels.bounded_run import find_compiler

from .conftest import StandinBuild, cli_without_metal

_TOML = '[build]\njit-namespace = "toml_ns"\njit-api = "string"\njit-lookup = true\n'
"""What the options must beat: another namespace, the other API, a lookup."""
_OPTIONS = ("--jit-api", "cstring", "--jit-namespace", "a::b", "--no-jit-lookup")


def _tree(base: Path) -> tuple[Path, list[str]]:
    """The candle-shaped tree (every entry file embedded whole, no -I) under a metallib.toml
    saying otherwise; and its entry files."""
    root, _, expected = candle_tree(base / "candle")
    (root / "metallib.toml").write_text(_TOML, encoding="utf-8")
    return root, sorted(expected)


def _defined(library: Path) -> list[str]:
    """The demangled names of the functions ``library`` defines (its dynamic symbols)."""
    nm = subprocess.run(
        ["nm", "-D", "--defined-only", str(library)], capture_output=True, text=True, check=True
    )
    mangled = [line.split()[-1] for line in nm.stdout.splitlines() if " T " in line]
    demangled = subprocess.run(
        ["c++filt"], input="\n".join(mangled), capture_output=True, text=True, check=True
    )
    return demangled.stdout.split()


@pytest.mark.cmake
def test_build_options_set_the_host_library_s_interface_over_metallib_toml(
    tmp_path: Path,
) -> None:
    root, entries = _tree(tmp_path)
    build_dir = tmp_path / "b"
    done = cli_without_metal(
        "build", "--source-dir", str(root), "--jit", "*", *_OPTIONS, "--build-dir", str(build_dir)
    )
    assert done.returncode == 0, done.stderr
    library = build_dir / "libmetal_jit.so"
    defined = _defined(library)
    functions = [Path(e).stem for e in entries]  # a whole-file unit's function: its file's stem
    assert sorted(m[1] for n in defined if (m := re.fullmatch(r"a::b::(\w+)\(\)", n))) == functions
    assert not any("toml_ns" in name for name in defined)  # metallib.toml's namespace lost
    assert not any(re.search(r"unit_source|preamble\(", name) for name in defined)  # no lookup
    plan = json.loads((build_dir / "metal_plan" / "plan.json").read_text())
    interface = (plan["jit_namespace"], plan["jit_api"], plan["jit_lookup"])
    assert interface == ("a::b", "cstring", False)
    options = json.loads((build_dir / "manifest.json").read_text())["options"]  # the record
    recorded = {k: options[k] for k in ("METALLIB_JIT_NAMESPACE", "METALLIB_JIT_API")}
    assert recorded == {"METALLIB_JIT_NAMESPACE": "a::b", "METALLIB_JIT_API": "cstring"}
    assert options["METALLIB_JIT_LOOKUP"] is False
    # each function is const char*: a program declaring it so reads the file's whole text
    declared = " ".join(f"const char* {f}();" for f in functions)
    calls = "".join(
        f"  std::fputs(a::b::{f}(), stdout); std::fputc(0, stdout);\n" for f in functions
    )
    main = tmp_path / "main.cpp"
    head = f"#include <cstdio>\nnamespace a::b {{ {declared} }}\n"
    main.write_text(f"{head}int main() {{\n{calls}  return 0;\n}}\n")
    program = tmp_path / "main"
    link = [f"-L{build_dir}", "-lmetal_jit", f"-Wl,-rpath,{build_dir}"]
    cxx = [find_compiler().path, "-std=c++17", "-Wall", "-Werror", str(main), "-o", str(program)]
    subprocess.run([*cxx, *link], check=True)
    got = subprocess.run([str(program)], capture_output=True, check=True).stdout.decode()
    assert got.split("\0")[:-1] == [reference_preamble(root / e, [root], False) for e in entries]


def test_a_catalog_tree_refuses_them(tmp_path: Path) -> None:
    """The bundled catalog tree's host library is a registry with embed's interface: exit 2."""
    for option in (["--jit-api", "cstring"], ["--jit-namespace", "a"], ["--no-jit-lookup"]):
        done = cli_without_metal("build", "--jit", "*", *option, "--build-dir", str(tmp_path))
        assert done.returncode == 2, done.stderr
        assert "apply to a folder of .metal entry files" in done.stderr
        assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("namespace", "why"),
    [("a::", "letters, digits and _"), ("int", "'int' is a C++ keyword")],
)
def test_a_namespace_that_is_no_cxx_name_is_exit_2(
    namespace: str, why: str, tmp_path: Path
) -> None:
    root, _ = _tree(tmp_path)
    done = cli_without_metal(
        "build", "--source-dir", str(root), "--jit", "*", "--jit-namespace", namespace,
        "--build-dir", str(tmp_path / "b"),
    )  # fmt: skip
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    said = "error: --jit-namespace must be a C++ namespace such as"
    assert said in done.stderr and f"({why}" in done.stderr
    assert done.stderr.rstrip().endswith(f"got '{namespace}'")
    assert not (tmp_path / "b").exists()


@pytest.mark.cmake
def test_plain_cmake_cache_variables_say_the_same(tmp_path: Path) -> None:
    """-DMETALLIB_JIT_NAMESPACE/-API/-LOOKUP reach plan.json's jit_namespace, jit_api and jit_lookup
    over metallib.toml; an empty LOOKUP is metallib.toml's, a value that is no CMake boolean stops
    configuring."""
    root, _ = _tree(tmp_path)
    defines = {"METALLIB_JIT": "*", "METALLIB_JIT_NAMESPACE": "a::b", "METALLIB_JIT_API": "cstring"}
    for lookup, expected in (("off", False), ("", True)):
        build = StandinBuild(tmp_path / f"b{lookup}", root, tmp_path / "log", dict(defines))
        build.defines["METALLIB_JIT_LOOKUP"] = lookup
        build.configure()
        plan = json.loads((build.build_dir / "metal_plan" / "plan.json").read_text())
        interface = (plan["jit_namespace"], plan["jit_api"], plan["jit_lookup"])
        assert interface == ("a::b", "cstring", expected)
    build = StandinBuild(tmp_path / "bad", root, tmp_path / "log", {**defines})
    build.defines["METALLIB_JIT_LOOKUP"] = "maybe"
    done = build.configure(check=False)
    assert done.returncode != 0
    assert "METALLIB_JIT_LOOKUP=maybe: ON, OFF or empty" in " ".join(
        (done.stdout + done.stderr).split()
    )
