"""``manifest.json``, the record of what a build produced: the one module that writes and reads it.

``python -m builder.manifest`` writes it at the root of a build directory. CMake runs this at build time, after the metallib and the host JIT library exist, so every byte
count in the manifest was measured on the real outputs. Inputs: the configure-time build config
(options, toolchain identity), the AOT plan (host names per generated source) and the JIT
generator's ``embed.json``. Output is deterministic: catalog order, paths relative to the build
directory (kernel headers relative to the kernel tree), no timestamps. ``read_manifest`` gives
the size report and the build summary the same typed view (docs/report-schema.md); docs/build.md
lists every field. Standard library and ``builder.errors``/``builder.fileio`` only: it runs inside
pip's isolated build environment.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from builder.errors import BuilderError, UsageError
from builder.fileio import write_atomic

__all__ = [
    "MANIFEST_NAME",
    "OPTION_KEYS",
    "SCHEMA",
    "BuildManifest",
    "ManifestFamily",
    "build_manifest",
    "main",
    "read_manifest",
]

SCHEMA = 1
MANIFEST_NAME = "manifest.json"
OPTION_KEYS = ("cmake_options", "options", "cmake")
"""Manifest keys that may hold the build's options, first present wins (a manifest records
whatever options object its build had, as is)."""


def _rel(path: str | os.PathLike[str], base: Path) -> str:
    """``path`` relative to ``base`` with '/' separators (absolute when on another drive)."""
    try:
        return Path(os.path.relpath(path, base)).as_posix()
    except ValueError:
        return Path(path).as_posix()


def _load(path: Path | None) -> dict[str, Any] | None:
    return json.loads(path.read_text(encoding="utf-8")) if path else None


def _aot_families(plan: dict[str, Any], build_dir: Path, metallib: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for fam in plan["families"]:
        chunks = fam["chunks"]
        airs = [
            _rel(Path(c["source"]).parent.parent / "air" / (Path(c["source"]).stem + ".air"),
                 build_dir)
            for c in chunks
        ]  # fmt: skip
        out[fam["name"]] = {
            "name": fam["name"],
            "mode": "aot",
            "sources": [fam["header"]],
            "generated_sources": [_rel(c["source"], build_dir) for c in chunks],
            "host_names": [n for c in chunks for n in c["host_names"]],
            "outputs": [*airs, metallib],
            "generated_bytes": sum(int(c["bytes"]) for c in chunks),
            "embedded_bytes": 0,
        }
    return out


def _jit_families(embed: dict[str, Any], build_dir: Path, embed_path: Path,
                  host_library: str | None) -> dict[str, Any]:  # fmt: skip
    out: dict[str, Any] = {}
    for fam in embed["families"]:
        # The JIT generator writes <target>/<family>.cpp beside embed.json (cmake/MetalJit.cmake).
        cpp = embed_path.parent / f"{fam['name']}.cpp"
        generated = [cpp] if cpp.is_file() else []
        out[fam["name"]] = {
            "name": fam["name"],
            "mode": "jit",
            "sources": [str(h) for h in fam.get("headers", [])],
            "generated_sources": [_rel(p, build_dir) for p in generated],
            "host_names": list(fam.get("host_names", [])),
            "outputs": [
                *(_rel(p, build_dir) for p in generated),
                *([host_library] if host_library else []),
            ],
            "generated_bytes": sum(p.stat().st_size for p in generated),
            "source_bytes": int(fam.get("source_bytes", 0)),
            "embedded_bytes": int(fam.get("embedded_bytes", 0)),
        }
    return out


def _file(path: str | None, build_dir: Path) -> dict[str, Any] | None:
    if not path:
        return None
    return {"path": _rel(path, build_dir), "bytes": Path(path).stat().st_size}


def build_manifest(
    build_dir: Path,
    config: dict[str, Any],
    plan: dict[str, Any] | None = None,
    metallib: str | None = None,
    embed: dict[str, Any] | None = None,
    embed_path: Path | None = None,
    host_library: str | None = None,
) -> dict[str, Any]:
    """The manifest as a dict (see module docstring); families in the config's family order."""
    metallib_rel = _rel(metallib, build_dir) if metallib else None
    host_rel = _rel(host_library, build_dir) if host_library else None
    families: dict[str, Any] = {}
    if plan is not None and metallib_rel is not None:
        families.update(_aot_families(plan, build_dir, metallib_rel))
    if embed is not None and embed_path is not None:
        families.update(_jit_families(embed, build_dir, embed_path, host_rel))
    order = list(config.get("families", [])) or list(families)
    ordered = [families[n] for n in order if n in families]
    ordered += [f for n, f in families.items() if n not in order]
    return {
        "schema": SCHEMA,
        "generator": config.get("generator", "metallib-builder"),
        "options": config.get("options", {}),
        "toolchain": config.get("toolchain"),
        "host_compiler": config.get("host_compiler"),
        "metallib": metallib_rel,
        "host_library": host_rel,
        "compressed": bool(embed.get("compressed", False)) if embed else False,
        # All stored source bytes (with deduplication, pieces shared by families count once).
        "embedded_bytes": int(embed.get("embedded_bytes", 0)) if embed else 0,
        "files": {
            "metallib": _file(metallib, build_dir),
            "host_library": _file(host_library, build_dir),
        },
        "families": ordered,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m builder.manifest", allow_abbrev=False)
    parser.add_argument("--build-dir", type=Path, required=True)
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--aot-plan", type=Path)
    parser.add_argument("--metallib")
    parser.add_argument("--embed", type=Path)
    parser.add_argument("--host-library")
    args = parser.parse_args(argv)
    manifest = build_manifest(
        args.build_dir.resolve(),
        _load(args.config) or {},
        _load(args.aot_plan),
        args.metallib,
        _load(args.embed),
        args.embed,
        args.host_library,
    )
    # Always written (not only on change): Ninja must see the output newer than its inputs.
    try:
        write_atomic(args.out, json.dumps(manifest, indent=1) + "\n")
    except BuilderError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


# -- reading -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ManifestFamily:
    """One kernel family of a build, as the build manifest records it."""

    name: str
    mode: str
    """``aot`` (instantiations linked into the metallib) or ``jit`` (source embedded in the host)."""
    host_names: list[str]
    outputs: list[str]
    embedded_bytes: int
    sources: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class BuildManifest:
    """A build manifest (schema 1) as the size report and the build summary read it."""

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

    @property
    def compiler_version(self) -> str | None:
        toolchain = self.build.get("toolchain")
        return toolchain.get("compiler_version") if isinstance(toolchain, dict) else None

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
    try:
        data = json.loads(Path(where).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"{where}: cannot read build manifest: {exc}") from None
    try:
        if data["schema"] != SCHEMA:
            raise ValueError(f"schema {data['schema']!r}, expected {SCHEMA}")
        families = [
            ManifestFamily(
                name=str(f["name"]),
                mode=_mode(f.get("mode", "aot")),
                host_names=[str(n) for n in f.get("host_names", [])],
                outputs=[str(o) for o in f.get("outputs", [])],
                embedded_bytes=_count(f.get("embedded_bytes", 0)),
                sources=[str(s) for s in f.get("sources", [])],
            )
            for f in data["families"]
        ]
        metallib, host = data.get("metallib"), data.get("host_library")
        for key, value in (("metallib", metallib), ("host_library", host)):
            if value is not None and not isinstance(value, str):
                raise ValueError(f"{key!r} must be a relative path or null")
        embedded = _count(data.get("embedded_bytes", 0))
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"{where}: not a usable build manifest: {exc}") from None
    return BuildManifest(where, families, metallib, host, embedded, _build_facts(data, where))


def _build_facts(data: dict[str, Any], path: str) -> dict[str, Any]:
    """The build part of a report's provenance: options, toolchain, generator."""
    facts: dict[str, Any] = {"manifest": path}
    for key in OPTION_KEYS:
        if key in data and data[key] is not None:
            facts["options"] = data[key]
            facts["options_key"] = key
            break
    for key in ("toolchain", "generator", "host_library"):
        if data.get(key) is not None:
            facts[key] = data[key]
    return facts


def _mode(value: Any) -> str:
    if value not in ("aot", "jit"):
        raise ValueError(f"mode {value!r} is neither 'aot' nor 'jit'")
    return str(value)


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{value!r} is not a byte count")
    return value


if __name__ == "__main__":
    raise SystemExit(main())
