"""The settings of files: the rest of ``metallib.toml`` (what only a tree's own file says of it),
the keys of a budget table (``builder.size.budget_file``): what narrows its target (``TARGETS``,
a command's ``--member`` too) and its limits, which are ``compare``'s gates too (``GATES``:
``max-size`` and ``--max-size`` are one setting), and the two cache variables of CMakeLists.txt
that no build request carries. Declared as every setting is (``builder.settings.model.Setting``);
``builder.settings.declared`` holds them in the registry with the rest.
"""

from __future__ import annotations

from typing import Any

from builder.files.bounds import LARGEST_COUNT
from builder.settings import validators as c
from builder.settings.model import Setting

__all__ = [
    "BASE_LIMITS",
    "BUDGET_LIMITS",
    "DEFAULT_PLATFORM",
    "EMBEDDINGS",
    "FILE_KEYS",
    "GATES",
    "MEMBER_FORMS",
    "PREAMBLE_SETS",
    "TARGETS",
]

DEFAULT_PLATFORM = "macosx_14_0_arm64"
"""The wheel platform a ``PACKAGE==VERSION`` target is fetched for unless ``--platform`` says
otherwise (the oldest macOS MLX supports, whose wheels are the most used)."""
MEMBER_FORMS = (
    "its name as the output spells it (a wheel member's path, BINARY#IDENTITY), or a shorter "
    "form naming one only: a unique base name, '#N' (the N-th metallib of a binary), its "
    "symbol or section"
)
"""How ``--member`` names one library (``builder.inputs.member_names`` matches these forms)."""
PREAMBLE_SETS = ("includes", "table")
EMBEDDINGS = ("whole-file", "preamble")
"""How a JIT entry file is embedded: its whole text with its quoted includes inlined (one
run-time source holding every kernel it defines), or MLX's preambles (its headers; the host
writes the instantiation lines)."""

_TOML: tuple[Setting[Any], ...] = (
    Setting(
        "metal_version",
        "__METAL_VERSION__ discovery assumes (MSL version x 100; default 310).",
        kind="int",
        flag=None,
        toml="kernels.metal-version",
        validate=c.metal_version,
        expected="an integer such as 310 (MSL 3.1) or 320 (MSL 3.2)",
    ),
    Setting(
        "requires",
        "Entry files only some platforms build: file -> minimums (builder.kernels.platforms).",
        kind="table",
        flag=None,
        toml="kernels.requires",
    ),
    Setting(
        "flags",
        "Compile flags the tree needs, after the build's (default) flags.",
        kind="texts",
        default=(),
        flag=None,
        toml="build.flags",
    ),
    Setting(
        "aot_only",
        "Entry files (globs) that stay AOT when the build is asked JIT.",
        kind="texts",
        default=(),
        flag=None,
        toml="build.aot-only",
    ),
    Setting(
        "keep_aot",
        "Entry files (globs, relative to --source-dir) the --ceiling plan keeps AOT: kernels "
        "a project calls on its hot path; repeatable, with [build] keep-aot of metallib.toml's "
        "(both count). Pins that alone leave the variant over the ceiling exit 1.",
        kind="texts",
        default=(),
        toml="build.keep-aot",
        metavar="GLOB",
    ),
    Setting(
        "library",
        "The output library's name, without .metallib (default: the tree's folder name).",
        flag=None,
        toml="build.library",
        validate=c.library,
        expected='a file name without folders or .metallib, such as "mlx"',
    ),
    Setting(
        "always_embed",
        "[build.preambles] functions every variant and build embeds, all-AOT included.",
        kind="texts",
        default=(),
        flag=None,
        toml="build.always-embed",
    ),
    Setting(
        "preamble_set",
        "Which functions exist: includes (each JIT entry file's direct includes) or table "
        "([build.preambles] only).",
        default="includes",
        flag=None,
        toml="build.preamble-set",
        choices=PREAMBLE_SETS,
    ),
    Setting(
        "preambles",
        "Run-time source functions: name -> header(s) inlined into it.",
        kind="table",
        flag=None,
        toml="build.preambles",
    ),
    Setting(
        "embedding",
        "How a JIT entry file is embedded, by glob: whole-file or preamble (later globs win).",
        kind="table",
        flag=None,
        toml="build.embedding",
    ),
)

TARGETS: tuple[Setting[Any], ...] = (
    Setting(
        "member",
        f"Only this library of a target that holds several: {MEMBER_FORMS}.",
        budget="member",
        metavar="NAME",
    ),
    Setting(
        "download",
        "Add the download size: the library as a wheel stores it (zlib level 6, modelled; "
        "docs/download-size.md).",
        kind="bool",
    ),
    Setting(
        "platform",
        f"Wheel platform of a PACKAGE==VERSION target [default: {DEFAULT_PLATFORM}].",
        budget="platform",
    ),
)
"""What a target (a command's, a budget's) is narrowed to."""

