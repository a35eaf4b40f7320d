"""The ``metallib-builder`` command line: a thin shell over the library.

Subcommands live in sibling modules and are imported only when used, so ``--help`` and quick
commands stay fast; the click group they hang from, and how errors become exit codes, is
``builder.cli.group``. This module imports no click: it holds what the top-level ``--help``
shows (the commands, the group's texts) and writes that help itself (:func:`print_help`, which
``builder/__main__.py`` calls before click is imported).
"""

from __future__ import annotations

import functools
import sys
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from pathlib import Path  # imported where used: --help need not pay for pathlib

__all__ = [
    "COMMANDS",
    "DESCRIPTION",
    "EPILOG",
    "INTERNAL_ERROR",
    "OPTION_HELP",
    "PACKAGE_CONFIG",
    "Entry",
    "cmake_package_dir",
    "print_help",
    "top_help",
]

INTERNAL_ERROR = 3
"""The exit code of a bug (an exception the tool did not expect): never 1, a failed gate."""


class Entry(NamedTuple):
    """A command as ``--help`` lists it, without importing its module."""

    target: str
    """``module:attribute`` of the click command, relative to builder.cli."""
    help: str
    """Its one-line help: the first sentence of its docstring, which click shortens to fit."""


COMMANDS: dict[str, Entry] = {
    "list": Entry(
        "container:list_command", "List the functions in a metallib with their type and sizes."
    ),
    "verify": Entry(
        "container:verify_command", "Check a metallib's structure and every function's SHA-256."
    ),
    "slim": Entry(
        "container:slim_command", "Write a metallib holding a subset of TARGET's functions."
    ),
    "report": Entry("size:report_command", "Show which kernels make a metallib big."),
    "compare": Entry(
        "size:compare_command",
        "Compare two libraries per group and gate on their size and on what they hold (exit 1 "
        "when a gate fails).",
    ),
    "budget": Entry(
        "size:budget_command",
        "Check every size budget of the project: one row per limit, exit 1 if any is exceeded.",
    ),
    "base-artifact": Entry(
        "publishing:base_artifact_command",
        "Find the newest artifact NAME that a push to BRANCH of this repository uploaded.",
    ),
    "history": Entry(
        "history:history_command",
        "Show how a library's size changed over releases or builds, in the order given.",
    ),
    "kernels": Entry(
        "kernels:kernels_command",
        "List the kernels of a tree: the bundled catalog, or any folder of .metal files.",
    ),
    "check": Entry(
        "check:check_command",
        "Check a kernel tree with the host C++ compiler: what can be proven without Apple's.",
    ),
    "build": Entry(
        "build:build_command",
        "Build a kernel tree: AOT into one metallib, JIT into the host library, or mixed.",
    ),
    "presets": Entry(
        "build:presets_command",
        "Build the presets of CMakePresets.json side by side and compare their sizes.",
    ),
    "variants": Entry(
        "variants:variants_command",
        "Write a library's AOT/JIT variants as real subsets and compare their sizes.",
    ),
    "embed": Entry(
        "loading:embed_command",
        "Write a C++ source holding one run-time preamble per HEADER (and per --preamble NAME).",
    ),
    "vendor": Entry(
        "vendor:vendor_command",
        "Write MetallibEmbed.cmake and its generator into DIR: builds need no installed package.",
    ),
    "sources": Entry(
        "loading:sources_command",
        "List the Metal sources a host library embeds: returned by functions, or found as text.",
    ),
}
"""Every command, by name. ``tests/cli/test_command_registry.py`` holds each entry equal to the
command it names (name, one-line help)."""


PACKAGE_CONFIG = "MetallibBuilderConfig.cmake"


