"""Turn what the user typed into libraries on disk: the input side of ``report`` and ``compare``.

A target is a ``.metallib``, any other file holding metallibs (a Mach-O or ELF binary: each one
found by its own header and proven, ``builder.metallib.embedded``), a ``.whl`` (each metallib
inside, also those inside its binaries), ``PACKAGE==VERSION`` (the macOS wheel from the package
index, cached), a saved report JSON, or a build directory of this project (its
``manifest.json``). Resolution never guesses: a path that does not exist and is not a
``PACKAGE==VERSION`` spec is an error (exit 2), so a CI gate can never pass on a missing input.
A wheel's members are read by ``builder.inputs.wheel_members``; ``Library`` and what one binary
holds are ``builder.inputs.libraries``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from builder.errors import UsageError
from builder.files.reading import check_regular, open_regular, read_json
from builder.inputs.libraries import Hosts, Library, from_binary, no_metallib
from builder.inputs.member_names import Named, forms, legacy_names
from builder.inputs.wheel_members import from_wheel
from builder.records.manifest import MANIFEST_NAME, BuildManifest, read_manifest

if TYPE_CHECKING:
    from builder.metallib import Metallib

__all__ = [
    "Library",
    "Progress",
    "build_library",
    "fetch_spec",
    "no_metallib",
    "one_metallib",
    "open_library",
    "resolve_target",
]

Progress = Callable[[str], None]


def open_library(lib: Library) -> Metallib:
    """Open the metallib of ``lib`` (its file, or its bytes inside a binary)."""
    from builder.metallib import open_metallib

    assert lib.path is not None  # a saved report or an all-JIT build has no metallib to open
    return open_metallib(lib.path, lib.window)


def resolve_target(
    text: str,
    *,
    platform: str | None = None,
    progress: Progress | None = None,
    host_libraries: Hosts = False,
    member: str | None = None,
    absent_ok: bool = False,
) -> list[Library]:
    """Find the libraries behind ``text`` (downloading a wheel for ``PACKAGE==VERSION``).

    ``host_libraries`` (the size commands): a Mach-O or ELF binary given as the target that holds
    no metallib is one ``Library`` with ``host`` set, measured by its run-time sources, instead of
    an error; the measuring side raises :func:`no_metallib` when it holds none either. So is a
    wheel's binary member that holds none when ``member`` names it (its path in the wheel), and,
    no ``member`` given, every Mach-O or ELF member of a wheel that holds no metallib, marked
    ``optional`` (``builder.inputs.wheel_members``: the measuring side leaves out those holding
    no run-time source).
    ``member`` keeps the one library it names, as :func:`one_metallib` matches names; with
    ``absent_ok`` a target that holds no library of that name gives none instead of an error
    (``compare``: a library on one side only is an added or a removed one). ``"every"``
    (``sources``): every binary member of a wheel is a host library, whatever it holds."""
    found = _resolve(text, platform, progress, host_libraries, member)
    if member is None:
        return found
    if absent_ok and not named_by(found, member):
        return []
    return _matching(text, found, member)


def _resolve(
    text: str,
    platform: str | None,
    progress: Progress | None,
    hosts: Hosts,
    member: str | None,
) -> list[Library]:
    path = Path(text)
    if path.is_dir():
        manifest_path = path / MANIFEST_NAME
        if not manifest_path.exists():  # (one that is not a file: read_manifest says so)
            raise UsageError(f"{text}: a directory but not a build directory (no {MANIFEST_NAME})")
        return [build_library(text, read_manifest(manifest_path))]
    if path.exists():
        check_regular(path, "the target")  # a FIFO or a device: one line, as list and verify say
        if path.suffix == ".whl":
            from builder.inputs.wheel_extract import extract_metallibs

            return from_wheel(text, path, extract_metallibs(path), host=(member, hosts))
        if path.suffix not in (".json", ".metallib") and not _starts_with_magic(path):
            return from_binary(text, path, path.name, "binary", hosts=hosts)
        if path.suffix == ".json":
            data = read_json(path, "JSON")
            # a build manifest (units[]; families[] was schema 1: read_manifest says to rebuild)
            is_manifest = isinstance(data, dict) and ("units" in data or "families" in data)
            if is_manifest and "functions" not in data:
                return [build_library(text, read_manifest(path))]
            docs = (
                data.get("libraries") if isinstance(data, dict) and "libraries" in data else [data]
            )
            if not isinstance(docs, list) or not docs:
                raise UsageError(f"{text}: not a usable size report: empty 'libraries'")
            return [
                Library(text, "report", path, saved=d, **_saved_name(named))
                for d, named in zip(docs, legacy_names(docs), strict=True)
            ]
        return [Library(text, "metallib", path)]
    fetched = fetch_spec(text, platform=platform, progress=progress)
    if fetched is None:
        raise UsageError(
            f"{text}: no such file, and not a PACKAGE==VERSION spec "
            "(targets: .metallib, .whl, report .json, build directory, PACKAGE==VERSION)"
        )
    return from_wheel(text, *fetched, kind="spec", host=(member, hosts))


def fetch_spec(
    text: str, *, platform: str | None = None, progress: Progress | None = None
) -> tuple[Path, list[Path]] | None:
    """The wheel ``text`` (``PACKAGE==VERSION``) names for ``platform``, downloaded or from the
    cache, and its extracted members that may hold metallibs (each ``.metallib`` and binary,
    ``builder.inputs.wheel_extract``); None when ``text`` is no such spec."""
    from builder.inputs import DEFAULT_PLATFORM, wheel_cache, wheels

    spec = wheels.parse_spec(text)
    if spec is None:
        return None
    chosen = platform or DEFAULT_PLATFORM
    if progress is None:
        return wheels.fetch_metallibs(spec[0], spec[1], chosen)
    progress(f"{text}: macOS wheel for {chosen} (cache: {wheel_cache.cache_dir() / 'wheels'})")
    # pip shows its own download progress bar; it writes to stdout, which belongs to the
    # report, so its output is sent to stderr for the duration of the download (and of the
    # one repeat download a corrupt cached wheel gets).
    with _stdout_to_stderr():
        return wheels.fetch_metallibs(spec[0], spec[1], chosen, quiet=False, notice=progress)


def one_metallib(
    target: str,
    libraries: list[Library],
    *,
    member: str | None,
    command: str,
) -> Library:
    """The one library of ``target`` whose metallib ``command`` reads (``member`` chooses among
    several, named as ``builder.inputs.member_names`` says): a saved report or a build with no
    metallib is refused, since there are no functions' bytes to read."""
    names = [lib.named.name for lib in libraries]
    if member is not None:
        libraries = _matching(target, libraries, member)
    if len(libraries) > 1:
        raise UsageError(
            f"{target}: holds {len(libraries)} metallibs; choose one with --member "
            f"({', '.join(names)})"
        )
    lib = libraries[0]
    if lib.saved is not None:
        raise UsageError(
            f"{target}: a saved size report holds sizes, not functions; {command} "
            "needs the .metallib, .whl, build folder or PACKAGE==VERSION"
        )
    if lib.path is None:
        raise UsageError(f"{target}: the build has no metallib (every unit JIT)")
    return lib