GATES: tuple[Setting[Any], ...] = (
    Setting(
        "warn_only",
        "Print the verdict (on stderr, naming every failing gate or exceeded limit) but exit 0.",
        kind="bool",
    ),
    Setting("fail_on_new_group", "Fail when head has a group that base does not.", kind="bool"),
    Setting(
        "max_growth",
        "Fail when head is more than N larger than base: bytes, with KB/MB/KiB/MiB "
        "suffixes, or N% of base. Counts everything shipped: a build's JIT host library too.",
        kind="growth",
        budget="max-growth",
        metavar="N",
    ),
    Setting(
        "max_size",
        "Fail when head's metallib is larger than N (bytes, KB/MB/KiB/MiB).",
        kind="size",
        budget="max-size",
        metavar="N",
    ),
    Setting(
        "max_total_size",
        "Fail when head's metallib plus its JIT host library is larger than N.",
        kind="size",
        budget="max-total-size",
        metavar="N",
    ),
    Setting(
        "max_download_growth",
        "Fail when head's modelled download (as --download) is more than N larger than "
        "base's: bytes with KB/MB/KiB/MiB suffixes, or N% of base.",
        kind="growth",
        metavar="N",
    ),
    Setting(
        "max_download_size",
        "Fail when head's modelled download is larger than N (bytes, KB/MB/KiB/MiB).",
        kind="size",
        budget="max-download-size",
        metavar="N",
    ),
    Setting(
        "require",
        "Fail unless head holds at least N functions whose names match GLOB (fnmatch, as "
        "slim's --keep; N defaults to 1), e.g. '*_nax*>=1'; repeatable. The failure names the "
        "glob, head's count and base's.",
        kind="texts",
        budget="require",
        metavar="GLOB[>=N]",
        validate=c.requirement,
    ),
    Setting(
        "fail_on_removed",
        "Fail when head lacks a function of base matching GLOB (default: every function), "
        "naming how many, their bytes and the first few. Without GLOB, give it after BASE HEAD.",
        budget="fail-on-removed",
        metavar="[GLOB]",
    ),
    Setting(
        "min_functions",
        "Fail when head holds fewer than N functions. A library holding none always fails "
        "(empty-library), with or without this.",
        kind="count",
        budget="min-functions",
        metavar="N",
        validate=c.count,
        expected=f"a count from 0 to {LARGEST_COUNT:,}",
    ),
    Setting(
        "max_deployment_target",
        "Fail when head's deployment target (its header's: the oldest OS that loads it) is "
        "above VERSION, e.g. 14.0.",
        budget="max-deployment-target",
        metavar="VERSION",
        validate=c.deployment_target,
    ),
    Setting(
        "max_metal_version",
        "Fail when a function of head states a Metal language version above VERSION, e.g. 3.1 "
        "(4.0 needs macOS 26).",
        budget="max-metal-version",
        metavar="VERSION",
        validate=c.language_version,
    ),
    Setting(
        "fail_on_platform_change",
        "Fail when head's deployment target, Metal language versions or AIR versions differ "
        "from base's.",
        kind="bool",
        budget="fail-on-platform-change",
    ),
    Setting(
        "fail_on_missing",
        "Fail when head lacks any kernel of the --source-dir tree for its platform, naming them.",
        kind="bool",
        budget="fail-on-missing",
    ),
    Setting(
        "max_unattributed",
        "Fail when more than N of head's bytes are produced by no entry file (the 'other' "
        "group of --by source; bytes, KB/MB/KiB/MiB).",
        kind="size",
        budget="max-unattributed",
        metavar="N",
    ),
)
"""The limits of ``compare``'s gates and of a budget (one setting each: ``--max-size`` and
``max-size`` are read and refused alike)."""

BUDGET_LIMITS = (
    "max-size",
    "max-total-size",
    "max-download-size",
    "max-functions",
    "groups",
    "max-growth",
    "require",
    "fail-on-removed",
    "min-functions",
    "max-deployment-target",
    "max-metal-version",
    "fail-on-platform-change",
    "fail-on-missing",
    "max-unattributed",
)
"""The budget keys that are limits (a budget needs one)."""
BASE_LIMITS = ("max-growth", "fail-on-removed", "fail-on-platform-change")
"""The budget keys checked against the budget's ``base`` (each needs one)."""


def _budget(key: str, help: str, **more: Any) -> Setting[Any]:
    """A key of a budget table only (``builder.size.budget_file`` reads its value; a text unless
    ``more`` says otherwise)."""
    return Setting(key.replace("-", "_"), help, flag=None, budget=key, **more)


_BUDGET = (
    _budget("name", "The budget's name (default: its target)."),
    _budget("target", "What is measured: a path, a glob (summed), a build folder or a wheel."),
    _budget("by", "What the groups are: kernel, dtype, source, param or function."),
    _budget("base", "A saved report or any target: what max-growth is against."),
    _budget(
        "max-functions",
        "The number of functions in the metallib(s).",
        kind="count",
        validate=c.count,
        expected=f"a count from 0 to {LARGEST_COUNT:,}",
    ),
    _budget("groups", "Per-group limits: group = size.", kind="sizes"),
)

_CMAKE: tuple[Setting[Any], ...] = (
    Setting(
        "plan",
        "The build plan to read (the CLI's); empty: plan from the METALLIB_* options.",
        kind="path",
        flag=None,
        cmake="METALLIB_PLAN",
    ),
    Setting(
        "compiler_launcher",
        "Command list prepended to every metal compile (a cache or remote executor).",
        kind="texts",
        flag=None,
        cmake="METALLIB_COMPILER_LAUNCHER",
    ),
)
"""The cache variables of this project's CMakeLists.txt that no request carries: the CLI's
one argument to CMake, and CMake's own compiler launcher."""

FILE_KEYS = (*_TOML, *_BUDGET, *_CMAKE)
"""Every setting that has no flag, only a key (or a cache variable)."""
