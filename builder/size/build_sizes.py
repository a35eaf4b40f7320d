"""What a build produced, measured: metallib bytes, embedded bytes and host-library bytes per family.

Every figure has an origin that is printed with it: the metallib file (function bytes through
``builder.size.attribution``, the same accounting as ``report``), the build manifest (embedded and
generated source bytes, recorded by the build from the generator's own counts) or the host library
(symbol sizes through pyelftools). A figure that could not be measured is None and shown as ``-``,
never estimated.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from builder.manifest import MANIFEST_NAME, read_manifest
from builder.size.host_symbols import OTHER, symbol_sizes

__all__ = ["BuildSizes", "FamilySizes", "measure", "sizes_to_dict"]


@dataclass(frozen=True)
class FamilySizes:
    name: str
    mode: str
    kernels: int
    """Host names (instantiations) of the family."""
    metallib_bytes: int | None
    """Bytes its functions own in the metallib (AOT only)."""
    embedded_bytes: int | None
    """Source bytes stored in the host library, per the manifest (JIT only)."""
    host_bytes: int | None
    """Bytes of the family's symbols in the host library (JIT only; needs pyelftools)."""


@dataclass(frozen=True)
class BuildSizes:
    build_dir: str
    manifest: str
    metallib: str | None
    metallib_bytes: int | None
    metallib_overhead_bytes: int | None
    compiler: str | None
    """The Metal compiler's ``--version`` line, per the manifest (a stand-in says so)."""
    host_library: str | None
    host_library_bytes: int | None
    host_symbol_method: str | None
    host_other_bytes: int | None
    embedded_bytes: int
    """All embedded source bytes (manifest; shared pieces counted once)."""
    families: list[FamilySizes]


def measure(build_dir: Path) -> BuildSizes:
    """Measure the outputs named by ``build_dir/manifest.json``."""
    manifest = read_manifest(build_dir / MANIFEST_NAME)
    per_fn: dict[str, int] = {}
    metallib_bytes = overhead = None
    if manifest.metallib:
        from builder.metallib import open_metallib
        from builder.size.attribution import attribute

        with open_metallib(build_dir / manifest.metallib) as lib:
            attribution = attribute(lib)
        metallib_bytes = attribution.file_size
        overhead = attribution.overhead_bytes
        per_fn = {fn.name: fn.bytes for fn in attribution.functions}
    host_bytes = None
    symbols = None
    jit_names = [f.name for f in manifest.families if f.mode == "jit"]
    if manifest.host_library:
        host_path = build_dir / manifest.host_library
        host_bytes = host_path.stat().st_size
        symbols = symbol_sizes(host_path, jit_names)
    rows = []
    for fam in manifest.families:
        aot = fam.mode == "aot"
        rows.append(
            FamilySizes(
                name=fam.name,
                mode=fam.mode,
                kernels=len(fam.host_names),
                metallib_bytes=(
                    sum(per_fn.get(n, 0) for n in fam.host_names)
                    if aot and manifest.metallib else None
                ),
                embedded_bytes=None if aot else fam.embedded_bytes,
                host_bytes=None if aot or symbols is None else symbols.by_family[fam.name],
            )
        )
    return BuildSizes(
        build_dir=str(build_dir),
        manifest=manifest.path,
        metallib=str(build_dir / manifest.metallib) if manifest.metallib else None,
        metallib_bytes=metallib_bytes,
        metallib_overhead_bytes=overhead,
        compiler=manifest.compiler_version if manifest.metallib else None,
        host_library=str(build_dir / manifest.host_library) if manifest.host_library else None,
        host_library_bytes=host_bytes,
        host_symbol_method=symbols.method if symbols else None,
        host_other_bytes=symbols.by_family[OTHER] if symbols else None,
        embedded_bytes=manifest.embedded_bytes,
        families=rows,
    )


def sizes_to_dict(sizes: BuildSizes) -> dict[str, Any]:
    return asdict(sizes)
