"""Entry files embedded whole (docs/jit.md, "Whole-file units") on trees of ggml's, llama.cpp's
and candle's shapes (tests/support/whole_file_trees.py): which embedding each file gets, the
settings over it, the plan of ``build --jit '*'`` (nothing AOT), and the text the host library's
``unit_source(unit)`` returns, compiled with AddressSanitizer and UBSan and compared with the
reference inliner (as tests/jit/test_roundtrip.py does for preambles)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.reference_inliner import c_quote, reference_preamble
from support.sanitized import EMIT, compile_and_run, texts
from support.whole_file_trees import SHAPES

from builder.cmake_build.plan import make_plan
from builder.cmake_build.plan_model import BuildRequest
from builder.cmake_build.tree_jit import generate
from builder.errors import UsageError
from builder.kernels.discovery import load_tree
from builder.kernels.tree_config import ConfigError

# read off the files: a file that writes its own templates, or all of whose kernels are its own,
# is embedded whole; llama's fa_*.metal instantiate a template written in fa_common.metal
WHOLE = {
    "ggml": {"ops.metal"},
    "llama": {"kernels/norm.metal"},
    "candle": {"fill.metal", "unary.metal"},
}


def _plan(root: Path, include_dirs: tuple[Path, ...]):  # type: ignore[no-untyped-def]
    request = BuildRequest().replace(source_dir=root, include_dirs=include_dirs, jit=("*",))
    return make_plan(request)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_jit_star_plans_every_entry_file_jit_in_its_embedding(shape: str, tmp_path: Path) -> None:
    root, include_dirs, expected = SHAPES[shape](tmp_path)
    tree = load_tree(root, include_dirs=include_dirs)
    assert {s: [r.name for r in rs] for s, rs in tree.by_source().items()} == expected
    assert {s for s, how in tree.embeddings().items() if how == "whole-file"} == WHOLE[shape]
    plan = _plan(root, include_dirs)  # the coverage check passed, or this raised
    assert plan.aot == () and plan.compiles == () and set(plan.jit) == set(expected)
    for unit in plan.units:
        whole = unit.name in WHOLE[shape]
        assert unit.embedding == ("whole-file" if whole else "preamble"), unit.name
        if whole:  # one run-time source: the file itself, named after it
            [spec] = [p for p in plan.preambles if p.function in unit.preambles]
            assert spec.headers == (str((root / unit.name).resolve()),)
            assert spec.entries == (unit.name,) and spec.embedding == "whole-file"


def test_metallib_toml_overrides_the_embedding_per_glob(tmp_path: Path) -> None:
    root, include_dirs, _ = SHAPES["llama"](tmp_path)
    toml = root / "metallib.toml"
    toml.write_text(
        '[build.embedding]\n"kernels/*.metal" = "whole-file"\n"kernels/norm.metal" = "preamble"\n'
    )
    tree = load_tree(root, include_dirs=include_dirs)
    assert tree.embeddings() == {  # later globs win
        "kernels/fa_f16.metal": "whole-file",
        "kernels/fa_f32.metal": "whole-file",
        "kernels/norm.metal": "preamble",
    }
    plan = _plan(root, include_dirs)
    norm = next(u for u in plan.units if u.name == "kernels/norm.metal")
    assert norm.preambles == ("common", "norm")  # its include, then itself: it writes a kernel
    toml.write_text('[build.embedding]\n"kernel/*.metal" = "whole-file"\n')
    with pytest.raises(UsageError, match=r"\[build.embedding\] 'kernel/\*.metal' matches no entry"):
        load_tree(root, include_dirs=include_dirs).embeddings()
    toml.write_text('[build.embedding]\n"kernels/*.metal" = "whole"\n')
    with pytest.raises(ConfigError, match="must be one of 'whole-file', 'preamble', got 'whole'"):
        load_tree(root, include_dirs=include_dirs)
    toml.write_text("[build]\nembeddings = {}\n")
    with pytest.raises(ConfigError, match="did you mean 'embedding'"):
        load_tree(root, include_dirs=include_dirs)


@pytest.mark.slow
def test_unit_source_returns_the_whole_file_as_the_reference_inliner_makes_it(
    tmp_path: Path,
) -> None:
    """Every shape's host-library sources, generated as the build generates them, compiled with
    the sanitizers into one program: ``unit_source(unit)`` is the reference inliner's text of a
    whole-file unit, "" for a preamble unit and for a name that is no unit."""
    sources: dict[str, str] = {}
    calls: list[str] = []
    declarations: list[str] = []
    expected: list[str] = []
    for k, shape in enumerate(sorted(SHAPES)):
        root, include_dirs, _ = SHAPES[shape](tmp_path / shape)
        plan = _plan(root, include_dirs)
        out = tmp_path / f"gen-{shape}"
        namespace = f"rt::{shape}"
        generate(plan, out, namespace)
        for cpp in sorted(out.rglob("*.cpp")):
            sources[f"{shape}-{k}-{len(sources)}.cpp"] = cpp.read_text()
        declarations.append(
            f"namespace {namespace} {{ std::string_view unit_source(std::string_view); }}"
        )
        for unit in plan.units:
            calls.append(f"  emit(rt::{shape}::unit_source({c_quote(unit.name)}));")
            whole = unit.embedding == "whole-file"
            dirs = [*include_dirs, root]
            expected.append(reference_preamble(root / unit.name, dirs, False) if whole else "")
        calls.append(f'  emit(rt::{shape}::unit_source("no-such.metal"));')
        expected.append("")
    sources["main.cpp"] = "\n".join(
        [EMIT, "#include <string>", *declarations, "int main() {", *calls, "  return 0;", "}", ""]
    )
    got = texts(compile_and_run(tmp_path / "build", sources))
    assert got == expected
    whole = [t for t in got if t]
    assert len(whole) == sum(len(w) for w in WHOLE.values())
    # each file once: ggml's header and llama's common.h appear once in the text that needs them
    assert sum(t.count('#line 1 "common-types.h"') for t in whole) == 1


def test_a_cstring_tree_build_returns_each_unit_s_whole_text_as_one_literal(
    tmp_path: Path,
) -> None:
    """``[build] jit-api = "cstring"`` and ``jit-namespace`` reach the build's host library
    (plan.json's ``jit_namespace``, ``jit_api``): every function is ``const char*`` in that
    namespace, the ``unit_source`` lookup still returns the reference inliner's text, embed.json
    counts each function's text on its own (``separate``: text + NUL, nothing shared); without
    ``jit-lookup`` no ``unit_source`` is defined."""
    import subprocess

    from builder.jit.preamble import inline_preamble
    from builder.kernels.bounded_run import find_compiler

    root, include_dirs, _ = SHAPES["ggml"](tmp_path / "ggml")
    settings = '[build]\njit-namespace = "app::rt"\njit-api = "cstring"\n'
    (root / "metallib.toml").write_text(settings, encoding="utf-8")
    plan = _plan(root, include_dirs)
    assert (plan.jit_namespace, plan.jit_api, plan.jit_lookup) == ("app::rt", "cstring", True)
    out = tmp_path / "gen"
    facts, _ = generate(plan, out)
    assert facts["storage"] == "separate" and facts["shared_bytes"] == sum(
        len(inline_preamble(p.headers, [*include_dirs, root]).text.encode()) + 1
        for p in plan.preambles
        if len(p.entries) != 1
    )
    sources = {f"{i}.cpp": cpp.read_text() for i, cpp in enumerate(sorted(out.rglob("*.cpp")))}
    assert not any("std::string&" in text for text in sources.values())
    calls = [f"  emit(app::rt::unit_source({c_quote(u.name)}));" for u in plan.units]
    sources["main.cpp"] = "\n".join(
        [EMIT, "namespace app::rt { std::string_view unit_source(std::string_view); }"]
        + ["int main() {", *calls, "  return 0;", "}", ""]
    )
    got = texts(compile_and_run(tmp_path / "build", sources))
    dirs = [*include_dirs, root]
    assert got == [
        reference_preamble(root / u.name, dirs, False) if u.embedding == "whole-file" else ""
        for u in plan.units
    ]
    (root / "metallib.toml").write_text(settings + "jit-lookup = false\n", encoding="utf-8")
    facts, _ = generate(_plan(root, include_dirs), tmp_path / "no-lookup")
    shared = tmp_path / "no-lookup" / "_shared_preambles.cpp"
    obj = tmp_path / "shared.o"
    flags = ["-std=c++17", "-Wall", "-Wextra", "-Werror", "-c"]
    subprocess.run([find_compiler().path, *flags, str(shared), "-o", str(obj)], check=True)
    nm = subprocess.run(["nm", "-C", str(obj)], capture_output=True, text=True, check=True)
    assert "unit_source" not in nm.stdout
