"""``variants --from`` as tables (``builder.render.table``: a row per variant, a table per
plan), JSON (schema in docs/report-schema.md) and an HTML page.

Every figure is measured on a written file (``builder.subsets.variants``), and the notes say
which: metallib bytes are the file's size; embedded bytes are what its ``jit_sources.cpp``
stores, as its API stores it (``string``: the distinct preamble text pieces, shared ones once;
``cstring``: each function's whole text on its own); "ships in total" is their sum. Names and
paths from the tree are untrusted text (``Name``/``Said``).
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import TYPE_CHECKING

from builder.files.dataclass_json import dump, dumps
from builder.render.table import Column, Name, Row, Said, Table, Words
from builder.subsets.coverage import COMPRESSION
from builder.subsets.split_costs import PROXY

if TYPE_CHECKING:
    from builder.kernels.runtime_sources import RuntimeSources
    from builder.subsets.variant_plan import Plan
    from builder.subsets.variants import VariantsRun

__all__ = [
    "variants_html",
    "variants_json",
    "variants_tables",
    "variants_to_dict",
]

SCHEMA = 2


def _path(path: os.PathLike[str] | None) -> str | None:
    return None if path is None else os.fspath(path)


def variants_to_dict(run: VariantsRun) -> dict[str, object]:
    """The JSON document (``{"schema": 2, "variants": [...]}`` plus where the figures come from)."""
    src = run.input
    return {
        "schema": SCHEMA,
        "source": {
            "target": src.target,
            "metallib": _path(src.metallib),
            "member": src.member,
            "wheel": src.wheel,
            "file_size": src.file_size,
            "function_count": src.function_count,
            "tree": {
                "root": _path(src.tree_root),
                "kind": src.tree_kind,
                "config": _path(src.config),
                "entry_files": src.entry_files,
                "kernels": src.tree_kernels,
                "held_aot": [{"source": s, "reason": r} for s, r in src.held],
                "runtime_only": [{"template": t, "source": h} for t, h in src.runtime_only],
                "whole_file": list(src.whole_file),
            },
            "not_in_tree": src.not_in_tree,
            "tree_kernels_missing": src.missing,
        },
        "jit_interface": {
            "namespace": src.interface.namespace,
            "api": src.interface.api,
            "lookup": src.interface.lookup,
            "storage": src.interface.storage,
            "preamble_set": src.interface.preamble_set,
            "always_embed": list(src.interface.always),
        },
        "compression": COMPRESSION,
        "variants": [dump(v) for v in run.variants],
    }


def variants_json(run: VariantsRun) -> str:
    return dumps(variants_to_dict(run), indent=1) + "\n"


def _measured(run: VariantsRun) -> bool:
    """Whether the variants' download was measured (``--download``)."""
    return any(v.metallib_download_bytes is not None for v in run.variants)


