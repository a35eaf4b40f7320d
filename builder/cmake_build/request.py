"""The build request: every option of a build, typed, in one frozen dataclass tree.

A build option is declared once, here, as a field of one part of :class:`BuildRequest`
(``toolchain``, ``tree``, ``selection``, ``output``) with its CMake cache variable and its kind.
Everything else is derived from that declaration:

* the CLI (``builder.cli.build``) builds the request with :meth:`BuildRequest.from_options`
  from its click values (a click parameter is named like its field);
* :func:`cmake_args` turns it into typed ``-D`` arguments;
* CMakeLists.txt hands every ``METAL_*`` cache variable to the planner, which reads them back
  with :meth:`BuildRequest.from_cmake` (so plain CMake users get the same request);
* the build plan stores the fields the plan depends on (:meth:`BuildRequest.planned_json`) in
  plan.json, and :meth:`BuildRequest.from_json` reads them back (``BuildPlan.from_json``).

Adding an option is a field here and a click option in ``builder/cli/build.py``
(docs/build.md, "Adding a build option").

Names: ``tree.source_dir`` is the kernel tree (``--source-dir``, ``METAL_SOURCE_DIR``), and only
that; the CMake project CMake configures is :func:`project_dir`.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from builder.cmake_build.aot_sources import DEFAULT_CHUNK_SIZE
from builder.errors import UsageError

__all__ = [
    "BuildRequest",
    "Output",
    "Selection",
    "Toolchain",
    "Tree",
    "cmake_args",
    "project_dir",
]


def _option(cmake: str | None, kind: str, *, planned: bool = True) -> dict[str, Any]:
    """A request field's metadata: its CMake cache variable (None: not one), its kind (how a
    value is read from the CLI, from CMake and from JSON) and whether the plan depends on it
    (then plan.json records it)."""
    return {"cmake": cmake, "kind": kind, "planned": planned}


@dataclass(frozen=True, kw_only=True)
class Toolchain:
    """How AOT units are compiled."""

    metal_compiler: str | None = field(
        default=None, metadata=_option("METAL_COMPILER", "text", planned=False)
    )
    """An explicit Metal compiler; None: METAL_COMPILER from the environment, then xcrun."""
    metal_flags: tuple[str, ...] | None = field(
        default=None, metadata=_option("METAL_AOT_FLAGS", "flags", planned=False)
    )
    """Flags of every AOT compile; None: the build's defaults (-Wall -Wextra -fno-fast-math)."""
    std: str | None = field(default=None, metadata=_option("METAL_STD", "text"))
    """``-std=`` of the compiles; None: ``[build] std`` of metallib.toml, else the compiler's."""
    deployment_target: str | None = field(
        default=None, metadata=_option("METAL_DEPLOYMENT_TARGET", "text")
    )
    """OS version the AOT library targets; None: ``[build]`` of metallib.toml, else none."""
    sdk: str = field(default="macosx", metadata=_option("METAL_SDK", "text", planned=False))
    """xcrun SDK of the Metal compiler (and of the deployment-target flag)."""


@dataclass(frozen=True, kw_only=True)
class Tree:
    """The kernel tree and how to read it."""

    source_dir: Path | None = field(default=None, metadata=_option("METAL_SOURCE_DIR", "real_path"))
    """The kernel tree (absolute); None: the bundled metal_src/."""
    include_dirs: tuple[Path, ...] = field(
        default=(), metadata=_option("METAL_INCLUDE_DIRS", "paths")
    )
    defines: tuple[str, ...] = field(default=(), metadata=_option("METAL_DEFINES", "texts"))
    exclude: tuple[str, ...] = field(default=(), metadata=_option("METAL_EXCLUDE", "texts"))
    config_file: Path | None = field(default=None, metadata=_option("METAL_CONFIG", "path"))
    """-I, -D, --exclude and --config of a tree without catalog.json."""


