"""A catalog family's generated translation unit and its facts, and their merge into embed.json.

CMake runs these at build time through ``python -m builder.jit family`` and ``merge`` (see
``cmake/MetalJit.cmake``). Only the standard library and ``builder.kernels``/``builder.errors``
are imported, because scikit-build-core runs the generator in an isolated build environment
without click or rich.

Every output is written atomically and only when its bytes change, so a regenerated but
identical file does not trigger a recompile (Ninja ``restat``). A family's depfile
(``builder.jit.depfile``) lists the catalog, the headers and the generator's own modules, so
touching a header regenerates only the families that embed it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from builder.errors import UsageError
from builder.files.atomic import write_if_changed
from builder.jit.codegen import Kernel, StoredPiece, family_pieces, pool_pieces, render_family
from builder.jit.depfile import own_modules, write_depfile
from builder.jit.embed_facts import embed_facts
from builder.jit.preamble import Preamble, inline_preamble

__all__ = ["FACTS_SCHEMA", "FamilySource", "family_source", "merge_facts", "write_family"]

FACTS_SCHEMA = 1
"""Of one family's facts file (``<family>.json``), which :func:`merge_facts` reads."""


@dataclass(frozen=True)
class FamilySource:
    """A family's generated translation unit and the facts measured from it."""

    family: str
    preamble: Preamble
    pieces: tuple[StoredPiece, ...]
    kernels: tuple[Kernel, ...]
    pool: tuple[StoredPiece, ...]  # the registry strings (names, arguments) as stored
    lines: tuple[str, ...]  # the instantiation lines, catalog order
    cpp: str

    @property
    def registry_bytes(self) -> int:
        """Stored bytes of the registry strings (host names and arguments)."""
        return sum(p.stored_bytes for p in self.pool)

    def facts(self) -> dict[str, object]:
        """Per-family record that :func:`merge_facts` turns into embed.json."""
        return {
            "schema": FACTS_SCHEMA,
            "name": self.family,
            "headers": list(self.preamble.headers),
            "host_names": [k.host_name for k in self.kernels],
            "source_bytes": len(self.preamble.text.encode("utf-8")),
            "registry_bytes": self.registry_bytes,
            "pieces": [
                {
                    "name": p.name,
                    "bytes": p.stored_bytes,
                    "raw_bytes": p.raw_bytes,
                    "shared": p.shared,
                }
                for p in self.pieces
            ],
        }


def family_source(
    source_dir: Path,
    family: str,
    dtypes: Sequence[str] | None = None,
    *,
    compress: bool = False,
    dedup: bool = True,
    strip: bool = False,
) -> FamilySource:
    """Inline a catalog family's header and render its translation unit (nothing written)."""
    from builder.kernels.catalog import INSTANTIATE_MACRO, load_catalog

    catalog = load_catalog(source_dir)
    items = catalog.expand([family], dtypes)
    spec = catalog.families[family]
    preamble = inline_preamble(
        [catalog.source_dir / spec.header], [catalog.source_dir], strip=strip
    )
    head = f'{INSTANTIATE_MACRO}("'
    kernels, lines = [], []
    for inst in items:
        line = inst.instantiation_line()
        prefix = f'{head}{inst.host_name}", '
        if not (line.startswith(prefix) and line.endswith(")")):
            raise UsageError(f"{family}: unexpected instantiation line {line!r}")
        kernels.append(Kernel(inst.host_name, line[len(prefix) : -1]))
        lines.append(line)
    pieces = family_pieces(preamble, dedup=dedup, compress=compress)
    pool = pool_pieces(kernels, compress=compress)
    origin = f"{catalog.path.name} and {spec.header}"
    cpp = render_family(family, preamble, pieces, kernels, pool, head, origin)
    return FamilySource(
        family, preamble, tuple(pieces), tuple(kernels), tuple(pool), tuple(lines), cpp
    )


def write_family(
    source_dir: Path,
    family: str,
    out_dir: Path,
    dtypes: Sequence[str] | None = None,
    *,
    compress: bool = False,
    dedup: bool = True,
    strip: bool = False,
    depfile: Path | None = None,
) -> FamilySource:
    """Write ``<out_dir>/<family>.cpp`` and ``<family>.json`` (+ depfile) for the CMake build."""
    generated = family_source(
        source_dir, family, dtypes, compress=compress, dedup=dedup, strip=strip
    )
    cpp_path = out_dir / f"{family}.cpp"
    write_if_changed(cpp_path, generated.cpp)
    facts = json.dumps(generated.facts(), indent=1, sort_keys=True) + "\n"
    write_if_changed(out_dir / f"{family}.json", facts)
    if depfile is not None:
        catalog = Path(os.path.realpath(Path(source_dir) / "catalog.json"))
        deps = [catalog, *generated.preamble.files, *own_modules()]
        write_depfile(depfile, os.path.abspath(cpp_path), deps)
    return generated


def merge_facts(
    target: str,
    compressed: bool,
    dedup: bool,
    family_facts: Sequence[Mapping[str, Any]],
    stripped: bool = False,
) -> dict[str, Any]:
    """embed.json (``builder.jit.embed_facts``): per family what it embeds, with pieces shared by
    families counted once.

    Per family: ``source_bytes`` (its preamble's text), ``preamble_bytes`` (stored preamble
    pieces only it uses), ``shared_bytes`` (stored pieces it uses with other families),
    ``registry_bytes`` (its host-name/argument strings) and ``embedded_bytes`` = preamble_bytes +
    registry_bytes. Shared pieces are listed under ``shared`` and counted once in the top-level
    ``embedded_bytes``, which is then all the string data of the library.
    """
    users: dict[str, list[str]] = {}
    sizes: dict[str, int] = {}
    for facts in family_facts:
        for piece in facts["pieces"]:
            if piece["shared"]:
                names = users.setdefault(piece["name"], [])
                if facts["name"] not in names:
                    names.append(str(facts["name"]))
                sizes[piece["name"]] = int(piece["bytes"])
    shared = {name for name, fams in users.items() if len(fams) > 1}
    families: list[dict[str, Any]] = []
    for facts in family_facts:
        pieces = facts["pieces"]
        own: dict[str, int] = {}
        common: dict[str, int] = {}
        for index, piece in enumerate(pieces):
            key = str(piece["name"]) if piece["shared"] else f"#{index}"
            (common if piece["name"] in shared else own)[key] = int(piece["bytes"])
        registry = int(facts["registry_bytes"])
        families.append(
            {
                "name": facts["name"],
                "headers": facts["headers"],
                "host_names": facts["host_names"],
                "source_bytes": facts["source_bytes"],
                "embedded_bytes": sum(own.values()) + registry,
                "preamble_bytes": sum(own.values()),
                "shared_bytes": sum(common.values()),
                "registry_bytes": registry,
            }
        )
    shared_list: list[dict[str, Any]] = [
        {"name": name, "units": users[name], "bytes": sizes[name]} for name in sorted(shared)
    ]
    extra = {
        "target": target,
        "dedup": dedup,
        "stripped": stripped,
        "registry_bytes": sum(int(f["registry_bytes"]) for f in families),
    }
    return embed_facts(
        "catalog_family",
        families,
        shared_list,
        sum(int(s["bytes"]) for s in shared_list),
        compressed=compressed,
        extra=extra,
    )
