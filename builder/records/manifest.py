"""``manifest.json``, the record of what a build produced: the one module that writes and reads it.

A build writes it at the root of its build directory at build time, after the metallib and the
host JIT library exist, so every byte count in it was measured on the real outputs (CMake runs
``python -m builder.cmake_build.record``, which gathers the inputs and calls
:func:`write_manifest`). Inputs: the build plan (``builder.cmake_build.plan``: units and modes),
the kernels of each unit, the configure-time build config (compile options, toolchain identity,
the ``.air`` file of every compiled source) and the JIT generator's ``embed.json``. Output is
deterministic: plan order, paths relative to the build directory (sources relative to the kernel
tree), no timestamps. :func:`read_manifest` gives the size report (``report BUILD_DIR``, and
``build`` and ``variants`` after building) its typed view (docs/report-schema.md); docs/build.md
lists every field. ``embed.json``, what a host JIT library embeds per unit, is written here too
(:func:`embed_facts`, :func:`write_embed_facts`: one shape for the catalog's host library and a
discovered tree's) and read back by :func:`build_manifest`. Standard library and
``builder.errors``/``builder.files.atomic`` only: it runs inside pip's isolated build environment.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from builder.errors import UsageError
from builder.files.atomic import write_atomic, write_if_changed
from builder.files.bounds import brief, byte_count
from builder.files.dataclass_json import dump, field, load
from builder.files.reading import read_json

__all__ = [
    "EMBED_SCHEMA",
    "MANIFEST_NAME",
    "SCHEMA",
    "BuildManifest",
    "Unit",
    "build_manifest",
    "embed_facts",
    "read_manifest",
    "write_embed_facts",
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


# -- embed.json --------------------------------------------------------------------------------
EMBED_SCHEMA = 2
"""2: ``units`` (with the document's ``kind``) instead of ``families``; ``shared[].units``."""


def embed_facts(
    kind: str,
    units: Sequence[Mapping[str, Any]],
    shared: Sequence[Mapping[str, Any]],
    shared_bytes: int,
    *,
    compressed: bool,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The embed.json document: ``units`` each with ``name`` and ``embedded_bytes`` (its own
    stored bytes), ``shared`` the entries several units use (``name``, ``units``). The
    document's ``embedded_bytes`` is every stored byte: each unit's own plus ``shared_bytes``
    once.

    Shape (schema 2)::

        {"schema": 2, "kind": "catalog" | "discovered", "compressed": bool,
         "embedded_bytes": int, "shared_bytes": int, ...writer-specific totals...,
         "units": [{"name", "headers", "source_bytes", "embedded_bytes", ...}],
         "shared": [{"name", "units", ["bytes"]}]}
    """
    if kind not in ("catalog", "discovered"):
        raise ValueError(f"embed.json kind {kind!r}")
    return {
        "schema": EMBED_SCHEMA,
        "kind": kind,
        "compressed": compressed,
        "embedded_bytes": shared_bytes + sum(int(u["embedded_bytes"]) for u in units),
        "shared_bytes": shared_bytes,
        **(extra or {}),
        "units": [dict(u) for u in units],
        "shared": [dict(s) for s in shared],
    }


def write_embed_facts(path: Path, facts: Mapping[str, Any]) -> bool:
    """Write ``facts`` to ``path`` only when its bytes change (Ninja's restat then skips what
    follows); True when written."""
    return write_if_changed(path, json.dumps(facts, indent=1) + "\n")


def _file(path: str | None, build_dir: Path) -> dict[str, Any] | None:
    if not path:
        return None
    return {"path": _rel(path, build_dir), "bytes": Path(path).stat().st_size}


def build_manifest(
    build_dir: Path,
    config: Mapping[str, Any],
    *,
    tree: Mapping[str, Any],
    units: Sequence[Unit],
    compiled: Mapping[str, Sequence[str]],
    options: Mapping[str, Any],
    kernels: Mapping[str, Sequence[str]],
    metallib: str | None = None,
    embed: Mapping[str, Any] | None = None,
    embed_dir: Path | None = None,
    host_library: str | None = None,
) -> dict[str, Any]:
    """The manifest as a dict, one entry per unit of the plan, in plan order.

    ``tree`` is the plan's ``kind`` (``catalog`` or ``discovered``) and ``library``;
    ``compiled`` maps each AOT unit to its compiled sources (absolute); ``options`` the plan's
    selection as ``METAL_*`` values; ``kernels`` maps each unit to its host names; ``config`` is
    the configure-time build config (``objects``: compiled source -> ``.air``; ``options``,
    ``toolchain``, ``host_compiler``); ``embed`` the JIT generator's facts (embed.json,
    ``embed_facts``: ``units`` by name) found in ``embed_dir``.
    """
    metallib_rel = _rel(metallib, build_dir) if metallib else None
    host_rel = _rel(host_library, build_dir) if host_library else None
    family = tree.get("kind") == "catalog"
    objects = config.get("objects", {})
    facts = {f["name"]: f for f in (embed or {}).get("units", [])}
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
    return {
        "schema": SCHEMA,
        "generator": config.get("generator", "metallib-builder"),
        "tree": {"kind": tree.get("kind"), "library": tree.get("library")},
        "options": {**options, **config.get("options", {})},
        "toolchain": config.get("toolchain"),
        "host_compiler": config.get("host_compiler"),
        "metallib": metallib_rel,
        "host_library": host_rel,
        "compressed": bool((embed or {}).get("compressed", False)),
        # All stored source bytes (with deduplication, pieces shared by units count once).
        "embedded_bytes": int((embed or {}).get("embedded_bytes", 0)),
        "files": {
            "metallib": _file(metallib, build_dir),
            "host_library": _file(host_library, build_dir),
        },
        "units": dump(entries),
    }


def write_manifest(path: Path, manifest: Mapping[str, Any]) -> None:
    """Write ``manifest.json`` atomically (always, not only on change: Ninja must see the output
    newer than its inputs)."""
    write_atomic(path, json.dumps(manifest, indent=1) + "\n")


# -- reading -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Tree:
    kind: Literal["catalog", "discovered"]
    """What every unit is: a catalog family, or an entry file of a discovered tree."""
    library: str | None = None


@dataclass(frozen=True)
class _Read:
    """What the size report reads of a manifest (the codec checks each field's type)."""

    units: tuple[Unit, ...]
    tree: _Tree | None = None
    metallib: str | None = None
    host_library: str | None = None
    embedded_bytes: int = field(default=0, check=byte_count)


@dataclass(frozen=True)
class BuildManifest:
    """A build manifest (schema 2) as the size report reads it."""

    path: str
    units: tuple[Unit, ...]
    metallib: str | None
    """Path of the built metallib relative to the manifest's directory; None if all JIT."""
    host_library: str | None = None
    """Path of the host JIT library relative to the manifest's directory; None if all AOT."""
    embedded_bytes: int = 0
    """All embedded source bytes (pieces shared by families counted once)."""
    build: dict[str, Any] = field(default_factory=dict)
    """Options, toolchain and generator as the manifest records them (for report provenance)."""

    @property
    def folder(self) -> Path:
        return Path(self.path).parent

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


def read_manifest(path: str | os.PathLike[str]) -> BuildManifest:
    """Read ``manifest.json``; a missing, unreadable or malformed one is a UsageError (exit 2)."""
    where = os.fspath(path)
    data = read_json(Path(where), "build manifest")
    try:
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            found = data.get("schema") if isinstance(data, dict) else None
            raise ValueError(f"schema {found!r}, expected {SCHEMA}")
        read = load(_Read, data)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"{where}: not a usable build manifest: {exc}") from None
    for key, value in (("metallib", read.metallib), ("host_library", read.host_library)):
        if value is not None:
            _confine(where, key, value)
    facts = _build_facts(data, where)
    return BuildManifest(
        where, read.units, read.metallib, read.host_library, read.embedded_bytes, facts
    )


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


def _build_facts(data: dict[str, Any], path: str) -> dict[str, Any]:
    """The build part of a report's provenance: options, toolchain, generator."""
    facts: dict[str, Any] = {"manifest": path}
    for key in ("options", "toolchain", "generator", "host_library"):
        if data.get(key) is not None:
            facts[key] = data[key]
    return facts
