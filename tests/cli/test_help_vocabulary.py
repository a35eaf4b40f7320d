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
    hidden alias); ``-I`` a folder searched for quoted includes; ``--jit`` the units built JIT
    (check's own switch, whether it also compiles the JIT sources, is ``--jit-sources``)."""
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
    check = {p.name: p for p in command("check").params if isinstance(p, click.Option)}
    assert check["jit_sources"].opts == ["--jit-sources"] and check["old_jit"].hidden
    jit = _visible("--jit")
    assert set(jit) == {"build", "variants"}  # units built JIT, the rest AOT
    assert all("JIT" in (p.help or "") and "AOT" in (p.help or "") for p in jit.values())
    embed = {p.name: p for p in command("embed").params if isinstance(p, click.Option)}
    assert embed["preamble_defines"].opts == ["--preamble-define"]
    assert embed["old_defines"].hidden and embed["old_defines"].opts == ["-D", "--define"]
    variants = {p.name: p for p in command("variants").params if isinstance(p, click.Option)}
    assert (variants["ceiling"].opts, variants["ceiling_of"].opts) == (
        ["--ceiling"],
        ["--ceiling-of"],
    )
    assert variants["old_ceiling"].hidden and variants["old_ceiling"].opts == ["--budget"]
    assert variants["old_ceiling_of"].hidden and variants["old_ceiling_of"].opts == ["--budget-of"]


def test_variants_old_budget_spelling_is_the_cap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``variants --budget`` (item 8: a budget is the ``budget`` command's limit) still works as
    ``--ceiling``, and ``--budget-of`` as ``--ceiling-of``: the same values are refused."""
    base = ["variants", "--from", "x.metallib", "--source-dir", ".", "-o", str(tmp_path / "o")]
    for old, new in (("--budget", "--ceiling"), ("--budget-of", "--ceiling-of")):
        value = "0" if old == "--budget" else "download"
        code, out, err = run([*base, old, value], capsys)
        assert code == 2 and out == "", err
        assert (
            f"{new} 0: must be more than 0 bytes" if new == "--ceiling" else "give --ceiling SIZE"
        ) in err


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
    r"\bJIT famil": ("unit", "family", "a JIT unit"),
    r"\bkernel famil": ("group", "family", "a kernel group (a report row) or a catalog family"),
    r"\bFAMILY\b": ("group", "family", "GROUP (a rule names a report group)"),
    r"\bevery famil(?:y|ies) (?:JIT|AOT)\b": ("unit", "family", "every unit JIT/AOT"),
    r"\bunits? of \d+ instantiations": ("chunk", "unit", "chunks (a unit is what the build plans)"),
    r"\b(?:metadata|reflection|function) chunks?\b": (
        "piece",
        "chunk",
        "a piece (a chunk is a slice of an AOT unit)",
    ),
    r"\bfunctions? (?:\w+ )*chunks?\b": ("piece", "chunk", "a function's pieces"),
    r"\bsettings?(?: value)? checks?\b": ("validator", "check", "a setting's validator"),
    r"\bdownload model parts?\b|\bpart (?:bytes|sizes)\b": (
        "shard",
        "part",
        "a shard (what the download model deflates alone; a part is a binary's account row)",
    ),
    r"\bsplit(?:s|ting)? (?:each|into|by|like|over)\b": (
        "split",
        "split",
        "split is the JIT/AOT choice only",
    ),
}
"""pattern -> (the glossary word meant, the word misused for it, what to say instead). Each
misuse is one the glossary warns against (its "Not to be confused with" column)."""

_OWNED = {"budget": "budget", "ceiling": "variants", "check": "check"}
"""A glossary word -> the one document whose JSON keys may say it: a budget is the ``budget``
command's limit, a ceiling the size ``variants`` plans to (``compare`` checks gates), a check the
``check`` command's (a gate's or budget limit's outcome is a verdict)."""


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


def _confused(words: dict[str, tuple[str, str]]) -> set[frozenset[str]]:
    """The pairs of words the glossary warns against confusing, either way round."""
    return {
        frozenset((word, other.split(":")[0].strip()))
        for word, (_, not_words) in words.items()
        for other in not_words.split(",")
        if other.strip()
    }


def test_each_misuse_is_one_the_glossary_warns_against() -> None:
    """The patterns this file checks come from the glossary: the word meant and the word misused
    for it are both defined there, and it warns against confusing the two (or the word is misused
    in a meaning the glossary does not give it); each owned word is defined."""
    words = glossary()
    pairs = _confused(words)
    for pattern, (meant, misused, _) in _MISUSED.items():
        assert meant in words and misused in words, pattern
        assert meant == misused or frozenset((meant, misused)) in pairs, (pattern, meant, misused)
    assert set(_OWNED) <= set(words)


@pytest.mark.parametrize("pattern", sorted(_MISUSED))
def test_help_says_each_word_in_its_one_meaning(pattern: str) -> None:
    """No help text uses a word in a meaning the glossary gives another word."""
    bad = [(w, t) for w, t in help_blocks() if re.search(pattern, t)]
    assert not bad, f"say {_MISUSED[pattern][2]}: {bad}"


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
    assert not bad, f"say {_MISUSED[pattern][2]}: {bad}"


def _identifiers() -> list[tuple[str, str]]:
    """(where, words) of every name builder/ defines or uses: functions, classes, variables,
    parameters, attributes and keyword arguments, snake_case and CamelCase read as words."""
    found: list[tuple[str, str]] = []
    for path in sorted((ROOT / "builder").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = node.name
            elif isinstance(node, ast.Name):
                name = node.id
            elif isinstance(node, ast.Attribute):
                name = node.attr
            elif isinstance(node, (ast.arg, ast.keyword)) and node.arg:
                name = node.arg
            else:
                continue
            words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).replace("_", " ")
            found.append((f"{path.relative_to(ROOT)}:{node.lineno}", " ".join(words.split())))
    return found


def test_identifiers_say_each_word_in_its_one_meaning() -> None:
    """The code's own names use the glossary's words as its JSON and messages do: no
    ``metadata_chunk`` for a piece, no ``setting_check`` for a validator."""
    names = _identifiers()
    assert ("builder/settings/model.py", "validate") in {(w.split(":")[0], t) for w, t in names}
    for pattern, (meant, _, say) in _MISUSED.items():
        if pattern == r"\bFAMILY\b":
            continue  # help's metavar: a name spelled family is a catalog's
        bad = [(w, t) for w, t in names if re.search(pattern, t.lower(), re.IGNORECASE)]
        assert not bad, f"say {say} ({meant}): {bad}"


_VERDICT_LAYERS = ("builder/size/", "builder/render/", "builder/publish/", "builder/cli/size.py")
"""Where a limit's outcome is made and shown; ``check`` there is a verb, never a thing."""


def test_a_limits_outcome_is_a_verdict() -> None:
    """A gate's or budget limit's outcome is a ``Verdict`` (``size/verdicts``): no class, variable
    or parameter of the size commands calls it a check or their list checks, the ``check``
    command's word (budget's JSON said ``checks`` until its schema 3)."""
    names = _identifiers()
    assert ("builder/size/verdicts.py", "Verdict") in {(w.split(":")[0], t) for w, t in names}
    bad = [(w, t) for w, t in names if w.startswith(_VERDICT_LAYERS) and t in {"Check", "checks"}]
    assert not bad, f"say verdict: {bad}"


def test_the_comments_bytes_are_room_not_a_budget() -> None:
    """render/ and publish/ write what ``budget`` measured (budget_table, budget_json...) and hold
    no budget of their own: the bytes a PR comment still has are its room (``_Room``)."""
    names = _identifiers()
    assert ("builder/render/pr_comment.py", "Room") in {(w.split(":")[0], t) for w, t in names}
    layers = ("builder/render/", "builder/publish/")
    bad = [(w, t) for w, t in names if w.startswith(layers) and t in {"Budget", "budget"}]
    assert not bad, f"a budget is the budget command's limit: {bad}"


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


def _builder(*args: str) -> str:
    """What ``metallib-builder ARGS`` prints, on this machine (no Metal compiler)."""
    done = subprocess.run(
        [sys.executable, "-m", "builder", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "NO_COLOR": "1", "METAL_COMPILER": "/nonexistent/metal"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _jit_build(folder: Path) -> None:
    """``presets`` on this machine: jit-on builds with the host compiler alone; its JSON (a
    second run, nothing to build), and ``build``'s JSON of a JIT build."""
    args = ["--kernels", "arange,copy", "--dtypes", "float32", "-j", "2"]
    presets = _builder("presets", *args, "--build-dir", str(folder))
    (folder / "presets.txt").write_text(presets, encoding="utf-8")
    presets = _builder("presets", *args, "--build-dir", str(folder), "--format", "json")
    (folder / "presets.json").write_text(presets, encoding="utf-8")
    built = _builder(
        "build", *args, "--jit", "*", "--build-dir", str(folder / "build"), "--format", "json"
    )
    (folder / "build.json").write_text(built, encoding="utf-8")


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


# --- JSON keys: every document the commands write, and the records a build leaves in its folder
# (issue 34 item 8). A key is read as the words of its path: ``functions[].metadata_chunk`` is
# "functions metadata chunk", which the patterns above refuse as they refuse it in a message.


def key_paths(doc: object, path: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    """Every key path of a JSON document (list items share their list's path)."""
    found: set[tuple[str, ...]] = set()
    if isinstance(doc, dict):
        for key, value in doc.items():
            found |= {(*path, key)} | key_paths(value, (*path, key))
    elif isinstance(doc, list):
        for item in doc:
            found |= key_paths(item, path)
    return found


def misused_keys(documents: dict[str, object]) -> list[str]:
    """The key paths of ``documents`` (name -> parsed JSON) that say a word of the glossary in
    another meaning: a misuse pattern matches the path's words, or an owned word is said outside
    its document."""
    bad = []
    for name, doc in documents.items():
        for path in sorted(key_paths(doc)):
            words = " ".join(path).replace("_", " ")
            for pattern, (meant, _, say) in _MISUSED.items():
                if re.search(pattern, words):
                    bad.append(f"{name}: {'.'.join(path)}: say {say} ({meant})")
            for word, owner in _OWNED.items():
                if re.search(rf"\b{word}s?\b", words) and name != owner:
                    bad.append(f"{name}: {'.'.join(path)}: '{word}' is the {owner} command's")
    return bad


def test_a_planted_wrong_key_is_found() -> None:
    """The check catches what it is for: a piece called a chunk, a ceiling called a budget."""
    good = {"functions": [{"name": "f", "pieces": [{"kind": "module", "bytes": 3}]}]}
    assert misused_keys({"report": good}) == []
    assert misused_keys({"report": {"functions": [{"metadata_chunk": 1}]}})
    assert misused_keys({"report": {"functions": [{"chunks": [{"bytes": 3}]}]}})
    assert misused_keys({"variants": {"variants": [{"plan": {"budget": 5}}]}})
    assert misused_keys({"budget": {"budgets": [{"name": "x"}]}}) == []
    assert misused_keys({"budget": {"checks": [{"ceiling": 5}]}})
    assert misused_keys({"budget": {"checks": [{"key": "max-size"}]}})
    assert misused_keys({"report": {"download_model": {"parts": 5}}})
    assert misused_keys({"report": {"binaries": [{"parts": [{"bytes": 5}]}]}}) == []
    assert misused_keys({"check": {"checks": ["compile"]}}) == []


def _json(
    args: list[str], capsys: pytest.CaptureFixture[str], codes: tuple[int, ...] = (0,)
) -> object:
    code, out, err = run([*args, "--format", "json"], capsys)
    assert code in codes, (args, code, err[-2000:])
    return json.loads(out)


def test_command_json_keys_say_each_word_in_its_one_meaning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The JSON of report, compare, budget, history, list, verify, kernels and check, on
    libraries written here, uses each glossary word in its one meaning."""
    from synthetic import synthetic_bytes

    base, head = tmp_path / "base.metallib", tmp_path / "head.metallib"
    base.write_bytes(synthetic_bytes([("vv_Addfloat32", 500), ("arange_float32", 120)]))
    head.write_bytes(synthetic_bytes([("vv_Addfloat32", 700), ("rope_float32", 333)]))
    budget = tmp_path / "metallib-size.toml"
    budget.write_text(f'[[budget]]\ntarget = "{head}"\nmax-size = 10\nmax-functions = 1\n')
    check = ["check", "--kernels", "arange", "--dtypes", "float32", "--syntax-only", "--no-jit"]
    documents = {
        "report": _json(["report", str(head), "--download"], capsys),
        "compare": _json(["compare", str(base), str(head), "--max-growth", "1"], capsys, (1,)),
        "budget": _json(["budget", str(budget)], capsys, (1,)),
        "history": _json(["history", str(base), str(head)], capsys),
        "list": _json(["list", str(head)], capsys),
        "verify": _json(["verify", str(head)], capsys),
        "kernels": _json(["kernels", "--kernels", "arange"], capsys),
        "check": _json(check, capsys),
    }
    assert all(key_paths(doc) for doc in documents.values()), documents
    assert misused_keys(documents) == []


@pytest.mark.realdata
def test_variants_json_keys_say_each_word_in_its_one_meaning(
    tmp_path: Path, mlx_headers: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """variants.json, with a planned variant, on the MLX-style tree."""
    from kernels.discovery.expected import BY_FILE
    from mlx_tree import DATA
    from synthetic import synthetic_bytes

    library = tmp_path / "tree.metallib"
    names = sorted(n for names in BY_FILE.values() for n in names)
    library.write_bytes(synthetic_bytes([(n, 800) for n in names]))
    args = ["variants", "--from", str(library), "--source-dir", str(DATA), "-I", str(mlx_headers)]
    doc = _json([*args, "-o", str(tmp_path / "out"), "--ceiling", "20KB"], capsys)
    assert doc == json.loads((tmp_path / "out" / "variants.json").read_text())
    assert ("variants", "plan", "ceiling") in key_paths(doc)
    assert misused_keys({"variants": doc}) == []


@pytest.mark.cmake
@pytest.mark.slow
def test_build_json_and_records_say_each_word_in_its_one_meaning(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """``build`` and ``presets`` JSON, and the records a JIT build leaves in its folder
    (plan.json, manifest.json, embed.json), use each glossary word in its one meaning."""
    from support.shared import shared_folder

    root = shared_folder(tmp_path_factory, "vocabulary-presets", _jit_build)
    documents: dict[str, object] = {
        name: json.loads((root / f"{name}.json").read_text(encoding="utf-8"))
        for name in ("build", "presets")
    }
    for record in ("plan.json", "manifest.json", "embed.json"):
        found = sorted((root / "build").rglob(record))
        assert found, record
        for path in found:
            documents[str(path.relative_to(root))] = json.loads(path.read_text(encoding="utf-8"))
    assert all(key_paths(doc) for doc in documents.values()), sorted(documents)
    assert misused_keys(documents) == []
