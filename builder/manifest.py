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
lists every field. Standard library and
``builder.errors``/``builder.fileio`` only: it runs inside pip's isolated build environment.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from builder.errors import UsageError
from builder.fileio import write_atomic
from builder.limits import byte_count, read_json

__all__ = [
    "MANIFEST_NAME",
    "SCHEMA",
    "BuildManifest",
    "ManifestFamily",
    "build_manifest",
    "read_manifest",
    "write_manifest",
]

SCHEMA = 1
MANIFEST_NAME = "manifest.json"


def _rel(path: str | os.PathLike[str], base: Path) -> str:
    """``path`` relative to ``base`` with '/' separators (absolute when on another drive)."""
    try:
        return Path(os.path.relpath(path, base)).as_posix()
    except ValueError:
        return Path(path).as_posix()


def _aot_unit(unit: Mapping[str, Any], sources: Sequence[str], names: Sequence[str],
              objects: Mapping[str, str], build_dir: Path, metallib: str) -> dict[str, Any]:  # fmt: skip
    """An AOT unit: its compiled sources (generated ones counted), their ``.air`` files."""
    generated = [s for s in sources if not _rel(s, build_dir).startswith("../")]
    return {
        "name": unit["name"],
        "mode": "aot",
        "sources": list(unit["sources"]),
        "generated_sources": [_rel(s, build_dir) for s in generated],
        "host_names": list(names),
        "outputs": [*(_rel(objects[s], build_dir) for s in sources if s in objects), metallib],
        "generated_bytes": sum(Path(s).stat().st_size for s in generated),
        "embedded_bytes": 0,
    }


def _jit_unit(unit: Mapping[str, Any], facts: Mapping[str, Any], names: Sequence[str],
              embed_dir: Path, build_dir: Path, host_library: str | None,
              entry_file: bool) -> dict[str, Any]:  # fmt: skip
    """A JIT unit: the generated C++ source beside embed.json and what it stores."""
    cpp = embed_dir / f"{unit['name']}.cpp"
    generated = [cpp] if cpp.is_file() else []
    out: dict[str, Any] = {
        "name": unit["name"],
        "mode": "jit",
        # an entry file: itself (its kernels' source); a catalog family: every header inlined
        "sources": list(unit["sources"]) if entry_file
        else [str(h) for h in facts.get("headers", [])],
        "generated_sources": [_rel(p, build_dir) for p in generated],
        "host_names": list(names),
        "outputs": [*(_rel(p, build_dir) for p in generated),
                    *([host_library] if host_library else [])],
        "generated_bytes": sum(p.stat().st_size for p in generated),
        "source_bytes": int(facts.get("source_bytes", 0)),
        "embedded_bytes": int(facts.get("embedded_bytes", 0)),
    }  # fmt: skip
    if entry_file:
        out["preambles"] = list(unit.get("preambles", []))
    return out


def _file(path: str | None, build_dir: Path) -> dict[str, Any] | None:
    if not path:
        return None
    return {"path": _rel(path, build_dir), "bytes": Path(path).stat().st_size}


