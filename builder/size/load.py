"""Measure what a target resolved to: a report per library (or a saved report read back).

``builder.inputs.targets`` finds the libraries; this module attributes their bytes, groups them
and measures a build's JIT host library (or a shipped one given as the target, by its run-time
sources; or those of a wheel that holds no metallib), so ``report`` and ``compare`` start here.

What produced a report: the tool, the library's own version facts, and the build options.

A size figure is only comparable with another when both were produced the same way, so every
report carries this record (JSON ``provenance``, one line in tables and markdown, a panel in the
HTML view). It is plain data: a dict of JSON types, built once where the metallib is open
(``builder.size.load``); ``builder.render.text`` shows it as one line. Nothing in it is
guessed: a field that could not be read is absent or an empty list.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from builder.inputs.targets import Library, Progress, build_library, resolve_target

if TYPE_CHECKING:
    from builder.kernels.kernel_tree import KernelTree
    from builder.kernels.platforms import Platform
    from builder.metallib.reader import Provenance
    from builder.records.manifest import BuildManifest
    from builder.size.grouping import RuleSet, Sources
    from builder.size.jit_sizes import HostLibrary, JitUnit
    from builder.size.report import Report

__all__ = [
    "TOOL_NAME",
    "TreeSources",
    "build_provenance",
    "load_build",
    "load_library",
    "load_reports",
]


class TreeSources:
    """A kernel tree's entry file of every kernel, discovered once for each platform the
    measured libraries state (``builder.kernels.platforms``): a macOS 14 and a macOS 26 library
    of one release are each attributed to the entry files their own build compiled, with no
    per-platform ``-D`` or ``--exclude``. ``discover`` loads the tree for a platform (None: the
    library states none, so the flags' and settings' platform)."""

    def __init__(
        self,
        discover: Callable[[Platform | None], KernelTree],
        folders: tuple[Path, ...] = (),
    ) -> None:
        self._discover = discover
        self._folders = folders
        """The tree's root and -I folders from its settings alone (none: only discovery says)."""
        self._found: dict[tuple[int, str, str | None] | None, Sources] = {}
        self.origin = ""
        """``discovery:<tree>``, once a platform was discovered (``Sources.origin``)."""

    def __call__(self, platform: Platform | None) -> Sources:
        from builder.size.grouping import Sources

        key = None
        if platform is not None:
            key = (platform.metal_version, platform.name, platform.deployment_target)
        if key not in self._found:
            tree = self._discover(platform)
            self.origin = f"discovery:{tree.root}"
            folders = (tree.root, *tree.config.include_dirs)
            self._found[key] = Sources(tree.source_of(), self.origin, folders)
        return self._found[key]

    def folders_only(self) -> Sources:
        """No kernels, only where the tree's headers are: what naming a shipped host library's
        run-time sources needs (``builder.size.host_strings``), which preprocesses nothing when
        the settings name the folders."""
        from builder.size.grouping import Sources

        if not self._folders:
            return self(None)
        self.origin = self.origin or f"discovery:{self._folders[0]}"
        return Sources({}, self.origin, self._folders)


def _for_library(
    sources: Sources | TreeSources | None, stated: Mapping[str, Any] | None, label: str
) -> Sources | None:
    """``sources`` for a library whose provenance record is ``stated``."""
    if not isinstance(sources, TreeSources):
        return sources
    from builder.kernels.platforms import platform_of

    return sources(platform_of(stated, label))


def load_reports(
    text: str,
    *,
    by: str = "kernel",
    rules: RuleSet | None = None,
    platform: str | None = None,
    progress: Progress | None = None,
    sources: Sources | TreeSources | None = None,
    download: bool = False,
    member: str | None = None,
    absent_ok: bool = False,
) -> list[Report]:
    """Resolve ``text`` and measure (or read back) every library behind it.

    ``sources`` (a discovered kernel tree's entry file per kernel, or a ``TreeSources`` that
    discovers it for each library's platform) answers ``--by source`` for any library, and wins
    over what a build manifest records. ``download`` adds the download
    shares (``builder.size.download``). ``member`` keeps the one library it names (a wheel's
    binary member holding no metallib: its host library, as the binary given itself);
    ``absent_ok``: none when ``text`` holds no library of that name (``resolve_target``).
    """
    found = resolve_target(
        text,
        platform=platform,
        progress=progress,
        host_libraries=True,
        member=member,
        absent_ok=absent_ok,
    )
    if found and all(lib.optional for lib in found):  # a wheel holding no metallib
        return _wheel_hosts(found, by, sources, download)
    return [
        load_library(lib, by=by, rules=rules, sources=sources, download=download) for lib in found
    ]