def named_by(libraries: list[Library], member: str) -> list[Library]:
    """Every library ``member`` names: those whose whole name it is, else those that answer
    to it in a shorter form (``builder.inputs.member_names.forms``)."""
    found = [forms(lib.named) for lib in libraries]
    whole = [lib for lib, (names, _) in zip(libraries, found, strict=True) if member in names]
    if whole:
        return whole
    return [lib for lib, (_, short) in zip(libraries, found, strict=True) if member in short]


def _matching(target: str, libraries: list[Library], member: str) -> list[Library]:
    """The one library ``member`` names (``named_by``)."""
    chosen = named_by(libraries, member)
    if len(chosen) > 1:
        raise UsageError(
            f"{target}: {member!r} names {len(chosen)} metallibs; give the whole name "
            f"({', '.join(lib.named.name for lib in chosen)})"
        )
    if not chosen:
        names = ", ".join(lib.named.name for lib in libraries)
        raise UsageError(f"{target}: no metallib {member!r} (it holds: {names})")
    return chosen


def _saved_name(named: Named | None) -> dict[str, Any]:
    """A saved report's ``Library`` fields for its name (none when the document has none)."""
    if named is None:
        return {}
    return {"member": named.name, "identity": named.identity, "ordinal": named.ordinal}


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


def _starts_with_magic(path: Path) -> bool:
    from builder.metallib.structs import MAGIC

    try:
        with open_regular(path, "the target") as handle:
            return handle.read(len(MAGIC)) == MAGIC
    except OSError:
        return True  # the reader says what is wrong with the file


def build_library(text: str, manifest: BuildManifest) -> Library:
    """The library of a build whose manifest is read already (``text``: how it was named): its
    metallib, or none when every unit is JIT."""
    if manifest.metallib is None:
        return Library(text, "build", None, manifest=manifest)
    lib = Path(manifest.path).parent / manifest.metallib
    if not lib.exists():  # (one that is not a file: open_metallib refuses it, naming it)
        raise UsageError(f"{manifest.path}: the metallib it names ({manifest.metallib}) is missing")
    return Library(text, "build", lib, manifest=manifest, member=manifest.metallib)
