"""metallib.toml: the whole schema read, paths relative to the file, flags winning, and every
kind of mistake stopping with one line that names the key and the file."""

from __future__ import annotations

from pathlib import Path

import pytest
from kernels.discovery.expected import BY_FILE, VERSIONED_320

from builder.errors import UsageError
from builder.kernels.discovery import load_tree
from builder.kernels.tree_config import ConfigError, load_config, merge_flags

FULL = """
[kernels]
include-dirs = ["..", "inc"]
defines = ["MLX_METAL_JIT=0", "NDEBUG", "F(x)=x"]
exclude = ["steel/**/*_nax.metal"]
metal-version = 320

[build]
library = "mlx.metallib"
aot-only = ["arg_reduce.metal", "conv.metal"]

[build.preambles]
unary = "unary.h"
utils = ["utils.h", "../shared/defines.h"]
"""


def _write(folder: Path, text: str, name: str = "metallib.toml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_full_schema(tmp_path: Path) -> None:
    path = _write(tmp_path / "proj" / "kernels", FULL)
    config = load_config(path)
    base = tmp_path / "proj" / "kernels"
    assert config.path == path
    assert config.include_dirs == (tmp_path / "proj", base / "inc")
    assert config.defines == ("MLX_METAL_JIT=0", "NDEBUG", "F(x)=x")
    assert config.exclude == ("steel/**/*_nax.metal",)
    assert config.metal_version == 320
    assert config.library == "mlx"
    assert config.aot_only == ("arg_reduce.metal", "conv.metal")
    assert dict(config.preambles) == {
        "unary": (base / "unary.h",),
        "utils": (base / "utils.h", tmp_path / "proj" / "shared" / "defines.h"),
    }


def test_run_time_source_settings(tmp_path: Path) -> None:
    """[build] jit-namespace / jit-api / jit-lookup / always-embed / preamble-set, and their
    defaults (embed's: metal_jit, string, a lookup, the entry files' includes)."""
    from builder.kernels.runtime_sources import RuntimeSources

    assert load_config(_write(tmp_path / "none", FULL)).runtime == RuntimeSources()
    text = FULL.replace(
        "[build]\n",
        '[build]\njit-namespace = "mlx::core::metal"\njit-api = "cstring"\n'
        'jit-lookup = false\nalways-embed = ["utils", "unary", "utils"]\npreamble-set = "table"\n',
    )
    runtime = load_config(_write(tmp_path / "all", text)).runtime
    assert runtime == RuntimeSources(
        "mlx::core::metal", "cstring", False, ("utils", "unary"), "table"
    )
    assert (runtime.table_only, runtime.storage) == (True, "separate")
    assert RuntimeSources().storage == "deduplicated"


def test_flags_win(tmp_path: Path) -> None:
    config = load_config(_write(tmp_path, FULL))
    merged = merge_flags(config, [tmp_path / "first"], ["NDEBUG=0"], ["x.metal"])
    assert merged.include_dirs[0] == tmp_path / "first"
    assert merged.include_dirs[1:] == config.include_dirs
    assert merged.defines[-1] == "NDEBUG=0"  # later wins by name when preprocessing
    assert merged.exclude == ("steel/**/*_nax.metal", "x.metal")


@pytest.mark.realdata
def test_tree_reads_its_metallib_toml(tree_copy: Path, mlx_headers: Path, tmp_path: Path) -> None:
    # include-dirs relative to the file, inside the tree; the headers come with -I.
    (tree_copy / "inc").mkdir()
    _write(
        tree_copy,
        '[kernels]\ninclude-dirs = ["inc"]\nexclude = ["tiles/*"]\nmetal-version = 320\n',
    )
    tree = load_tree(tree_copy, include_dirs=[mlx_headers])
    assert tree.config.path == tree_copy / "metallib.toml"
    assert tree.config.include_dirs == (mlx_headers, tree_copy / "inc")
    assert set(tree.sources) == set(BY_FILE) - {"tiles/tile_copy.metal"}
    versioned = {r.name for r in tree.kernels if r.source == "versioned.metal"}
    assert versioned == VERSIONED_320
    # A flag wins over metal-version; --config replaces the folder's file.
    tree = load_tree(tree_copy, include_dirs=[mlx_headers], defines=["__METAL_VERSION__=310"])
    assert "before_msl32" in {r.name for r in tree.kernels}
    # a file outside the tree is the operator's: its folders may be anywhere
    (tmp_path / "headers").symlink_to(mlx_headers, target_is_directory=True)
    other = _write(tmp_path / "elsewhere", '[kernels]\ninclude-dirs = ["../headers"]\n', "x.toml")
    assert "tiles/tile_copy.metal" in load_tree(tree_copy, config_file=other).sources


@pytest.mark.parametrize("value", ["../headers", "/etc", "link"])
def test_the_trees_own_include_dirs_stay_in_the_tree(value: str, tmp_path: Path) -> None:
    """``..`` out of the tree, an absolute folder elsewhere and a symlinked folder inside the
    tree pointing out: each names the key and the value (folders from -I are the user's)."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a.metal").write_text("kernel void ka() {}\n")
    (tmp_path / "headers").mkdir()
    (tree / "link").symlink_to(tmp_path / "headers", target_is_directory=True)
    path = _write(tree, f'[kernels]\ninclude-dirs = ["{value}"]\n')
    with pytest.raises(UsageError) as info:
        load_tree(tree)
    message = str(info.value)
    assert message.startswith(f"{path}: [kernels] include-dirs {value!r} resolves to ")
    assert f"outside the tree {tree}" in message and "-I" in message
    assert len(load_tree(tree, config_file=_write(tmp_path, "", "empty.toml")).kernels) == 1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "[kernels]\ninclude-dir = ['a']\n",
            "unknown key in [kernels]: 'include-dir'; did you mean 'include-dirs'?",
        ),
        ("[kernel]\n", "unknown key 'kernel'; did you mean 'kernels'?"),
        ("[build]\nlibary = 'x'\n", "did you mean 'library'?"),
        (
            "[kernels]\ninclude-dirs = 'a'\n",
            "[kernels] include-dirs must be a list of strings, got 'a'",
        ),
        (
            "[kernels]\ndefines = ['1BAD']\n",
            "[kernels] defines must be NAME or NAME=VALUE, without",
        ),
        (
            "[kernels]\nmetal-version = '3.2'\n",
            "[kernels] metal-version must be an integer such as 310",
        ),
        ("[kernels]\nmetal-version = true\n", "metal-version must be an integer"),
        ("[build]\nlibrary = 'a/b'\n", "[build] library must be a file name without folders"),
        ("[build]\npreambles = 3\n", "[build] preambles must be a table"),
        ("[build.preambles]\nunary = 3\n", "[build.preambles] unary must be a header path"),
        ("[build.preambles]\n'not-a-name' = 'x.h'\n", "'not-a-name' is not a C++ function name"),
        ("[build]\njit-api = 'char*'\n", "[build] jit-api must be one of 'string', 'cstring'"),
        ("[build]\njit-namespace = 'a::'\n", "[build] jit-namespace must be a C++ namespace"),
        ("[build]\njit-lookup = 'no'\n", "[build] jit-lookup must be true or false"),
        ("[build]\njit-namspace = 'a'\n", "did you mean 'jit-namespace'?"),
        ("[build]\npreamble-set = 'all'\n", "[build] preamble-set must be one of 'includes'"),
        ("[build]\npreamble-set = 'table'\n", 'preamble-set = "table" needs a [build.preambles]'),
        (
            "[build]\nalways-embed = ['util']\n[build.preambles]\nutils = 'u.h'\n",
            (
                "[build] always-embed names 'util', which [build.preambles] does not define; "
                "did you mean 'utils'?"
            ),
        ),
        (  # a control character in a glob was a TypeError (exit 3) before
            '[build.embedding]\n"a\\u0001" = "preamble"\n',
            "[build.embedding] 'a\\x01' holds a control character",
        ),
        ("kernels = 3\n", "[kernels] must be a table"),
        ("[kernels\n", "invalid TOML"),
    ],
)
def test_mistakes_name_the_key_and_the_file(tmp_path: Path, text: str, expected: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ") and expected in message
    assert "\n" not in message


def test_not_utf8_and_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "metallib.toml"
    path.write_bytes(b"[kernels]\n# \xff\n")
    with pytest.raises(ConfigError, match="not UTF-8 text"):
        load_config(path)
    with pytest.raises(ConfigError, match="--config .*: no such file"):
        load_tree(tmp_path, config_file=tmp_path / "missing.toml")
