"""Size budgets kept in the repository: read them, measure their targets, check every limit.

A budget is a TOML table: ``[[tool.metallib-builder.budget]]`` in ``pyproject.toml``, or
``[[budget]]`` in ``metallib-size.toml`` for a project without one (same keys, docs/ci-recipe.md):

.. code-block:: toml

    [[tool.metallib-builder.budget]]
    name = "mlx, macOS 26"                    # optional; the target otherwise
    target = "mlx-metal==0.32.4"              # path, glob, build folder or PACKAGE==VERSION
    platform = "macosx_26_0_arm64"            # wheel platform of a PACKAGE==VERSION target
    max-size = "220MB"                        # the metallib(s)
    max-total-size = "230MB"                  # metallib(s) + a build's JIT host library
    max-download = "80MB"                     # compressed, as a wheel stores it (report --download)
    max-functions = 20000
    by = "kernel"                             # what the group names below are
    groups = { quantized = "60MB" }
    base = "reports/main.json"                # a saved report (or any target) for max-growth
    max-growth = "1%"                         # or "100kB"; counts everything shipped

Relative paths (target, globs, base, source-dir, include-dirs) are taken from the file's folder,
as size-limit does. A glob's libraries are summed. Keys are checked strictly: an unknown key, a
wrong type or a limit without what it needs is a ``UsageError`` (exit 2) naming the file, the
budget and the key. Checking returns numbers only (``BudgetCheck``); presentation words them
(``builder.render.budget``).
"""

from __future__ import annotations

import glob
import os
import sys
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from builder.errors import UsageError
from builder.size.grouping import BY_CHOICES
from builder.size.limits import Limit, parse_limit, parse_size, shipped_size

if TYPE_CHECKING:
    from builder.inputs.targets import Progress
    from builder.size.grouping import Sources
    from builder.size.report import Report

__all__ = [
    "BUDGET_FILE",
    "PYPROJECT",
    "Budget",
    "BudgetCheck",
    "BudgetFile",
    "check_budgets",
    "download_bytes",
    "find_budget_file",
    "read_budget_file",
]

BUDGET_FILE = "metallib-size.toml"
PYPROJECT = "pyproject.toml"
_TOOL = "metallib-builder"
_LIMITS = ("max-size", "max-total-size", "max-download", "max-functions", "groups", "max-growth")
_KEYS = ("name", "target", "platform", "by", "source-dir", "include-dirs", "base", *_LIMITS)


@dataclass(frozen=True)
class Budget:
    """One budget table, checked and with its paths made absolute."""

    where: str
    """How errors name it: ``pyproject.toml: [[tool.metallib-builder.budget]] #1``."""
    name: str
    target: str
    root: Path
    """The budget file's folder: relative paths start here."""
    platform: str | None = None
    by: str = "kernel"
    source_dir: Path | None = None
    include_dirs: tuple[Path, ...] = ()
    max_size: int | None = None
    max_total_size: int | None = None
    max_download: int | None = None
    max_functions: int | None = None
    groups: Mapping[str, int] = field(default_factory=dict)
    base: str | None = None
    max_growth: Limit | None = None


@dataclass(frozen=True)
class BudgetFile:
    path: Path
    table: str
    """``[[tool.metallib-builder.budget]]`` or ``[[budget]]``."""
    budgets: list[Budget]


@dataclass(frozen=True)
class BudgetCheck:
    """One limit of one budget against the value measured for it."""

    budget: str
    key: str
    """The budget key: ``max-size``, ``max-total-size``, ``max-download``, ``max-functions``,
    ``groups`` or ``max-growth``."""
    limit: int
    """Bytes (functions for ``max-functions``); for ``max-growth`` the growth allowed in bytes."""
    value: int
    """Measured: bytes, functions, or for ``max-growth`` head minus base bytes."""
    measured_in: tuple[str, ...]
    """The files the value was measured in."""
    group: str | None = None
    growth: Limit | None = None
    """``max-growth`` as written (a percentage or bytes)."""
    base_value: int | None = None
    """``max-growth``: the base's bytes the growth is relative to."""

    @property
    def passed(self) -> bool:
        return self.value <= self.limit


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
    raise UsageError(f"no budget found in {start.resolve()} or above: add [[tool.{_TOOL}.budget]] "
                     f"tables to {PYPROJECT}, or [[budget]] tables to {BUDGET_FILE}")  # fmt: skip


def _load_toml(path: Path) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        return tomllib.loads(path.read_bytes().decode("utf-8"))
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: invalid TOML: {exc}") from None


def _tool_tables(raw: dict[str, Any]) -> dict[str, Any]:
    tool = raw.get("tool")
    return tool if isinstance(tool, dict) else {}


