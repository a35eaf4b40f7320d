"""Words for people: byte counts (``1.2 MB``, ``+512 B``, ``5%``), a limit's verdict
(``gate_message``, ``failures``), what a JIT total measures, where a report was measured and what
produced it (``provenance_line``), and untrusted text escaped for each medium: the terminal
(``visible``, ``rich_text``), CSV cells, GitHub markdown; the rich console every text table is
printed on. Every view words these things here, once.

Human output uses decimal units, matching what ``ls -lh --si`` and package indexes show. Names
and other untrusted text (a saved report's target or grouping) reach tables, CSV and markdown only
through these functions, each of which shows control characters escaped; JSON needs nothing more
than its own escaping (and ``builder.files.dataclass_json`` for file names that are not UTF-8).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any

from builder.render.basic_words import human_size, visible
from builder.render.verdict_words import CONTENT, option_text, said
from builder.size.load import TOOL_NAME
from builder.size.verdicts import GROWTH

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from builder.settings.validators import Limit
    from builder.size.report import Report
    from builder.size.verdicts import Verdict

__all__ = [
    "clip",
    "csv_line",
    "csv_text",
    "failure",
    "failures",
    "gate_limit",
    "gate_message",
    "gate_value",
    "grouping_text",
    "human_delta",
    "human_size",
    "limit_label",
    "limit_text",
    "md_code",
    "md_text",
    "no_metallib",
    "origin",
    "print_table",
    "provenance_line",
    "rich_text",
    "signed_percent",
    "text_console",
    "visible",
]


def limit_text(limit: Limit) -> str:
    """A gate's limit as given: ``5%`` or a human size."""
    if limit.percent is not None:
        return f"{limit.percent:g}%"
    return human_size(limit.bytes or 0)


def human_delta(n: int) -> str:
    """A signed human size: ``+1.20 MB``, ``-512 B``, ``0 B``."""
    if n == 0:
        return "0 B"
    return ("+" if n > 0 else "") + human_size(n)


def limit_label(verdict: Verdict) -> str:
    """``max-size``, ``group quantized``, ``max-growth 1%``, ``require '*_nax*>=1'``."""
    if verdict.name in CONTENT:
        return option_text(verdict).removeprefix("--")
    if verdict.name == "groups":
        return f"group {verdict.group}"
    if verdict.growth is not None:
        return f"{verdict.name} {limit_text(verdict.growth)}"
    return verdict.name


def _amount(verdict: Verdict, n: int) -> str:
    if verdict.name == "max-functions":
        return f"{n:,} functions"
    if verdict.name == "fail-on-missing":
        return f"{n:,} kernels missing"
    if verdict.name in GROWTH:
        return human_delta(n)
    return human_size(n)


def _percent(verdict: Verdict) -> str:
    return "" if verdict.percent is None else f" ({verdict.percent:+.2f}%)"


def gate_value(verdict: Verdict) -> str:
    """A verdict's measured value, a growth with its percent."""
    if verdict.value_text is not None:
        return verdict.value_text
    if verdict.name == "fail-on-platform-change":
        return "; ".join(verdict.names) or "unchanged"
    if verdict.name == "fail-on-removed":
        return f"{verdict.value:,} removed ({human_size(verdict.base_value or 0)})"
    if verdict.name in ("require", "min-functions", "empty-library"):
        return f"{verdict.value:,} functions"
    return _amount(verdict, verdict.value) + (_percent(verdict) if verdict.name in GROWTH else "")


def gate_limit(verdict: Verdict) -> str:
    """A verdict's limit; a growth limit with the base it is a share of."""
    if verdict.limit_text is not None:
        return f"at most {verdict.limit_text}"
    if verdict.name in ("fail-on-removed", "fail-on-platform-change", "fail-on-missing"):
        return "unchanged" if verdict.name == "fail-on-platform-change" else "none"
    if verdict.at_least:
        return f"at least {verdict.limit:,}"
    if verdict.name in GROWTH and verdict.base_value is not None:
        return f"{human_size(verdict.limit)} (of {human_size(verdict.base_value)})"
    return _amount(verdict, verdict.limit).lstrip("+")


def gate_message(gate: Verdict) -> str:
    """A ``compare`` gate's verdict in one line, named by its option (the CLI, tables, markdown,
    HTML and JSON)."""
    if gate.name in CONTENT:
        return f"{option_text(gate)}: {said(gate, gate.subject)}"
    option = f"--{gate.name}"
    if gate.name in GROWTH and gate.growth is not None:
        return (
            f"{option} {limit_text(gate.growth)}: {gate.subject} grew by "
            f"{human_delta(gate.value)}{_percent(gate)}; allowed {human_size(gate.limit)}"
        )
    if gate.name == "fail-on-new-group":
        new = gate.new_groups
        return f"{option}: " + (f"new groups in head: {', '.join(new)}" if new else "no new groups")
    size = human_size(gate.value)
    return f"{option} {human_size(gate.limit)}: {gate.subject} is {size} ({gate.value:,} bytes)"


