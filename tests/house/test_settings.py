"""Every setting is declared once (builder/settings/declared.py), and every surface that spells
one is made from that declaration or agrees with it: the click options of every command, the
``metallib.toml`` tables, the budget keys, the CMake cache variables (in cmake/*.cmake and
CMakeLists.txt) and the option table of docs/build.md. A flag, key, cache variable or docs row
that no setting declares fails here, and so does a declared one that no surface has."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from builder.cli import COMMANDS
from builder.cli.group import cli
from builder.settings.declared import SETTINGS, toml_keys
from builder.settings.file_keys import GATES

ROOT = Path(__file__).resolve().parents[2]

VIEWS_OPTIONS = {"--format", "-o/--output"}
"""The output options, declared once by the views (``builder.cli.publishing``: their choices
are each command's formats)."""
NOT_YET = {
    "--allow-hash-mismatch", "--allow-outside-includes", "--branch", "--ceiling", "--ceiling-of",
    "--by", "--compiler", "--depfile", "--drop", "--from", "--in-place", "--keep", "--keep-list",
    "--preamble", "--rules", "--sort", "--strip-comments", "--syntax-only", "--top",
}  # fmt: skip
"""Command options still declared at their command (one command's own, or shared through one
decorator) and not yet settings. The list may only shrink: a new option is a setting."""
DEPRECATED = {
    ("embed", "-D/--define"),
    ("check", "--jit/--no-jit"),
    ("variants", "--budget"),
    ("variants", "--budget-of"),
}
"""Hidden old spellings kept for scripts (issue 34 item 9): embed's -D is --preamble-define,
since -D is the tree's preprocessor definition on every other command, and check's --jit is
--jit-sources, since --jit names the units built JIT on build and variants; variants' --budget
is --ceiling, since a budget is the budget command's limit (item 8)."""


def _options() -> list[tuple[str, click.Option]]:
    found = []
    for name in sorted(COMMANDS):
        command = cli.get_command(click.Context(cli), name)
        assert command is not None
        found += [(name, p) for p in command.params if isinstance(p, click.Option)]
    return found


def _spelled(p: click.Option) -> str:
    return "/".join(p.opts + p.secondary_opts)


def test_every_command_option_is_a_setting_s() -> None:
    """An option whose flag a setting spells is that setting's (its help, metavar and parameter
    as declared); any other flag is the views' or on the shrinking list."""
    by_flag: dict[str, list[str]] = {}
    for s in SETTINGS.values():
        if s.option is not None:
            by_flag.setdefault(s.option, []).append(s.name)
    made = 0
    for command, p in _options():
        flag = _spelled(p)
        names = [n for n in by_flag.get(flag, []) if (SETTINGS[n].param or n) == p.name]
        if (command, flag) in DEPRECATED:
            assert p.hidden, f"{command} {flag}: a deprecated spelling is hidden"
            continue
        if names:
            assert flag not in NOT_YET, f"{flag} is a setting now: off the list"
        if not names:
            assert flag in VIEWS_OPTIONS | NOT_YET, f"{command} {flag}: no setting declares it"
            continue
        declared = [SETTINGS[n] for n in names]
        assert any((p.help or "").startswith(s.help) for s in declared), (command, flag)
        assert any(p.metavar == s.metavar for s in declared), (command, flag)
        made += 1
    assert made > 60  # the tree, build and run-time source options of nine commands


def test_every_flag_a_setting_declares_is_on_a_command() -> None:
    spelled = {(_spelled(p), p.name) for _, p in _options()}
    for s in SETTINGS.values():
        if s.option is not None:
            assert (s.option, s.param or s.name) in spelled, f"{s.name}: {s.option} on no command"


def test_the_shrinking_list_holds_only_flags_still_in_use() -> None:
    spelled = {_spelled(p) for _, p in _options()}
    assert NOT_YET <= spelled, NOT_YET - spelled


def test_one_spelling_per_setting() -> None:
    """The flag is the name with '-' for '_' (a repeatable one may drop the plural's 's'); a
    TOML or budget key is the name in kebab case, as the flag spells it."""
    for s in SETTINGS.values():
        kebab = s.name.replace("_", "-")
        long = s.long_flag
        if long is not None and s.param is None:
            assert long in (f"--{kebab}", f"--{kebab.removesuffix('s')}"), s.name
        for key in (s.toml.partition(".")[2] if s.toml else None, s.budget):
            if key is not None and s.name != "config":
                assert key == kebab, (s.name, key)


def test_metallib_toml_keys_are_the_settings() -> None:
    """The tables tree_config reads are made from the settings; each key docs/discovery.md's
    table of metallib.toml names is one, in its table, and each setting's key is in the docs
    (tree_config's docstring points there rather than keeping a copy of the schema)."""
    docs = (ROOT / "docs" / "discovery.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| `\[(kernels|build)\] ([a-z-]+)` \|", docs, re.MULTILINE))
    declared = {(table, key) for table in ("kernels", "build") for key in toml_keys(table)}
    tables = {(t, k) for t, k in declared if k in ("requires", "preambles", "embedding")}
    assert documented == declared - tables


