"""Size budgets kept in the repository: find the budget file and read its tables, strictly.

A budget is a TOML table: ``[[tool.metallib-builder.budget]]`` in ``pyproject.toml``, or
``[[budget]]`` in ``metallib-size.toml`` for a project without one (same keys, docs/ci-recipe.md):

.. code-block:: toml

    [[tool.metallib-builder.budget]]
    name = "mlx, macOS 26"                    # optional; the target otherwise
    target = "mlx-metal==0.32.4"              # path, glob, build folder or PACKAGE==VERSION
    platform = "macosx_26_0_arm64"            # wheel platform of a PACKAGE==VERSION target
    # member = "mlx/lib/libmlx.dylib"         # one library of the target, as report --member
    max-size = "220MB"                        # the metallib(s)
    max-total-size = "230MB"                  # metallib(s) + a build's JIT host library
    max-download-size = "80MB"                # compressed, as a wheel stores it (report --download)
    max-functions = 20000
    by = "kernel"                             # what the group names below are
    groups = { quantized = "60MB" }
    # by = "source": the tree, as --source-dir, -I, -D, --exclude and --config give it
    # source-dir = "kernels/"  include-dirs = ["."]  defines = ["__METAL_VERSION__=400"]
    # exclude = ["*_nax.metal"]  config = "ci/metallib.toml"
    base = "reports/main.json"                # a saved report (or any target) for max-growth
    max-growth = "1%"                         # or "100kB"; counts everything shipped
    require = ["*_nax*>=1"]                   # functions it must hold (GLOB or GLOB>=N)
    fail-on-removed = "*_nax*"                # functions of the base it must keep
    min-functions = 16000                     # an empty library (no function) always fails
    max-deployment-target = "26.2"            # the header's deployment target, at most
    max-metal-version = "4.0"                 # the Metal versions its functions state, at most
    fail-on-platform-change = true            # deployment target, Metal or AIR versions as base

Relative paths (target, globs, base, source-dir, include-dirs, config) are taken from the file's
folder, as size-limit does. Keys are checked strictly: an unknown key, a wrong type, a number
that is no byte count (negative, past 2^63-1, a percentage that is not a plain decimal from 0 to
1,000,000) or a limit without what it needs is a ``UsageError`` (exit 2) naming the file, the
budget and the key; TOML that Python's parser cannot hold (a 5,000-digit integer, arrays nested
50,000 deep) too (``builder.files.reading``). Checking the budgets read here is
``builder.size.budget``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path

from builder.errors import UsageError, closest_hint
from builder.files.bounds import brief
from builder.files.reading import parse_toml, read_bytes
from builder.settings.declared import BUDGET_LIMITS, SETTINGS, Limits, Tree
from builder.settings.file_keys import BASE_LIMITS
from builder.settings.model import read_table
from builder.size.grouping import BY_CHOICES

__all__ = [
    "BUDGET_FILE",
    "KEYS",
    "PYPROJECT",
    "Budget",
    "BudgetFile",
    "find_budget_file",
    "read_budget_file",
]

BUDGET_FILE = "metallib-size.toml"
PYPROJECT = "pyproject.toml"
_TOOL = "metallib-builder"
_LIMITS = BUDGET_LIMITS
_TREE = [SETTINGS[f.name].budget for f in fields(Tree)]
"""The kernel tree of ``by = "source"``, ``source-dir`` first: the command line's --source-dir,
-I, -D, --exclude and --config (``Tree``), loaded the same way (``builder.cli.tree_options``)."""
_KEYS = {s.budget: s for s in SETTINGS.values() if s.budget is not None}
KEYS = tuple(_KEYS)
"""Every key of a budget table: the settings that declare one (``builder.settings.declared``),
each read by its setting (``builder.settings.model.read_table``)."""


@dataclass(frozen=True, kw_only=True)
class Budget(Tree, Limits):
    """One budget table, checked and with its paths made absolute; its kernel tree's keys
    (``by = "source"``: source-dir, include-dirs, defines, exclude, config) are those of the
    command line's tree (``builder.settings.declared.Tree``)."""

    where: str
    """How errors name it: ``pyproject.toml: [[tool.metallib-builder.budget]] #1``."""
    name: str
    target: str
    root: Path
    """The budget file's folder: relative paths start here."""
    platform: str | None = None
    member: str | None = None
    """The one library of the target measured, as ``report --member`` names it (a wheel's
    binary member holding no metallib: its host library); from the base, the same library,
    paired as ``compare`` pairs (by name, then by identity; none there: all of it is growth)."""
    by: str = "kernel"
    max_functions: int | None = None
    groups: Mapping[str, int] = field(default_factory=dict)
    base: str | None = None

    def path(self, text: str) -> Path:
        """``text`` (a path in the budget file) from the file's folder, as size-limit reads it."""
        return _path(self.root, text)


@dataclass(frozen=True)
class BudgetFile:
    path: Path
    table: str
    """``[[tool.metallib-builder.budget]]`` or ``[[budget]]``."""
    budgets: list[Budget]