def load_build(build_dir: Path) -> list[Report]:
    """The build at ``build_dir`` measured from its manifest, read directly: ``build`` and
    ``presets`` measure what they just built, as ``report BUILD_DIR`` does, without asking the
    target resolver what the folder's name might be."""
    from builder.records.manifest import MANIFEST_NAME, read_manifest

    manifest = read_manifest(build_dir / MANIFEST_NAME)
    return [load_library(build_library(str(build_dir), manifest))]


def load_library(
    lib: Library,
    *,
    by: str = "kernel",
    rules: RuleSet | None = None,
    sources: Sources | TreeSources | None = None,
    download: bool = False,
) -> Report:
    """Measure one resolved library (or read its saved report) and group it ``by``."""
    from builder.size.report import Source, build_report, group_report
    from builder.size.saved import read_report
    from builder.size.tree_match import tree_facts

    label = Path(lib.member or lib.path or lib.target).name  # whose header states a platform
    if lib.saved is not None:
        report = read_report(lib.saved, lib.target)
        if lib.identity is not None and report.source.identity is None:  # saved before them
            from dataclasses import replace

            named = replace(report.source, member=lib.member, identity=lib.identity)
            report = replace(report, source=named)
        if download and report.download is None:
            from builder.errors import UsageError

            raise UsageError(
                f"{lib.target}: a report saved without download figures; save it "
                "with 'report --download --format json'"
            )
        # a generic label is read from the name: read again, as this version reads names
        generic = report.grouping == "generic" or "stem" in by.split(",")
        if report.by == by and rules is None and sources is None and not generic:
            return report
        stated = report.provenance.get("library")
        tree = _for_library(sources, stated, label)
        return tree_facts(group_report(report, by, rules=rules, sources=tree), tree)
    if lib.host is not None:
        if download:
            from builder.errors import UsageError

            raise UsageError(
                f"{lib.target}: --download models a metallib's share of its wheel; a host "
                "library holds no metallib (report the wheel with --download instead)"
            )
        measured = _host_report(lib, lib.host, by, sources)
        if measured is None:
            from builder.inputs.targets import no_metallib

            what = f"{lib.target}:{lib.member}" if lib.member else lib.target
            raise no_metallib(what, lib.host, sources=True)
        return measured
    manifest = lib.manifest
    source = Source(
        path=str(lib.path) if lib.path else None,
        target=lib.target,
        kind=lib.kind,
        wheel=lib.wheel,
        manifest=manifest.path if manifest else None,
        member=lib.member,
        embedded=_embedded(lib),
        identity=lib.identity,
    )
    jit, host = _jit_units(manifest)
    units = manifest.unit_of() if manifest else None  # exact: wins over --rules
    if sources is None and manifest is not None:
        from builder.size.grouping import Sources

        sources = Sources(manifest.source_of(), "manifest")

    build = manifest.build if manifest else None
    # a build's JIT kernels are held, though in its host library rather than its metallib
    run_time = [n for f in manifest.units if f.mode == "jit" for n in f.kernels] if manifest else []
    if lib.path is None:
        from builder.size.attribution import Attribution

        tree = _for_library(sources, None, label)
        empty = build_report(
            Attribution.empty(),
            source,
            by=by,
            units=units,
            sources=tree,
            jit_units=jit,
            host_library=host,
            provenance=build_provenance(None, build),
        )
        return tree_facts(empty, tree, run_time=run_time)
    from builder.inputs.targets import open_library
    from builder.metallib.reader import library_provenance
    from builder.size.attribution import attribute

    with open_library(lib) as metallib:
        attribution = attribute(metallib)
        stated = library_provenance(metallib)
        provenance = build_provenance(stated, build)
        sources = _for_library(sources, stated.as_dict(), label)
        shares = None
        if download:
            from builder.size.download import measure_download

            shares = measure_download(metallib, attribution, lib.wheel)
        hashes = metallib.columns().hashes
    report = build_report(
        attribution,
        source,
        by=by,
        rules=rules,
        units=units,
        sources=sources,
        jit_units=jit,
        host_library=host,
        provenance=provenance,
        download=shares,
        module_hashes=hashes,
    )
    from builder.size.platform_warnings import with_platform_warnings

    return with_platform_warnings(tree_facts(report, sources, run_time=run_time), lib, stated)