def failures(verdicts: Sequence[Verdict]) -> list[str]:
    """One phrase per failed budget limit: ``mlx: group quantized is 67.38 MB, limit 30.00 MB``,
    ``mlx: 1,569 '*_nax*' functions removed (67.27 MB): ...``."""
    return [failure(c) for c in verdicts if not c.passed]


def failure(verdict: Verdict) -> str:
    """A budget limit's verdict as a phrase that starts with the budget's name."""
    c = verdict
    if c.name in CONTENT:
        phrase = said(c, c.subject)
        return phrase if phrase.startswith(c.subject) else f"{c.subject}: {phrase}"
    return f"{c.subject}: {limit_label(c)} is {gate_value(c)}, limit {gate_limit(c)}"


def signed_percent(value: float | None) -> str:
    """A change in percent, ``+1.2%``; ``new`` when there was nothing before."""
    return "new" if value is None else f"{value:+.1f}%"


def origin(report: Report) -> str:
    """Where a report's figures were measured: the file, and the wheel, manifest or saved report."""
    src = report.source
    where = src.path or "(no metallib: all units JIT)"
    if src.embedded is not None:
        where += f" ({embedded_place(src.embedded)})"
    extra = []
    if src.kind == "spec" or src.kind == "wheel":
        extra.append(f"from {src.target}")
    if src.manifest:
        extra.append(f"manifest {src.manifest}")
    if src.kind == "report":
        extra.append(f"saved report {src.target}")
    return where + (f" ({'; '.join(extra)})" if extra else "")


def embedded_place(embedded: Mapping[str, Any]) -> str:
    """Where a metallib sits in its binary, for people: ``bytes 101,251,178-202,494,553 of
    __TEXT,metal_basic`` (+ its offset in the section, the symbol naming it)."""
    start = embedded["offset"]
    text = f"bytes {start:,}-{start + embedded['size']:,}"
    section = ",".join(embedded[k] for k in ("segment", "section") if embedded.get(k))
    if section:
        text += f" in {section}"
        if embedded.get("section_offset"):
            text += f" +{embedded['section_offset']:,}"
    if embedded.get("format") == "fat Mach-O" and embedded.get("arch"):
        text += f" of the {embedded['arch']} slice"
    if embedded.get("symbol"):
        text += f", symbol {embedded['symbol']}"
    return visible(text)


def no_metallib(shipped: bool) -> str:
    """Why there is no metallib: shipped host libraries embed their run-time sources, or every
    unit of a build is compiled at run time."""
    if shipped:
        return "the run-time sources the host libraries embed"
    return "every unit is compiled at run time"


def grouping_text(report: Report) -> str:
    """How the groups were obtained: the first key's method, then the second's (two keys)."""
    if report.subgrouping is None:
        return report.grouping
    return f"{report.grouping}, then {report.subgrouping}"


def rich_text(text: str) -> str:
    """Untrusted text for a rich table or line: control characters shown escaped (``visible``)
    and ``[`` escaped so a name is never read as rich markup (the consoles also have emoji codes
    such as ``:x:`` turned off)."""
    from rich.markup import escape

    return escape(visible(text))


_FORMULA_START = ("=", "+", "-", "@")  # a tab or CR at the start is escaped by visible()


_CSV_QUOTED = re.compile(r'[,"\r\n]')


def csv_text(text: str) -> str:
    """A text cell that neither a terminal nor a spreadsheet acts on: control and invisible
    characters shown escaped (``visible``: ``cat report.csv`` runs no escape sequence, a CR
    starts no row), and OWASP's rule, a leading ``'`` before a cell that starts with ``=``,
    ``+``, ``-`` or ``@``. Only for text columns: numbers (negative deltas included) are written
    as they are."""
    clean = visible(text)
    return "'" + clean if clean.startswith(_FORMULA_START) else clean


def csv_line(cells: Sequence[str | int]) -> str:
    """One CSV record (RFC 4180), ``\\n``-terminated: a cell holding a comma, quote, CR or LF is
    quoted with its quotes doubled. Written here rather than with the csv module, whose writer
    leaves a CR unquoted when rows end in ``\\n`` (a spreadsheet then starts a new row there)."""
    out = []
    for cell in cells:
        text = str(cell)
        if _CSV_QUOTED.search(text):
            text = '"' + text.replace('"', '""') + '"'
        out.append(text)
    return ",".join(out) + "\n"