def find_budget_file(start: Path) -> Path:
    """The budget file for ``start`` and its parents: the nearest folder holding
    ``metallib-size.toml`` or a ``pyproject.toml`` with ``[tool.metallib-builder]``."""
    for folder in (start.resolve(), *start.resolve().parents):
        own, project = folder / BUDGET_FILE, folder / PYPROJECT
        has_project = project.is_file() and _TOOL in _tool_tables(_load_toml(project))
        if own.is_file() and has_project:
            raise UsageError(f"{folder}: budgets in both {BUDGET_FILE} and {PYPROJECT}; keep one")
        if own.is_file() or has_project:
            return own if own.is_file() else project
    raise UsageError(
        f"no budget found in {start.resolve()} or above: add [[tool.{_TOOL}.budget]] "
        f"tables to {PYPROJECT}, or [[budget]] tables to {BUDGET_FILE}"
    )


def _load_toml(path: Path) -> dict[str, object]:
    try:
        data = read_bytes(path, "the budget file")
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return parse_toml(data, path)


def _tool_tables(raw: dict[str, object]) -> dict[str, object]:
    tool = raw.get("tool")
    return tool if isinstance(tool, dict) else {}


def _unknown(where: str, key: str, known: Sequence[str]) -> UsageError:
    return UsageError(f"{where}: unknown key {brief(key)}{closest_hint(key, known)}")


def read_budget_file(path: Path) -> BudgetFile:
    """Read and check every budget of ``path`` (a pyproject.toml or a metallib-size.toml)."""
    raw = _load_toml(path)
    if path.name == PYPROJECT:
        tool = _tool_tables(raw).get(_TOOL)
        table, holder = f"[[tool.{_TOOL}.budget]]", f"{path}: [tool.{_TOOL}]"
    else:
        tool, table, holder = raw, "[[budget]]", str(path)
    for key in tool if isinstance(tool, dict) else ():
        if key != "budget":
            raise _unknown(holder, key, ["budget"])
    if not isinstance(tool, dict) or "budget" not in tool:
        raise UsageError(f"{holder}: no {table} tables")
    tables = tool["budget"]
    if not isinstance(tables, list) or not tables or not all(isinstance(t, dict) for t in tables):
        raise UsageError(f"{holder}: 'budget' must be an array of tables ({table})")
    root = path.resolve().parent
    return BudgetFile(
        path, table, [_budget(t, f"{path}: {table} #{n}", root) for n, t in enumerate(tables, 1)]
    )


def _budget(raw: dict[str, object], where: str, root: Path) -> Budget:
    # the budget's name first, so that every error below names it
    name = _text(raw, "name", where) or _text(raw, "target", where)
    where = f"{where} ({name})" if name is not None else where
    for key in ("name", "target", "by", "base"):
        _text(raw, key, where)  # a text key of a budget is not blank
    values = read_table(
        raw,
        _KEYS,
        lambda key: f"{where}: {key}" if key == "groups" else f"{where}: {key!r}",
        f"{where}: unknown key ",
        base=root,
    )
    target = values.get("target")
    if target is None or name is None:
        raise UsageError(
            f"{where}: 'target' is missing (a path, glob, build folder or PACKAGE==VERSION)"
        )
    if not any(key in raw for key in _LIMITS):
        raise UsageError(f"{where}: no limit; give any of {', '.join(_LIMITS)}")
    by = values.setdefault("by", "kernel")
    if by not in BY_CHOICES:
        raise UsageError(f"{where}: 'by' must be one of {', '.join(BY_CHOICES)}, got {by!r}")
    tree_keys = [key for key in _TREE[1:] if key in raw]
    if tree_keys and "source-dir" not in raw:
        raise UsageError(f"{where}: {tree_keys[0]!r} is for the tree named by 'source-dir'")
    if by == "source" and "source-dir" not in raw and not (root / target).is_dir():
        raise UsageError(
            f"{where}: by = \"source\" needs 'source-dir' (the kernel tree the "
            "library was built from): a metallib does not record source files"
        )
    if "groups" in raw and not values["groups"]:
        raise UsageError(
            f"{where}: 'groups' must be a table of group = limit, e.g. "
            'groups = { "quantized" = "30MB" }'
        )
    against = [key for key in BASE_LIMITS if key in raw]
    if against and "base" not in raw:
        raise UsageError(f"{where}: {against[0]!r} needs 'base' (a saved report or any target)")
    if "base" in raw and not against and "require" not in raw:
        raise UsageError(
            f"{where}: 'base' is what {', '.join(BASE_LIMITS)} or require compare with; "
            "give one of them"
        )
    if values.get("fail_on_missing") and "source-dir" not in raw:
        raise UsageError(
            f"{where}: 'fail-on-missing' needs 'source-dir' (the kernel tree whose kernels "
            "the library must hold)"
        )
    if "max-unattributed" in raw and by != "source":
        raise UsageError(
            f"{where}: 'max-unattributed' limits the bytes no entry file produces, the "
            "'other' group of by = \"source\""
        )
    return Budget(where=where, root=root, **{**values, "name": name})


def _text(raw: Mapping[str, object], key: str, where: str) -> str | None:
    value = raw.get(key)
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise UsageError(f"{where}: {key!r} must be a non-empty string, got {brief(value)}")
    return value


def _path(root: Path, text: str) -> Path:
    return Path(os.path.normpath(root / text))
