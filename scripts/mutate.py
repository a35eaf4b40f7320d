"""Seeded mutation testing of the modules whose invariants the tests must hold (issue 24).

A passing suite says the code did what the tests looked at; a mutant (one small change: a
comparison flipped, a constant off by one, a statement gone) that every test still passes says
what they do not look at. This script makes such mutants with ``ast`` (no third-party framework),
runs each module's test files against each one in a temporary copy of the checkout (the real
files are never edited) and prints the score per module and every survivor.

    .venv/bin/python scripts/mutate.py                     # every mutant of MODULES
    .venv/bin/python scripts/mutate.py --max-mutants 40 --seed 1   # a seeded sample per module
    .venv/bin/python scripts/mutate.py --only preamble:236:25:sub  # named mutants only
    .venv/bin/python scripts/mutate.py --list              # the mutants, without running them
    .venv/bin/python scripts/mutate.py builder/kernels/platforms.py \
        --tests tests/kernels/discovery/test_platforms.py   # any module, with its tests

A mutant is killed when its tests do not pass: a test fails, collection does (pytest exits 2, or
4 when a conftest cannot import the mutant), pytest ends in any other error or signal, or the run
passes ``--timeout`` (a loop that never ends is a failure the tests caught). Scores and the
survivors judged equivalent are in docs/testing.md. Exit status: 0 when no mutant survived, 1
otherwise, 2 when the unmutated copy already fails its tests (the scores would mean nothing) or
the command line names no module it can mutate.
"""

from __future__ import annotations

import argparse
import ast
import copy
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEMP_ROOT = Path("/tmp")
"""Where the copy and the tests' temporary folders are made, whatever ``TMPDIR`` says (unless
there is no writable /tmp): a path a test prints then has the same length wherever the caller's
temporary folder is, so no message wraps differently and no mutant's fate depends on it."""

# Each module with the test files that hold its invariants, fastest and most direct first (the
# run stops at the first failure).
MODULES: dict[str, list[str]] = {
    "builder/subsets/coverage.py": [
        "tests/subsets/test_coverage.py",
        "tests/subsets/test_variants_coverage.py",
    ],
    "builder/metallib/writer.py": [
        "tests/metallib/test_writer_invariants.py",
        "tests/metallib/test_writer_paths.py",
        "tests/metallib/test_synthetic.py",
    ],
    "builder/metallib/parts.py": [
        "tests/metallib/test_subset_tags.py",
        "tests/metallib/test_writer_paths.py",
        "tests/metallib/test_synthetic.py",
    ],
    "builder/size/attribution.py": [
        "tests/size/test_attribution_paths.py",
        "tests/size/test_attribution.py",
    ],
    "builder/jit/preamble.py": [
        "tests/jit/test_preamble_reads.py",
        "tests/jit/test_preamble.py",
        "tests/jit/test_embed_untrusted.py",
        "tests/jit/test_tree_preambles.py",
    ],
    # issue 33: three modules added since issue 24's pass
    "builder/size/host_strings.py": [
        "tests/size/test_host_source_neighbours.py",
        "tests/size/test_host_sources.py",
        "tests/size/test_host_members.py",
    ],
    "builder/kernels/platforms.py": [
        "tests/kernels/discovery/test_platform_defines.py",
        "tests/kernels/discovery/test_platform_edges.py",
        "tests/kernels/discovery/test_platforms.py",
        "tests/kernels/discovery/test_tree_config.py",
    ],
    "builder/kernels/confinement.py": [
        "tests/kernels/discovery/test_outside_error.py",
        "tests/kernels/discovery/test_preamble_confinement.py",
        "tests/kernels/discovery/test_confinement.py",
        "tests/kernels/test_tree_confinement.py",
        "tests/jit/test_embed_untrusted.py",
    ],
}

_COMPARE = {
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In,
    ast.Is: ast.IsNot, ast.IsNot: ast.Is,
}  # fmt: skip
_BINARY = {
    ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.FloorDiv, ast.FloorDiv: ast.Mult,
    ast.Mod: ast.FloorDiv, ast.BitAnd: ast.BitOr, ast.BitOr: ast.BitAnd,
    ast.LShift: ast.RShift, ast.RShift: ast.LShift,
}  # fmt: skip
_CALLS = {"min": "max", "max": "min", "any": "all", "all": "any"}
_DELETED = (
    ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Raise, ast.If, ast.For, ast.While,
    ast.Continue, ast.Break, ast.Return,
)  # fmt: skip


