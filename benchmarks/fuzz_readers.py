"""Seeded fuzzing of the readers that take files from a pull request (issue 24, docs/security.md).

Three readers, called in this process exactly as the commands call them:

* the budget reader (``builder.size.budget_file.read_budget_file``) on a ``metallib-size.toml``
  and on a ``pyproject.toml``;
* a kernel tree's ``metallib.toml`` (``builder.kernels.tree_config.find_config``);
* the saved report JSON (``builder.size.load.load_reports``, then the report rendered as JSON,
  CSV, markdown and HTML, as ``report saved.json --format ...`` would).

Every input is a mutation of a real, valid input: the examples of docs/ci-recipe.md and
docs/discovery.md, and reports written by ``report --format json`` of a small library this
script writes with the project's own container writer. Mutations: byte flips, truncations,
inserted tokens (quotes, brackets, control characters, bytes that are not UTF-8), deep nesting
(up to 50,000 levels), huge and odd numbers (5,000 digits, ``1e308``, NaN, negative), and values
of the wrong type put in place of a real key's value (then written back as TOML or JSON).

An input passes when the reader accepts it or refuses it the way the tool refuses bad input: the
project's own error (``BuilderError`` with exit code 2, or ``MetallibError``) with a message of one
line. Anything else (another exception, a multi-line message) is counted as a traceback, printed
with the input's seed, and written to ``--keep DIR`` to reproduce.

Usage: ``python benchmarks/fuzz_readers.py [--inputs 21000] [--seed 24] [--keep DIR]``; exit 1
when any traceback was found. ``tests/files/test_fuzz_readers.py`` runs 600 of them.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for _folder in (str(ROOT), str(ROOT / "tests")):  # tests/synthetic.py builds libraries
    if _folder not in sys.path:
        sys.path.insert(0, _folder)

from builder.errors import BuilderError, MetallibError

BUDGET_SEED = """\
[[budget]]
name = "mlx, macOS 26"
target = "mlx-metal==0.32.4"
platform = "macosx_26_0_arm64"
max-size = "220MB"
max-functions = 20000
groups = { quantized = "60MB", gemm = "40MB" }

[[budget]]
target = "build/"
max-total-size = "150MB"
max-download-size = "50MB"
by = "source"
source-dir = "kernels/"
include-dirs = ["."]
defines = ["__METAL_VERSION__=400", "NDEBUG"]
exclude = ["*_nax.metal", "fence.metal"]
config = "ci/metallib.toml"
groups = { "quantized.metal" = "30MB" }
base = "reports/main.json"
max-growth = "1%"
"""

PYPROJECT_SEED = """\
[project]
name = "demo"

[[tool.metallib-builder.budget]]
target = "libs/*.metallib"
max-size = 120000000
base = "base.json"
max-growth = 250000
"""

TREE_SEED = """\
[kernels]
include-dirs = ["..", "../../.."]
defines = ["MLX_METAL_JIT=0", "NDEBUG"]
exclude = ["steel/**/*_nax.metal"]
metal-version = 320

[build]
library = "mlx"
aot-only = ["arg_reduce.metal"]
std = "metal3.1"
deployment-target = "14.0"
flags = ["-Wno-c++17-extensions"]

