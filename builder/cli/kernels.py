"""``kernels``: the kernels of a tree listed (the catalog, or any folder of ``.metal`` files).

A thin command: parse options, call ``builder.kernels``, render. Tables and progress use rich on
their own consoles (data on stdout, progress on stderr) so piping stdout stays clean. ``check``
lives in ``builder.cli.check``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from builder.cli.publishing import emit_json, format_option
from builder.cli.tree_options import options, tree_options
from builder.settings.model import split_names

if TYPE_CHECKING:
    from builder.cli.tree_options import TreeOptions
    from builder.kernels.kernel_tree import KernelTree

__all__ = ["kernels_command"]


@click.command(
    "kernels",
    epilog="""\b
Examples:
  metallib-builder kernels
  metallib-builder kernels --kernels unary,binary --dtypes float16,float32
  metallib-builder kernels --format json | jq -r '.kernels[].name'
  metallib-builder kernels --source-dir mlx/backend/metal/kernels -I . \\
      --exclude 'fence.metal' --exclude '*_nax.metal'
  metallib-builder kernels --source-dir shaders/ -D __METAL_VERSION__=320 --format json

A folder without catalog.json is discovered with the host C++ preprocessor, settings in
DIR/metallib.toml (docs/discovery.md); exit 2 when a file does not preprocess.
""",
)
@tree_options("the bundled metal_src")
@options("kernels", "dtypes")
@format_option(
    ("table", "json"),
    "table: per family (catalog) or per entry file (discovered) with counts, then the "
    "run-time-only kernel templates and the .metal files that are headers; json (schema 1): "
    "also every kernel with name, source, template and args, runtime_only and metal_headers.",
)
def kernels_command(
    tree: TreeOptions,
    kernels: str | None,
    dtypes: str | None,
    fmt: str,
) -> None:
    """List the kernels of a tree: the bundled catalog, or any folder of .metal files."""
    if tree.discovered({"--kernels": kernels, "--dtypes": dtypes}) is not None:
        found = tree.load()
        from builder.kernels.tree_files import metal_headers

        if fmt == "json":
            emit_json({"schema": 1, **found.to_json()})
        else:
            _discovered_table(found, metal_headers(found.root))
        return
    _catalog_listing(tree.source_dir, tree.config, kernels, dtypes, fmt)


def _discovered_table(tree: KernelTree, headers: dict[str, str]) -> None:
    """Entry files and their kernel counts, the headers that are not entry files, the run-time
    only templates: tables on the one model (``builder.render.table``). File and kernel names
    come from the tree (untrusted): each is a ``Name``, shown escaped on its row."""
    from builder.cli.console import stdout_color, stdout_table_width
    from builder.render.table import Column, Name, Row, Said, Table, text_tables

    groups = tree.by_source()
    origin = (", settings from ", Said(str(tree.config.path))) if tree.config.path else ()
    files = [Row((Name(source), len(records))) for source, records in groups.items()]
    tables = [
        Table(
            (Column("entry_file", "entry file", "text"), Column("kernels", "kernels", "count")),
            (*files, Row(("total", len(tree.kernels)), "total")),
            title=(
                Said(str(tree.root)),
                f": {len(tree.kernels)} kernels in {len(groups)} entry files (discovered",
                *origin,
                ")",
            ),
        )
    ]
    if headers:
        tables.append(
            Table(
                (Column("header", "header", "text"), Column("why", "why", "text")),
                tuple(Row((Name(source), Said(why))) for source, why in headers.items()),
                title=(f"{len(headers)} .metal files are headers, not entry files",),
            )
        )
    if tree.runtime_only:
        by_header: dict[str, list[str]] = {}
        for template, header in tree.runtime_only:
            by_header.setdefault(header, []).append(template)
        title = (
            f"run-time only: {len(tree.runtime_only)} kernel templates no entry file instantiates "
            "(compiled only at run time; every variant embeds their headers)"
        )
        rows = tuple(Row((Name(h), Name(", ".join(t)))) for h, t in by_header.items())
        templates = Column("templates", "kernel templates", "text")
        tables.append(Table((Column("header", "header", "text"), templates), rows, title=(title,)))
    width = stdout_table_width()
    sys.stdout.write(text_tables(tables, color=stdout_color(), width=width))


def _catalog_listing(
    source_dir: Path | None,
    config_file: Path | None,
    kernels: str | None,
    dtypes: str | None,
    fmt: str,
) -> None:
    from builder.kernels import load_catalog
    from builder.kernels.discovery import catalog_tree
    from builder.kernels.tree_config import find_config

    catalog = load_catalog(source_dir)
    items = catalog.expand(split_names(kernels), split_names(dtypes))
    counts: dict[tuple[str, str], int] = {}
    for inst in items:
        counts[(inst.family, inst.form)] = counts.get((inst.family, inst.form), 0) + 1
    families = [f for f in catalog.families.values() if any(k[0] == f.name for k in counts)]
    if fmt == "json":
        config = find_config(catalog.source_dir, config_file)
        tree = catalog_tree(source_dir, split_names(kernels), split_names(dtypes), config, catalog)
        emit_json(
            {
                "schema": 1,
                "catalog": str(catalog.path),
                "selection": {"kernels": split_names(kernels), "dtypes": split_names(dtypes)},
                "total": len(items),
                "families": [
                    {
                        "name": f.name,
                        "header": f.header,
                        "description": f.description,
                        "count": sum(c for (fam, _), c in counts.items() if fam == f.name),
                        "ops": [op.name for op in f.ops],
                        "forms": [
                            {
                                "name": v.name,
                                "template": v.template,
                                "count": counts[(f.name, v.name)],
                            }
                            for v in f.forms
                            if (f.name, v.name) in counts
                        ],
                    }
                    for f in families
                ],
                "instantiations": [
                    {
                        "host_name": i.host_name,
                        "family": i.family,
                        "form": i.form,
                        "op": i.op,
                        "dtypes": list(i.dtypes),
                        "params": dict(i.params),
                    }
                    for i in items
                ],
                **tree.to_json(),
            }
        )
        return
    from builder.cli.console import stdout_color, stdout_table_width
    from builder.render.table import Column, Name, Row, Said, Table, text_tables

    # catalog.json is the tree's: its names are as untrusted as file names
    columns = (
        Column("family", "family", "text"),
        Column("form", "form", "text"),
        Column("template", "template", "text"),
        Column("ops", "ops", "count"),
        Column("instantiations", "instantiations", "count"),
    )
    rows = []
    for family in families:
        forms = [form for form in family.forms if (family.name, form.name) in counts]
        rows += [  # a rule under each family
            Row(
                (Name(family.name), Name(form.name), Name(form.template), len(family.ops) or None)
                + (counts[(family.name, form.name)],),
                rule=at == len(forms) - 1,
            )
            for at, form in enumerate(forms)
        ]
    rows.append(Row(("total", None, None, None, len(items)), "total"))
    title = (Said(str(catalog.path)), f": {len(items)} instantiations")
    table = Table(columns, tuple(rows), title=title)
    width = stdout_table_width()
    sys.stdout.write(text_tables([table], color=stdout_color(), width=width))