def variants_tables(run: VariantsRun) -> list[Table]:
    """Variants as rows, their measured figures as columns (the keys are ``variants.json``'s),
    what each variant is as notes under it; then per planned variant the entry files its plan
    moved to JIT; where the figures come from after the last table."""
    columns = [
        Column("name", "variant", "text"),
        Column("metallib_bytes", "metallib", "bytes"),
        Column("embedded_bytes", "embedded", "bytes"),
        Column("embedded_compressed_bytes", f"embedded ({COMPRESSION})", "bytes"),
        Column("total_bytes", "ships in total", "bytes"),
        Column("total_compressed_bytes", "total (compressed)", "bytes"),
        Column("jit_kernels", "run-time kernels", "count"),
        Column("first_use_source_bytes_proxy", "first-use bytes (proxy)", "bytes"),
        Column("jit_files", "JIT files", "count"),
    ]
    measured = _measured(run)
    if measured:
        columns += [
            Column("metallib_download_bytes", "metallib download", "bytes"),
            Column("total_download_bytes", "total download", "bytes"),
        ]
    rows = [
        Row(
            (
                Name(v.name),
                v.metallib_bytes,
                v.embedded_bytes,
                v.embedded_compressed_bytes,
                v.total_bytes,
                v.total_compressed_bytes,
                v.jit_kernels,
                v.first_use_bytes,
                len(v.jit),
                *((v.metallib_download_bytes, v.total_download_bytes) if measured else ()),
            )
        )
        for v in run.variants
    ]
    notes: list[Words] = [("",)]
    for v in run.variants:
        where = _path(v.metallib) or "no metallib: no function stays AOT"
        notes.append(("- ", Name(v.name), ": ", Said(v.description), "; ", Said(where)))
    plans = [_plan_table(v.name, v.plan) for v in run.variants if v.plan is not None]
    for v in run.variants:
        if v.plan is not None and not v.plan.files:
            notes.append(("plan of ", Name(v.name), ": ", Said(_plan_lines(v.plan)[0])))
            notes.append(("Nothing moved to JIT: every entry file fits AOT.",))
    tables = [
        Table(
            tuple(columns),
            tuple(rows),
            title=(Said(_heading(run)),),
            heading=("Variants of ", Name(os.path.basename(run.input.metallib))),
            notes=tuple(notes),
            compact=True,
        ),
        *(t for t in plans if t.rows),
    ]
    general = [("",), *(("- ", Said(note)) for note in _notes(run))]  # a list in markdown
    tables[-1] = replace(tables[-1], notes=(*tables[-1].notes, *general))
    return tables


def _plan_table(name: str, plan: Plan) -> Table:
    """The entry files a plan moved to JIT: what each saves, and the size were it AOT again
    (over the ceiling: why it stays JIT); the plan's steps under it."""
    estimate = "" if plan.ceiling_of == "metallib" else " (estimate)"
    what = "metallib" if plan.ceiling_of == "metallib" else "download"
    columns = (
        Column("source", "moved to JIT", "text"),
        Column("kernels", "kernels", "count"),
        Column("first_use_source_bytes_proxy", "first-use bytes (proxy)", "bytes"),
        Column("saved_bytes", f"saves{estimate}", "bytes"),
        Column("metallib_bytes_if_aot", f"{what} if AOT again{estimate}", "bytes"),
    )
    rows = (
        Row((Name(f.source), f.kernels, f.first_use_bytes, f.saved_bytes, f.back_bytes))
        for f in plan.files
    )
    headline, *steps = _plan_lines(plan)
    return Table(
        columns,
        tuple(rows),
        title=("plan of ", Name(name), ": ", Said(headline)),
        notes=(("",), *((Said(step),) for step in steps)) if steps else (),
        compact=True,
    )


def _heading(run: VariantsRun) -> str:
    src = run.input
    wheel = f" (from {os.path.basename(src.wheel)})" if src.wheel else ""
    named = "" if src.target == os.fspath(src.metallib) else f"{src.target}: "
    inside = f" (its library {src.member})" if src.member is not None else ""
    return (
        f"{named}{src.metallib}{inside}{wheel}, {src.file_size:,} bytes, "
        f"{src.function_count:,} functions; kernel tree {src.tree_root}: "
        f"{src.entry_files:,} entry files, {src.tree_kernels:,} kernels"
    )


def _embedded_note(interface: RuntimeSources) -> str:
    """What the embedded column counts: what the chosen API stores."""
    ns, api = interface.namespace, interface.api
    lookup = "" if interface.lookup else ", no lookup"
    if interface.storage == "separate":
        stored = "each function's whole text, stored on its own as the cstring API stores it"
        pieces = "those texts"
    else:
        stored = "the distinct preamble text pieces, shared ones stored once (string API)"
        pieces = "those pieces"
    return (
        f"embedded: what OUTDIR/<variant>/jit_sources.cpp stores ({ns}, {api}{lookup}): "
        f"{stored}; compressed: {pieces} as one stream, {COMPRESSION}"
    )


