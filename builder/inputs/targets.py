"""Turn what the user typed into libraries on disk: the input side of ``report`` and ``compare``.

A target is a ``.metallib``, a ``.whl`` (each metallib inside), ``PACKAGE==VERSION`` (the macOS
wheel from the package index, cached), a saved report JSON, or a build directory of this project
(its ``manifest.json``). Resolution never guesses: a path that does not exist and is not a
``PACKAGE==VERSION`` spec is an error (exit 2), so a CI gate can never pass on a missing input.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from builder.errors import UsageError
from builder.files.reading import check_regular, read_json
from builder.records.manifest import MANIFEST_NAME, BuildManifest, read_manifest

__all__ = ["Library", "Progress", "one_metallib", "resolve_target"]

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
        if not manifest_path.exists():  # (one that is not a file: read_manifest says so)
            raise UsageError(f"{text}: a directory but not a build directory (no {MANIFEST_NAME})")
        return [_from_manifest(text, read_manifest(manifest_path))]
    if path.exists():
        check_regular(path, "the target")  # a FIFO or a device: one line, as list and verify say
        if path.suffix == ".whl":
            from builder.inputs.wheels import extract_metallibs

            return _from_wheel(text, path, extract_metallibs(path))
        if path.suffix == ".json":
            data = read_json(path, "JSON")
            # a build manifest (units[]; families[] was schema 1: read_manifest says to rebuild)
            is_manifest = isinstance(data, dict) and ("units" in data or "families" in data)
            if is_manifest and "functions" not in data:
                return [_from_manifest(text, read_manifest(path))]
            docs = (
                data.get("libraries") if isinstance(data, dict) and "libraries" in data else [data]
            )
            if not isinstance(docs, list) or not docs:
                raise UsageError(f"{text}: not a usable size report: empty 'libraries'")
            return [Library(text, "report", path, saved=d) for d in docs]
        return [Library(text, "metallib", path)]
    from builder.inputs import wheels

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


def one_metallib(
    target: str,
    libraries: list[Library],
    *,
    member: str | None,
    command: str,
    choose: str = "choose one with --member",
) -> Library:
    """The one library of ``target`` whose metallib ``command`` reads (``member``, a wheel
    member's path or a library's file name, chooses among several; ``choose`` says how, for a
    command without ``--member``): a saved report or a build with no metallib is refused, since
    there are no functions' bytes to read."""
    names = [lib.member or (lib.path.name if lib.path else lib.target) for lib in libraries]
    if member is not None:
        chosen = [lib for lib, name in zip(libraries, names, strict=True) if name == member]
        if not chosen:
            raise UsageError(f"{target}: no metallib {member!r} (it holds: {', '.join(names)})")
        libraries = chosen
    if len(libraries) > 1:
        raise UsageError(
            f"{target}: holds {len(libraries)} metallibs; {choose} ({', '.join(names)})"
        )
    lib = libraries[0]
    if lib.saved is not None:
        raise UsageError(
            f"{target}: a saved size report holds sizes, not functions; {command} "
            "needs the .metallib, .whl, build folder or PACKAGE==VERSION"
        )
    if lib.path is None:
        raise UsageError(f"{target}: the build has no metallib (every family JIT)")
    return lib


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


def _from_wheel(text: str, wheel: Path, paths: list[Path], kind: str = "wheel") -> list[Library]:
    if not paths:
        raise UsageError(f"{text}: the wheel {wheel.name} contains no .metallib")
    root = _common_root(paths)
    return [
        Library(
            text,
            kind,
            p,
            wheel=str(wheel),
            member=p.relative_to(root).as_posix() if len(paths) > 1 else None,
        )
        for p in paths
    ]


def _common_root(paths: list[Path]) -> Path:
    # Members are named relative to the wheel's extraction folder
    # (cache/metallibs/<wheel stem>-<sha256 prefix>, see builder.inputs.wheel_cache).
    first = paths[0]
    for parent in first.parents:
        if parent.parent.name == "metallibs":
            return parent
    return first.parent


def _from_manifest(text: str, manifest: BuildManifest) -> Library:
    if manifest.metallib is None:
        return Library(text, "build", None, manifest=manifest)
    lib = Path(manifest.path).parent / manifest.metallib
    if not lib.exists():  # (one that is not a file: open_metallib refuses it, naming it)
        raise UsageError(f"{manifest.path}: the metallib it names ({manifest.metallib}) is missing")
    return Library(text, "build", lib, manifest=manifest, member=manifest.metallib)
