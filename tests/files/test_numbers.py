"""Numbers nobody writes by hand, and a name no encoder takes (issue 24 items 9 and 11).

A pull request owns the budget file and the tree's metallib.toml. A 5,000-digit integer, arrays
nested 50,000 deep, ``max-growth = "1e308%"`` or a 400-digit size used to end in a traceback or
an OverflowError with exit 1, which ``budget`` and ``compare`` use for "over budget": each is now
exit 2 and one line naming the file and the key (or the option). A saved report whose function
name holds a lone surrogate used to kill the HTML output (and with it every ``-o`` of the run).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.hostile import Cli, assert_one_error_line, library_with

NAMES = ["v_copyfloat32float32", "vv_Addfloat32", "steel_gemm_fused_nn_float16"]
BUDGET = '[[budget]]\nname = "gate"\ntarget = "a.metallib"\n'
GROWTH = BUDGET + 'base = "base.json"\n'
NINES = "9" * 5000
DEEP = "[" * 50_000 + "1" + "]" * 50_000
DEEP_TABLES = "{a = " * 50_000 + "1" + "}" * 50_000


@pytest.fixture
def folder(tmp_path: Path, cli: Cli) -> Path:
    """A folder with a library and its saved report (the base of growth limits)."""
    (tmp_path / "a.metallib").write_bytes(library_with(NAMES))
    code, out, err = cli("report", tmp_path / "a.metallib", "--format", "json")
    assert code == 0, err
    (tmp_path / "base.json").write_text(out)
    return tmp_path


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (BUDGET + f"max-functions = {NINES}\n", ["line 4, key 'max-functions'", "4,300 digits"]),
        (BUDGET + f"groups = {DEEP}\n", ["line 4, key 'groups'", "nested too deeply"]),
        (BUDGET + f"groups = {DEEP_TABLES}\n", ["line 4, key 'groups'", "nested too deeply"]),
        # measured against the base, these overflowed (float infinity, int too large for float)
        (GROWTH + 'max-growth = "1e308%"\n', ["(gate): 'max-growth': '1e308%'"]),
        (GROWTH + f"max-growth = {'9' * 400}\n", ["'max-growth': a 400-digit number"]),
        (BUDGET + f"max-size = {'9' * 400}\n", ["'max-size': a 400-digit number is more than"]),
        (
            BUDGET + f"groups = {{ gemm = {'9' * 400} }}\n",
            ["groups: 'gemm': a 400-digit number is more than"],
        ),
        # accepted before, and then a gate only a shrinking library passes: exit 1 on no change
        (GROWTH + 'max-growth = "-1%"\n', ["'max-growth': '-1%': a growth limit must not be"]),
        (GROWTH + "max-growth = -5\n", ["'max-growth': -5: a growth limit must not be negative"]),
        # accepted before as limits no byte count reaches
        (BUDGET + f"max-functions = {'9' * 400}\n", ["'max-functions' must be a count from 0"]),
        (BUDGET + 'max-download-size = "99999999999999999999999GB"\n', ["is more than 9,223,372"]),
    ],
    ids=[
        "5000-digits",
        "nested-arrays",
        "nested-tables",
        "1e308%",
        "400-digit-growth",
        "400-digit-size",
        "400-digit-group",
        "negative-percent",
        "negative-bytes",
        "400-digit-count",
        "past-2^63",
    ],
)
def test_a_budget_number_is_one_line_naming_the_file_and_key(
    text: str, words: list[str], folder: Path, cli: Cli
) -> None:
    path = folder / "metallib-size.toml"
    path.write_text(text)
    code, out, err = cli("budget", path)
    assert out == ""
    assert_one_error_line(code, err, str(path), *words)


def test_the_same_in_pyproject_found_upward(
    folder: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Looking for the budget file parses every pyproject.toml on the way up."""
    (folder / "pyproject.toml").write_text(f'[project]\nname = "x"\nversion = {NINES}\n')
    (folder / "deep").mkdir()
    monkeypatch.chdir(folder / "deep")
    code, _, err = cli("budget")
    assert_one_error_line(code, err, "pyproject.toml: line 3, key 'version'", "4,300 digits")


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (f"[kernels]\nmetal-version = {NINES}\n", ["line 2, key 'metal-version'", "4,300 digits"]),
        (f"[kernels]\nexclude = {DEEP}\n", ["line 2, key 'exclude'", "nested too deeply"]),
        (f"[build.preambles]\nx = {DEEP_TABLES}\n", ["line 2, key 'x'", "nested too deeply"]),
    ],
    ids=["5000-digits", "nested-arrays", "nested-tables"],
)
def test_a_tree_metallib_toml_number_is_one_line(
    text: str, words: list[str], tmp_path: Path, cli: Cli
) -> None:
    (tmp_path / "a.metal").write_text("kernel void a(device float* x) { }\n")
    (tmp_path / "metallib.toml").write_text(text)
    code, out, err = cli("kernels", "--source-dir", tmp_path)
    assert out == ""
    assert_one_error_line(code, err, str(tmp_path / "metallib.toml"), *words)