@dataclass(frozen=True)
class Mutant:
    """One change to one module: the source span it replaces and the text put there."""

    id: str
    module: str
    line: int
    start: int  # byte offsets in the module's source
    end: int
    text: str
    description: str


def _short(node: ast.AST) -> str:
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= 60 else text[:57] + "..."


def _skipped(tree: ast.Module) -> set[int]:
    """Nodes no mutant touches: docstrings, imports, ``__all__``, annotations (strings under
    ``from __future__ import annotations``) and field declarations, decorators, ``if
    TYPE_CHECKING:`` blocks, f-string parts, the cause of ``raise ... from``."""
    out: set[int] = set()

    def skip(node: ast.AST | None) -> None:
        for sub in ast.walk(node) if node is not None else ():
            out.add(id(sub))

    for node in ast.walk(tree):
        if _never_mutated(node):
            skip(node)
        elif isinstance(node, ast.arg):
            skip(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            for decorator in node.decorator_list:  # dataclass options: configuration
                skip(decorator)
            if not isinstance(node, ast.ClassDef):
                skip(node.returns)
        elif isinstance(node, ast.AnnAssign):
            skip(node.annotation if node.value is not None else node)  # a field declaration
        elif isinstance(node, ast.Raise):
            skip(node.cause)
    return out


def _never_mutated(node: ast.AST) -> bool:
    """Docstrings (of modules, classes, functions and attributes), imports, f-strings,
    ``if TYPE_CHECKING:`` and ``__all__``."""
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return True
    if isinstance(node, ast.Import | ast.ImportFrom | ast.JoinedStr):
        return True
    if isinstance(node, ast.If) and _short(node.test) == "TYPE_CHECKING":
        return True
    return isinstance(node, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
    )


def _last_statements(tree: ast.Module) -> set[int]:
    """``return`` and ``continue`` statements that end their block: deleting one is the same
    program as ``return None`` (or no change at all), so it is not a mutant of its own."""
    out: set[int] = set()
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            last = block[-1] if isinstance(block, list) and block else None
            if isinstance(last, ast.Return | ast.Continue):
                out.add(id(last))
    return out


def _variants(node: ast.AST, last: bool) -> Iterator[tuple[str, ast.AST | None]]:
    """(operator name, replacement node; None: the statement becomes ``pass``); ``last``: the
    node is a ``return`` or ``continue`` that ends its block."""
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            if type(op) in _COMPARE:
                new = copy.deepcopy(node)
                new.ops[i] = _COMPARE[type(op)]()
                yield f"cmp{i}", new
    elif isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        yield "binop", ast.BinOp(node.left, _BINARY[type(node.op)](), node.right)
    elif isinstance(node, ast.BoolOp):
        swapped = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        yield "boolop", ast.BoolOp(swapped, node.values)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not | ast.USub):
        yield "unary", node.operand
    elif isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool):
            yield "const", ast.Constant(not value)
        elif isinstance(value, int | float):
            yield "plus1", ast.Constant(value + 1)
            yield "minus1", ast.Constant(value - 1)
        elif isinstance(value, bytes) and value:
            yield "bytes", ast.Constant(b"\x00" * len(value))
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _CALLS:
        yield "call", ast.Call(ast.Name(_CALLS[node.func.id]), node.args, node.keywords)
    if isinstance(node, _DELETED) and not last:
        yield "delete", None
    returned = node.value if isinstance(node, ast.Return) else None
    if returned is not None and not (isinstance(returned, ast.Constant) and returned.value is None):
        yield "return", ast.Return(ast.Constant(None))
    if isinstance(node, ast.AugAssign) and type(node.op) in _BINARY:
        yield "augop", ast.AugAssign(node.target, _BINARY[type(node.op)](), node.value)