def cmake_package_dir() -> Path | None:
    """The installed CMake package folder (``builder/_data/cmake`` holding ``PACKAGE_CONFIG``), or
    None when this code runs without an install that made one (e.g. a bare source checkout).

    A plain install has it beside this package. An editable install imports the package from the
    checkout while its installed files (this folder among them) sit in site-packages, so the
    distribution's file list is asked next: both are facts of the install, not path guesses.
    """
    from pathlib import Path

    import builder

    beside = Path(builder.__file__).resolve().parent / "_data" / "cmake"
    if (beside / PACKAGE_CONFIG).is_file():
        return beside
    from importlib import metadata

    try:
        files = metadata.distribution("metallib-builder").files or []
    except metadata.PackageNotFoundError:
        return None
    for file in files:
        if file.parts[-4:] == ("builder", "_data", "cmake", PACKAGE_CONFIG):
            found = Path(str(file.locate())).resolve().parent
            return found if (found / PACKAGE_CONFIG).is_file() else None
    return None


DESCRIPTION = """Build size-minimized Metal kernel libraries and measure what is in them.

\b
Inspect a metallib:   list, verify, report
Compare two / gate:   compare, budget
Over releases:        history
Kernel sources:       kernels, check
Build:                build, presets, embed
Subsets of a library: slim, variants"""
"""The group's help, as click shows it (``\\b``: the block below is not rewrapped)."""
EPILOG = "Run 'metallib-builder COMMAND --help' for a command's options and examples."
OPTION_HELP = {
    "-V, --version": "Show the version and whether the native container reader is in use, then "
    "exit.",
    "--cmake-dir": "Print the folder of the installed CMake package (MetallibBuilderConfig.cmake) "
    "for -DMetallibBuilder_DIR=..., then exit.",
    "--debug": "Show full tracebacks instead of one-line errors.",
    "-h, --help": "Show this message and exit.",  # click's own help option
}
"""The group's options as its help lists them, in order."""


def print_help() -> int:
    """Write the top-level ``--help`` without importing click (importing click alone costs four
    times a bare interpreter's start-up); the exit code, 0, as click's."""
    import shutil

    from builder.cli.console import guard_closed_pipes

    guard_closed_pipes()
    columns = shutil.get_terminal_size().columns  # as click's formatter: within 100, less 2
    sys.stdout.write(top_help(max(min(columns, 100) - 2, 50)) + "\n")
    return 0


def top_help(width: int) -> str:
    """The group's ``--help`` as click writes it at ``width`` (its usage line, description,
    option and command lists, each help shortened as click does, and epilog);
    ``tests/cli/test_command_registry.py`` holds the two byte-identical at every width."""
    import textwrap

    def wrap(text: str, width: int, indent: str = "") -> list[str]:
        """click's ``wrap_text`` of paragraphs that are not indented: a ``\\b`` block as is."""
        out: list[str] = []
        for paragraph in text.split("\n\n"):
            lines = paragraph.split("\n")
            out += [""] if out else []
            if lines[0] == "\b":
                out += [indent + line for line in lines[1:]]
            else:
                wrapper = textwrap.TextWrapper(width, indent, indent, replace_whitespace=False)
                out += wrapper.wrap(" ".join(lines))
        return out

    def listing(heading: str, rows: list[tuple[str, str]]) -> list[str]:
        """click's ``write_dl`` under a heading, of terms that fit its first column (<= 30)."""
        first = max(len(term) for term, _ in rows) + 2
        out = ["", f"{heading}:"]
        for term, text in rows:
            head, *rest = wrap(text, width - first - 2)
            out += [f"  {term:<{first}}{head}", *(" " * (first + 2) + line for line in rest)]
        return out

    usage = "Usage: metallib-builder "
    limit = width - 6 - max(map(len, COMMANDS))  # what click leaves each command's help
    shorten = functools.partial(textwrap.shorten, placeholder="...", break_on_hyphens=False)
    usage_lines = textwrap.wrap(
        "[OPTIONS] COMMAND [ARGS]...",
        width,
        initial_indent=usage,
        subsequent_indent=" " * len(usage),
    )
    return "\n".join(
        [
            *usage_lines,
            "",
            *wrap(DESCRIPTION, width, "  "),
            *listing("Options", list(OPTION_HELP.items())),
            *listing("Commands", [(n, shorten(COMMANDS[n].help, limit)) for n in sorted(COMMANDS)]),
            "",
            *wrap(EPILOG, width, "  "),
        ]
    )
