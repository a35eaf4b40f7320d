"""The platform a library is built for, and the entry files a tree's build leaves out on it.

A kernel tree's own build chooses entry files by platform: MLX's ``kernels/CMakeLists.txt``
compiles ``fence.metal`` only from MSL 3.2 on, and the ``*_nax.metal`` files only for MSL 4 with a
macOS 26.2 deployment target. A tree writes that once in ``metallib.toml``:

.. code-block:: toml

    [kernels.requires]      # entry files compiled only where the platform meets every minimum
    "fence.metal" = { metal-version = 320 }
    "*_nax.metal" = { metal-version = 400, deployment-target = "26.2" }

and a library states its platform itself: its header the OS and deployment target, its functions'
``VERS`` tags the Metal language version (``builder.metallib.reader.library_provenance``).
:func:`for_platform` turns both into discovery's settings (``__METAL_VERSION__``,
``__METAL_IOS__``, the entry files left out), so ``report LIBRARY --source-dir TREE`` and
``variants --from LIBRARY`` need no per-platform ``-D`` or ``--exclude``. A
``-D __METAL_VERSION__`` on the command line still wins.

:data:`LOWEST_OS` is the other direction: the oldest OS that runs a Metal Shading Language
version, so that a library whose functions state a version newer than its header's deployment
target allows is named (``builder.size.platform_warnings``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from builder.errors import UsageError, closest_hint
from builder.files.bounds import brief
from builder.files.dataclass_json import field
from builder.kernels.preprocess import DEFAULT_METAL_VERSION
from builder.kernels.tree_files import entry_files, path_matches, unmatched_glob
from builder.metallib.structs import PLATFORMS
from builder.settings.declared import setting
from builder.settings.validators import parse_define, valid_deployment_target

__all__ = [
    "KEYS",
    "LOWEST_OS",
    "Platform",
    "Requirement",
    "build_metal_version",
    "check_requires",
    "for_platform",
    "left_out",
    "left_out_files",
    "lowest_os",
    "metal_version_for",
    "parse_requires",
    "platform_of",
]

KEYS = ("metal-version", "deployment-target", "platform")
"""What a ``[kernels.requires]`` entry may state: each a minimum (an OS: one of a list)."""
_NAMES = tuple(dict.fromkeys(PLATFORMS.values()))
_VERSION = re.compile(r"^([1-9])\.([0-9])$")  # a VERS tag's MSL version, as provenance spells it

LOWEST_OS: dict[str, dict[str, str]] = {
    "2.0": {"macOS": "10.13", "iOS": "11.0"},
    "2.1": {"macOS": "10.14", "iOS": "12.0"},
    "2.2": {"macOS": "10.15", "iOS": "13.0"},
    "2.3": {"macOS": "11.0", "iOS": "14.0"},
    "2.4": {"macOS": "12.0", "iOS": "15.0"},
    "3.0": {"macOS": "13.0", "iOS": "16.0"},
    "3.1": {"macOS": "14.0", "iOS": "17.0"},
    "3.2": {"macOS": "15.0", "iOS": "18.0"},
    "4.0": {"macOS": "26.0", "iOS": "26.0"},
    "4.1": {"macOS": "27.0", "iOS": "27.0"},
}
"""The oldest macOS and iOS release that runs each Metal Shading Language version. Sources:
Apple's Metal Shading Language Specification, "Compiler Options Controlling the Language
Version" (``-std=macos-metal2.4``: "programs for macOS 12.0"; ``ios-metal2.4``: iOS 15; 2.0 to
2.3 likewise, and ``metal3.0`` to ``metal4.0`` in its later editions); the availability
Apple's Metal documentation gives each ``MTLLanguageVersion`` case
(developer.apple.com/documentation/metal/mtllanguageversion: ``version2_1`` macOS 10.14 / iOS
12.0, ``version2_3`` macOS 11.0 / iOS 14.0, ``version4_1`` macOS 27.0 / iOS 27.0); MLX's
``mlx/backend/metal/device.cpp`` asks for MSL 3.2 from macOS 15 / iOS 18 and 3.1 from 14 / 17
alike. A version not listed (older, newer, or another OS) is not checked."""


@dataclass(frozen=True)
class Platform:
    """What a library is built for, as discovery assumes it."""

    metal_version: int
    """``__METAL_VERSION__``: the Metal Shading Language version x 100 (MSL 3.1 -> 310)."""
    name: str = field(default="macOS", key="platform")
    """The OS (the header's ``platform``: macOS, iOS, ...)."""
    deployment_target: str | None = None
    """The OS version the library is built for (``26.2``); None when nothing states it."""
    stated_by: str | None = None
    """The library whose header stated this platform; None when it came from flags, settings or
    defaults."""

    def describe(self) -> str:
        """``MSL 4.0, macOS 26.2`` (plus whose header said so)."""
        version = f"MSL {self.metal_version // 100}.{self.metal_version % 100 // 10}"
        target = f" {self.deployment_target}" if self.deployment_target else ""
        said = f" ({self.stated_by}'s header)" if self.stated_by else ""
        return f"{version}, {self.name}{target}{said}"


@dataclass(frozen=True)
class Requirement:
    """One ``[kernels.requires]`` entry: the entry files ``glob`` matches are compiled only on a
    platform that meets each minimum stated (None: not stated)."""

    glob: str
    metal_version: int | None = None
    deployment_target: str | None = None
    platforms: tuple[str, ...] = ()

    def met_by(self, platform: Platform) -> bool:
        """Whether ``platform`` meets every minimum. A deployment target the platform does not
        state (no library, no ``[build] deployment-target``) is not checked: the Metal version,
        which always has a value, decides."""
        if self.metal_version is not None and platform.metal_version < self.metal_version:
            return False
        if self.platforms and platform.name not in self.platforms:
            return False
        if self.deployment_target is not None and platform.deployment_target is not None:
            return _version_key(platform.deployment_target) >= _version_key(self.deployment_target)
        return True


def _version_key(text: str) -> tuple[int, ...]:
    return tuple(([int(p) for p in text.split(".")] + [0, 0, 0])[:3])


def lowest_os(metal_version: str, platform: str) -> str | None:
    """The oldest ``platform`` release that runs Metal Shading Language ``metal_version``
    (``"4.0"``, ``"macOS"`` -> ``"26.0"``), or None when :data:`LOWEST_OS` does not say."""
    return LOWEST_OS.get(metal_version, {}).get(platform)


def metal_version_for(deployment_target: str, platform: str = "macOS") -> int | None:
    """The newest Metal Shading Language version a ``platform`` release runs, x 100 (``"26.2"``,
    ``"macOS"`` -> 400; ``"14.0"`` -> 310), by :data:`LOWEST_OS`; None below MSL 2.0's.

    What Apple's compiler predefines as ``__METAL_VERSION__`` for that deployment target when no
    ``-std=`` is given, which is how MLX's CMake chooses its kernels (``MLX_METAL_VERSION``, the
    compiler's answer under ``-mmacosx-version-min=``); an older SDK's compiler may stop lower,
    which only a ``--std`` (or a compiler asked) can say."""
    key = _version_key(deployment_target)
    runs = [
        int(major) * 100 + int(minor) * 10
        for version, lowest in LOWEST_OS.items()
        if platform in lowest and _version_key(lowest[platform]) <= key
        for major, minor in [version.split(".")]
    ]
    return max(runs, default=None)


def build_metal_version(
    std: str | None,
    config: Any,
    deployment_target: str | None = None,
    sdk: str = "macosx",
) -> tuple[str | None, int | None]:
    """A build's ``-std=`` and the ``__METAL_VERSION__`` its discovery assumes, for ``config``
    (a ``TreeConfig``): each follows the other when only one is stated (``std``, the request's,
    else ``[build] std``; the version from ``-D __METAL_VERSION__``, else ``[kernels]
    metal-version``). With neither, ``-std=`` stays the compiler's default and the version is
    the one ``deployment_target`` runs on ``sdk``'s OS (:func:`metal_version_for`), as the
    compiler predefines it; None without a target either (discovery's default then)."""
    from builder.settings.validators import std_version

    std = std or config.std  # each checked as its setting is read
    version = config.metal_version
    for define in config.defines:
        name, _, value = define.partition("=")
        if name == "__METAL_VERSION__" and value.strip().isdigit():
            version = int(value)
    if std is None and version is not None:  # metalX.Y from MSL 3.0 on, per-platform before
        prefix = "" if version >= 300 else "ios-" if "__METAL_IOS__" in config.defines else "macos-"
        std = f"{prefix}metal{version // 100}.{version % 100 // 10}"
    if version is None and std is not None:
        version = std_version(std)
    if version is None and deployment_target is not None:
        version = metal_version_for(deployment_target, "macOS" if sdk == "macosx" else "iOS")
    return std, version


def _entry(glob: str, value: Any) -> Requirement:
    """One entry checked; TypeError says what is wrong (the caller names the file)."""
    if not isinstance(value, dict):
        raise TypeError(
            f"{brief(glob)} must be a table such as {{ metal-version = 320 }}, got {brief(value)}"
        )
    unknown = [k for k in value if k not in KEYS]
    if unknown:
        hint = closest_hint(str(unknown[0]), KEYS)
        raise TypeError(f"{brief(glob)}: unknown key {brief(unknown[0])}{hint}")
    version, target = value.get("metal-version"), value.get("deployment-target")
    for key, stated in (("metal-version", version), ("deployment-target", target)):
        if stated is not None:  # each a minimum of the setting of that name, checked as it is
            setting(key.replace("-", "_")).read(stated, f"{brief(glob)} {key}", error=TypeError)
    names = value.get("platform", [])
    names = [names] if isinstance(names, str) else names
    if not isinstance(names, list) or not all(n in _NAMES for n in names):
        raise TypeError(
            f"{brief(glob)} platform must be an OS name or a list of them "
            f"({', '.join(_NAMES[:4])}, ...), got {brief(value.get('platform'))}"
        )
    if version is None and target is None and not names:  # {} or { platform = [] }
        raise TypeError(f"{brief(glob)} states no minimum: give one of {', '.join(KEYS)}")
    return Requirement(glob, version, target, tuple(names))


def parse_requires(
    path: Path, table: Mapping[str, Any], error: Callable[[str], Exception]
) -> tuple[Requirement, ...]:
    """``[kernels.requires]`` of the settings file ``path``, in file order; ``error`` makes the
    exception for a bad entry (the settings file's ConfigError, exit 2)."""
    found = []
    for glob, value in table.items():
        if not glob or any(ord(c) < 32 or 127 <= ord(c) < 160 for c in glob):
            raise error(f"{path}: [kernels.requires] {brief(glob)} is not a glob")
        try:
            found.append(_entry(glob, value))
        except TypeError as exc:
            raise error(f"{path}: [kernels.requires] {exc}") from None
    return tuple(found)


def check_requires(
    root: Path, requires: Sequence[Requirement], entries: Sequence[str], path: Path | None
) -> None:
    """UsageError naming a ``[kernels.requires]`` glob that matches no entry file (``entries``:
    all of them, before exclusions): a typo would keep a file the platform's build leaves out."""
    glob = unmatched_glob([r.glob for r in requires], entries)
    if glob is not None:
        raise UsageError(
            f"{path}: [kernels.requires] {glob!r} matches no entry file of {root} "
            f"({len(entries):,} entry files)"
        )


def platform_of(library: Mapping[str, Any] | None, label: str) -> Platform | None:
    """The platform the provenance record ``library`` states (``Provenance.as_dict``, also what
    a saved report keeps under ``provenance.library``); None when it states no Metal version.
    A library holding several versions is taken at the highest, the newest its functions need.
    The record may come from a saved report: anything not of the expected form is ignored."""
    if not isinstance(library, Mapping):
        return None
    versions = library.get("metal_language_versions")
    found = [
        int(m.group(1)) * 100 + int(m.group(2)) * 10
        for v in (versions if isinstance(versions, list) else [])
        if isinstance(v, str) and (m := _VERSION.fullmatch(v))
    ]
    if not found:
        return None
    name = library.get("platform")
    target = library.get("deployment_target")
    return Platform(
        max(found),
        name if isinstance(name, str) and name in _NAMES else "macOS",
        target if isinstance(target, str) and valid_deployment_target(target) else None,
        label,
    )


def _named(defines: Sequence[str], name: str) -> str | None:
    """The value the last ``-D`` of ``name`` gives (``""`` for a bare ``-D NAME``), or None."""
    value = None
    for text in defines:
        key, arg = parse_define(text)  # checked already: the settings file and -D were
        if key == name:
            value = arg.partition("=")[2].strip()
    return value


def _number(text: str | None) -> int | None:
    return int(text) if text is not None and text.isdigit() else None


C = TypeVar("C")


def for_platform(
    config: C,
    library: Platform | None = None,
    *,
    given: Sequence[str] = (),
    deployment_target: str | None = None,
) -> C:
    """``config`` (a ``TreeConfig`` with the command line merged in) for the platform discovery
    assumes, with the entry files that platform's build leaves out added to ``exclude``.

    The Metal version is the command line's ``-D __METAL_VERSION__`` (``given``), else the
    ``library``'s, else the settings' (``defines``, ``metal-version``), else 310. The OS is
    ``library``'s unless ``given`` names ``__METAL_IOS__``; an iOS one defines ``__METAL_IOS__``.
    The deployment target is the library's, else ``deployment_target`` (a build's
    ``--deployment-target``), else ``[build] deployment-target``."""
    settings: Any = config
    defines = tuple(settings.defines)
    version = _number(_named(given, "__METAL_VERSION__"))
    if version is None and library is not None:
        version = library.metal_version
        # the library's header wins over the settings file's __METAL_VERSION__
        defines = tuple(d for d in defines if parse_define(d)[0] != "__METAL_VERSION__")
    if version is None:
        version = _number(_named(defines, "__METAL_VERSION__"))
    if version is None:
        version = settings.metal_version or DEFAULT_METAL_VERSION
    ios = _named(given, "__METAL_IOS__") is not None
    name = "iOS" if ios else library.name if library is not None else None
    if name is None:
        name = "iOS" if _named(defines, "__METAL_IOS__") is not None else "macOS"
    if name == "iOS" and _named(defines, "__METAL_IOS__") is None:
        defines += ("__METAL_IOS__=1",)
    target = library.deployment_target if library is not None else None
    target = target or deployment_target or settings.deployment_target
    platform = Platform(version, name, target, library.stated_by if library else None)
    unmet = _unmet(settings.requires, platform)
    changed: C = replace(
        settings,
        defines=defines,
        metal_version=version,
        exclude=tuple(settings.exclude) + tuple(g for g in unmet if g not in settings.exclude),
        platform=platform,
    )
    return changed


def left_out(config: Any) -> tuple[str, ...]:
    """The ``[kernels.requires]`` globs the config's platform does not meet: the entry files
    its build leaves out (empty before :func:`for_platform`)."""
    return () if config.platform is None else _unmet(config.requires, config.platform)


def left_out_files(config: Any, root: Path) -> tuple[str, ...]:
    """The entry files of the tree ``root`` that the config's platform leaves out
    (:func:`left_out`'s globs) and no other exclusion does, sorted: what a build names on
    stderr and in its plan, so that a kernel missing for a platform is never a surprise."""
    unmet = left_out(config)
    if not unmet:
        return ()
    others = [g for g in config.exclude if g not in unmet]
    return tuple(f for f in entry_files(root, others) if path_matches(f, unmet))


def _unmet(requires: Sequence[Requirement], platform: Platform) -> tuple[str, ...]:
    return tuple(r.glob for r in requires if not r.met_by(platform))
