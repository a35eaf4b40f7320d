"""The package layering a newcomer sees in the tree, checked on every import in the code.

Bottom to top (docs/architecture.md): the foundation modules (errors, resources), files in and
out (``files``: bounded reads, crash-safe writes), every setting declared once (``settings``), a
build's records (``records``), the container
(``metallib``), kernel
trees (``kernels``), acquiring inputs (``inputs``), JIT embedding (``jit``), measuring (``size``),
writing subsets (``subsets``), the build side
(``cmake_build``), presentation (``render``), publishing outputs that leave the process
(``publish``) and the command line (``cli``). A module may import
its own package and anything below it, never above; and no chain of imports, lazy ones included,
may lead back to where it started.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "builder"
FOUNDATION = ("builder", "builder.errors", "builder.resources")
LAYERS = (
    "files",
    "settings",
    "records",
    "metallib",
    "kernels",
    "inputs",
    "jit",
    "size",
    "subsets",
    "cmake_build",
    "render",
    "publish",
    "cli",
)


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """Every ``builder`` module ``name`` imports, at any depth of the code (lazy imports too)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names
            ]
        else:
            continue
        found |= {t for t in targets if t.split(".")[0] == "builder" and t != name}
    return found


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _rank(module: str) -> int:
    if module in FOUNDATION or module == "builder.__main__":
        return -1 if module != "builder.__main__" else len(LAYERS)
    return LAYERS.index(module.split(".")[1])


def test_every_module_belongs_to_a_layer() -> None:
    loose = [
        m
        for m in MODULES
        if m not in FOUNDATION and m != "builder.__main__" and m.split(".")[1] not in LAYERS
    ]
    assert not loose, f"modules outside the layers (add them to a package): {loose}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_nothing_imports_upward(module: str) -> None:
    upward = sorted(t for t in GRAPH[module] if t in MODULES and _rank(t) > _rank(module))
    assert not upward, f"{module} imports a higher layer: {upward}"


def test_no_import_cycles() -> None:
    cycles = []
    state: dict[str, int] = {}  # 1 on the stack, 2 done
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(GRAPH.get(node, ())):
            if nxt not in MODULES:
                continue
            if state.get(nxt) == 1:
                cycles.append(" -> ".join([*stack[stack.index(nxt) :], nxt]))
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for module in sorted(MODULES):
        if module not in state:
            visit(module)
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_few_modules_at_the_top() -> None:
    """Loose modules at the top of builder/ are the foundation only: everything else lives in the
    package of its concern."""
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 4, f"modules at the top of builder/: {top}"
