"""There is one way to read a file: ``builder.files.reading`` (regular files only, bounded).

Any other read (``open(path)``, ``Path.read_text``, ``Path.read_bytes``, ``json.load``,
``tomllib.load``) could block on a FIFO or read ``/dev/zero`` without end (issue 24 item 1), so
the code holds none outside that module. Writing is not reading: ``open(path, "wb")`` and the
like are left to ``builder.files.atomic``'s rules.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "builder"
READER = PACKAGE / "files" / "reading.py"
ALLOWED = {
    # The foundation sits below builder.files; it reads only its own checkout's pyproject.toml,
    # after checking that it is a regular file, and at most its first MiB.
    PACKAGE / "resources.py": 1,
}
_READ_METHODS = {"read_text", "read_bytes"}
_LOADERS = {("json", "load"), ("tomllib", "load"), ("tomli", "load")}


def _mode(call: ast.Call) -> str:
    for keyword in call.keywords:
        if keyword.arg == "mode" and isinstance(keyword.value, ast.Constant):
            return str(keyword.value.value)
    if len(call.args) > 1 and isinstance(call.args[1], ast.Constant):
        return str(call.args[1].value)
    return "r"


def _is_read(call: ast.Call) -> bool:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id == "open" and not set(_mode(call)) & set("wax+")
    if not isinstance(func, ast.Attribute):
        return False
    receiver = func.value.id if isinstance(func.value, ast.Name) else None
    return func.attr in _READ_METHODS or (receiver, func.attr) in _LOADERS


def _reads(tree: ast.AST) -> list[int]:
    """Lines of ``tree`` that read a file some other way than through the reader."""
    return sorted(n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call) and _is_read(n))


def test_reads_go_through_the_reader() -> None:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == READER:
            continue
        lines = _reads(ast.parse(path.read_text(encoding="utf-8")))
        if len(lines) > ALLOWED.get(path, 0):
            found[str(path.relative_to(PACKAGE.parent))] = lines
    assert not found, f"files read without builder.files.reading (path: lines): {found}"


def test_the_check_sees_each_way_of_reading() -> None:
    """The checker itself: every form it must catch, and the writes it must let pass."""
    code = """
open(p)
open(p, "rb")
open(p, mode="r", encoding="utf-8")
Path(p).read_text()
p.read_bytes()
json.load(h)
tomllib.load(h)
open(p, "wb")
open(p, "a")
open(fd, "w+b")
json.loads(s)
"""
    assert _reads(ast.parse(code)) == [2, 3, 4, 5, 6, 7, 8]
