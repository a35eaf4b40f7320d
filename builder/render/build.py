"""What a build produced, as text: the per-family size table of ``build`` and the side-by-side
table of ``variants``, each followed by the origin of every figure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from builder.render.text import human_size

if TYPE_CHECKING:
    from builder.cmake_build.variants import VariantResult
    from builder.size.build_sizes import BuildSizes

__all__ = ["build_text", "origins", "variants_text"]


def _size(value: int | None) -> str:
    return "-" if value is None else human_size(value)


def origins(sizes: BuildSizes) -> list[str]:
    """One line per source of figures, as printed under the table."""
    lines = []
    if sizes.metallib:
        built_by = f"; compiled by {sizes.compiler}" if sizes.compiler else ""
        lines.append(f"metallib: {sizes.metallib} ({sizes.metallib_bytes} bytes; function bytes "
                     f"via builder.size.attribution{built_by})")  # fmt: skip
    if sizes.host_library:
        how = (f"symbol sizes via {sizes.host_symbol_method}" if sizes.host_symbol_method else
               "file size only: per-family symbol sizes need pyelftools and an unstripped library")  # fmt: skip
        lines.append(
            f"host library: {sizes.host_library} ({sizes.host_library_bytes} bytes; {how})"
        )
    lines.append(f"manifest: {sizes.manifest} (embedded bytes, host names)")
    return lines


def build_text(sizes: BuildSizes) -> str:
    """A plain table (one row per family, totals) plus the origin of each column."""
    head = ("family", "mode", "kernels", "metallib", "embedded", "host lib")
    rows = [
        (f.name, f.mode, str(f.kernels), _size(f.metallib_bytes), _size(f.embedded_bytes),
         _size(f.host_bytes))
        for f in sizes.families
    ]  # fmt: skip
    if sizes.metallib_overhead_bytes is not None:
        rows.append(("(container)", "aot", "", _size(sizes.metallib_overhead_bytes), "", ""))
    if sizes.host_other_bytes is not None:
        rows.append(("(runtime, shared)", "jit", "", "", "", _size(sizes.host_other_bytes)))
    total_kernels = sum(f.kernels for f in sizes.families)
    rows.append(("total", "", str(total_kernels), _size(sizes.metallib_bytes),
                 _size(sizes.embedded_bytes) if sizes.host_library else "-",
                 _size(sizes.host_library_bytes)))  # fmt: skip
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


def _family_cell(sizes: BuildSizes, family: str) -> str:
    for fam in sizes.families:
        if fam.name == family:
            if fam.mode == "aot":
                return f"aot {human_size(fam.metallib_bytes or 0)}"
            host = f" / host {human_size(fam.host_bytes)}" if fam.host_bytes is not None else ""
            return f"jit {human_size(fam.embedded_bytes or 0)} emb{host}"
    return "-"


def variants_text(results: Sequence[VariantResult]) -> str:
    """Families as rows, variants as columns; totals; then what was not built and why."""
    built = [r for r in results if r.outcome is not None]
    lines: list[str] = []
    if built:
        families = [f.name for f in built[0].outcome.sizes.families]  # type: ignore[union-attr]
        head = ["family", *(r.name for r in built)]
        rows = [[fam, *(_family_cell(r.outcome.sizes, fam) for r in built)] for fam in families]  # type: ignore[union-attr]
        sizes = [r.outcome.sizes for r in built]  # type: ignore[union-attr]
        rows.append(["metallib (file)", *(_size(s.metallib_bytes) for s in sizes)])
        rows.append(["host library (file)", *(_size(s.host_library_bytes) for s in sizes)])
        rows.append(["embedded (manifest)",
                     *(_size(s.embedded_bytes if s.host_library else None) for s in sizes)])  # fmt: skip
        rows.append(["build time", *(f"{r.outcome.seconds:.1f} s" for r in built)])  # type: ignore[union-attr]
        widths = [max(len(row[i]) for row in [head, *rows]) for i in range(len(head))]
        fmt = "  ".join(f"{{:<{w}}}" if i == 0 else f"{{:>{w}}}" for i, w in enumerate(widths))
        lines += [fmt.format(*head), fmt.format(*("-" * w for w in widths))]
        lines += [fmt.format(*row) for row in rows]
        lines += [
            "",
            (
                "aot = function bytes in mlx.metallib; jit = source bytes embedded in the host "
                "library (emb) and its symbol bytes (host)"
            ),
        ]
        for r in built:
            lines += [f"{r.name} ({r.description}):"] + [
                f"  {line}"
                for line in origins(r.outcome.sizes)  # type: ignore[union-attr]
            ]
    for r in results:
        if r.outcome is None:
            lines.append(f"{r.name}: not built: {r.reason}")
    return "\n".join(lines)
