"""The build request: every setting of a build, typed, in one frozen dataclass tree.

Each field is a setting declared in ``builder.settings.declared`` (its flag, CMake cache
variable, check, help and default are said there once); a part holds the field
(``setting_field("std")``). From that declaration come:

* the click options of ``build`` and ``presets`` (``builder.cli.tree_options.option``; the CLI
  builds the request with :meth:`BuildRequest.from_options`, a click parameter named like its
  field);
* ``cmake/MetallibBuildOptions.cmake``, the cache variables of a plain CMake run, and the option
  table of docs/build.md (``python -m builder.cmake_build.options --write``);
* plan.json's ``request``: :meth:`to_json` and :meth:`from_json` are
  ``builder.files.dataclass_json`` over the parts, each value checked by its setting.

The request travels one way: ``BuildRequest`` -> plan.json's ``request`` -> :meth:`from_json`.
A plain CMake run hands its cache variables to the planner as that same JSON object
(``metallib_build_request`` in the generated CMake file).

Names: ``tree.source_dir`` is the kernel tree (``--source-dir``, ``METALLIB_SOURCE_DIR``), and
only that; the CMake project CMake configures is :func:`project_dir`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from builder.errors import UsageError
from builder.files import dataclass_json
from builder.settings import Setting, setting_of
from builder.settings.declared import DEFAULT_METAL_FLAGS, SDKS, setting_field

__all__ = [
    "DEFAULT_METAL_FLAGS",
    "SDKS",
    "BuildLocation",
    "BuildRequest",
    "Toolchain",
    "Tree",
    "UnitSelection",
    "project_dir",
    "request_settings",
]


@dataclass(frozen=True, kw_only=True)
class Toolchain:
    """How AOT units are compiled."""

    metal_compiler: str | None = setting_field("metal_compiler")
    metal_flags: tuple[str, ...] | None = setting_field("metal_flags")
    """None: :data:`DEFAULT_METAL_FLAGS`."""
    std: str | None = setting_field("std")
    deployment_target: str | None = setting_field("deployment_target")
    sdk: str = setting_field("sdk")


@dataclass(frozen=True, kw_only=True)
class Tree:
    """The kernel tree and how to read it (also the kernel-tree options of every command that
    reads a tree: ``builder.cli.tree_options.TreeOptions``)."""

    source_dir: Path | None = setting_field("source_dir")
    include_dirs: tuple[Path, ...] = setting_field("include_dirs")
    defines: tuple[str, ...] = setting_field("defines")
    exclude: tuple[str, ...] = setting_field("exclude")
    config: Path | None = setting_field("config")


@dataclass(frozen=True, kw_only=True)
class UnitSelection:
    """Which units are built, and in which mode (the split: ``jit``/``aot``), and the
    interface of the run-time sources a tree of entry files embeds."""

    jit: tuple[str, ...] = setting_field("jit")
    aot: tuple[str, ...] = setting_field("aot")
    kernels: tuple[str, ...] = setting_field("kernels")
    dtypes: tuple[str, ...] = setting_field("dtypes")
    chunk_size: int = setting_field("chunk_size")
    compress: bool = setting_field("compress")
    jit_namespace: str | None = setting_field("jit_namespace")
    jit_api: str | None = setting_field("jit_api")
    jit_lookup: bool | None = setting_field("jit_lookup")


@dataclass(frozen=True, kw_only=True)
class BuildLocation:
    """Where the build goes (CMake's ``-B``: not a cache variable)."""

    build_dir: Path | None = setting_field("build_dir")


_PARTS: dict[str, type[Any]] = {
    "toolchain": Toolchain,
    "tree": Tree,
    "selection": UnitSelection,
    "location": BuildLocation,
}


@dataclass(frozen=True, kw_only=True)
class BuildRequest:
    """Everything one build is asked to be."""

    toolchain: Toolchain = field(default_factory=Toolchain)
    tree: Tree = field(default_factory=Tree)
    selection: UnitSelection = field(default_factory=UnitSelection)
    location: BuildLocation = field(default_factory=BuildLocation)

    @property
    def build_dir(self) -> Path:
        """The build folder (the CLI always names one)."""
        if self.location.build_dir is None:
            raise UsageError("the build request names no build folder")
        return self.location.build_dir

    @property
    def metal_flags(self) -> tuple[str, ...]:
        """The flags every AOT compile gets (the default when none are asked for)."""
        flags = self.toolchain.metal_flags
        return DEFAULT_METAL_FLAGS if flags is None else flags

    def replace(self, **changes: object) -> BuildRequest:
        """A copy with the named fields (of any part) changed, each checked as its flag's
        value is: ``request.replace(jit=("*",))``."""
        known = {f.name: f for part in _PARTS.values() for f in fields(part)}
        unknown = set(changes) - set(known)
        if unknown:
            raise TypeError(f"no build option {', '.join(sorted(unknown))}")
        checked = {k: _checked(setting_of(known[k]), v) for k, v in changes.items()}
        parts = {}
        for name, part in _PARTS.items():
            mine = {f.name: checked[f.name] for f in fields(part) if f.name in checked}
            if mine:
                parts[name] = replace(getattr(self, name), **mine)
        return replace(self, **parts)

    @classmethod
    def from_options(cls, values: Mapping[str, object]) -> BuildRequest:
        """The request of the CLI's values (click parameters named like the fields; a missing
        or None value is the field's default), each read as its setting reads a flag."""
        given = {}
        for name, s in request_settings().items():
            value = s.from_cli(values.get(name))
            if value is not None:
                given[name] = value
        return cls().replace(**given)

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> BuildRequest:
        """The request :meth:`to_json` wrote, or a plain CMake run's cache as
        ``metallib_build_request`` words it (a missing field: its default). ValueError naming
        the field when a value has the wrong type or fails its setting's check."""
        unknown = set(data) - set(request_settings())
        if unknown:
            raise ValueError(f"no build option {', '.join(sorted(unknown))}")
        try:
            parts = {name: dataclass_json.load(part, data) for name, part in _PARTS.items()}
        except TypeError as exc:
            raise ValueError(str(exc)) from None
        return cls(**parts)

    def to_json(self) -> dict[str, object]:
        """Every field, for plan.json (flat: field names are unique)."""
        flat: dict[str, object] = {}
        for name in _PARTS:
            flat |= dataclass_json.dump(getattr(self, name))
        return flat


def _checked(s: Setting, value: object) -> object:
    """``value`` of a request field checked as its flag's value is (paths and switches have
    nothing more to check; None: the default)."""
    if value is None or s.kind in ("path", "real_path", "paths", "bool", "switch"):
        return value
    return s.read(list(value) if isinstance(value, tuple) else value, str(s.long_flag))


def request_settings() -> dict[str, Setting]:
    """Every setting a build request holds, by field name, in declaration order."""
    return {f.name: setting_of(f) for part in _PARTS.values() for f in fields(part)}


def project_dir() -> Path:
    """The CMake project the CLI configures: the checkout root, or ``builder/_data`` in an
    installed wheel."""
    from builder.resources import cmake_dir

    return cmake_dir().parent
