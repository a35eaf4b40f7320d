"""``variants.json``'s ``embed_command`` (issue 24 item 15): every variant that embeds sources has
the ``metallib-builder embed`` command that writes its ``jit_sources.cpp``, and running it gives
the same bytes.

It used to be there only when each preamble had the name ``embed`` would give it, which on MLX's
tree left it for ``all-aot`` alone: names are settled over the whole tree (two ``util.h`` in
different folders are ``one_util`` and ``two_util`` in every variant), while ``embed`` given one
of them would call it ``util``. Such a variant's command now names every preamble with
``--preamble NAME=HEADER``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from clirun import run_cli


def _clash_tree(root: Path) -> Path:
    """Two entry files whose kernel templates are in headers with the same stem."""
    for folder, kernel in (("one", "ka"), ("two", "kb")):
        (root / folder).mkdir(parents=True)
        (root / folder / "util.h").write_text(
            f"template <typename T>\n[[kernel]] void {kernel}(device T* x) {{ }}\n"
        )
    (root / "a.metal").write_text(
        '#include "one/util.h"\n'
        'template [[host_name("ka_float")]] [[kernel]] decltype(ka<float>) ka<float>;\n'
    )
    (root / "b.metal").write_text(
        '#include "two/util.h"\n'
        'template [[host_name("kb_float")]] [[kernel]] decltype(kb<float>) kb<float>;\n'
    )
    return root


@pytest.mark.parametrize("jit", [["a.metal"], ["a.metal", "b.metal"]])
def test_every_variant_that_embeds_sources_has_its_embed_command(
    jit: list[str],
    write_metallib: Callable[..., Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    tree = _clash_tree(tmp_path / "tree")
    library = write_metallib("k.metallib", [("ka_float", 400), ("kb_float", 500)])
    args = ["variants", "--from", str(library), "--source-dir", str(tree), "--format", "json"]
    code, out, err = run_cli([*args, "-o", str(tmp_path / "out"), "--jit", ",".join(jit)], capsys)
    assert code == 0, err
    variants = {v["name"]: v for v in json.loads(out)["variants"]}
    embedded = [v for v in variants.values() if v["jit_sources_file"] is not None]
    assert [v["name"] for v in embedded] == ["jit-1"]  # all-aot embeds nothing here
    assert variants["jit-1"]["jit_sources"] == jit
    for variant in embedded:
        cpp = Path(variant["jit_sources_file"]).read_text()
        assert "const std::string& one_util()" in cpp  # the tree's name, not embed's `util`
        command = variant["embed_command"]
        assert command[0] == "metallib-builder" and command[-2:] == [
            "-o",
            str(tmp_path / "out" / variant["name"] / "jit_sources.cpp"),
        ]
        mine = tmp_path / f"{variant['name']}.cpp"
        code, _, err = run_cli([*command[1:-2], "-o", str(mine)], capsys)
        assert code == 0, err
        assert mine.read_text() == cpp
    assert variants["all-aot"]["embed_command"] is None  # nothing to embed, no command