@dataclass(frozen=True, kw_only=True)
class Selection:
    """What is built, and in which mode."""

    jit: bool = field(default=False, metadata=_option("METAL_JIT", "bool"))
    kernels: tuple[str, ...] = field(default=(), metadata=_option("METAL_KERNELS", "names"))
    """Catalog families to build; empty means all."""
    jit_kernels: tuple[str, ...] = field(default=(), metadata=_option("METAL_JIT_KERNELS", "names"))
    """Catalog families built JIT whatever ``jit`` says; the others AOT."""
    dtypes: tuple[str, ...] = field(default=(), metadata=_option("METAL_DTYPES", "names"))
    chunk_size: int = field(
        default=DEFAULT_CHUNK_SIZE, metadata=_option("METAL_AOT_CHUNK_SIZE", "int")
    )
    compress: bool = field(default=False, metadata=_option("METAL_JIT_COMPRESS", "bool"))
    """Compress the sources a catalog tree embeds in the host library."""


@dataclass(frozen=True, kw_only=True)
class Output:
    """Where the build goes (CMake's ``-B``: not a cache variable)."""

    build_dir: Path | None = field(default=None, metadata=_option(None, "real_path", planned=False))


@dataclass(frozen=True, kw_only=True)
class BuildRequest:
    """Everything one build is asked to be."""

    toolchain: Toolchain = field(default_factory=Toolchain)
    tree: Tree = field(default_factory=Tree)
    selection: Selection = field(default_factory=Selection)
    output: Output = field(default_factory=Output)

    @property
    def build_dir(self) -> Path:
        """The build folder (the CLI always names one)."""
        if self.output.build_dir is None:
            raise UsageError("the build request names no build folder")
        return self.output.build_dir

    def replace(self, **changes: Any) -> BuildRequest:
        """A copy with the named fields (of any part) changed: ``request.replace(jit=True)``."""
        parts = {}
        for part, _ in _parts():
            own = {f.name for f in fields(type(getattr(self, part)))}
            mine = {k: v for k, v in changes.items() if k in own}
            if mine:
                parts[part] = replace(getattr(self, part), **mine)
        unknown = set(changes) - {f.name for _, cls in _parts() for f in fields(cls)}
        if unknown:
            raise TypeError(f"no build option {', '.join(sorted(unknown))}")
        return replace(self, **parts)

    @classmethod
    def from_options(cls, values: Mapping[str, Any]) -> BuildRequest:
        """The request of the CLI's values (click parameters named like the fields; a missing
        or None value is the field's default)."""
        return cls._build(lambda f: _from_cli(f, values.get(f.name)))

    @classmethod
    def from_cmake(cls, variables: Mapping[str, str], build_dir: Path) -> BuildRequest:
        """The request of CMake's ``METAL_*`` cache variables (as CMakeLists.txt passes them)."""
        request = cls._build(lambda f: _from_cmake(f, variables.get(f.metadata["cmake"] or "")))
        return request.replace(build_dir=build_dir.resolve())

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BuildRequest:
        """The planned part of a request, as :meth:`planned_json` wrote it (ValueError if not)."""
        return cls._build(lambda f: _from_json(f, data.get(f.name)))

    def planned_json(self) -> dict[str, Any]:
        """The fields the plan depends on, for plan.json (flat: field names are unique)."""
        return {f.name: _to_json(f, value) for f, value in self._values() if f.metadata["planned"]}

    @classmethod
    def _build(cls, value_of: Any) -> BuildRequest:
        parts = {}
        for part, part_cls in _parts():
            given = {}
            for f in fields(part_cls):
                value = value_of(f)
                if value is not None or f.default is None:
                    given[f.name] = value
            parts[part] = part_cls(**given)
        return cls(**parts)

    def _values(self) -> Iterator[tuple[Any, Any]]:
        for part, part_cls in _parts():
            for f in fields(part_cls):
                yield f, getattr(getattr(self, part), f.name)


def _parts() -> tuple[tuple[str, type[Any]], ...]:
    return (("toolchain", Toolchain), ("tree", Tree), ("selection", Selection), ("output", Output))


def _names(text: str) -> tuple[str, ...]:
    from builder.kernels.catalog import split_names

    return tuple(split_names(text.replace(";", ",")) or ())


def _absolute(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.abspath(path))


