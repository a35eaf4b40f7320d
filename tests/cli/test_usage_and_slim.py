"""Two promises about errors: a usage error is one line (the README says every error is), and
``slim`` never writes a library that ``verify`` rejects.

Click's own form of a usage error is four lines (usage, hint, blank, error). ``slim`` used to
copy whatever it was given: an input failing ``verify`` for a reason other than module hashes (a
malformed chunk, a bad name, a wrong count) gave exit 0 and an output failing ``verify`` too. The
fuzz below flips bytes of a real container (the project's writer) with a fixed seed and holds
slim to: exit 2 naming the problem and no output, or an output that passes ``verify`` (its
hash check aside: ``--allow-hash-mismatch`` copies modules whose hash is wrong, by design).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from support.hostile import Cli, assert_one_error_line, library_with

from builder.metallib import open_metallib, verify

USAGE_ERRORS = [
    ["nosuch"],
    ["report"],
    ["report", "x.metallib", "--nope"],
    ["report", "x.metallib", "--format", "xml"],
    ["kernels", "--jobs", "0"],
    ["slim", "x.metallib"],
    ["compare", "a.metallib"],
    ["variants", "--ceiling"],
    ["variants", "--source-dir", "."],  # --from is required: presets are another command
    ["variants", "--from", "x.metallib", "--build-dir", "b"],  # a build option: presets'
    ["presets", "--from", "x.metallib"],
]


@pytest.mark.parametrize("args", USAGE_ERRORS, ids=[" ".join(a) for a in USAGE_ERRORS])
def test_a_usage_error_is_one_line_naming_help(args: list[str], cli: Cli) -> None:
    code, out, err = cli(*args)
    line = assert_one_error_line(code, err)
    assert "--help" in line and out == ""


@pytest.mark.parametrize("command", ["report", "kernels", "slim", "build", "presets", "variants"])
def test_help_still_teaches(command: str, cli: Cli) -> None:
    code, out, err = cli(command, "--help")
    assert code == 0 and out.startswith(f"Usage: metallib-builder {command}") and err == ""
    assert "Examples" in out or "example" in out.lower()


def _non_hash_problems(path: Path, dropped: set[str]) -> list[str]:
    """What ``verify`` finds in ``path`` beyond module hashes, stray bytes (a rewrite leaves
    them out) and the functions slim drops; ['unreadable'] when it does not open."""
    try:
        with open_metallib(path) as lib:
            problems = verify(lib).problems
    except Exception:  # noqa: BLE001 - any refusal of the reader counts as a problem
        return ["unreadable"]
    return [
        p.message
        for p in problems
        if "SHA-256" not in p.message and not p.stray_bytes and p.function not in dropped
    ]


def test_slim_fuzz_never_writes_what_verify_rejects(tmp_path: Path, cli: Cli) -> None:
    names = [f"kernel_{i}" for i in range(6)]
    good = library_with(names)
    rng = random.Random(18)
    source, output = tmp_path / "in.metallib", tmp_path / "out.metallib"
    refused = written = repaired = 0
    for trial in range(400):
        data = bytearray(good)
        for _ in range(rng.choice((1, 1, 2, 3))):
            data[rng.randrange(len(data))] = rng.randrange(256)
        source.write_bytes(bytes(data))
        output.unlink(missing_ok=True)
        dropped = {names[2]} if trial % 2 else set()
        select = ["--drop", names[2]] if dropped else ["--keep", "*"]
        before = _non_hash_problems(source, dropped)
        code, _, err = cli("slim", source, "-o", output, "--allow-hash-mismatch", *select)
        if code == 0:
            written += 1
            assert before == [] and _non_hash_problems(output, set()) == [], (trial, err)
        else:
            refused += 1
            assert_one_error_line(code, err)
            assert not output.exists() and not list(tmp_path.glob("*.tmp"))
            if before and before != ["unreadable"]:
                assert "byte offset" in err, (trial, before, err)
        repaired += code == 0 and _non_hash_problems(source, set()) != []
    assert refused > 40 and written > 40  # the seed exercises both ways
    assert repaired  # and an input whose only problem is in a dropped function


def test_slim_names_a_bad_name_and_writes_nothing(tmp_path: Path, cli: Cli) -> None:
    good = library_with(["kernel_aa", "kernel_bb"])
    data = bytearray(good)
    data[good.index(b"kernel_bb\0") + 7] = 0xFF  # kernel_\xffb: not UTF-8
    source, out = tmp_path / "in.metallib", tmp_path / "out.metallib"
    source.write_bytes(bytes(data))
    code, _, err = cli("slim", source, "-o", out, "--keep", "*")
    assert_one_error_line(code, err, str(source), "byte offset", "not valid UTF-8")
    assert not out.exists()
