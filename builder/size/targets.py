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
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from builder.errors import UsageError
from builder.manifest import MANIFEST_NAME, BuildManifest, read_manifest

if TYPE_CHECKING:
    from builder.size.grouping import RuleSet, Sources
    from builder.size.jit_sizes import HostLibrary, JitFamily
    from builder.size.report import Report

__all__ = [
    "Library",
    "load_reports",
    "resolve_target",
]

Progress = Callable[[str], None]


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
            from builder.size.wheels import extract_metallibs

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
    from builder.size import wheels

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
    # (cache/metallibs/<wheel stem>-<sha256 prefix>, see builder.size.wheel_cache).
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
    sources: Sources | None = None,
) -> list[Report]:
    """Resolve ``text`` and measure (or read back) every library behind it.

    ``sources`` (a discovered kernel tree's entry file per kernel) answers ``--by source`` for
    any library, and wins over what a build manifest records.
    """
    return [
        load_library(lib, by=by, rules=rules, sources=sources)
        for lib in resolve_target(text, platform=platform, progress=progress)
    ]


def load_library(
    lib: Library, *, by: str = "kernel", rules: RuleSet | None = None,
    sources: Sources | None = None,
) -> Report:  # fmt: skip
    """Measure one resolved library (or read its saved report) and group it ``by``."""
    from builder.size.report import Source, build_report, regroup, report_from_dict

    if lib.saved is not None:
        report = report_from_dict(lib.saved, lib.target)
        if report.by == by and rules is None and sources is None:
            return report
        return regroup(report, by, rules=rules, sources=sources)
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
    if sources is None and manifest is not None:
        from builder.size.grouping import Sources

        sources = Sources(manifest.source_of(), "manifest")
    from builder.size.provenance import build_provenance

    build = manifest.build if manifest else None
    if lib.path is None:
        from builder.size.attribution import Attribution

        return build_report(Attribution.empty(), source, by=by, families=families, sources=sources,
                            jit_families=jit, host_library=host,
                            provenance=build_provenance(None, build))  # fmt: skip
    from builder.metallib import open_metallib
    from builder.metallib.provenance import library_provenance
    from builder.size.attribution import attribute

    with open_metallib(lib.path) as metallib:
        attribution = attribute(metallib)
        provenance = build_provenance(library_provenance(metallib), build)
    return build_report(
        attribution, source, by=by, rules=rules, families=families, sources=sources,
        jit_families=jit, host_library=host, provenance=provenance,
    )  # fmt: skip


def _jit_families(manifest: BuildManifest | None) -> tuple[list[JitFamily], HostLibrary | None]:
    """A build's JIT families, measured in the host library its manifest names (if it exists)."""
    from builder.size.jit_sizes import JitFamily, measure_host

    if manifest is None:
        return [], None
    families = [(f.name, f.embedded_bytes, len(f.host_names))
                for f in manifest.families if f.mode == "jit"]  # fmt: skip
    if not families or manifest.host_library is None:
        return [JitFamily(name, size, None, kernels) for name, size, kernels in families], None
    return measure_host(manifest.folder / manifest.host_library, families)