def _from_cli(f: Any, value: Any) -> Any:
    """A click value as the field's type; None: not given."""
    kind = f.metadata["kind"]
    if value is None or (value == () and kind != "flags"):
        return None
    if kind == "names":
        return _names(value)
    if kind == "paths":
        return tuple(_absolute(p) for p in value)
    if kind == "path":
        return _absolute(value)
    if kind == "real_path":
        return Path(value).resolve()
    if kind == "texts":
        return tuple(value)
    if kind == "flags":
        if not value:
            return None
        try:
            return tuple(flag for text in value for flag in shlex.split(text))
        except ValueError as exc:
            raise UsageError(f"--metal-flags: {exc}") from None
    return value


def _from_cmake(f: Any, text: str | None) -> Any:
    """A CMake cache value as the field's type; None: not set (or empty where empty means the
    default)."""
    kind = f.metadata["kind"]
    if text is None:
        return None
    if kind == "bool":
        return text.upper() in ("1", "ON", "YES", "TRUE", "Y")
    if kind == "flags":  # a CMake list; ',' before a '-' separates too (CMakeLists.txt)
        return tuple(s for s in text.replace(",-", ";-").split(";") if s)
    if not text:
        return None
    if kind == "names":
        return _names(text)
    if kind == "paths":
        return tuple(_absolute(p) for p in text.split(";") if p)
    if kind == "texts":
        return tuple(s for s in text.split(";") if s)
    if kind == "path":
        return _absolute(text)
    if kind == "real_path":
        return Path(text).resolve()
    if kind == "int":
        try:
            number = int(text)
        except ValueError:
            raise UsageError(f"{f.metadata['cmake']}={text}: not a whole number") from None
        if number < 1:
            raise UsageError(f"{f.metadata['cmake']}={text}: must be at least 1")
        return number
    return text


def _to_json(f: Any, value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, Path):
        return str(value)
    return [str(v) for v in value]


def _from_json(f: Any, value: Any) -> Any:
    """A plan.json value as the field's type (ValueError naming the field when it is not)."""
    kind = f.metadata["kind"]
    if value is None:
        return None
    kind = "path" if kind == "real_path" else kind
    expected: type[Any] = {"bool": bool, "int": int, "text": str, "path": str}.get(kind, list)
    if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
        raise ValueError(f"request field {f.name!r}: {value!r} is not a {kind}")
    if kind == "path":
        return Path(value)
    if expected is list:
        if not all(isinstance(v, str) for v in value):
            raise ValueError(f"request field {f.name!r}: not a list of strings")
        return tuple(Path(v) for v in value) if kind == "paths" else tuple(value)
    return value


def cmake_args(request: BuildRequest, compiler: str | None = None) -> list[str]:
    """The typed ``-D`` arguments for ``request``. Every option is stated on every configure, so
    nothing an earlier configure cached lingers; the compile flags are reset to CMake's default
    (``-U``) when none are given. ``compiler`` is the resolved explicit compiler (None: CMake
    finds it through xcrun) and stands for ``toolchain.metal_compiler``."""
    from builder.resources import metal_src_dir

    types = {"bool": "BOOL", "path": "PATH", "real_path": "PATH"}
    unset: list[str] = []
    args: list[str] = []
    for f, value in request._values():
        name = f.metadata["cmake"]
        if name is None:
            continue
        kind = f.metadata["kind"]
        if f.name == "metal_compiler":
            value = compiler
        elif f.name == "source_dir" and value is None:
            value = metal_src_dir()
        if kind == "flags" and value is None:
            unset.append(f"-U{name}")
            continue
        if kind == "bool":
            text = "ON" if value else "OFF"
        elif isinstance(value, tuple):
            text = ";".join(str(v) for v in value)
        else:
            text = "" if value is None else str(value)
        type_ = "FILEPATH" if name in ("METAL_COMPILER", "METAL_CONFIG") else types.get(kind)
        args.append(f"-D{name}:{type_ or 'STRING'}={text}")
    args.append("-DCMAKE_BUILD_TYPE:STRING=Release")
    return [*unset, *args]


def project_dir() -> Path:
    """The CMake project the CLI configures: the checkout root, or ``builder/_data`` in an
    installed wheel."""
    from builder.resources import cmake_dir

    return cmake_dir().parent