def mutants_of(module: str, root: Path = ROOT) -> list[Mutant]:
    """Every mutant of ``module`` (a path relative to the checkout ``root``), in source order,
    each one checked to compile and to differ from the original."""
    source = (root / module).read_bytes()
    tree = ast.parse(source)
    skipped = _skipped(tree)
    last = _last_statements(tree)
    line_starts = [0]
    for line in source.splitlines(keepends=True):
        line_starts.append(line_starts[-1] + len(line))
    original = ast.dump(tree)
    stem = Path(module).stem
    out: list[Mutant] = []
    for node in ast.walk(tree):
        if id(node) in skipped or not isinstance(node, ast.expr | ast.stmt):
            continue
        start = line_starts[node.lineno - 1] + node.col_offset
        assert node.end_lineno is not None and node.end_col_offset is not None  # parsed source
        end = line_starts[node.end_lineno - 1] + node.end_col_offset
        for op, new in _variants(node, id(node) in last):
            if new is None:
                text, shown = "pass", "deleted"
            elif isinstance(new, ast.stmt):
                text = shown = ast.unparse(new)
            else:
                text, shown = f"({ast.unparse(new)})", _short(new)
            mutated = source[:start] + text.encode() + source[end:]
            try:
                if ast.dump(ast.parse(mutated)) == original:
                    continue
                compile(mutated, module, "exec")
            except SyntaxError:
                continue
            out.append(
                Mutant(
                    f"{stem}:{node.lineno}:{node.col_offset}:{op}",
                    module,
                    node.lineno,
                    start,
                    end,
                    text,
                    f"line {node.lineno}: `{_short(node)}` -> `{shown}`",
                )
            )
    out.sort(key=lambda m: (m.line, m.start, m.id))
    return out


_REDIRECT = '''"""Written by scripts/mutate.py: imports of builder come from this copy of the
checkout, also when the project is installed in editable mode (whose finder maps builder to the
checkout)."""
import os, sys
_copy = os.environ["MUTATE_COPY"]
for _finder in sys.meta_path if os.path.isdir(_copy + "builder") else ():
    _files = getattr(_finder, "known_source_files", None)
    if isinstance(_files, dict) and "builder" in _files:
        _real = os.path.dirname(os.path.dirname(_files["builder"])) + os.sep
        _finder.known_source_files = {k: v.replace(_real, _copy, 1) for k, v in _files.items()}
        _dirs = getattr(_finder, "submodule_search_locations", {})
        _finder.submodule_search_locations = {
            k: [p.replace(_real, _copy, 1) for p in v] for k, v in _dirs.items()
        }
'''

_IGNORED = shutil.ignore_patterns(
    ".git", ".venv", "__pycache__", ".hypothesis", ".pytest_cache", "build", "build-*", "*.so"
)


def _temp_root() -> Path:
    """:data:`TEMP_ROOT` when it is a writable folder, else the system's temporary folder."""
    if TEMP_ROOT.is_dir() and os.access(TEMP_ROOT, os.W_OK | os.X_OK):
        return TEMP_ROOT
    return Path(tempfile.gettempdir())