[build.preambles]
unary = "unary.h"
utils = ["utils.h"]
"""

TOKENS = [
    "[",
    "]",
    "{",
    "}",
    '"',
    "'",
    '"""',
    "=",
    ",",
    "#",
    "\n",
    "\\",
    "\\u",
    "\\ud800",
    "\\udce9",
    "\x00",
    "\x1b[31m",
    "\r",
    "\u202e",
    "nan",
    "inf",
    "-inf",
    "1e308",
    "-1",
    "0x7fffffffffffffffffff",
    "1979-05-27T07:32:00Z",
    "true",
    "null",
    "9" * 400,
    "9" * 5000,
    "1e308%",
    "-1%",
    "99999999999999999999999GB",
    '"/dev/zero"',
]
RAW_BYTES = [b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xef\xbb\xbf", b"\x80\x80"]


DIGITS = "<5000 digits>"
"""Put in a document where a 5,000-digit integer goes (``str()`` of an int may not print one);
written out as 5,000 nines."""


def _odd_values() -> list[Any]:
    deep: list[Any] = [1]
    for _ in range(200):  # deeper nesting is inserted as text (kind 3)
        deep = [deep]
    table: dict[str, Any] = {"a": 1}
    for _ in range(150):
        table = {"a": table}
    return [
        10**19,
        10**400,
        DIGITS,
        -1,
        -(10**30),
        0,
        1.5,
        math.nan,
        math.inf,
        -math.inf,
        1e308,
        True,
        "",
        " ",
        "\x1b]0;title\x07",
        "\ud800",
        "\udce9",
        "1e308%",
        "-1%",
        "nan%",
        "0%",
        "1000001%",
        "99999999999999999999999GB",
        "-5MB",
        "../../../etc/passwd",
        "/dev/zero",
        "*",
        "x" * 100_000,
        [],
        [[]],
        [1, "a", None],
        {},
        {"": ""},
        deep,
        table,
        None,
    ]


ODD = _odd_values()


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return repr(value) if math.isfinite(value) else "inf" if value > 0 else "-inf"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        items = (f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items())
        return "{ " + ", ".join(items) + " }"
    return '""'  # None: TOML has no null


def toml_text(doc: dict[str, Any], prefix: str = "") -> str:
    """``doc`` written as TOML: scalars and inline values first, then tables and arrays of
    tables (enough for the seeds' shapes and whatever a mutation puts in them)."""
    lines, later = [], []
    for key, value in doc.items():
        name = f"{prefix}{_toml_key(key)}"
        if isinstance(value, dict) and value and prefix.count(".") < 3:
            later.append(f"\n[{name}]\n" + toml_text(value, name + "."))
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            later += [f"\n[[{name}]]\n" + toml_text(v, name + ".") for v in value]
        else:
            lines.append(f"{_toml_key(key)} = {_toml_value(value)}")
    return "\n".join(lines) + "\n" + "".join(later)


def _paths(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a parsed document (keys of objects, indexes of lists)."""
    found = [at] if at else []
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*at, key))
    elif isinstance(value, list):
        for index, item in enumerate(value[:20]):
            found += _paths(item, (*at, index))
    return found


def _replace(doc: Any, path: tuple[Any, ...], new: Any) -> None:
    holder = doc
    for step in path[:-1]:
        holder = holder[step]
    holder[path[-1]] = new


@dataclass
class Reader:
    name: str
    file_name: str
    seeds: list[bytes]
    call: Callable[[Path], object]
    toml: bool


def _mutate(rng: random.Random, seed: bytes, toml: bool) -> bytes:
    """One mutation (or two stacked) of a valid input."""
    data = seed
    for _ in range(rng.choice((1, 1, 1, 2))):
        kind = rng.randrange(7)
        at = rng.randrange(len(data) + 1)
        if kind == 0:  # byte flips
            out = bytearray(data)
            for _ in range(rng.randint(1, 8)):
                if out:
                    out[rng.randrange(len(out))] = rng.randrange(256)
            data = bytes(out)
        elif kind == 1:  # truncation
            data = data[:at]
        elif kind == 2:  # a token or a byte that is not UTF-8
            token = (
                rng.choice(TOKENS).encode("utf-8", "surrogatepass")
                if rng.random() < 0.8
                else rng.choice(RAW_BYTES)
            )
            data = data[:at] + token + data[at:]
        elif kind == 3:  # deep nesting where a value could be
            depth = rng.choice((50, 500, 1000, 5000, 50_000))
            open_, close = rng.choice((("[", "]"), ("{a=", "}") if toml else ('{"a":', "}")))
            deep = (open_ * depth + "1" + close * depth).encode()
            data = _at_value(data, rng) + deep + b"\n" if rng.random() < 0.5 else data + deep
        elif kind == 4:  # a huge or odd number where a digit is
            digits = [m.start() for m in re.finditer(rb"\d+", data)]
            if digits:
                start = rng.choice(digits)
                end = re.match(rb"\d+", data[start:])
                number = rng.choice(["9" * 5000, "9" * 400, "1e308", "-1", "nan", "inf", "0"])
                data = data[:start] + number.encode() + data[start + (end.end() if end else 0) :]
        else:  # a value of the wrong type in place of a real key's value
            data = _structural(rng, data, toml)
    return data


def _at_value(data: bytes, rng: random.Random) -> bytes:
    """``data`` cut just after some ``key = `` (or ``"key": ``), ready for a value."""
    marks = [m.end() for m in re.finditer(rb"=\s*|\":\s*", data)]
    return data[: rng.choice(marks)] if marks else data


def _structural(rng: random.Random, data: bytes, toml: bool) -> bytes:
    try:
        if toml:
            import tomllib

            doc: Any = tomllib.loads(data.decode("utf-8"))
        else:
            doc = json.loads(data)
    except (ValueError, RecursionError):
        return data
    paths = _paths(doc)
    if not paths:
        return data
    _replace(doc, rng.choice(paths), rng.choice(ODD))
    text = toml_text(doc) if toml and isinstance(doc, dict) else json.dumps(doc)
    return text.replace(json.dumps(DIGITS), "9" * 5000).encode("utf-8", "surrogatepass")


def _report_seeds(work: Path) -> list[bytes]:
    """Reports as ``report --format json`` writes them, of a library written here."""
    from synthetic import new_function, new_library

    from builder.metallib import library_bytes
    from builder.render.json_docs import report_json
    from builder.size.load import load_reports

    names = ["v_copyfloat32float32", "vv_Addfloat16", "steel_gemm_fused_nn_float16", "plain"]
    parts = [new_function(n, n.encode() * 20, reflection=n.encode()[:12]) for n in names]
    lib = work / "seed.metallib"
    lib.write_bytes(library_bytes(new_library(parts)))
    seeds = []
    for by in ("kernel", "function", "kernel,dtype"):
        seeds.append(report_json(load_reports(str(lib), by=by)).encode())
    seeds.append(report_json(load_reports(str(lib), download=True)).encode())
    both = load_reports(str(lib)) + load_reports(str(lib), by="dtype")
    seeds.append(report_json(both).encode())
    return seeds


def _read_report(path: Path) -> None:
    from builder.publish.outputs import report_output
    from builder.size.load import load_reports

    reports = load_reports(str(path))
    for kind in ("json", "csv", "markdown", "html"):
        report_output(reports, kind, None, False, None).encode("utf-8")  # what writing needs


def readers(work: Path) -> list[Reader]:
    from builder.kernels.tree_config import find_config
    from builder.size.budget_file import read_budget_file

    return [
        Reader("budget file", "metallib-size.toml", [BUDGET_SEED.encode()], read_budget_file, True),
        Reader(
            "pyproject.toml", "pyproject.toml", [PYPROJECT_SEED.encode()], read_budget_file, True
        ),
        Reader(
            "metallib.toml",
            "metallib.toml",
            [TREE_SEED.encode()],
            lambda p: find_config(p.parent),
            True,
        ),
        Reader("report JSON", "report.json", _report_seeds(work), _read_report, False),
    ]


@dataclass
class Result:
    inputs: int = 0
    refused: int = 0
    tracebacks: list[str] = field(default_factory=list)
    per_reader: dict[str, int] = field(default_factory=dict)
    failed: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0


def run(inputs: int, seed: int, keep: Path | None = None) -> Result:
    """Fuzz ``inputs`` mutated inputs, round-robin over the readers, from ``seed``."""
    result = Result()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fuzz-readers-") as tmp:
        work = Path(tmp)
        all_readers = readers(work)
        for number in range(inputs):
            reader = all_readers[number % len(all_readers)]
            rng = random.Random(f"{seed}:{number}")
            data = _mutate(rng, rng.choice(reader.seeds), reader.toml)
            folder = work / str(number % 8)
            folder.mkdir(exist_ok=True)
            path = folder / reader.file_name
            path.write_bytes(data)
            result.inputs += 1
            result.per_reader[reader.name] = result.per_reader.get(reader.name, 0) + 1
            problem = _try(reader, path)
            if problem == "refused":
                result.refused += 1
            elif problem is not None:
                result.tracebacks.append(f"input {seed}:{number} ({reader.name}): {problem}")
                result.failed[reader.name] = result.failed.get(reader.name, 0) + 1
                if keep is not None:
                    keep.mkdir(parents=True, exist_ok=True)
                    (keep / f"{number}-{reader.file_name}").write_bytes(data)
    result.seconds = time.perf_counter() - start
    return result


def _try(reader: Reader, path: Path) -> str | None:
    """None (accepted), ``"refused"`` (the tool's own one-line error), or what went wrong."""
    try:
        reader.call(path)
    except (BuilderError, MetallibError) as exc:
        message = str(exc)
        if getattr(exc, "exit_code", 2) != 2:
            return f"exit code {exc.exit_code} for bad input: {message[:200]}"
        if "\n" in message or not message:
            return f"a message that is not one line: {message[:200]!r}"
        return "refused"
    except Exception:  # noqa: BLE001 - counting exactly these is the point
        return traceback.format_exc(limit=-6)
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=21_000)
    parser.add_argument("--seed", type=int, default=24)
    parser.add_argument("--keep", type=Path, default=None, help="write failing inputs here")
    args = parser.parse_args()
    result = run(args.inputs, args.seed, args.keep)
    for problem in result.tracebacks[:10]:
        print(problem, file=sys.stderr)
    readers_done = ", ".join(
        f"{name} {n:,}" + (f" ({result.failed[name]} failed)" if name in result.failed else "")
        for name, n in result.per_reader.items()
    )
    print(
        f"fuzz_readers: {result.inputs:,} inputs ({readers_done}), seed {args.seed}, "
        f"{result.refused:,} refused with one line, {len(result.tracebacks)} tracebacks, "
        f"{result.seconds:.1f} s"
    )
    return 1 if result.tracebacks else 0


if __name__ == "__main__":
    sys.exit(main())