def test_budget_keys_are_the_settings(tmp_path: Path) -> None:
    """A key no setting declares is refused, naming the nearest; every declared key is read."""
    from builder.errors import UsageError
    from builder.size.budget_file import read_budget_file

    keys = {s.budget for s in SETTINGS.values() if s.budget}
    budget = tmp_path / "metallib-size.toml"
    budget.write_text('[[budget]]\ntarget = "x"\nmax-szie = "1MB"\n')
    with pytest.raises(UsageError, match="unknown key 'max-szie'; did you mean 'max-size'"):
        read_budget_file(budget)
    from builder.size import budget_file

    assert set(budget_file.KEYS) == keys


def test_cmake_cache_variables_are_the_settings() -> None:
    """Every cache variable the CMake files declare is a setting's, and every setting's is
    declared (the generated cmake/MetallibBuildOptions.cmake, or CMakeLists.txt)."""
    texts = [p.read_text(encoding="utf-8") for p in (ROOT / "cmake").glob("*.cmake")]
    texts.append((ROOT / "CMakeLists.txt").read_text(encoding="utf-8"))
    cached = set()
    for text in texts:
        cached |= set(re.findall(r"^\s*set\((METALLIB_\w+) .* CACHE ", text, re.MULTILINE))
        cached |= set(re.findall(r"^\s*option\((METALLIB_\w+) ", text, re.MULTILINE))
    declared = {s.cmake for s in SETTINGS.values() if s.cmake}
    assert cached == declared
    own = (ROOT / "CMakeLists.txt").read_text(encoding="utf-8")
    said = re.findall(r'^set\((METALLIB_\w+) "[^"]*" CACHE \w+ "([^"]*)"\)$', own, re.MULTILINE)
    helps = {s.cmake: s.help.rstrip(".") for s in SETTINGS.values() if s.cmake}
    assert said and all(helps[var] == text for var, text in said), said  # one help each


def test_docs_rows_are_the_settings() -> None:
    """The option table of docs/build.md has a row per build setting with a cache variable, and
    no other (its text is generated: tests/cmake_build/test_options.py)."""
    from builder.cmake_build.plan_model import request_settings

    text = (ROOT / "docs" / "build.md").read_text(encoding="utf-8")
    table = text.split("<!-- options:begin -->", 1)[1].split("<!-- options:end -->", 1)[0]
    rows = set(re.findall(r"^\| `(METALLIB_\w+)` \|", table, re.MULTILINE))
    assert rows == {s.cmake for s in request_settings().values() if s.cmake}


def _table(doc: str, heading: str) -> list[str]:
    """The first cells of the docs table whose header row is ``heading``."""
    text = (ROOT / "docs" / doc).read_text(encoding="utf-8")
    rows = text.split(heading + "\n", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    return [row.split(" | ")[0].removeprefix("| ") for row in rows]


def test_the_metallib_toml_table_is_the_settings() -> None:
    """docs/discovery.md's table of metallib.toml keys has a row per setting with a key."""
    shown = set()
    for cell in _table("discovery.md", "| key | type | meaning |"):
        table, _, key = cell.strip("`").partition("] ")
        shown.add(f"{table.lstrip('[')}.{key}" if key else table.strip("[]"))
    assert shown == {s.toml for s in SETTINGS.values() if s.toml}


def test_the_budget_tables_are_the_settings() -> None:
    """docs/ci-recipe.md's table of budget keys names every budget key and no other; its table
    of compare's gates names every gate's flag, and no flag that is not a command's."""
    keys = {k for cell in _table("ci-recipe.md", "| key | checks |") for k in cell.split("`")[1::2]}
    assert keys == {s.budget for s in SETTINGS.values() if s.budget}
    gates = {
        cell.split("`")[1].split()[0] for cell in _table("ci-recipe.md", "| option | fails when |")
    }
    declared = {s.option for s in GATES if s.option and s.name != "warn_only"}
    assert declared == gates