def _unknown(where: str, key: str, known: Sequence[str]) -> UsageError:
    import difflib

    close = difflib.get_close_matches(key, known, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else f" (known: {', '.join(known)})"
    return UsageError(f"{where}: unknown key {key!r}{hint}")


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
    return BudgetFile(path, table, [_budget(t, f"{path}: {table} #{n}", root)
                                    for n, t in enumerate(tables, 1)])  # fmt: skip


def _budget(raw: dict[str, Any], where: str, root: Path) -> Budget:
    for key in raw:
        if key not in _KEYS:
            raise _unknown(where, key, _KEYS)
    target = _text(raw, "target", where)
    if target is None:
        raise UsageError(f"{where}: 'target' is missing (a path, glob, build folder or "
                         "PACKAGE==VERSION)")  # fmt: skip
    name = _text(raw, "name", where) or target
    where = f"{where} ({name})"
    if not any(key in raw for key in _LIMITS):
        raise UsageError(f"{where}: no limit; give any of {', '.join(_LIMITS)}")
    by = _text(raw, "by", where) or "kernel"
    if by not in BY_CHOICES:
        raise UsageError(f"{where}: 'by' must be one of {', '.join(BY_CHOICES)}, got {by!r}")
    source_dir = _text(raw, "source-dir", where)
    include = raw.get("include-dirs", [])
    if not isinstance(include, list) or not all(isinstance(i, str) and i for i in include):
        raise UsageError(f"{where}: 'include-dirs' must be a list of folder paths")
    if include and source_dir is None:
        raise UsageError(f"{where}: 'include-dirs' is for the tree named by 'source-dir'")
    if by == "source" and source_dir is None and not (root / target).is_dir():
        raise UsageError(f"{where}: by = \"source\" needs 'source-dir' (the kernel tree the "
                         "library was built from): a metallib does not record source files")  # fmt: skip
    groups = raw.get("groups", {})
    if not isinstance(groups, dict) or ("groups" in raw and not groups):
        raise UsageError(f"{where}: 'groups' must be a table of group = limit, e.g. "
                         "groups = { \"quantized\" = \"30MB\" }")  # fmt: skip
    base = _text(raw, "base", where)
    growth = raw.get("max-growth")
    if (base is None) != (growth is None):
        raise UsageError(f"{where}: 'max-growth' and 'base' go together (growth against a base "
                         "report)")  # fmt: skip
    functions = raw.get("max-functions")
    if functions is not None and (isinstance(functions, bool) or not isinstance(functions, int)
                                  or functions < 0):  # fmt: skip
        raise UsageError(f"{where}: 'max-functions' must be a count, got {functions!r}")
    return Budget(
        where, name, target, root, platform=_text(raw, "platform", where), by=by,
        source_dir=None if source_dir is None else _path(root, source_dir),
        include_dirs=tuple(_path(root, i) for i in include),
        max_size=_size(raw, "max-size", where), max_total_size=_size(raw, "max-total-size", where),
        max_download=_size(raw, "max-download", where), max_functions=functions,
        groups={str(g): _size(groups, g, f"{where}: groups") or 0 for g in groups},
        base=base, max_growth=None if growth is None else _growth(growth, where),
    )  # fmt: skip


def _text(raw: Mapping[str, Any], key: str, where: str) -> str | None:
    value = raw.get(key)
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise UsageError(f"{where}: {key!r} must be a non-empty string, got {value!r}")
    return value


def _size(raw: Mapping[str, Any], key: str, where: str) -> int | None:
    value = raw.get(key)
    if value is None:
        return None
    try:
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise UsageError(f"{value!r} is not a size")
        size = parse_size(value) if isinstance(value, str) else value
    except UsageError as exc:
        raise UsageError(f"{where}: {key!r}: {exc} (e.g. \"30MB\")") from None
    if size < 0:
        raise UsageError(f"{where}: {key!r} must not be negative, got {value!r}")
    return size


def _growth(value: Any, where: str) -> Limit:
    try:
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise UsageError(f"{value!r} is not a size or a percentage")
        return parse_limit(value) if isinstance(value, str) else Limit(bytes=value)
    except UsageError as exc:
        raise UsageError(f"{where}: 'max-growth': {exc} (e.g. \"1%\" or \"100kB\")") from None


def _path(root: Path, text: str) -> Path:
    return Path(os.path.normpath(root / text))


def download_bytes(report: Report) -> int:
    """Bytes a user downloads for ``report``'s library, as ``report --download`` models them
    (``builder.size.download``: zlib level 6 raw deflate, as a wheel's ZIP stores the file).

    The one place ``budget`` (``max-download``) and ``history --download`` get download sizes
    from. A saved report gives the total it recorded with ``--download`` (UsageError without
    one: its file was measured elsewhere); a build whose families are all JIT has no metallib,
    so its host library is compressed whole with the same codec and level."""
    if report.download is not None:
        return report.download.total
    if report.source.kind == "report":
        raise UsageError(f"{report.source.label}: a saved report without download figures "
                         "(save it with report --download --format json)")  # fmt: skip
    if report.source.path is not None:
        from builder.metallib import open_metallib
        from builder.size.attribution import attribute
        from builder.size.download import download_total

        with open_metallib(report.source.path) as lib:
            return download_total(lib, attribute(lib))
    if report.host_library is None:
        raise UsageError(f"{report.source.label}: no library file to measure the download size "
                         "of (a build without metallib or host library)")  # fmt: skip
    return _deflated_size(report.host_library.path)


def _deflated_size(path: str) -> int:
    from builder.size.download import LEVEL

    compressor = zlib.compressobj(LEVEL, zlib.DEFLATED, -15)
    total = 0
    try:
        with open(path, "rb") as handle:
            while chunk := handle.read(1 << 20):
                total += len(compressor.compress(chunk))
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return total + len(compressor.flush())


def check_budgets(budgets: Sequence[Budget], *, progress: Progress | None = None) -> list[BudgetCheck]:
    """Measure every budget's target (``builder.size.load``) and check each of its limits."""
    from builder.size.load import load_reports

    def load(text: str, by: str, sources: Sources | None = None) -> list[Report]:
        return load_reports(text, by=by, platform=budget.platform, sources=sources,
                            progress=progress)  # fmt: skip

    checks: list[BudgetCheck] = []
    for budget in budgets:
        sources = _sources(budget)
        reports = [r for text in _targets(budget, budget.target)
                   for r in load(text, budget.by, sources)]  # fmt: skip
        base = None
        if budget.base is not None:
            base = [r for text in _targets(budget, budget.base) for r in load(text, budget.by)]
        checks += _check(budget, reports, base)
    return checks


def _sources(budget: Budget) -> Sources | None:
    if budget.source_dir is None:
        return None
    from builder.kernels.discovery import load_tree
    from builder.size.grouping import Sources

    if not budget.source_dir.is_dir():
        raise UsageError(f"{budget.where}: 'source-dir' {budget.source_dir} is not a folder")
    tree = load_tree(budget.source_dir, include_dirs=budget.include_dirs)
    return Sources(tree.source_of(), f"discovery:{tree.root}")


def _targets(budget: Budget, text: str) -> list[str]:
    """``text`` as targets: a glob's matches (sorted), a path from the budget's folder, or a
    ``PACKAGE==VERSION`` spec as written."""
    from builder.inputs.wheels import parse_spec

    if any(c in text for c in "*?["):
        found = sorted(glob.glob(str(_path(budget.root, text)), recursive=True))
        if not found:
            raise UsageError(f"{budget.where}: target {text!r} matches no file")
        return found
    if parse_spec(text) is not None and not (budget.root / text).exists():
        return [text]
    return [str(_path(budget.root, text))]


def _where(report: Report) -> str:
    src = report.source
    if src.kind == "report":
        return f"saved report {src.target}"
    return src.path or (report.host_library.path if report.host_library else src.target)


def _check(budget: Budget, reports: list[Report], base: list[Report] | None) -> list[BudgetCheck]:
    name, out = budget.name, []
    where = tuple(_where(r) for r in reports)
    hosts = tuple(r.host_library.path for r in reports if r.host_library is not None)

    def add(key: str, limit: int, value: int, measured: tuple[str, ...] = where,
            **extra: Any) -> None:  # fmt: skip
        out.append(BudgetCheck(name, key, limit, value, measured, **extra))

    if budget.max_size is not None:
        add("max-size", budget.max_size,
            sum(r.file_size if r.source.path is not None else shipped_size(r) for r in reports))  # fmt: skip
    if budget.max_total_size is not None:
        add("max-total-size", budget.max_total_size, sum(map(shipped_size, reports)),
            where + hosts)  # fmt: skip
    if budget.max_download is not None:
        add("max-download", budget.max_download, sum(map(download_bytes, reports)))
    if budget.max_functions is not None:
        add("max-functions", budget.max_functions, sum(r.function_count for r in reports))
    if budget.groups:
        measured = _group_bytes(reports, budget.by)
        for group, limit in budget.groups.items():
            if group not in measured:
                raise _no_group(budget, group, measured)
            add("groups", limit, measured[group], group=group)
    if budget.max_growth is not None and base is not None:
        base_total = sum(map(shipped_size, base))
        grown = sum(map(shipped_size, reports)) - base_total
        add("max-growth", int(budget.max_growth.allowed(base_total)), grown,
            tuple(_where(r) for r in base) + where + hosts, growth=budget.max_growth,
            base_value=base_total)  # fmt: skip
    return out


def _group_bytes(reports: Sequence[Report], by: str) -> dict[str, int]:
    """Bytes per group over all libraries; grouped by kernel, a JIT family's bytes in the host
    library count for its group too (everything shipped)."""
    from builder.size.jit_rows import jit_breakdown

    totals: dict[str, int] = {}
    for report in reports:
        for group in report.groups:
            totals[group.name] = totals.get(group.name, 0) + group.bytes
        jit = jit_breakdown(report) if by == "kernel" else None
        for row in jit.families if jit is not None else ():
            totals[row.name] = totals.get(row.name, 0) + row.bytes
    return totals


def _no_group(budget: Budget, group: str, measured: Mapping[str, int]) -> UsageError:
    import difflib

    close = difflib.get_close_matches(group, list(measured), n=3)
    hint = f"; closest: {', '.join(close)}" if close else ""
    return UsageError(f"{budget.where}: groups: no group {group!r} in {budget.target} by "
                      f"{budget.by}{hint}")  # fmt: skip