@pytest.mark.parametrize(
    ("option", "value", "words"),
    [
        ("--max-growth", "1e308%", ["--max-growth: '1e308%' is not a percentage"]),
        ("--max-download-growth", "1e308%", ["--max-download-growth: '1e308%'"]),
        ("--max-growth", "-1%", ["--max-growth: '-1%': a growth limit must not be negative"]),
        ("--max-size", "99999999999999999999999GB", ["--max-size: '99999999999999999999999GB'"]),
    ],
)
def test_a_command_line_gate_gets_the_same_checks(
    option: str, value: str, words: list[str], folder: Path, cli: Cli
) -> None:
    code, out, err = cli("compare", folder / "base.json", folder / "a.metallib", option, value)
    assert out == ""
    assert_one_error_line(code, err, *words)


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("METALLIB_BUILDER_PP_TIMEOUT", "1e400"),  # round(inf): OverflowError
        ("METALLIB_BUILDER_PP_TIMEOUT", "1e18"),  # past LARGEST_SECONDS (a poll() would overflow)
        ("METALLIB_BUILDER_MAX_JSON", "99999999999999999999999GB"),  # read(n) overflows
    ],
)
def test_a_bound_from_the_environment_gets_them_too(
    variable: str, value: str, folder: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    (folder / "tree").mkdir()
    (folder / "tree" / "a.metal").write_text("kernel void a(device float* x) { }\n")
    monkeypatch.setenv(variable, value)
    if variable.endswith("JSON"):
        code, _, err = cli("report", folder / "base.json")
    else:
        code, _, err = cli("kernels", "--source-dir", folder / "tree")
    assert_one_error_line(code, err, f"{variable}='{value}': expected a positive number")


def test_nan_and_inf_stay_refused(folder: Path, cli: Cli) -> None:
    """Refused before this round already (TOML floats are no sizes; ``nan%`` no percentage)."""
    for line in ("max-size = nan", "max-size = inf", 'max-growth = "nan%"', "max-growth = -inf"):
        path = folder / "metallib-size.toml"
        path.write_text(GROWTH + line + "\n")
        code, _, err = cli("budget", path)
        assert_one_error_line(code, err, str(path), "(gate): 'max-")


# --- item 11: a lone surrogate in a saved report's names -------------------------------------

LONE = "x\ud800y"  # JSON can say "\ud800"; no UTF-8 encoder writes it
BYTE = "caf\udce9"  # a file-name byte that is not UTF-8, as Python reads it


@pytest.fixture
def surrogates(folder: Path) -> Path:
    doc = json.loads((folder / "base.json").read_text())
    doc["functions"][0]["name"] = LONE
    doc["functions"][1]["name"] = BYTE
    path = folder / "odd.json"
    path.write_text(json.dumps(doc))  # ensure_ascii: the file says \ud800 and \udce9
    assert "\\ud800" in path.read_text()
    return path


@pytest.mark.parametrize("fmt", ["html", "markdown", "json", "csv", "table"])
def test_every_report_format_writes_a_lone_surrogate_escaped(
    fmt: str, surrogates: Path, cli: Cli
) -> None:
    code, out, err = cli("report", surrogates, "--by", "function", "--format", fmt)
    assert code == 0, err
    out.encode("utf-8")  # what a pipe or a file needs: no lone surrogate left
    if fmt == "html":
        data = out.split('<script type="application/json" id="report-data">', 1)[1].split(
            "</script>"
        )[0]
        names = set(json.loads(data)["libraries"][0]["fn"]["name"])
        # the page spells them as the JSON output does (builder.files.dataclass_json)
        assert {"x\\ud800y", "caf\\xe9"} <= names, names
    else:
        assert "\\ud800" in out and ("\\xe9" in out or "\\udce9" in out), out


def test_compare_writes_every_output_and_the_comment(
    surrogates: Path, folder: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The action's compare step: several -o files and the step summary (the PR comment's
    markdown) in one run; before, the HTML output's UnicodeEncodeError ended it with exit 1."""
    summary = folder / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    outputs = [folder / f"size.{ext}" for ext in ("html", "md", "json", "csv")]
    args = [a for o in outputs for a in ("-o", o)]
    code, _, err = cli("compare", folder / "base.json", surrogates, "--by", "function", *args)
    assert code == 0, err
    for output in [*outputs, summary]:
        text = output.read_bytes().decode("utf-8")  # strict: valid UTF-8
        assert "ud800" in text, output
    assert r"x\\ud800y" in (folder / "size.json").read_text()  # JSON's own escaped backslash