class Copy:
    """A temporary copy of the checkout ``source`` in which one module at a time is mutated:
    ``SCRATCH/c``, its tests' temporary folders under ``SCRATCH/t`` (``scratch``: a fresh folder
    of a fixed-length name, outside the copy, so that no test's folder lies inside a checkout)."""

    def __init__(self, source: Path, scratch: Path) -> None:
        self.source = source
        self.root = scratch / "c"
        self.basetemp = scratch / "t"
        shutil.copytree(source, self.root, ignore=_IGNORED, symlinks=True)
        (self.root / "sitecustomize.py").write_text(_REDIRECT)
        self.env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(self.root), os.environ.get("PYTHONPATH", "")]),
            # byte-code compiled once for the whole session, beside the copy (``apply`` keeps
            # a mutant from being served its original's)
            "PYTHONPYCACHEPREFIX": str(scratch / "pyc"),
            "MUTATE_COPY": str(self.root) + os.sep,
        }
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)
        self._stamp = int(time.time())

    def check_imports(self, module: str) -> None:
        """Stop unless the tests will import ``module`` from the copy (else every mutant would
        survive). A module no import name finds (a script the tests load by path) is not
        checked."""
        name = ".".join(Path(module).with_suffix("").parts)
        probe = (
            "import importlib.util, sys\n"
            f"spec = importlib.util.find_spec({name!r})\n"
            "print(spec.origin if spec and spec.origin else '')"
        )
        done = subprocess.run(
            [sys.executable, "-c", probe],
            cwd=self.root,
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )
        found = done.stdout.strip()
        if done.returncode == 0 and found and not found.startswith(str(self.root) + os.sep):
            sys.exit(f"mutate: the copy imports {name} from {found}, not from {self.root}")

    def run(self, tests: Sequence[str], timeout: float) -> tuple[str, float, int | None]:
        """Run ``tests`` in the copy: (outcome, seconds, pytest's exit code; None on a timeout).
        The outcome is ``passed`` (exit 0), ``failed`` (1: a test failed), ``broken`` (any other
        exit: 2 collection errors, 3 an internal error, 4 a conftest that cannot import, 5 no
        test left to collect), ``crashed`` (ended by a signal) or ``timeout``. The unmutated
        copy passes, so each of the others is the mutant's doing: a kill."""
        command = [
            sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n0", "-x", "-q",
            "--no-header", f"--basetemp={self.basetemp}", *tests,
        ]  # fmt: skip
        began = time.monotonic()
        child = subprocess.Popen(
            command,
            cwd=self.root,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # its own process group: a timeout ends all it started
        )
        try:
            code = child.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            return "timeout", time.monotonic() - began, None
        took = time.monotonic() - began
        outcome = {0: "passed", 1: "failed"}.get(code, "crashed" if code < 0 else "broken")
        return outcome, took, code

    def apply(self, mutant: Mutant | None, module: str) -> None:
        """Write ``module`` in the copy as it is in the checkout, with ``mutant`` applied."""
        source = (self.source / module).read_bytes()
        if mutant is not None:
            source = source[: mutant.start] + mutant.text.encode() + source[mutant.end :]
        path = self.root / module
        path.write_bytes(source)
        # Python reuses a compiled module whose source has the same size and modification
        # second; a mutant can have its original's size and be written within the second, so
        # each version written gets a second of its own
        self._stamp = max(self._stamp + 1, int(time.time()))
        os.utime(path, (self._stamp, self._stamp))


def _named(mutant: Mutant, name: str) -> bool:
    """``name`` is the mutant's id, its id up to a colon (``writer:87``: every mutant of line
    87) or a range of lines (``writer:77-101``)."""
    stem, _, lines = name.partition(":")
    first, dash, last = lines.partition("-")
    if dash and first.isdigit() and last.isdigit():
        return mutant.id.startswith(stem + ":") and int(first) <= mutant.line <= int(last)
    return mutant.id == name or mutant.id.startswith(name + ":")


def _module(root: Path, given: str) -> str:
    """``given`` (a path, relative to the checkout ``root`` or absolute) as a POSIX path
    relative to ``root``; ValueError unless it is a Python file inside it."""
    path = Path(given) if Path(given).is_absolute() else root / given
    real = Path(os.path.realpath(path))
    if not real.is_relative_to(root) or real.suffix != ".py" or not real.is_file():
        raise ValueError(f"{given}: not a Python file of {root}")
    return real.relative_to(root).as_posix()


def _tests_of(root: Path, module: str, given: Sequence[str] | None) -> list[str]:
    """The test files or folders run against ``module``'s mutants: ``given`` (``--tests``),
    else its row of :data:`MODULES`, else ``tests/PACKAGE`` for ``builder/PACKAGE/...`` (the
    folder of its package's tests). ValueError when none is found."""
    if given:
        tests, source = list(given), "--tests"
    elif root == ROOT and module in MODULES:
        tests, source = MODULES[module], f"MODULES[{module!r}]"
    else:
        parts = Path(module).parts
        if len(parts) <= 2 or parts[0] != "builder" or not (root / "tests" / parts[1]).is_dir():
            raise ValueError(f"{module}: no tests known for it: name them with --tests")
        tests, source = [f"tests/{parts[1]}"], "its package's tests"
    missing = [t for t in tests if not (root / t.partition("::")[0]).exists()]
    if missing:
        raise ValueError(f"{source}: {missing[0]}: no such file or folder in {root}")
    return tests