def build_manifest(
    build_dir: Path,
    config: Mapping[str, Any],
    plan: Mapping[str, Any],
    kernels: Mapping[str, Sequence[str]],
    *,
    metallib: str | None = None,
    embed: Mapping[str, Any] | None = None,
    embed_dir: Path | None = None,
    host_library: str | None = None,
) -> dict[str, Any]:
    """The manifest as a dict, one family per unit of ``plan`` in plan order.

    ``kernels`` maps each unit to its host names; ``config`` is the configure-time build config
    (``objects``: compiled source -> ``.air``; ``options``, ``toolchain``, ``host_compiler``);
    ``embed`` the JIT generator's facts (``families`` by unit name) found in ``embed_dir``.
    """
    metallib_rel = _rel(metallib, build_dir) if metallib else None
    host_rel = _rel(host_library, build_dir) if host_library else None
    sources: dict[str, list[str]] = {}
    for item in plan.get("compile", []):
        sources.setdefault(item["unit"], []).append(item["source"])
    objects = config.get("objects", {})
    facts = {f["name"]: f for f in (embed or {}).get("families", [])}
    families = []
    for unit in plan["units"]:
        names = kernels.get(unit["name"], ())
        if unit["mode"] == "aot" and metallib_rel is not None:
            families.append(_aot_unit(unit, sources.get(unit["name"], []), names, objects,
                                      build_dir, metallib_rel))  # fmt: skip
        elif unit["mode"] == "jit" and embed_dir is not None:
            families.append(_jit_unit(unit, facts.get(unit["name"], {}), names, embed_dir,
                                      build_dir, host_rel, plan.get("kind") == "discovered"))  # fmt: skip
    options = {**plan.get("options", {}), **config.get("options", {})}
    return {
        "schema": SCHEMA,
        "generator": config.get("generator", "metallib-builder"),
        "tree": {"kind": plan.get("kind"), "library": plan.get("library")},
        "options": options,
        "toolchain": config.get("toolchain"),
        "host_compiler": config.get("host_compiler"),
        "metallib": metallib_rel,
        "host_library": host_rel,
        "compressed": bool((embed or {}).get("compressed", False)),
        # All stored source bytes (with deduplication, pieces shared by families count once).
        "embedded_bytes": int((embed or {}).get("embedded_bytes", 0)),
        "files": {
            "metallib": _file(metallib, build_dir),
            "host_library": _file(host_library, build_dir),
        },
        "families": families,
    }


def write_manifest(path: Path, manifest: Mapping[str, Any]) -> None:
    """Write ``manifest.json`` atomically (always, not only on change: Ninja must see the output
    newer than its inputs)."""
    write_atomic(path, json.dumps(manifest, indent=1) + "\n")


# -- reading -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ManifestFamily:
    """One kernel family of a build, as the build manifest records it."""

    name: str
    mode: str
    """``aot`` (instantiations linked into the metallib) or ``jit`` (source embedded in the host)."""
    host_names: list[str]
    embedded_bytes: int
    sources: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class BuildManifest:
    """A build manifest (schema 1) as the size report reads it."""

    path: str
    families: list[ManifestFamily]
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

    def family_of(self) -> dict[str, str]:
        """host name -> family, for every AOT family."""
        return {n: f.name for f in self.families if f.mode == "aot" for n in f.host_names}

    def source_of(self) -> dict[str, str]:
        """host name -> its family's source file(s), joined with ``+`` when there are several."""
        return {
            n: "+".join(f.sources) if f.sources else f.name
            for f in self.families
            if f.mode == "aot"
            for n in f.host_names
        }


def read_manifest(path: str | os.PathLike[str]) -> BuildManifest:
    """Read ``manifest.json``; a missing, unreadable or malformed one is a UsageError (exit 2)."""
    where = os.fspath(path)
    data = read_json(Path(where), "build manifest")
    try:
        if data["schema"] != SCHEMA:
            raise ValueError(f"schema {data['schema']!r}, expected {SCHEMA}")
        families = [
            ManifestFamily(
                name=str(f["name"]),
                mode=_mode(f.get("mode", "aot")),
                host_names=[str(n) for n in f.get("host_names", [])],
                embedded_bytes=byte_count(f.get("embedded_bytes", 0),
                                          "families[].embedded_bytes"),
                sources=[str(s) for s in f.get("sources", [])],
            )
            for f in data["families"]
        ]
        metallib, host = data.get("metallib"), data.get("host_library")
        for key, value in (("metallib", metallib), ("host_library", host)):
            if value is not None and not isinstance(value, str):
                raise ValueError(f"{key!r} must be a relative path or null")
        embedded = byte_count(data.get("embedded_bytes", 0), "embedded_bytes")
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"{where}: not a usable build manifest: {exc}") from None
    return BuildManifest(where, families, metallib, host, embedded, _build_facts(data, where))


def _build_facts(data: dict[str, Any], path: str) -> dict[str, Any]:
    """The build part of a report's provenance: options, toolchain, generator."""
    facts: dict[str, Any] = {"manifest": path}
    for key in ("options", "toolchain", "generator", "host_library"):
        if data.get(key) is not None:
            facts[key] = data[key]
    return facts


def _mode(value: Any) -> str:
    if value not in ("aot", "jit"):
        raise ValueError(f"mode {value!r} is neither 'aot' nor 'jit'")
    return str(value)
