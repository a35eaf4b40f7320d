"""Every command's --help teaches with examples and the CLI spells one thing one way: the output
format is ``--format``, ``-o`` is ``--output`` and names a file, except the one command that writes
a folder of many files (``variants --from -o OUTDIR``); and each word of the glossary
(docs/architecture.md) has its one meaning in help texts and table headings."""

from __future__ import annotations

import ast
import itertools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest
from clirun import run_cli as run

from builder.cli import COMMANDS
from builder.cli.group import cli

FOLDER_OUTPUTS = {"variants"}
"""Commands whose -o names a folder: they write many files."""


def command(name: str) -> click.Command:
    found = cli.get_command(click.Context(cli), name)
    assert found is not None, name
    return found


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_help_has_examples(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run([name, "--help"], capsys)
    assert code == 0
    examples = out.split("Examples:\n", 1)
    assert len(examples) == 2, f"{name} --help has no examples"
    assert f"  metallib-builder {name} " in examples[1]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_one_spelling_per_option(name: str) -> None:
    options = [p for p in command(name).params if isinstance(p, click.Option)]
    spelled = {opt for p in options for opt in p.opts}
    assert "--json" not in spelled and "--out" not in spelled and "--outdir" not in spelled
    for p in options:
        if p.name == "fmt":
            assert p.opts == ["--format"], (name, p.opts)
        if "-o" in p.opts:
            assert p.opts == ["-o", "--output"], (name, p.opts)
            assert isinstance(p.type, click.Path)
            as_folder = name in FOLDER_OUTPUTS
            assert p.type.file_okay is not as_folder and p.type.dir_okay is as_folder, name
        if "-I" in p.opts:
            assert p.opts == ["-I", "--include-dir"], (name, p.opts)
        if "-D" in p.opts:
            assert p.opts == ["-D", "--define"], (name, p.opts)


def _visible(flag: str) -> dict[str, click.Option]:
    """command -> its visible option spelled ``flag``, for every command that has one."""
    found = {}
    for name in sorted(COMMANDS):
        for p in command(name).params:
            if isinstance(p, click.Option) and flag in p.opts and not p.hidden:
                found[name] = p
    return found


def test_one_meaning_per_flag() -> None:
    """A flag means one thing on every command (issue 34 item 9): ``-j`` is how many processes
    run at once, saying what they are for each command (``build -j`` was Ninja's jobs and
    ``kernels -j`` the preprocessing, under two helps); ``-D`` is the tree's preprocessor
    definition (embed's '#define' in its preambles is ``--preamble-define``, its old ``-D`` a
    hidden alias); ``-I`` a folder searched for quoted includes."""
    for flag, commands, meaning in (
        ("-j", {"build", "check", "kernels", "presets", "variants"}, "Processes run at once"),
        ("-D", {"build", "check", "kernels", "report", "variants"}, "Preprocessor definition"),
        ("-I", {"build", "check", "embed", "kernels", "report"}, "Folder searched for quoted"),
    ):
        options = _visible(flag)
        assert commands <= set(options), (flag, commands - set(options))
        helps = {" ".join((p.help or "").split()) for p in options.values()}
        assert all(h.startswith(meaning) for h in helps), (flag, helps)
        assert len({p.opts[-1] for p in options.values()}) == 1, flag
    jobs = " ".join((_visible("-j")["build"].help or "").split())
    assert "Ninja's jobs" in jobs and "preprocessed" in jobs and "compiles" in jobs
    embed = {p.name: p for p in command("embed").params if isinstance(p, click.Option)}
    assert embed["preamble_defines"].opts == ["--preamble-define"]
    assert embed["old_defines"].hidden and embed["old_defines"].opts == ["-D", "--define"]


# --- One word per concept: the glossary of docs/architecture.md, checked against the help texts
# and the table headings the commands print (issue 25 item 1).

ROOT = Path(__file__).resolve().parents[2]
GLOSSARY_HEADING = "## Glossary: one word per concept"
_ROW = re.compile(r"^\| \*\*(?P<word>[^*]+)\*\* \| (?P<means>.+?) \|\s*(?P<not>.*?)\s*\|$")


def glossary() -> dict[str, tuple[str, str]]:
    """word -> (what it means, the words it is not to be confused with), from the table."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert GLOSSARY_HEADING in text, "docs/architecture.md has no glossary"
    section = text.split(GLOSSARY_HEADING, 1)[1].split("\n## ", 1)[0]
    rows = [m for m in map(_ROW.match, section.splitlines()) if m]
    words = [m["word"] for m in rows]
    assert len(words) == len(set(words)), f"a word defined twice: {words}"
    return {m["word"]: (m["means"], m["not"]) for m in rows}


def help_blocks() -> list[tuple[str, str]]:
    """(where, text) of every help text: each command's description and epilog, paragraph by
    paragraph, and each option's help, whitespace collapsed."""
    found: list[tuple[str, str]] = []
    for name, cmd in [("metallib-builder", cli)] + [(n, command(n)) for n in sorted(COMMANDS)]:
        for part in (cmd.help or "", cmd.epilog or ""):
            for paragraph in re.split(r"\n\s*\n", part):
                found.append((name, " ".join(paragraph.split())))
        for p in cmd.params:
            if isinstance(p, click.Option) and p.help:
                found.append((f"{name} {max(p.opts, key=len)}", " ".join(p.help.split())))
    return found


_FAMILY = re.compile(r"\bfamil(?:y|ies)\b", re.IGNORECASE)
_MISUSED = {
    r"\bJIT famil": "a JIT unit",
    r"\bkernel famil": "a kernel group (a report row) or a catalog family",
    r"\bFAMILY\b": "GROUP (a rule names a report group)",
    r"\bevery famil(?:y|ies) (?:JIT|AOT)\b": "every unit JIT/AOT",
    r"\bunits? of \d+ instantiations": "chunks (a unit is what the build plans)",
    r"\b(?:metadata|reflection) chunks?\b": "a piece (a chunk is a slice of an AOT unit)",
    r"\bsplit(?:s|ting)? (?:each|into|by|like|over)\b": "split is the JIT/AOT choice only",
}


def test_glossary_names_each_concept_once() -> None:
    """The glossary defines the words the issue lists, once each, and every word it warns
    against confusing is itself defined."""
    words = glossary()
    wanted = {"function", "kernel", "catalog", "family", "template form", "unit", "chunk"}
    wanted |= {"split", "group", "variant", "preset"}
    assert wanted <= set(words), sorted(wanted - set(words))
    for word, (_, not_words) in words.items():
        for other in filter(None, (w.split(":")[0].strip() for w in not_words.split(","))):
            assert other in words, f"{word}: '{other}' is not in the glossary"
    assert "catalog" in words["family"][0] and "chunk" in words["unit"][1]


@pytest.mark.parametrize("pattern", sorted(_MISUSED))
def test_help_says_each_word_in_its_one_meaning(pattern: str) -> None:
    """No help text uses a word in a meaning the glossary gives another word."""
    bad = [(w, t) for w, t in help_blocks() if re.search(pattern, t)]
    assert not bad, f"say {_MISUSED[pattern]}: {bad}"


def _code_strings() -> list[tuple[str, str]]:
    """(where, text) of every string the code can show or write: each string constant of
    builder/ that is not a docstring (error and progress messages, JSON keys, the names of the
    files a build writes, table headings), f-strings piece by piece."""
    found: list[tuple[str, str]] = []
    for path in sorted((ROOT / "builder").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        # a string standing alone as a statement documents (a docstring, or an attribute's
        # docstring below a field); the code never shows it
        docstrings = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
        for node in ast.walk(tree):
            if not isinstance(node, ast.Constant) or id(node) in docstrings:
                continue
            if isinstance(node.value, str):
                where = f"{path.relative_to(ROOT)}:{node.lineno}"
                found.append((where, " ".join(node.value.split())))
    return found


@pytest.mark.parametrize("pattern", sorted(_MISUSED))
def test_code_says_each_word_in_its_one_meaning(pattern: str) -> None:
    """Beyond --help: no message, JSON key or file name the code writes uses a word in a
    meaning the glossary gives another word (a user-facing error said "metadata chunk" for what
    the glossary calls a piece)."""
    bad = [(w, t) for w, t in _code_strings() if re.search(pattern, t)]
    assert not bad, f"say {_MISUSED[pattern]}: {bad}"


def test_family_is_said_only_of_a_catalog() -> None:
    """'family' appears in a help text only where the same text says it is a catalog's."""
    bad = [(w, t) for w, t in help_blocks() if _FAMILY.search(t) and "catalog" not in t.lower()]
    assert not bad, bad


def test_chunk_size_speaks_of_chunks() -> None:
    """``--chunk-size`` sizes the chunks an AOT unit is cut into: its help says chunk, and
    'unit' there only names what the chunks belong to."""
    for name in ("build", "presets"):
        option = next(p for p in command(name).params if p.name == "chunk_size")
        text = option.help or ""
        assert re.search(r"\bchunks?\b", text), (name, text)
        assert re.sub(r"\bAOT units\b", "", text).count("unit") == 0, (name, text)


def test_presets_and_variants_are_two_commands() -> None:
    """``presets`` builds CMakePresets.json's builds; ``variants`` writes subsets and needs
    --from. Neither takes the other's options."""
    presets, variants = command("presets"), command("variants")
    names = {p.name for p in presets.params}
    assert "from_target" not in names and {"build_dir", "jobs"} <= names
    frm = next(p for p in variants.params if p.name == "from_target")
    assert frm.required
    assert not {"build_dir", "metal_compiler", "kernels"} & {p.name for p in variants.params}


def test_check_counts_chunks(capsys: pytest.CaptureFixture[str]) -> None:
    """``check`` compiles chunks: its summary and its JSON say so (schema 2)."""
    args = ["check", "--kernels", "arange", "--dtypes", "float32", "--syntax-only", "--no-jit"]
    code, out, _ = run(args, capsys)
    assert code == 0 and re.search(r" in \d+ chunks, ", out) and " units" not in out, out
    code, out, _ = run([*args, "--format", "json"], capsys)
    doc = json.loads(out)
    assert doc["schema"] == 2 and "units" not in doc
    assert [c["unit"] for c in doc["chunks"]] == ["arange"] * len(doc["chunks"])


def _headings(markdown: str) -> list[str]:
    """The heading cells of every markdown table (the row above a ``|---`` rule)."""
    lines = markdown.splitlines()
    return [
        cell.strip()
        for above, line in itertools.pairwise(lines)
        if line.startswith(("|-", "| -", "|:"))
        for cell in above.strip().strip("|").split("|")
    ]


def test_kernels_table_says_family_of_a_catalog(capsys: pytest.CaptureFixture[str]) -> None:
    """The catalog's table has a family column: there the word is the catalog's."""
    code, out, _ = run(["kernels", "--kernels", "arange", "--format", "json"], capsys)
    assert code == 0 and json.loads(out)["catalog"].endswith("catalog.json")
    code, out, _ = run(["kernels", "--kernels", "arange"], capsys)
    assert code == 0 and re.search(r"\bfamily\b", out.split("\n")[2]), out


def _jit_build(folder: Path) -> None:
    """``presets`` on this machine: jit-on builds with the host compiler alone."""
    done = subprocess.run(
        [sys.executable, "-m", "builder", "presets", "--kernels", "arange,copy"]
        + ["--dtypes", "float32", "--build-dir", str(folder), "-j", "2"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "NO_COLOR": "1", "METAL_COMPILER": "/nonexistent/metal"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (folder / "presets.txt").write_text(done.stdout, encoding="utf-8")


@pytest.mark.cmake
@pytest.mark.slow
def test_table_headings_say_unit_and_group(
    tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    """The tables a JIT build's report and the presets print head their columns with the
    glossary's words: a JIT unit is a unit, a report row under --by kernel a kernel group."""
    from support.shared import shared_folder

    root = shared_folder(tmp_path_factory, "vocabulary-presets", _jit_build)
    presets_heading = (root / "presets.txt").read_text(encoding="utf-8").splitlines()[1]
    code, md, _ = run(["report", str(root / "jit-on"), "--format", "markdown"], capsys)
    assert code == 0
    headings = _headings(md) + presets_heading.split("  ")
    assert headings and not [h for h in headings if _FAMILY.search(h)], headings
