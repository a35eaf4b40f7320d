"""No test asserts on elapsed time (issue 33 item 24): a wall-clock bound fails on a loaded
machine with nothing wrong (a lexing test's 15x ratio measured 20.4 under load). Speed is
measured in benchmarks/; a test counts work (characters read, calls, bytes) instead, and a test
whose failure mode is never returning fails at a hang guard (``support.deadline``, a child killed
after a generous time), which is a wait, not an assertion.

The check reads each test file's syntax tree: a value is timed when it comes from
``time.perf_counter``, ``monotonic``, ``time``, ``process_time`` (or their ``_ns`` forms, also
imported by name), or from a timed value (assignments, ``append`` to a list, a function returning
one, an attribute of the same name as a timed variable); an ``assert`` (or an ``assert*`` call)
that reads a timed value is reported with its file and line."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
CLOCKS = frozenset(
    f"{name}{suffix}"
    for name in ("perf_counter", "monotonic", "time", "process_time", "thread_time")
    for suffix in ("", "_ns")
)
_ADDERS = frozenset({"append", "extend", "add", "insert", "appendleft"})


def _clock_names(tree: ast.Module) -> set[str]:
    """Names a clock is called by in this file: ``time`` (the module, as imported) and any
    clock imported by name (``from time import perf_counter as now``)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "time":
            names |= {a.asname or a.name for a in node.names if a.name in CLOCKS}
    return names


def _is_clock(node: ast.AST, clocks: set[str]) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in CLOCKS:
        return isinstance(func.value, ast.Name) and func.value.id == "time"
    return isinstance(func, ast.Name) and func.id in clocks


def _timed(node: ast.AST, clocks: set[str], tainted: set[str]) -> bool:
    for sub in ast.walk(node):
        if _is_clock(sub, clocks):
            return True
        if isinstance(sub, ast.Name) and sub.id in tainted:
            return True
        if isinstance(sub, ast.Attribute) and sub.attr in tainted:
            return True
    return False


def _targets(node: ast.AST) -> list[str]:
    """The names an assignment-like statement binds."""
    found: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        found = list(node.targets)
    elif isinstance(node, ast.AugAssign | ast.AnnAssign | ast.NamedExpr | ast.For):
        found = [node.target]
    return [
        n.id if isinstance(n, ast.Name) else n.attr
        for t in found
        for n in ast.walk(t)
        if isinstance(n, ast.Name | ast.Attribute)
    ]


def _source_of(node: ast.AST) -> ast.AST | None:
    if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.NamedExpr):
        return node.value
    if isinstance(node, ast.For):
        return node.iter
    return None


def timed_assertions(source: str) -> list[int]:
    """Lines of the ``assert`` statements (and ``assert*`` calls) of ``source`` that read a
    timed value."""
    tree = ast.parse(source)
    clocks = _clock_names(tree)
    tainted: set[str] = set()
    while True:  # until no new name is timed
        before = len(tainted)
        for node in ast.walk(tree):
            value = _source_of(node)
            if value is not None and _timed(value, clocks, tainted):
                tainted.update(_targets(node))
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in _ADDERS
                and isinstance(node.func.value, ast.Name)
                and any(_timed(a, clocks, tainted) for a in node.args)
            ):
                tainted.add(node.func.value.id)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and any(
                isinstance(r, ast.Return)
                and r.value is not None
                and _timed(r.value, clocks, tainted)
                for r in ast.walk(node)
            ):
                tainted.add(node.name)
        if len(tainted) == before:
            break
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert) and _timed(node.test, clocks, tainted):
            lines.append(node.lineno)
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            arguments = [*node.args, *(k.value for k in node.keywords)]
            if name.startswith("assert") and any(_timed(a, clocks, tainted) for a in arguments):
                lines.append(node.lineno)
    return sorted(lines)


def test_no_test_asserts_on_elapsed_time() -> None:
    found = [
        f"{path.relative_to(TESTS.parent)}:{line}"
        for path in sorted(TESTS.rglob("*.py"))
        for line in timed_assertions(path.read_text(encoding="utf-8"))
    ]
    assert found == [], (
        "these assert on elapsed time; measure speed in benchmarks/ and count work in the "
        f"test (a hang guard may stay: support.deadline): {', '.join(found)}"
    )


RATIO = """\
import time
def test():
    def best(text):
        times = []
        for _ in range(3):
            start = time.perf_counter()
            scan(text)
            times.append(time.perf_counter() - start)
        return min(times)
    assert best(large) / best(small) <= 15
"""
"""The lexing test's ratio of best-of-three times (issue 33 item 24): line 10."""
RECORD = """\
import time
def run():
    start = time.monotonic()
    seconds = time.monotonic() - start
    return Run(0, seconds)
def refused(run):
    assert run.seconds < 60
"""
"""A bound on a run's measured seconds, read back from a record: line 7."""
IMPORTED = """\
from time import perf_counter as now
def test():
    t0 = now()
    work()
    took = now() - t0
    self.assertLess(took, 5)
    assert (ok := took < 5)
"""
"""A clock imported by name, an ``assert*`` call, a walrus: lines 6 and 7."""
GUARDS = """\
import time
def run():
    start = time.monotonic()
    while proc.poll() is None:
        if time.monotonic() - start > 60:
            pytest.fail("hung")
    assert proc.returncode == 2
def test():
    with deadline(60):
        assert names(text) == []
    assert time.sleep is not None
"""
"""Hang guards and polling: waits, not assertions."""


@pytest.mark.parametrize(
    ("source", "lines"), [(RATIO, [10]), (RECORD, [7]), (IMPORTED, [6, 7]), (GUARDS, [])]
)
def test_the_check_finds_timed_assertions(source: str, lines: list[int]) -> None:
    assert timed_assertions(source) == lines