def _chosen(args: argparse.Namespace, root: Path) -> dict[str, list[Mutant]]:
    rng = random.Random(args.seed)
    chosen: dict[str, list[Mutant]] = {}
    for module in args.modules:
        every = mutants_of(module, root)
        if args.only:
            every = [m for m in every if any(_named(m, name) for name in args.only)]
        elif args.max_mutants is not None and len(every) > args.max_mutants:
            every = sorted(rng.sample(every, args.max_mutants), key=lambda m: (m.line, m.start))
        chosen[module] = every
    return chosen


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "modules",
        nargs="*",
        help="modules (paths) to mutate, any of the checkout's; default: those of MODULES",
    )
    parser.add_argument(
        "--tests",
        nargs="+",
        help="test files or folders to run against the named modules (default: their MODULES "
        "row, else tests/PACKAGE)",
    )
    parser.add_argument(
        "--root", type=Path, default=ROOT, help="the checkout to copy (default: this one)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the sample (default 0)")
    parser.add_argument("--max-mutants", type=int, help="at most this many per module, sampled")
    parser.add_argument(
        "--only",
        nargs="+",
        help="run only these mutants: ids, id prefixes (writer:87) or line ranges (writer:77-101)",
    )
    parser.add_argument("--timeout", type=float, help="seconds per mutant (default: 4 x baseline)")
    parser.add_argument("--list", action="store_true", help="list the mutants; run nothing")
    parser.add_argument("--json", type=Path, help="also write every result to this JSON file")
    args = parser.parse_args(argv)
    root = Path(os.path.realpath(args.root))
    if not args.modules and root != ROOT:
        parser.error("name the modules to mutate (MODULES are this checkout's)")
    try:
        args.modules = [_module(root, m) for m in args.modules or MODULES]
        tests = {m: _tests_of(root, m, args.tests) for m in args.modules}
    except ValueError as exc:
        parser.error(str(exc))
    chosen = _chosen(args, root)
    if args.list:
        for mutants in chosen.values():
            for m in mutants:
                print(f"{m.id:32} {m.description}")
        return 0
    results: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory(prefix="mutate-", dir=_temp_root()) as scratch:
        work = Copy(root, Path(scratch))
        for module, mutants in chosen.items():
            work.check_imports(module)
            work.apply(None, module)
            outcome, baseline, code = work.run(tests[module], timeout=3600)
            if outcome != "passed":
                print(
                    f"mutate: {module}: its tests fail without a mutant ({outcome}, "
                    f"pytest exit {code}): {' '.join(tests[module])}",
                    file=sys.stderr,
                )
                return 2
            timeout = args.timeout or max(30.0, 4 * baseline)
            print(f"== {module}: {len(mutants)} mutants, tests {baseline:.0f} s", flush=True)
            for mutant in mutants:
                work.apply(mutant, module)
                outcome, took, code = work.run(tests[module], timeout)
                verdict = "SURVIVED" if outcome == "passed" else outcome.upper()
                shown = f"{verdict:8} {mutant.id:32} {took:5.1f} s  {mutant.description}"
                print(f"  {shown}", flush=True)
                results.append(
                    {**asdict(mutant), "outcome": outcome, "exit": code, "seconds": round(took, 1)}
                )
            work.apply(None, module)
    return _summary(chosen, results, args)


def _summary(
    chosen: dict[str, list[Mutant]], results: list[dict[str, object]], args: argparse.Namespace
) -> int:
    print("\nmodule                          mutants  killed  score")
    survivors = [r for r in results if r["outcome"] == "passed"]
    for module in chosen:
        mine = [r for r in results if r["module"] == module]
        killed = sum(r["outcome"] != "passed" for r in mine)
        score = f"{100 * killed / len(mine):.0f}%" if mine else "-"
        print(f"{module:32} {len(mine):7} {killed:7}  {score:>5}")
    print(f"\nsurvivors ({len(survivors)}):" if survivors else "\nno survivors")
    for r in survivors:
        print(f"  {r['id']:32} {r['description']}")
    if args.json:
        args.json.write_text(json.dumps({"seed": args.seed, "results": results}, indent=1) + "\n")
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
