"""What reaches the written C++ from the command line and metallib.toml is refused before
anything is written when it would not compile or would add lines of its own:

- a namespace with a C++ keyword as a part (``embed --jit-namespace int``,
  ``--jit-namespace app::class``, ``jit-namespace = "int"``): ``namespace int {`` does not
  compile, so the written ``jit_sources.cpp`` would not either. The reference is g++: the
  accepted namespace's file compiles, and the same file with the keyword does not;
- a ``-D`` of ``embed`` holding a control character (``X=1<newline>#include "/etc/passwd"``
  would put an ``#include`` line of its own into every preamble), as a tree's ``defines`` are.

Each refusal is one line and exit 2, and no output is written.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from clirun import run_cli

from builder.kernels.bounded_run import find_compiler
from builder.resources import metal_src_dir


def _tree(root: Path) -> Path:
    root.mkdir()
    (root / "a.metal").write_text("[[kernel]] void ka(device float* x) { }\n")
    (root / "b.metal").write_text("[[kernel]] void kb(device float* x) { }\n")
    return root


def _compile(source: Path) -> subprocess.CompletedProcess[str]:
    include = metal_src_dir() / "host" / "include"
    return subprocess.run(
        [find_compiler().path, "-std=c++17", "-Wall", "-Wextra", "-Werror", "-fsyntax-only"]
        + ["-I", str(include), str(source)],
        capture_output=True,
        text=True,
        check=False,
    )


def test_variants_writes_a_namespace_that_compiles_and_refuses_a_keyword(
    tmp_path: Path,
    write_metallib: Callable[..., Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    tree = _tree(tmp_path / "tree")
    library = write_metallib("k.metallib", [("ka", 300), ("kb", 300)])
    args = ["variants", "--from", str(library), "--source-dir", str(tree), "--jit", "a.metal"]
    out = tmp_path / "out"
    code, _, err = run_cli([*args, "-o", str(out), "--jit-namespace", "app::kernels"], capsys)
    assert code == 0, err
    doc = json.loads((out / "variants.json").read_text(encoding="utf-8"))
    (jit,) = [v for v in doc["variants"] if v["jit_sources_file"] is not None]
    source = Path(jit["jit_sources_file"])
    text = source.read_text(encoding="utf-8")
    assert "namespace app::kernels {" in text
    done = _compile(source)
    assert done.returncode == 0, done.stderr
    # the reference: the same file with a keyword as the namespace does not compile
    keyword = tmp_path / "keyword.cpp"
    keyword.write_text(text.replace("namespace app::kernels {", "namespace app::int {"))
    assert _compile(keyword).returncode != 0
    for name in ("int", "app::class", "char8_t"):
        bad = tmp_path / f"bad-{name.replace(':', '_')}"
        code, _, err = run_cli([*args, "-o", str(bad), "--jit-namespace", name], capsys)
        kw = name.split("::")[-1]
        assert code == 2 and err.count("\n") == 1, err
        assert err == (
            'error: --jit-namespace must be a C++ namespace such as "metal_jit" or '
            f"\"mlx::core::metal\" ('{kw}' is a C++ keyword), got '{name}'\n"
        )
        assert not bad.exists()


def test_a_keyword_in_metallib_toml_is_one_line(
    tmp_path: Path,
    write_metallib: Callable[..., Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    tree = _tree(tmp_path / "tree")
    (tree / "metallib.toml").write_text('[build]\njit-namespace = "mlx::int::metal"\n')
    library = write_metallib("k.metallib", [("ka", 300), ("kb", 300)])
    out = tmp_path / "out"
    code, _, err = run_cli(
        ["variants", "--from", str(library), "--source-dir", str(tree), "-o", str(out)], capsys
    )
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith(f"error: {tree / 'metallib.toml'}: [build] jit-namespace must be a C++")
    assert "('int' is a C++ keyword), got 'mlx::int::metal'" in err
    assert not out.exists()


@pytest.mark.parametrize(
    ("option", "said"),
    [
        (["--jit-namespace", "int"], "--jit-namespace must be a C++ namespace such as"),
        (["--jit-namespace", "a::while::b"], "('while' is a C++ keyword)"),
        (["-D", 'X=1\n#include "/etc/passwd"'], "holds the control character"),
        (["-D", "X=\x1b[31m"], "holds the control character"),
        (["-D", "X=1\r"], "holds the control character"),
    ],
)
def test_embed_refuses_before_writing(
    option: list[str], said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    header = tmp_path / "k.h"
    header.write_text("int k;\n")
    out = tmp_path / "pre.cpp"
    code, _, err = run_cli(["embed", str(header), "-o", str(out), *option], capsys)
    assert code == 2 and err.count("\n") == 1 and said in err, err
    assert "/etc/passwd" not in err or "\\n#include" in err  # the newline shown escaped
    assert not out.exists()
    code, _, err = run_cli(["embed", str(header), "-o", str(out), "-D", "X=1 + 2"], capsys)
    assert code == 0, err
    assert "#define X 1 + 2\n" in out.read_text()


def _said(call: Callable[[], object], error: type[Exception]) -> str | None:
    """The refusal ``call`` raises (``error``'s text), or None when it runs."""
    try:
        call()
    except error as exc:
        return str(exc)
    return None


@pytest.mark.parametrize(
    ("name", "value"),
    [("jit_namespace", v) for v in ["metal_jit", "mlx::core::metal", "int", "a::while::b"]]
    + [("jit_namespace", v) for v in ["a::", "a b", "a\nb", "", 5]]
    + [("jit_api", v) for v in ["string", "cstring", "char*", "string\n", "String", "", None]],
)
def test_embed_reads_namespace_and_api_as_their_settings_do(
    name: str, value: object, tmp_path: Path
) -> None:
    """embed checks its namespace and API by the rules themselves, not through the settings
    registry (its vendored copy holds none): what it accepts and how it words a refusal are the
    registry's, ``setting(name).read``, the reference, in the command line's words
    (``embed_headers``: UsageError naming the flag) and :func:`render_standalone`'s
    (ValueError naming its parameter)."""
    from builder.errors import UsageError
    from builder.jit.generate import embed_headers, render_standalone
    from builder.settings.declared import setting

    header = tmp_path / "k.h"
    header.write_text("int k;\n")
    namespace, api = (value, "string") if name == "jit_namespace" else ("metal_jit", value)
    flag, where = (
        ("--jit-namespace", "namespace") if name == "jit_namespace" else ("--jit-api", "api")
    )
    expected = _said(lambda: setting(name).read(value, flag), UsageError)
    embedded = _said(lambda: embed_headers([header], [], namespace=namespace, api=api), UsageError)  # type: ignore[arg-type]
    assert embedded == expected
    expected = _said(lambda: setting(name).read(value, where, error=ValueError), ValueError)
    rendered = _said(lambda: render_standalone([], namespace, "k.h", api=api), ValueError)  # type: ignore[arg-type]
    assert rendered == expected
    assert (expected is None) == (value in ("metal_jit", "mlx::core::metal", "string", "cstring"))
