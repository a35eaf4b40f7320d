"""The settings one command takes for its own run (``-j``, ``--verbose``, ``variants``'s
``--aot``/``--jit``, ``vendor``'s ``--check``, ...), not a build request's: declared here, once,
and registered with every other setting in ``builder.settings.declared.SETTINGS``."""

from __future__ import annotations

from typing import Any

from builder.settings import validators as c
from builder.settings.model import Setting

__all__ = ["COMMAND"]

COMMAND: tuple[Setting[Any], ...] = (
    Setting(
        "jobs",
        "Processes run at once: entry files preprocessed, compiles (check) or Ninja's jobs "
        "(build, presets: ninja -j N). Default: from the number of CPUs.",
        kind="int",
        flag="-j/--jobs",
    ),
    Setting(
        "variant_aot",
        "A variant with these entry files AOT (comma-separated globs, relative to "
        "--source-dir) and every other one JIT; repeatable, one variant each.",
        kind="texts",
        default=(),
        flag="--aot",
        param="aot",
        metavar="GLOBS",
    ),
    Setting(
        "variant_jit",
        "A variant with these entry files JIT and the rest AOT; repeatable, one variant each.",
        kind="texts",
        default=(),
        flag="--jit",
        param="jit",
        metavar="GLOBS",
    ),
    Setting("no_jit", "Every unit AOT (the default; refused with --jit or --aot).", kind="bool"),
    Setting("verbose", "Show CMake's and Ninja's output.", kind="bool", flag="-v/--verbose"),
    Setting(
        "no_wait",
        "When another run is writing the same build folder (or variants OUTDIR), exit 2 at "
        "once instead of waiting for it to finish.",
        kind="bool",
    ),
    Setting(
        "jit_sources",
        "Also compile each unit's JIT source (its inlined preamble with the "
        "instantiation lines appended); on unless --no-jit-sources. (--jit means units built "
        "JIT on build and variants; check's old --jit/--no-jit is read, hidden, for scripts.)",
        kind="switch",
        flag="--jit-sources/--no-jit-sources",
    ),
    Setting(
        "preamble_defines",
        "Write '#define NAME VALUE' (VALUE defaults to 1) at the top of every preamble "
        "embed writes, for the run-time compile (repeatable); -D/--define, the tree's "
        "preprocessor definition elsewhere, is its deprecated spelling on embed.",
        kind="texts",
        default=(),
        flag="--preamble-define",
        validate=c.define,
        metavar="NAME[=VALUE]",
    ),
    Setting(
        "github_comment",
        "Post the markdown as a pull-request comment, and edit that same comment on later runs "
        "(GITHUB_TOKEN, GITHUB_REPOSITORY, GITHUB_API_URL, GITHUB_EVENT_PATH; "
        "docs/ci-recipe.md).",
        kind="bool",
    ),
    Setting(  # vendor's
        "check",
        "Write nothing: say whether DIR's vendored copy is the one this version writes (exit 1 "
        "naming the first file that differs, and what differs).",
        kind="bool",
    ),
)
"""What one command takes for its own run, not a build request's."""