def _wheel_hosts(
    found: list[Library], by: str, sources: Sources | TreeSources | None, download: bool
) -> list[Report]:
    """A wheel that holds no metallib, resolved to its Mach-O and ELF members
    (``builder.inputs.wheel_members``): each member holding run-time sources, reported as
    ``--member`` reports it; the others left out; the wheel's error when none holds any. Each
    member is read once: the search for its sources is its measurement."""
    from builder.errors import UsageError
    from builder.inputs.wheel_members import no_metallib_in_wheel

    first = found[0]
    wheel = Path(first.wheel or first.target).name
    if download:
        raise UsageError(
            f"{first.target}: --download models a metallib's share of its wheel; the wheel "
            f"{wheel} contains no metallib"
        )
    measured = [_host_report(lib, lib.host, by, sources) for lib in found if lib.host]
    reports = [report for report in measured if report is not None]
    if not reports:
        names = [lib.member or "" for lib in found]
        raise no_metallib_in_wheel(first.target, wheel, names, read=True)
    return reports


def _host_report(
    lib: Library, path: Path, by: str, sources: Sources | TreeSources | None
) -> Report | None:
    """The host library ``lib`` measured with the tree's facts; None when it holds no
    run-time source."""
    from builder.size.tree_match import tree_facts

    named_by = sources.folders_only() if isinstance(sources, TreeSources) else sources
    measured = _host_library(lib, path, by, named_by)
    return None if measured is None else tree_facts(measured, named_by, kernels=False)


def _host_library(lib: Library, path: Path, by: str, sources: Sources | None) -> Report | None:
    """A Mach-O or ELF binary holding no metallib, measured by the run-time sources it embeds
    (``builder.size.host_strings``), named by the headers of the ``--source-dir`` tree; None
    when it holds none."""
    from builder.size.attribution import Attribution
    from builder.size.host_strings import measure_host_sources
    from builder.size.report import Source, build_report

    measured = measure_host_sources(path, sources.folders if sources is not None else ())
    if measured is None:
        return None
    jit, host = measured
    source = Source(path=None, target=lib.target, kind=lib.kind, wheel=lib.wheel, member=lib.member)
    return build_report(
        Attribution.empty(),
        source,
        by=by,
        sources=sources,
        jit_units=jit,
        host_library=host,
        provenance=build_provenance(None, None),
    )


def _embedded(lib: Library) -> dict[str, object] | None:
    """``Source.embedded``: where the metallib sits in the binary ``lib.path``."""
    from builder.files.dataclass_json import dump
    from builder.size.saved import Embedded

    if lib.window is None:
        return None
    offset, size, at = lib.window.offset, lib.window.size, lib.location
    place = Embedded(offset, size, lib.ordinal)
    if at is not None:  # the binary has sections: which one holds it
        where = (at.kind, at.arch, at.segment, at.section, at.section_offset, at.symbol)
        place = Embedded(offset, size, lib.ordinal, *where)
    found: dict[str, object] = dump(place)
    return found


def _jit_units(manifest: BuildManifest | None) -> tuple[list[JitUnit], HostLibrary | None]:
    """A build's JIT units, measured in the host library its manifest names (if it exists)."""
    from builder.size.jit_sizes import JitUnit, measure_host

    if manifest is None:
        return [], None
    jit = [
        JitUnit(f.name, f.embedded_bytes or 0, None, len(f.kernels), f.embedding or "preamble")
        for f in manifest.units
        if f.mode == "jit"
    ]
    if not jit or manifest.host_library is None:
        return jit, None
    return measure_host(manifest.folder / manifest.host_library, jit)


TOOL_NAME = "metallib-builder"


def build_provenance(
    library: Provenance | None, build: Mapping[str, object] | None = None
) -> dict[str, object]:
    """The provenance record of a freshly measured report (see docs/report-schema.md)."""
    from builder import __version__

    record: dict[str, object] = {"tool": {"name": TOOL_NAME, "version": __version__}}
    if library is not None:
        record["library"] = library.as_dict()
    if build is not None:
        record["build"] = dict(build)
    return record
