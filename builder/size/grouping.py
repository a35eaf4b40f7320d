"""Which group a function's bytes go to: kernel group, dtype, or the function itself.

Kernel groups come from the best source available, in this order:

1. a build manifest of this project (exact: the build knows which unit produced each name);
2. a rule file given with ``--rules`` (ordered ``GROUP REGEX`` lines, first match wins);
3. the built-in MLX rule set (``builder/size/rules/mlx.rules``) when most names look like MLX's;
4. a generic fallback: the op the name says, its dtypes, parameters and layout words dropped
   (``builder.size.naming``).

``--by stem`` is the level below an op for any library: the name without its dtypes and
parameters (``abs_dense_castout``, ``sort_block_stable``).

Rules are compiled into one alternation so that classifying 17k names is a single regex call per
name; Python's alternation is ordered, so "first rule wins" holds exactly.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from builder.errors import UsageError
from builder.files.reading import read_text
from builder.size.naming import (
    NO_DTYPE,
    generic_group,
    generic_groups,
    generic_stems,
    parse_dtypes,
    primary_dtype,
)
from builder.size.params import param_labels

__all__ = [
    "BY_CHOICES",
    "NO_DTYPE",
    "OTHER",
    "Grouping",
    "Rule",
    "RuleSet",
    "Sources",
    "builtin_rules",
    "generic_group",
    "generic_groups",
    "generic_stems",
    "group_names",
    "load_rules",
    "parse_by",
    "parse_dtypes",
    "primary_dtype",
]

BY_CHOICES = ("function", "kernel", "stem", "dtype", "source", "param")
OTHER = "other"
MLX_MIN_SHARE = 0.5
"""Share of names the MLX rules must match before a library is treated as MLX-built."""

_RULES_DIR = Path(__file__).resolve().parent / "rules"


class Sources(NamedTuple):
    """Which source file each kernel comes from, and how that is known: ``origin`` is
    ``manifest`` (a build recorded it) or ``discovery:<tree>`` (the tree's entry files were
    preprocessed, ``builder.kernels.discovery``)."""

    of: Mapping[str, str]
    origin: str
    folders: tuple[Path, ...] = ()
    """A discovered tree's root, then its -I folders: where a shipped host library's run-time
    sources find the headers they were made from (``builder.size.host_strings``)."""


@dataclass(frozen=True)
class Rule:
    """``group`` applies to names that ``pattern`` matches at their start."""

    group: str
    pattern: str
    line: int = 0


class RuleSet:
    """An ordered list of rules compiled into one regex; ``origin`` says where they came from."""

    def __init__(self, rules: Sequence[Rule], origin: str) -> None:
        self.rules = list(rules)
        self.origin = origin
        # Each rule is marked by an empty group at its end, not a group around it: a branch that
        # starts with a literal or a character set is then rejected on the name's first
        # character (torch's names tried all 41 MLX rules in 2.8 us each, 1.7 us so).
        parts = [f"(?:{rule.pattern})(?P<_r{i}>)" for i, rule in enumerate(self.rules)]
        try:
            self._combined: re.Pattern[str] | None = re.compile("|".join(parts))
        except re.error:
            # Find the bad rule to name its line; if every rule compiles alone (e.g. two rules
            # define the same named group), match them one by one.
            for rule in self.rules:
                try:
                    re.compile(rule.pattern)
                except re.error as exc:
                    where = f"{origin}:{rule.line}" if rule.line else origin
                    raise UsageError(f"{where}: bad regex {rule.pattern!r}: {exc}") from None
            self._combined = None
        self._single_patterns: list[re.Pattern[str]] | None = None
        self._groups = {f"_r{i}": rule.group for i, rule in enumerate(self.rules)}

    def group(self, name: str) -> str | None:
        """The group of the first rule that matches ``name``, or None."""
        if self._combined is not None:
            match = self._combined.match(name)
            if match is None:
                return None
            # the marker closes last, so it is the last group matched
            return self._groups[match.lastgroup] if match.lastgroup else self._slow(name)
        return self._slow(name)

    def _slow(self, name: str) -> str | None:
        if self._single_patterns is None:
            self._single_patterns = [re.compile(rule.pattern) for rule in self.rules]
        for rule, regex in zip(self.rules, self._single_patterns):
            if regex.match(name):
                return rule.group
        return None


def parse_rules(text: str, origin: str) -> RuleSet:
    """Parse ``GROUP REGEX`` lines; a bad line or regex is a UsageError naming the line."""
    rules = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 1)
        if len(parts) != 2:
            raise UsageError(f"{origin}:{number}: expected 'GROUP REGEX', got {line!r}")
        group, pattern = parts[0], parts[1].strip()
        rules.append(Rule(group, pattern, number))
    if not rules:
        raise UsageError(f"{origin}: no rules found")
    return RuleSet(rules, origin)


def load_rules(path: str | Path) -> RuleSet:
    """Read a user rule file (see ``builder/size/rules/mlx.rules`` for the format)."""
    return parse_rules(read_text(path, "rule file"), str(path))


_BUILTIN: dict[str, RuleSet] = {}


def builtin_rules(name: str = "mlx") -> RuleSet:
    """A rule set shipped with the tool (only ``mlx`` for now)."""
    if name not in _BUILTIN:
        path = _RULES_DIR / f"{name}.rules"
        if not path.is_file():
            raise UsageError(f"no built-in rule set named {name!r}")
        _BUILTIN[name] = parse_rules(read_text(path, "rule file"), f"builtin:{name}")
    return _BUILTIN[name]


@dataclass(frozen=True)
class Grouping:
    """Group labels for a list of names, plus how they were obtained (for the report header)."""

    by: str
    method: str
    """``function``, ``dtype``, ``param``, ``manifest``, ``rules:<origin>`` or ``generic``."""
    labels: list[str]


def group_names(
    names: Sequence[str],
    by: str = "kernel",
    *,
    rules: RuleSet | None = None,
    units: Mapping[str, str] | None = None,
    sources: Sources | None = None,
) -> Grouping:
    """Label every name for ``by``; ``units`` maps host names to their units (a build
    manifest), ``sources`` names each kernel's source file (from a manifest or from discovering
    a kernel tree).

    Names the mapping does not list go to "other" (no entry file or unit the tool knows
    produced them). Without a mapping, ``--by source`` cannot be answered: a metallib does not
    record which ``.metal`` file a function came from.
    """
    if by == "function":
        return Grouping(by, "function", list(names))
    if by == "dtype":
        return Grouping(by, "dtype", [primary_dtype(n) for n in names])
    if by == "stem":
        return Grouping(by, "generic", generic_stems(names))
    if by == "param":  # the name less its template parameters (builder.size.params)
        return Grouping(by, "param", param_labels(names))
    if by == "source":
        if sources is None:
            raise UsageError(
                "--by source needs the kernel tree the library was built from: a metallib does "
                "not record the source file of its functions (add --source-dir DIR, or point at "
                "a build directory)"
            )
        of = sources.of
        return Grouping(by, sources.origin, [of.get(n, OTHER) for n in names])
    if by != "kernel":
        raise UsageError(f"--by must be one of {', '.join(BY_CHOICES)}, not {by!r}")
    if units is not None:
        return Grouping(by, "manifest", [units.get(n, OTHER) for n in names])
    if rules is not None:
        return Grouping(by, f"rules:{rules.origin}", _classify(rules, names))
    mlx = builtin_rules("mlx")
    labels = _mlx_labels(mlx, names)
    if labels is not None:
        return Grouping(by, f"rules:{mlx.origin}", labels)
    return Grouping(by, "generic", generic_groups(names))


def parse_by(text: str) -> tuple[str, ...]:
    """``--by`` as its keys: one (``kernel``) or two joined by a comma (``source,dtype``: the
    groups of the first key, each split into the groups of the second)."""
    keys = tuple(key.strip() for key in text.split(","))
    bad = [key for key in keys if key not in BY_CHOICES]
    if bad or len(keys) > 2 or len(set(keys)) != len(keys):
        raise UsageError(
            f"--by takes one key or two different ones joined by a comma (keys: "
            f"{', '.join(BY_CHOICES)}; e.g. --by source,dtype), not {text!r}"
        )
    return keys


def _classify(rules: RuleSet, names: Iterable[str]) -> list[str]:
    group = rules.group
    return [group(n) or OTHER for n in names]


def _mlx_labels(mlx: RuleSet, names: Sequence[str]) -> list[str] | None:
    """The MLX rules' labels of ``names`` when at least :data:`MLX_MIN_SHARE` of them match,
    else None, known as soon as too many have failed: another project's names are not all
    classified for nothing (torch's: about half of them). Classified a block at a time, each
    block as :func:`_classify` does."""
    allowed = len(names) - MLX_MIN_SHARE * len(names)  # misses that still leave the share
    labels: list[str] = []
    misses = 0
    for start in range(0, len(names), _BLOCK):
        block = _classify(mlx, names[start : start + _BLOCK])
        labels += block
        misses += block.count(OTHER)
        if misses > allowed:
            return None
    return labels if names else None


_BLOCK = 256
