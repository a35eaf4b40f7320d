"""A tree cannot make the tool read a file outside itself (issue 24, items 4 and 5).

The pull request's tree tries every way out: ``include-dirs`` in its own metallib.toml naming
``/etc``-like folders (absolute, ``..``, a symlinked folder), an entry file that is a link out, a
quoted include that leaves through ``..`` or a linked header, one whose target stops the
preprocessor with ``#error`` (the diagnostic would quote it), and an include in an ``#if 0``
branch (never read by the preprocessor, but inlined by the JIT side). Every command that reads a
tree ends with exit 2 and one line, and the planted text is in no output and no file written. A
folder outside the tree named with ``-I`` is the user's choice and is read.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from support.hostile import Cli, assert_one_error_line, library_with

PLANTED = "PLANTED_OUTSIDE_7f3a"
KERNELS = ["ka", "kb", "planted_outside"]


def _layout(tmp_path: Path) -> tuple[Path, Path]:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.h").write_text(
        f"// {PLANTED}\nkernel void planted_outside() {{}}\n#define SECRET_{PLANTED} 1\n"
    )
    (outside / "err.h").write_text(f"#error {PLANTED}\n")
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "a.metal").write_text("kernel void ka() {}\n")
    return tree, outside


def _toml(tree: Path, text: str) -> None:
    (tree / "metallib.toml").write_text(text)


def _entry(tree: Path, text: str) -> None:
    (tree / "b.metal").write_text(text + "\nkernel void kb() {}\n")


def _absolute_folder(tree: Path, outside: Path) -> str:
    _toml(tree, f'[kernels]\ninclude-dirs = ["{outside}"]\n')
    _entry(tree, '#include "secret.h"')
    return "[kernels] include-dirs"


def _parent_folder(tree: Path, outside: Path) -> str:
    _toml(tree, '[kernels]\ninclude-dirs = [".."]\n')
    _entry(tree, '#include "outside/secret.h"')
    return "'..'"


def _linked_folder(tree: Path, outside: Path) -> str:
    (tree / "inc").symlink_to(outside, target_is_directory=True)
    _toml(tree, '[kernels]\ninclude-dirs = ["inc"]\n')
    _entry(tree, '#include "secret.h"')
    return "'inc'"


def _linked_entry(tree: Path, outside: Path) -> str:
    (tree / "b.metal").symlink_to(outside / "secret.h")
    return "b.metal: entry file resolves to"


def _linked_entry_with_error(tree: Path, outside: Path) -> str:
    (tree / "b.metal").symlink_to(outside / "err.h")
    return "b.metal: entry file resolves to"


def _dotdot_include(tree: Path, outside: Path) -> str:
    (tree / "sub" / "b.h").write_text('// first line\n#include "../../outside/secret.h"\n')
    _entry(tree, '#include "sub/b.h"')
    return "sub/b.h:2: includes"


def _linked_header(tree: Path, outside: Path) -> str:
    (tree / "sub" / "link.h").symlink_to(outside / "secret.h")
    _entry(tree, '\n\n#include "sub/link.h"')
    return "b.metal:3: includes"


def _error_include(tree: Path, outside: Path) -> str:
    (tree / "sub" / "b.h").write_text('#include "../../outside/err.h"\n')
    _entry(tree, '#include "sub/b.h"')
    return "sub/b.h:1: includes"


def _inactive_branch(tree: Path, outside: Path) -> str:
    """The preprocessor never reads it, the JIT inliner would (the run-time compiler may take
    the branch): the folder is refused where the tree names it."""
    _toml(tree, f'[kernels]\ninclude-dirs = ["{outside}"]\n')
    (tree / "b.metal").write_text('#if 0\n#include "secret.h"\n#endif\nkernel void kb() {}\n')
    return "[kernels] include-dirs"


ATTACKS: dict[str, Callable[[Path, Path], str]] = {
    "include-dirs absolute": _absolute_folder,
    "include-dirs ..": _parent_folder,
    "include-dirs symlinked folder": _linked_folder,
    "entry file linked out": _linked_entry,
    "entry file linked to #error": _linked_entry_with_error,
    "quoted include ..": _dotdot_include,
    "quoted include of a linked header": _linked_header,
    "quoted include of an #error header": _error_include,
    "include in #if 0": _inactive_branch,
}


def _commands(tree: Path, tmp_path: Path) -> dict[str, list[object]]:
    library = tmp_path / "lib.metallib"
    library.write_bytes(library_with(KERNELS))
    written = tmp_path / "written"
    return {
        "kernels": ["kernels", "--source-dir", tree, "--format", "json"],
        "report": ["report", library, "--source-dir", tree, "-o", written / "r.json"],
        "history": ["history", library, "--source-dir", tree, "--format", "json"],
        "variants --from": [
            *("variants", "--from", library, "--source-dir", tree),
            *("--jit", "b.metal", "-o", written / "v", "--format", "json"),
        ],
        "build --jit": ["build", "--jit", "*", "--source-dir", tree, "--build-dir", written / "b"],
    }


def _files_written(tmp_path: Path) -> list[Path]:
    """Every regular file under ``tmp_path`` but the planted ones (links not followed)."""
    outside = tmp_path / "outside"
    return [
        p
        for p in tmp_path.rglob("*")
        if p.is_file() and not p.is_symlink() and outside not in p.parents
    ]


COMMANDS = ["kernels", "report", "history", "variants --from", "build --jit"]


@pytest.mark.parametrize("attack", list(ATTACKS))
@pytest.mark.parametrize("command", COMMANDS)
def test_nothing_outside_the_tree_is_read_into_any_output(
    attack: str, command: str, tmp_path: Path, cli: Cli
) -> None:
    tree, outside = _layout(tmp_path)
    words = ATTACKS[attack](tree, outside)
    (tmp_path / "written").mkdir()
    code, out, err = cli(*_commands(tree, tmp_path)[command])
    line = assert_one_error_line(code, err, words)
    assert "outside the tree" in line
    assert f"resolves to {tmp_path}" in line or f"includes {outside}" in line  # a path, no text
    assert PLANTED not in out + err
    assert not (tmp_path / "written").exists() or not any((tmp_path / "written").iterdir())
    for path in _files_written(tmp_path):
        assert PLANTED.encode() not in path.read_bytes(), path


def test_a_folder_named_with_dash_i_is_the_users_choice(tmp_path: Path, cli: Cli) -> None:
    """The same include, with the folder given on the command line: read, as the user asked."""
    tree, outside = _layout(tmp_path)
    _entry(tree, '#include "secret.h"')
    code, out, err = cli("kernels", "--source-dir", tree, "-I", outside, "--format", "json")
    assert code == 0, err
    assert '"planted_outside"' in out


def test_a_config_file_outside_the_tree_is_the_operators(tmp_path: Path, cli: Cli) -> None:
    """--config FILE beside the tree (the job's own settings) may name folders outside it; the
    tree's own file, even when named with --config, may not."""
    tree, outside = _layout(tmp_path)
    _entry(tree, '#include "secret.h"')
    operator = tmp_path / "ci.toml"
    operator.write_text(f'[kernels]\ninclude-dirs = ["{outside}"]\n')
    code, _, err = cli("kernels", "--source-dir", tree, "--config", operator)
    assert code == 0, err
    _toml(tree, operator.read_text())
    code, _, err = cli("kernels", "--source-dir", tree, "--config", tree / "metallib.toml")
    assert_one_error_line(code, err, "[kernels] include-dirs", "outside the tree")


def test_folders_inside_the_tree_and_links_within_it_still_work(tmp_path: Path, cli: Cli) -> None:
    tree, _ = _layout(tmp_path)
    (tree / "sub" / "inner.h").write_text("kernel void kb() {}\n")
    (tree / "sub" / "alias.h").symlink_to(tree / "sub" / "inner.h")
    (tree / "c.metal").symlink_to(tree / "a.metal")
    _toml(tree, '[kernels]\ninclude-dirs = ["sub", "."]\n')
    (tree / "b.metal").write_text('#include "alias.h"\n')
    code, out, err = cli("kernels", "--source-dir", tree, "--format", "json")
    assert code == 0, err
    assert '"kb"' in out


def test_an_include_in_an_inactive_branch_is_confined_like_any_other(
    tmp_path: Path, cli: Cli
) -> None:
    """The preprocessor skips ``#if 0``, so discovery reads nothing outside; the JIT inliner
    follows every quoted include, taken or not (the run-time compiler may define the macros
    otherwise), and refuses this one where it leaves the include folders."""
    tree, _ = _layout(tmp_path)
    (tree / "sub" / "b.h").write_text(
        '#if 0\n#include "../../outside/secret.h"\n#endif\n#include "inner.h"\n'
    )
    (tree / "sub" / "inner.h").write_text('#if defined(NEVER)\n#include "../a.metal"\n#endif\n')
    _entry(tree, '#include "sub/b.h"')
    code, out, err = cli("kernels", "--source-dir", tree, "--format", "json")
    assert code == 0 and PLANTED not in out, err
    command = _commands(tree, tmp_path)["variants --from"]
    code, out, err = cli(*command)
    assert_one_error_line(code, err, "sub/b.h:2", "secret.h", "outside the include folders")
    assert PLANTED not in out + err
    for path in _files_written(tmp_path):
        assert PLANTED.encode() not in path.read_bytes(), path
