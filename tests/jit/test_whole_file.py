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
from builder.cmake_build.request import BuildRequest
from builder.cmake_build.tree_jit import generate
from builder.errors import UsageError
from builder.kernels.discovery import load_tree
from builder.kernels.embedding import embeddings
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
    assert {s for s, how in embeddings(tree).items() if how == "whole-file"} == WHOLE[shape]
    plan = _plan(root, include_dirs)  # the coverage check passed, or this raised
    assert plan.aot == () and plan.compiles == () and set(plan.jit) == set(expected)
    for unit in plan.units:
        whole = unit.name in WHOLE[shape]
        assert unit.embedding == ("whole-file" if whole else "preamble"), unit.name
        if whole:  # one run-time source: the file itself, named after it
            [spec] = [p for p in plan.preambles if p["function"] in unit.preambles]
            assert spec["headers"] == [str((root / unit.name).resolve())]
            assert spec["entries"] == [unit.name] and spec["embedding"] == "whole-file"


def test_metallib_toml_overrides_the_embedding_per_glob(tmp_path: Path) -> None:
    root, include_dirs, _ = SHAPES["llama"](tmp_path)
    toml = root / "metallib.toml"
    toml.write_text(
        '[build.embedding]\n"kernels/*.metal" = "whole-file"\n"kernels/norm.metal" = "preamble"\n'
    )
    tree = load_tree(root, include_dirs=include_dirs)
    assert embeddings(tree) == {  # later globs win
        "kernels/fa_f16.metal": "whole-file",
        "kernels/fa_f32.metal": "whole-file",
        "kernels/norm.metal": "preamble",
    }
    plan = _plan(root, include_dirs)
    norm = next(u for u in plan.units if u.name == "kernels/norm.metal")
    assert norm.preambles == ("common", "norm")  # its include, then itself: it writes a kernel
    toml.write_text('[build.embedding]\n"kernel/*.metal" = "whole-file"\n')
    with pytest.raises(UsageError, match=r"\[build.embedding\] 'kernel/\*.metal' matches no entry"):
        embeddings(load_tree(root, include_dirs=include_dirs))
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
