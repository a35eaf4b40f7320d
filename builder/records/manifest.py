"""``manifest.json``, the one record of a build: the one module that writes and reads it.

A build writes it at the root of its build directory at build time, after the metallib and the
host JIT library exist, so every byte count in it was measured on the real outputs (CMake runs
``python -m builder.cmake_build.record``, which gathers the inputs and calls
:func:`write_manifest`). Inputs: the build plan (``builder.cmake_build.plan``: units and modes),
the kernels of each unit, what CMake resolved at configure time (toolchain identity, deployment
target, the ``.air`` file of every compiled source: on the record step's command line) and the
JIT library's facts (``embed.json``), which the manifest takes over. Output is deterministic:
plan order, paths relative to the build directory (sources relative to the kernel tree), no
timestamps. :class:`BuildManifest` is the document, written and read back (:func:`read_manifest`)
by the one codec; the size report (``report BUILD_DIR``, and ``build`` and ``presets`` after
building) reads nothing else of a build (docs/report-schema.md; docs/build.md lists every
field). ``embed.json``, what one host JIT library target embeds per unit, which the manifest
takes over, has its own module (``builder.records.embed_facts``). Standard library and
``builder.errors``/``builder.files`` only: it runs inside pip's isolated build environment.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from builder.errors import UsageError
from builder.files.atomic import write_atomic
from builder.files.bounds import brief, byte_count
from builder.files.dataclass_json import dump, field, load
from builder.files.reading import read_json

__all__ = [
    "MANIFEST_NAME",
    "SCHEMA",
    "BuildManifest",
    "BuiltFile",
    "Shared",
    "Tree",
    "Unit",
    "build_manifest",
    "read_manifest",
    "write_manifest",
]

SCHEMA = 2
"""2: ``units`` instead of ``families``. Units no longer say their ``kind`` (``tree.kind`` says
what every unit of the build is); a reader ignores it where an older build wrote it."""
MANIFEST_NAME = "manifest.json"

Mode = Literal["aot", "jit"]
Embedding = Literal["whole-file", "preamble"]
"""How a JIT unit's source is embedded (``KernelTree.embeddings``, which this module, run
inside CMake with the standard library, does not import)."""


def _rel(path: str | os.PathLike[str], base: Path) -> str:
    """``path`` relative to ``base`` with '/' separators (absolute when on another drive)."""
    try:
        return Path(os.path.relpath(path, base)).as_posix()
    except ValueError:
        return Path(path).as_posix()


def _bytes(value: int | None, where: str) -> int | None:
    return None if value is None else byte_count(value, where)


@dataclass(frozen=True)
class Unit:
    """One unit of a build: a catalog family or an entry file of a discovered tree (the build's
    ``tree.kind`` says which), the mode it is built in and, once built, what it became.

    The one unit type of the build plan (``plan.json``, which writes the fields up to
    ``embedding``) and of the manifest (which adds the rest, measured on the outputs)."""

    name: str
    mode: Mode
    """``aot`` (its kernels linked into the metallib) or ``jit`` (its source embedded in the
    host library)."""
    sources: tuple[str, ...] = ()
    """The family header or the entry file, relative to the tree; a JIT family: every header
    inlined, in order."""
    preambles: tuple[str, ...] = field(default=(), omit="empty")
    """A JIT entry file: the run-time preamble functions it needs."""
    reason: str | None = field(default=None, omit="none")
    """Why an entry file stays AOT in JIT mode (``[build] aot-only`` names it)."""
    embedding: Embedding | None = field(default=None, omit="none")
    """A JIT unit: ``whole-file`` (an entry file's text, includes inlined, is one run-time
    source) or ``preamble`` (MLX's: its headers; every catalog family)."""
    headers: tuple[str, ...] | None = field(default=None, omit="none")
    """Built, a JIT entry file: the headers its own source stores, inlined, in order (those of
    preambles several units use are under the manifest's ``shared``; a catalog family's
    headers are its ``sources``)."""
    generated_sources: tuple[str, ...] | None = field(default=None, omit="none")
    """Built: its generated ``.metal`` entry files (AOT) or ``.cpp`` source (JIT), relative to
    the build folder."""
    host_names: tuple[str, ...] | None = field(default=None, omit="none")
    """Built: the kernels it holds, linked into the metallib or compiled at run time."""
    outputs: tuple[str, ...] | None = field(default=None, omit="none")
    generated_bytes: int | None = field(default=None, omit="none", check=_bytes)
    source_bytes: int | None = field(default=None, omit="none", check=_bytes)
    """Built, JIT: bytes of the inlined source before storage."""
    embedded_bytes: int | None = field(default=None, omit="none", check=_bytes)
    """Built: bytes stored in the host library for it alone (0 for an AOT unit)."""

    @property
    def kernels(self) -> tuple[str, ...]:
        return self.host_names or ()


def _aot_unit(
    unit: Unit,
    sources: Sequence[str],
    names: Sequence[str],
    objects: Mapping[str, str],
    build_dir: Path,
    metallib: str,
) -> Unit:
    """An AOT unit: its compiled sources (generated ones counted), their ``.air`` files."""
    generated = [s for s in sources if not _rel(s, build_dir).startswith("../")]
    return replace(
        unit,
        generated_sources=tuple(_rel(s, build_dir) for s in generated),
        host_names=tuple(names),
        outputs=(*(_rel(objects[s], build_dir) for s in sources if s in objects), metallib),
        generated_bytes=sum(Path(s).stat().st_size for s in generated),
        embedded_bytes=0,
    )


def _jit_unit(
    unit: Unit,
    family: bool,
    facts: Mapping[str, Any],
    names: Sequence[str],
    embed_dir: Path,
    build_dir: Path,
    host_library: str | None,
) -> Unit:
    """A JIT unit: the generated C++ source beside embed.json and what it stores."""
    cpp = embed_dir / f"{unit.name}.cpp"
    generated = [cpp] if cpp.is_file() else []
    return replace(
        unit,
        # an entry file: itself (its kernels' source); a catalog family: every header inlined
        sources=tuple(str(h) for h in facts.get("headers", [])) if family else unit.sources,
        headers=None if family else tuple(str(h) for h in facts.get("headers", [])),
        generated_sources=tuple(_rel(p, build_dir) for p in generated),
        host_names=tuple(names),
        outputs=(
            *(_rel(p, build_dir) for p in generated),
            *([host_library] if host_library else []),
        ),
        generated_bytes=sum(p.stat().st_size for p in generated),
        source_bytes=int(facts.get("source_bytes", 0)),
        embedded_bytes=int(facts.get("embedded_bytes", 0)),
        # whole-file: the entry file's text is the run-time source; preamble: headers
        embedding=facts.get("embedding", "preamble"),
    )


@dataclass(frozen=True)
class Tree:
    kind: Literal["catalog", "discovered"]
    """What every unit is: a catalog family, or an entry file of a discovered tree."""
    library: str | None = None


@dataclass(frozen=True)
class BuiltFile:
    """An output of the build, relative to the build folder, and its size when recorded."""

    path: str
    bytes: int = field(check=byte_count)


@dataclass(frozen=True)
class Shared:
    """Stored source that several JIT units use, counted once: a preamble (no ``bytes``: its
    pieces are listed) or a piece."""

    name: str
    units: tuple[str, ...]
    bytes: int | None = field(default=None, omit="none", check=_bytes)


@dataclass(frozen=True, kw_only=True)
class BuildManifest:
    """``manifest.json`` (schema 2): the one record of a build, written by
    :func:`build_manifest` and read by :func:`read_manifest`, one type for both."""

    generator: str = "metallib-builder"
    tree: Tree | None = None
    options: dict[str, Any] = field(default_factory=dict)
    """The build's ``METALLIB_*`` options, as the plan and CMake resolved them."""
    toolchain: dict[str, Any] | None = None
    host_compiler: str | None = None
    metallib: str | None = None
    """Path of the built metallib relative to the manifest's directory; None if all JIT."""
    host_library: str | None = None
    """Path of the host JIT library relative to the manifest's directory; None if all AOT."""
    compressed: bool = False
    embedded_bytes: int = field(default=0, check=byte_count)
    """All embedded source bytes: each JIT unit's own plus ``shared_bytes`` once."""
    shared_bytes: int = field(default=0, omit="default", check=byte_count)
    storage: str | None = field(default=None, omit="none")
    """A discovered tree's host library: ``deduplicated`` or ``separate`` (``jit-api``)."""
    files: dict[str, BuiltFile | None] = field(default_factory=dict)
    units: tuple[Unit, ...]
    shared: tuple[Shared, ...] = field(default=(), omit="empty")
    path: str = field(default="", omit="always")
    """Where it was read from (not written)."""

    @property
    def folder(self) -> Path:
        return Path(self.path).parent

    @property
    def build(self) -> dict[str, Any]:
        """Options, toolchain and generator as the manifest records them (a report's
        provenance)."""
        facts: dict[str, Any] = {"manifest": self.path}
        for key in ("options", "toolchain", "generator", "host_library"):
            if getattr(self, key) is not None:
                facts[key] = getattr(self, key)
        return facts

    def unit_of(self) -> dict[str, str]:
        """host name -> its unit, for every AOT unit."""
        return {n: f.name for f in self.units if f.mode == "aot" for n in f.kernels}

    def source_of(self) -> dict[str, str]:
        """host name -> its unit's source file(s), joined with ``+`` when there are several."""
        return {
            n: "+".join(f.sources) if f.sources else f.name
            for f in self.units
            if f.mode == "aot"
            for n in f.kernels
        }


def _file(path: str | None, build_dir: Path) -> BuiltFile | None:
    return BuiltFile(_rel(path, build_dir), Path(path).stat().st_size) if path else None


def build_manifest(
    build_dir: Path,
    config: Mapping[str, Any],
    *,
    tree: Tree,
    units: Sequence[Unit],
    compiled: Mapping[str, Sequence[str]],
    options: Mapping[str, Any],
    kernels: Mapping[str, Sequence[str]],
    metallib: str | None = None,
    embed: Mapping[str, Any] | None = None,
    embed_dir: Path | None = None,
    host_library: str | None = None,
) -> BuildManifest:
    """The manifest, one entry per unit of the plan, in plan order.

    ``tree`` is the plan's; ``compiled`` maps each AOT unit to its compiled sources (absolute);
    ``options`` the plan's selection as ``METALLIB_*`` values; ``kernels`` maps each unit to its
    host names; ``config`` what CMake resolved at configure time (``objects``: compiled source
    -> ``.air``; ``options``, ``toolchain``, ``host_compiler``, ``generator``); ``embed`` the
    JIT generator's facts (``builder.records.embed_facts``: ``units`` by name) found in
    ``embed_dir``, whose totals and shared entries the manifest takes over.
    """
    metallib_rel = _rel(metallib, build_dir) if metallib else None
    host_rel = _rel(host_library, build_dir) if host_library else None
    family = tree.kind == "catalog"
    objects = config.get("objects", {})
    embed = embed or {}
    facts = {f["name"]: f for f in embed.get("units", [])}
    entries = []
    for unit in units:
        names = kernels.get(unit.name, ())
        if unit.mode == "aot" and metallib_rel is not None:
            entries.append(
                _aot_unit(
                    unit, compiled.get(unit.name, []), names, objects, build_dir, metallib_rel
                )
            )
        elif unit.mode == "jit" and embed_dir is not None:
            entries.append(
                _jit_unit(
                    unit, family, facts.get(unit.name, {}), names, embed_dir, build_dir, host_rel
                )
            )
    return BuildManifest(
        generator=config.get("generator", "metallib-builder"),
        tree=tree,
        options={**options, **config.get("options", {})},
        toolchain=config.get("toolchain"),
        host_compiler=config.get("host_compiler"),
        metallib=metallib_rel,
        host_library=host_rel,
        compressed=bool(embed.get("compressed", False)),
        embedded_bytes=int(embed.get("embedded_bytes", 0)),
        shared_bytes=int(embed.get("shared_bytes", 0)),
        storage=embed.get("storage"),
        files={
            "metallib": _file(metallib, build_dir),
            "host_library": _file(host_library, build_dir),
        },
        units=tuple(entries),
        shared=tuple(
            Shared(str(s["name"]), tuple(s["units"]), s.get("bytes"))
            for s in embed.get("shared", [])
        ),
    )


def write_manifest(path: Path, manifest: BuildManifest) -> None:
    """Write ``manifest.json`` atomically (always, not only on change: Ninja must see the output
    newer than its inputs)."""
    write_atomic(path, json.dumps({"schema": SCHEMA, **dump(manifest)}, indent=1) + "\n")


def read_manifest(path: str | os.PathLike[str]) -> BuildManifest:
    """Read ``manifest.json``; a missing, unreadable or malformed one is a UsageError (exit 2)."""
    where = os.fspath(path)
    data = read_json(Path(where), "build manifest")
    try:
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            found = data.get("schema") if isinstance(data, dict) else None
            raise ValueError(f"schema {found!r}, expected {SCHEMA}")
        manifest = replace(load(BuildManifest, data), path=where)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"{where}: not a usable build manifest: {exc}") from None
    for key in ("metallib", "host_library"):
        value = getattr(manifest, key)
        if value is not None:
            _confine(where, key, value)
    return manifest


def _confine(where: str, key: str, value: str) -> None:
    """UsageError unless the file ``value`` (the manifest's ``key``) lies in the build folder,
    the manifest's own folder, compared as real paths (``..`` and symbolic links resolved). A
    manifest may come from anyone (docs/security.md): one naming ``/etc/passwd`` as its metallib
    used to have the metallib reader's error show that file's first bytes. Nothing is opened
    here; the line names the manifest, the key and the value, never the file's contents."""
    bad = f"{where}: not a usable build manifest: {key!r} is {brief(value, 200)}"
    folder = os.path.realpath(Path(where).parent)
    named = os.path.normpath(Path(folder) / value)
    try:
        target = os.path.realpath(named)
    except ValueError:  # a NUL byte
        raise UsageError(f"{bad}, not a file name") from None
    try:
        inside = os.path.commonpath([folder, target]) == folder
    except ValueError:  # another drive
        inside = False
    if not inside:
        via = f" (a link to {target})" if target != named else ""
        raise UsageError(
            f"{bad}{via}, outside the build folder {folder}; a build's outputs are inside it"
        )