def _notes(run: VariantsRun) -> list[str]:
    src = run.input
    notes = [
        (
            "metallib: size of OUTDIR/<variant>/<library>.metallib as written (a subset of the "
            "input, functions byte-identical)"
        ),
        _embedded_note(src.interface),
        "ships in total: metallib + embedded (raw, and with the compressed embedded bytes)",
        "run-time kernels: the library's functions that the JIT entry files produce",
        f"first-use bytes (proxy): {PROXY}; the --ceiling plan's objective",
    ]
    if _measured(run):
        notes.append(
            "metallib download: the metallib as a wheel stores it (zlib level 6, "
            "modelled; docs/download-size.md); total download: that + the compressed "
            "embedded bytes"
        )
    if src.not_in_tree:
        notes.append(
            f"{src.not_in_tree:,} function(s) of the library are produced by no entry "
            "file of the tree: they stay AOT in every variant"
        )
    if src.missing:
        notes.append(
            f"{src.missing:,} kernel(s) the tree lists are not in the library "
            "(another release or other -D?)"
        )
    notes.append(
        f"coverage: every variant ships each of the tree's {src.tree_kernels:,} kernels "
        "in its metallib or its code among its embedded sources (checked before "
        "writing)"
    )
    for source, reason in src.held:
        notes.append(f"{source} stays AOT in every variant: {reason}")
    if src.runtime_only:
        headers = list(dict.fromkeys(h for _, h in src.runtime_only))
        notes.append(
            f"run-time only: {len(src.runtime_only):,} kernel template(s) that no entry "
            f"file instantiates, in {', '.join(headers)}: in no metallib, so every "
            "variant embeds their headers (all-aot too)"
        )
    return notes


def _plan_lines(plan: Plan) -> list[str]:
    """The plan's headline (its ceiling, what it reached, where it started), then its steps."""
    if plan.ceiling_of == "download":  # the steps and files are estimates
        return [
            (
                f"ceiling {plan.ceiling:,} bytes of download: {plan.metallib_bytes:,} bytes "
                f"measured with {len(plan.jit)} entry file(s) JIT, {plan.kernels:,} kernels "
                f"compiled at run time (planned on the input's download shares: estimated all "
                f"AOT {plan.all_aot_bytes:,}, least reachable {plan.least_bytes:,}); started "
                f"from the {plan.start} answer{_pinned(plan)}"
            )
        ]
    lines = [
        f"ceiling {plan.ceiling:,} bytes: metallib {plan.metallib_bytes:,} bytes with "
        + f"{len(plan.files)} entry file(s) JIT, {plan.kernels:,} kernels compiled at run time "
        + f"from {plan.first_use_bytes:,} first-use source bytes (proxy) "
        + f"(all AOT: {plan.all_aot_bytes:,}; least reachable: {plan.least_bytes:,}); "
        + f"started from the {plan.start} answer, {plan.exact_layouts} exact layouts"
        + _pinned(plan)
    ]
    for step in plan.steps:
        if step.action == "aot":
            lines.append(
                f"- {step.source} back to AOT (not needed): metallib {step.metallib_bytes:,} bytes"
            )
        else:
            lines.append(
                f"- swapped {step.swapped_for or ''} for {step.source} "
                f"({step.kernels:,} kernels): metallib {step.metallib_bytes:,} bytes"
            )
    return lines


def _pinned(plan: Plan) -> str:
    if not plan.kept_aot:
        return ""
    return f"; pinned AOT (--keep-aot, [build] keep-aot): {', '.join(plan.kept_aot)}"


def variants_html(run: VariantsRun) -> str:
    """One self-contained page: a bar per variant split by entry file, a search box."""
    from builder.render.html import page

    title = f"Variants of {os.path.basename(run.input.metallib)} ({run.input.target})"
    data = variants_to_dict(run)
    data["notes"] = _notes(run)
    data["heading"] = _heading(run)
    # the report page's one-pass filling, with the variants' template and script
    return page(
        title,
        data,
        body="variants.html",
        styles=("style.css", "variants.css"),
        scripts=("variants.js",),
    )
