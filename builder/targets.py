"""Turn what the user typed into measured reports: the I/O side of ``report`` and ``compare``.

A target is a ``.metallib``, a ``.whl`` (each metallib inside), ``PACKAGE==VERSION`` (the macOS
wheel from the package index, cached), a saved report JSON, or a build directory of this project
(its ``manifest.json``). Resolution never guesses: a path that does not exist and is not a
``PACKAGE==VERSION`` spec is an error (exit 2), so a CI gate can never pass on a missing input.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from builder.errors import UsageError

if TYPE_CHECKING:
    from builder.grouping import RuleSet
    from builder.jit_sizes import HostLibrary, JitFamily
    from builder.report import Report

__all__ = [
    "MANIFEST_NAME",
    "BuildManifest",
    "Library",
    "ManifestFamily",
    "load_reports",
    "read_manifest",
    "resolve_target",
]

MANIFEST_NAME = "manifest.json"
Progress = Callable[[str], None]


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
    """The parts of a build manifest (schema 1) that size reports read."""

    path: str
    families: list[ManifestFamily]
    metallib: str | None
    """Path of the built metallib relative to the manifest's directory; None if all JIT."""
    build: dict[str, Any] = field(default_factory=dict)
    """Options, toolchain and generator as the manifest records them (for report provenance)."""

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
    """Read ``manifest.json``; the only place that knows its layout (docs/report-schema.md)."""
    where = os.fspath(path)
    try:
        data = json.loads(Path(where).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"{where}: cannot read build manifest: {exc}") from None
    try:
        if data["schema"] != 1:
            raise ValueError(f"schema {data['schema']!r}, expected 1")
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
        metallib = data.get("metallib")
        if metallib is not None and not isinstance(metallib, str):
            raise ValueError("'metallib' must be a relative path or null")
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"{where}: not a usable build manifest: {exc}") from None
    from builder.report_provenance import manifest_build_facts

    return BuildManifest(where, families, metallib, manifest_build_facts(data, where))


def _mode(value: Any) -> str:
    if value not in ("aot", "jit"):
        raise ValueError(f"mode {value!r} is neither 'aot' nor 'jit'")
    return str(value)


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{value!r} is not a byte count")
    return value


@dataclass(frozen=True)
class Library:
    """One library a target resolved to: a metallib to measure, or a saved report to read."""

    target: str
    kind: str
    path: Path | None
    wheel: str | None = None
    manifest: BuildManifest | None = None
    member: str | None = None
    saved: dict[str, Any] | None = None


def resolve_target(
    text: str, *, platform: str | None = None, progress: Progress | None = None
) -> list[Library]:
    """Find the libraries behind ``text`` (downloading a wheel for ``PACKAGE==VERSION``)."""
    path = Path(text)
    if path.is_dir():
        manifest_path = path / MANIFEST_NAME
        if not manifest_path.is_file():
            raise UsageError(f"{text}: a directory but not a build directory (no {MANIFEST_NAME})")
        return [_from_manifest(text, read_manifest(manifest_path))]
    if path.is_file():
        if path.suffix == ".whl":
            from builder.wheels import extract_metallibs

            return _from_wheel(text, path, extract_metallibs(path))
        if path.suffix == ".json":
            data = _read_json(path)
            if isinstance(data, dict) and "families" in data and "functions" not in data:
                return [_from_manifest(text, read_manifest(path))]
            docs = (
                data.get("libraries") if isinstance(data, dict) and "libraries" in data else [data]
            )
            if not isinstance(docs, list) or not docs:
                raise UsageError(f"{text}: not a usable size report: empty 'libraries'")
            return [Library(text, "report", path, saved=d) for d in docs]
        return [Library(text, "metallib", path)]
    from builder import wheels

    spec = wheels.parse_spec(text)
    if spec is None:
        raise UsageError(
            f"{text}: no such file, and not a PACKAGE==VERSION spec "
            "(targets: .metallib, .whl, report .json, build directory, PACKAGE==VERSION)"
        )
    chosen = platform or wheels.DEFAULT_PLATFORM
    if progress is None:
        wheel, paths = wheels.fetch_metallibs(spec[0], spec[1], chosen)
    else:
        progress(f"{text}: macOS wheel for {chosen} (cache: {wheels.cache_dir() / 'wheels'})")
        # pip shows its own download progress bar; it writes to stdout, which belongs to the
        # report, so its output is sent to stderr for the duration of the download (and of the
        # one repeat download a corrupt cached wheel gets).
        with _stdout_to_stderr():
            wheel, paths = wheels.fetch_metallibs(
                spec[0], spec[1], chosen, quiet=False, notice=progress
            )
    return _from_wheel(text, wheel, paths, kind="spec")


@contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """Point file descriptor 1 at stderr (for child processes too), then restore it."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"{path}: cannot read JSON: {exc}") from None


def _from_wheel(text: str, wheel: Path, paths: list[Path], kind: str = "wheel") -> list[Library]:
    if not paths:
        raise UsageError(f"{text}: the wheel {wheel.name} contains no .metallib")
    root = _common_root(paths)
    return [
        Library(text, kind, p, wheel=str(wheel),
                member=p.relative_to(root).as_posix() if len(paths) > 1 else None)
        for p in paths
    ]  # fmt: skip


def _common_root(paths: list[Path]) -> Path:
    # Members are named relative to the wheel's extraction folder
    # (cache/metallibs/<wheel stem>-<sha256 prefix>, see builder.wheel_cache).
    first = paths[0]
    for parent in first.parents:
        if parent.parent.name == "metallibs":
            return parent
    return first.parent


def _from_manifest(text: str, manifest: BuildManifest) -> Library:
    if manifest.metallib is None:
        return Library(text, "build", None, manifest=manifest)
    lib = Path(manifest.path).parent / manifest.metallib
    if not lib.is_file():
        raise UsageError(f"{manifest.path}: the metallib it names ({manifest.metallib}) is missing")
    return Library(text, "build", lib, manifest=manifest, member=manifest.metallib)


def load_reports(
    text: str,
    *,
    by: str = "kernel",
    rules: RuleSet | None = None,
    platform: str | None = None,
    progress: Progress | None = None,
) -> list[Report]:
    """Resolve ``text`` and measure (or read back) every library behind it."""
    return [
        load_library(lib, by=by, rules=rules)
        for lib in resolve_target(text, platform=platform, progress=progress)
    ]


def load_library(lib: Library, *, by: str = "kernel", rules: RuleSet | None = None) -> Report:
    """Measure one resolved library (or read its saved report) and group it ``by``."""
    from builder.report import Source, build_report, regroup, report_from_dict

    if lib.saved is not None:
        report = report_from_dict(lib.saved, lib.target)
        if report.by == by and rules is None:
            return report
        return regroup(report, by, rules=rules)
    manifest = lib.manifest
    source = Source(
        path=str(lib.path) if lib.path else None,
        target=lib.target,
        kind=lib.kind,
        wheel=lib.wheel,
        manifest=manifest.path if manifest else None,
        member=lib.member,
    )
    jit, host = _jit_families(manifest)
    families = manifest.family_of() if manifest else None  # exact: wins over --rules
    sources = manifest.source_of() if manifest else None
    from builder.report_provenance import build_provenance

    build = manifest.build if manifest else None
    if lib.path is None:
        from builder.attribution import Attribution

        return build_report(Attribution.empty(), source, by=by, families=families, sources=sources,
                            jit_families=jit, host_library=host,
                            provenance=build_provenance(None, build))  # fmt: skip
    from builder.attribution import attribute
    from builder.metallib import open_metallib
    from builder.metallib.provenance import library_provenance

    with open_metallib(lib.path) as metallib:
        attribution = attribute(metallib)
        provenance = build_provenance(library_provenance(metallib), build)
    return build_report(
        attribution, source, by=by, rules=rules, families=families, sources=sources,
        jit_families=jit, host_library=host, provenance=provenance,
    )  # fmt: skip


def _jit_families(manifest: BuildManifest | None) -> tuple[list[JitFamily], HostLibrary | None]:
    """A build's JIT families, measured in the host library its manifest names (if it exists)."""
    from builder.jit_sizes import JitFamily, measure_host

    if manifest is None:
        return [], None
    families = [(f.name, f.embedded_bytes, len(f.host_names))
                for f in manifest.families if f.mode == "jit"]  # fmt: skip
    host = manifest.build.get("host_library")
    if not families or not isinstance(host, str):
        return [JitFamily(name, size, None, kernels) for name, size, kernels in families], None
    return measure_host(Path(manifest.path).parent / host, families)
