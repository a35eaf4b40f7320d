"""The build request: every option of a build, typed, in one frozen dataclass tree.

A build option is declared once, as a field of one part of :class:`BuildRequest`
(``toolchain``, ``tree``, ``selection``, ``location``; the parts are in
``builder.cmake_build.request_parts``) with everything said about it in the field's metadata
(:class:`Option`): its command-line flag, help, metavar, its CMake cache variable
(``METALLIB_*``) and its kind. Everything else is generated from that declaration:

* the click options of ``build`` and ``presets`` (``builder.cli.build_options``; the CLI builds
  the request with :meth:`BuildRequest.from_options`, a click parameter named like its field);
* ``cmake/MetallibBuildOptions.cmake``, the cache variables of a plain CMake run, and the option
  table of docs/build.md (``python -m builder.cmake_build.options --write``).

The request travels one way: ``BuildRequest`` -> plan.json's ``request`` (:meth:`to_json`) ->
:meth:`from_json`. A plain CMake run hands its cache variables to the planner as that same JSON
object (``metallib_build_request`` in the generated CMake file).

Names: ``tree.source_dir`` is the kernel tree (``--source-dir``, ``METALLIB_SOURCE_DIR``), and
only that; the CMake project CMake configures is :func:`project_dir`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import Field, dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from builder.cmake_build.option_values import (
    Option,
    from_cli,
    from_json,
    option_of,
    to_json,
)
from builder.cmake_build.request_parts import (
    DEFAULT_METAL_FLAGS,
    SDKS,
    BuildLocation,
    Toolchain,
    Tree,
    UnitSelection,
)
from builder.errors import UsageError

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = [
    "DEFAULT_METAL_FLAGS",
    "SDKS",
    "BuildLocation",
    "BuildRequest",
    "Option",
    "Toolchain",
    "Tree",
    "UnitSelection",
    "option_fields",
    "project_dir",
]


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
        """A copy with the named fields (of any part) changed: ``request.replace(jit=("*",))``."""
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
    def from_options(cls, values: Mapping[str, object]) -> BuildRequest:
        """The request of the CLI's values (click parameters named like the fields; a missing
        or None value is the field's default)."""
        return cls._build(lambda f: from_cli(f, values.get(f.name)))

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> BuildRequest:
        """The request :meth:`to_json` wrote, or a plain CMake run's cache as
        ``metallib_build_request`` words it (a missing field: its default). ValueError naming
        the field when a value has the wrong type."""
        unknown = set(data) - {f.name for f, _ in option_fields()}
        if unknown:
            raise ValueError(f"no build option {', '.join(sorted(unknown))}")
        return cls._build(lambda f: from_json(f, data.get(f.name)))

    def to_json(self) -> dict[str, object]:
        """Every field, for plan.json (flat: field names are unique)."""
        return {f.name: to_json(value) for f, value in self._values()}

    @classmethod
    def _build(cls, value_of: Callable[[Field[object]], object]) -> BuildRequest:
        return cls(
            toolchain=_part(Toolchain, value_of),
            tree=_part(Tree, value_of),
            selection=_part(UnitSelection, value_of),
            location=_part(BuildLocation, value_of),
        )

    def _values(self) -> Iterator[tuple[Field[object], object]]:
        for part, part_cls in _parts():
            for f in fields(part_cls):
                yield f, getattr(getattr(self, part), f.name)


_Part = TypeVar("_Part", bound="DataclassInstance")


def _part(part_cls: type[_Part], value_of: Callable[[Field[object]], object]) -> _Part:
    """One part of a request from ``value_of`` each field (None: the field's default)."""
    given = {}
    for f in fields(part_cls):
        value = value_of(f)
        if value is not None or f.default is None:
            given[f.name] = value
    return part_cls(**given)


def _parts() -> tuple[tuple[str, type[DataclassInstance]], ...]:
    return (
        ("toolchain", Toolchain),
        ("tree", Tree),
        ("selection", UnitSelection),
        ("location", BuildLocation),
    )


def option_fields() -> list[tuple[Field[object], Option]]:
    """Every request field with its :class:`Option`, in declaration order."""
    return [(f, option_of(f)) for _, cls in _parts() for f in fields(cls)]


def project_dir() -> Path:
    """The CMake project the CLI configures: the checkout root, or ``builder/_data`` in an
    installed wheel."""
    from builder.resources import cmake_dir

    return cmake_dir().parent