def clip(text: str, cap: int) -> str:
    """``text`` cut to ``cap`` characters, the cut marked with an ellipsis."""
    return text if len(text) <= cap else text[: cap - 1] + "…"


def md_code(text: str, cap: int | None = None) -> str:
    """Untrusted text as inline code that cannot break out: control characters shown escaped
    (``visible``, so no newline ends a table row), backticks (which would end the span) become
    ``'`` and pipes are escaped for tables. Inside a code span GitHub renders HTML tags, links
    and mentions as plain text."""
    clean = visible(text)
    if cap is not None:
        clean = clip(clean, cap)
    return "`" + clean.replace("`", "'").replace("|", "\\|") + "`"


_MARKDOWN_ACTIVE = re.compile(r"[<>`|\[\]@]")


_MARKDOWN_QUOTED = {"<": "&lt;", ">": "&gt;", "@": "`@`"}


def md_text(text: str) -> str:
    """Untrusted text (a saved report's target or grouping, gate messages and notes naming it,
    provenance) as plain markdown that stays plain: control characters shown escaped, no HTML
    tag (``<`` ``>`` as entities), no code span, link or image (backticks and brackets
    backslash-escaped), no table cell break (``\\|``), no mention (``@`` as code). Ordinary
    text is returned unchanged."""
    clean = visible(text)
    if _MARKDOWN_ACTIVE.search(clean) is None:
        return clean
    return _MARKDOWN_ACTIVE.sub(lambda m: _MARKDOWN_QUOTED.get(m.group(), "\\" + m.group()), clean)


_UNBOUNDED = 1 << 20
"""Columns a table may take when measured for its natural width (more than any real name)."""


def text_console(out: IO[str], *, color: bool, width: int | None) -> Console:
    """The rich console a text rendering writes to ``out``: ``width`` columns (a terminal's).
    ``width`` None (stdout is a pipe, a file, a CI log): nothing is wrapped or cut. Lines,
    titles and captions stay whole (soft wrap: a path is never broken mid-word), and tables
    printed with ``print_table(fit=True)`` are as wide as their cells."""
    from rich.console import Console

    return Console(
        file=out,
        force_terminal=color,
        no_color=not color,
        width=width or 100,
        soft_wrap=width is None,
        emoji=False,
    )


def print_table(console: Console, table: Table, *, fit: bool) -> None:
    """Print a rich table; ``fit`` (stdout is not a terminal): as wide as its cells need rather
    than the console's width, so no function name is cut with an ellipsis or folded."""
    if fit:
        unbounded = console.options.update_width(_UNBOUNDED)
        width = console.width
        console.width = max(width, console.measure(table, options=unbounded).maximum)
        try:
            console.print(table)
        finally:
            console.width = width
    else:
        console.print(table)


def provenance_line(provenance: Mapping[str, Any]) -> str:
    """One line for people: measuring tool; the library's format, AIR/MSL versions and compiler;
    for a build, its generator and options."""
    if not provenance:
        return "provenance: not recorded"
    parts = []
    tool = provenance.get("tool") or {}
    if tool:
        parts.append(f"measured by {tool.get('name', TOOL_NAME)} {tool.get('version', '?')}")
    lib = provenance.get("library") or {}
    if lib:
        parts.append(f"metallib format {lib.get('format_version', '?')}")
        if lib.get("deployment_target"):
            # a library for another OS says which (older reports have no platform: macOS)
            platform = lib.get("platform") or "macOS"
            shown = f"{platform} " if platform != "macOS" else ""
            parts.append(f"deployment target {shown}{lib['deployment_target']}")
        parts.append("AIR " + (", ".join(lib.get("air_versions") or []) or "?"))
        parts.append("Metal " + (", ".join(lib.get("metal_language_versions") or []) or "?"))
        compilers = lib.get("compilers") or []
        parts.append("compiler " + ("; ".join(compilers) if compilers else "not found"))
    build = provenance.get("build") or {}
    if build:
        built = f"built by {_flat(build.get('generator') or TOOL_NAME)}"
        options = build.get("options")
        if isinstance(options, Mapping) and options:
            text = " ".join(f"{k}={_flat(v)}" for k, v in sorted(options.items()))
            parts.append(f"{built} with build options {text}")
        elif options:
            parts.append(f"{built} with build options {_flat(options)}")
        else:
            parts.append(f"{built}; no build options in the manifest")
    return "; ".join(parts)


def _flat(value: object) -> str:
    if isinstance(value, bool):
        return "ON" if value else "OFF"
    if isinstance(value, (list, tuple)):
        return ",".join(map(_flat, value))
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{k}={_flat(v)}" for k, v in sorted(value.items())) + "}"
    return str(value)
