"""What a build produced, measured: metallib bytes, embedded bytes and host-library bytes per family.

Every figure has an origin that is printed with it: the metallib file (function bytes through
``builder.attribution``, the same accounting as ``report``), the build manifest (embedded and
generated source bytes, recorded by the build from the generator's own counts) or the host library
(symbol sizes through pyelftools). A figure that could not be measured is None and shown as ``-``,
never estimated.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from builder.build.host_symbols import OTHER, symbol_sizes
from builder.errors import UsageError
from builder.sizes import human_size

__all__ = ["BuildSizes", "FamilySizes", "measure", "render_text", "sizes_to_dict"]


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
    manifest_path = build_dir / "manifest.json"
    try:
        data: dict[str, Any] = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"{manifest_path}: cannot read build manifest: {exc}") from None
    families = data.get("families", [])
    per_fn: dict[str, int] = {}
    metallib = data.get("metallib")
    metallib_bytes = overhead = None
    if metallib:
        from builder.attribution import attribute
        from builder.metallib import open_metallib

        with open_metallib(build_dir / metallib) as lib:
            attribution = attribute(lib)
        metallib_bytes = attribution.file_size
        overhead = attribution.overhead_bytes
        per_fn = {fn.name: fn.bytes for fn in attribution.functions}
    host = data.get("host_library")
    host_bytes = None
    symbols = None
    jit_names = [f["name"] for f in families if f.get("mode") == "jit"]
    if host:
        host_path = build_dir / host
        host_bytes = host_path.stat().st_size
        symbols = symbol_sizes(host_path, jit_names)
    rows = []
    for fam in families:
        aot = fam.get("mode") == "aot"
        names = fam.get("host_names", [])
        rows.append(
            FamilySizes(
                name=fam["name"],
                mode=fam.get("mode", "aot"),
                kernels=len(names),
                metallib_bytes=sum(per_fn.get(n, 0) for n in names) if aot and metallib else None,
                embedded_bytes=None if aot else int(fam.get("embedded_bytes", 0)),
                host_bytes=None if aot or symbols is None else symbols.by_family[fam["name"]],
            )
        )
    return BuildSizes(
        build_dir=str(build_dir),
        manifest=str(manifest_path),
        metallib=str(build_dir / metallib) if metallib else None,
        metallib_bytes=metallib_bytes,
        metallib_overhead_bytes=overhead,
        compiler=(data.get("toolchain") or {}).get("compiler_version") if metallib else None,
        host_library=str(build_dir / host) if host else None,
        host_library_bytes=host_bytes,
        host_symbol_method=symbols.method if symbols else None,
        host_other_bytes=symbols.by_family[OTHER] if symbols else None,
        embedded_bytes=int(data.get("embedded_bytes", 0)),
        families=rows,
    )


def sizes_to_dict(sizes: BuildSizes) -> dict[str, Any]:
    return asdict(sizes)


def _cell(value: int | None) -> str:
    return "-" if value is None else human_size(value)


def origins(sizes: BuildSizes) -> list[str]:
    """One line per source of figures, as printed under the table."""
    lines = []
    if sizes.metallib:
        built_by = f"; compiled by {sizes.compiler}" if sizes.compiler else ""
        lines.append(f"metallib: {sizes.metallib} ({sizes.metallib_bytes} bytes; function bytes "
                     f"via builder.attribution{built_by})")  # fmt: skip
    if sizes.host_library:
        how = (f"symbol sizes via {sizes.host_symbol_method}" if sizes.host_symbol_method else
               "file size only: per-family symbol sizes need pyelftools and an unstripped library")  # fmt: skip
        lines.append(
            f"host library: {sizes.host_library} ({sizes.host_library_bytes} bytes; {how})"
        )
    lines.append(f"manifest: {sizes.manifest} (embedded bytes, host names)")
    return lines


def render_text(sizes: BuildSizes) -> str:
    """A plain table (one row per family, totals) plus the origin of each column."""
    head = ("family", "mode", "kernels", "metallib", "embedded", "host lib")
    rows = [
        (f.name, f.mode, str(f.kernels), _cell(f.metallib_bytes), _cell(f.embedded_bytes),
         _cell(f.host_bytes))
        for f in sizes.families
    ]  # fmt: skip
    if sizes.metallib_overhead_bytes is not None:
        rows.append(("(container)", "aot", "", _cell(sizes.metallib_overhead_bytes), "", ""))
    if sizes.host_other_bytes is not None:
        rows.append(("(runtime, shared)", "jit", "", "", "", _cell(sizes.host_other_bytes)))
    total_kernels = sum(f.kernels for f in sizes.families)
    rows.append(("total", "", str(total_kernels), _cell(sizes.metallib_bytes),
                 _cell(sizes.embedded_bytes) if sizes.host_library else "-",
                 _cell(sizes.host_library_bytes)))  # fmt: skip
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    fmt = "  ".join(f"{{:{'<' if i < 2 else '>'}{w}}}" for i, w in enumerate(widths))
    lines = [fmt.format(*head), fmt.format(*("-" * w for w in widths))]
    lines += [fmt.format(*r) for r in rows]
    lines += [
        "",
        (
            "metallib = function bytes in the metallib; embedded = source bytes stored in the "
            "host library (manifest); host lib = symbol bytes (total: file size)"
        ),
    ]
    lines += origins(sizes)
    return "\n".join(lines)
