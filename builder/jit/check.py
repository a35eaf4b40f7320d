"""``metallib-builder check``: what the host C++ compiler can prove about a kernel tree, without
Apple's compiler. One checker for every tree; what it can prove depends on the tree.

**A catalog tree** expands into ordinary entry files (``builder.kernels.catalog_tree``) in
Metal the shim understands: each is compiled as C++ with ``-I <shim> -I <tree>``, the text the
AOT build compiles (its explicit instantiations compile every dtype path of every template), and
so is each JIT unit's run-time source, the preamble the host library embeds with its
instantiation lines appended. Each translation unit compiled is a *chunk* (docs/architecture.md,
glossary); chunks run in parallel, and compiler output is attributed back to kernel source lines
(``builder.kernels.diagnostics``).

**Any other tree** (``builder.jit.tree_check.check_tree``) uses whatever Metal it likes, so file
by file:

1. **preprocess**: the entry file goes through the host preprocessor with the tree's ``-I`` and
   ``-D`` and Metal's predefined macros (discovery, ``builder.kernels.discovery``);
2. **templates**: every instantiation names a kernel template whose definition is in a file the
   entry file reads (a misspelt template, or one removed from a header);
3. **run-time sources**: every preamble a JIT build of the tree would embed, in its string form
   (the C++ source ``embed`` writes for it), compiles as C++17 (``-fsyntax-only``).

What only Apple's compiler sees stays unchecked there: Metal types, address spaces, attributes
and the kernels' own code. A file that does not preprocess is reported and the rest are still
checked (discovery runs again without it).
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from builder.jit.preamble import anchor_line_markers, inline_preamble
from builder.kernels.bounded_run import Compiler, find_compiler
from builder.kernels.catalog import Catalog, load_catalog
from builder.kernels.catalog_tree import DEFAULT_CHUNK_SIZE, generate_tree
from builder.kernels.diagnostics import (
    CHECK_SCHEMA,
    CheckResult,
    ChunkResult,
    Diagnostic,
    Locator,
    parse_compiler_output,
    shim_dir_for,
)

__all__ = [
    "CHECK_SCHEMA",
    "CheckChunk",
    "CheckResult",
    "ChunkResult",
    "aot_chunks",
    "check_library",
    "compile_source",
    "jit_chunks",
    "run_check",
    "shown_path",
]

_INSTANTIATION = re.compile(r'^\s*instantiate_kernel\(\s*"([^"]+)"')


@dataclass(frozen=True)
class CheckChunk:
    """One translation unit to compile (a chunk); lines that instantiate kernels map to their
    host names. ``unit`` is the unit it belongs to (a catalog family), when it has one."""

    name: str
    text: str
    unit: str | None = None

    @property
    def host_lines(self) -> dict[int, str]:
        """{line number: host name} for each ``instantiate_kernel("...")`` line."""
        table = {}
        for number, line in enumerate(self.text.splitlines(), start=1):
            match = _INSTANTIATION.match(line)
            if match:
                table[number] = match.group(1)
        return table


def aot_chunks(
    catalog: Catalog,
    families: Iterable[str] | None = None,
    dtypes: Iterable[str] | None = None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
) -> list[CheckChunk]:
    """The catalog's generated entry files as chunks, the same texts the build compiles
    (``builder.kernels.catalog_tree``: the same content-defined cuts, named alike), so a check
    compiles what a build compiles."""
    chosen = catalog.select(families)
    tree = generate_tree(catalog, chosen, list(dtypes) if dtypes else None, chunk_size)
    return [CheckChunk(e.name, e.text(), e.unit) for e in tree.entries]


def jit_chunks(
    catalog: Catalog,
    families: Iterable[str] | None = None,
    dtypes: Iterable[str] | None = None,
    preambles: Mapping[str, str] | None = None,
) -> list[CheckChunk]:
    """One chunk per family built JIT: its run-time preamble (``preambles``, e.g. read back
    from a built library; by default inlined from its header as the host library embeds it)
    plus every selected instantiation line of the family."""
    lines: dict[str, list[str]] = {}
    for inst in catalog.expand(families, dtypes):
        lines.setdefault(inst.family, []).append(inst.instantiation_line())
    root, chunks = catalog.source_dir, []
    for family, family_lines in lines.items():
        if preambles is None:
            text = inline_preamble([root / catalog.families[family].header], [root]).text
        else:
            text = preambles[family]
        text = anchor_line_markers(text, root) + "\n".join(family_lines) + "\n"
        chunks.append(CheckChunk(f"jit.{family}", text, family))
    return chunks


def _materialize(text: str, path: str) -> tuple[str, dict[int, str]]:
    """The chunk as written to ``path``, and {line: host name} of its instantiation lines.

    A JIT source carries ``#line`` markers naming the kernel files it inlined; lines after the
    last marker would be reported as lines of that header. A marker back to the chunk itself
    before the instantiation lines keeps their diagnostics on the chunk (and so on the catalog).
    """
    out: list[str] = []
    hosts: dict[int, str] = {}
    remapped = False
    for line in text.splitlines():
        if line.lstrip().startswith("#line"):
            remapped = True
        match = _INSTANTIATION.match(line)
        if match and remapped:
            out.append(f'#line {len(out) + 2} "{path}"')
            remapped = False
        out.append(line)
        if match:
            hosts[len(out)] = match.group(1)
    return "\n".join(out) + "\n", hosts


def compile_source(compiler: Compiler, flags: list[str], path: Path) -> tuple[int, str, float]:
    env = {**os.environ, "LC_ALL": "C", "LANG": "C"}
    start = time.perf_counter()
    proc = subprocess.run(
        [compiler.path, *flags, str(path)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    return proc.returncode, proc.stdout + proc.stderr, time.perf_counter() - start


def run_check(
    chunks: Sequence[CheckChunk],
    *,
    source_dir: Path,
    compiler: Compiler,
    jobs: int | None = None,
    syntax_only: bool = False,
    display_root: str | None = None,
    catalog_lines: Mapping[str, int] | None = None,
    on_done: Callable[[ChunkResult], None] | None = None,
) -> CheckResult:
    """Compile ``chunks`` (in parallel) and attribute their diagnostics to kernel sources."""
    source_dir = Path(source_dir)
    shim = shim_dir_for(source_dir)
    mode = "syntax-only" if syntax_only else "compile"
    flags = compiler.base_flags([shim.resolve(), source_dir.resolve()])
    flags += ["-fsyntax-only"] if syntax_only else ["-c", "-O0", "-o", os.devnull]
    jobs = max(1, jobs or os.cpu_count() or 1)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="metallib-check-") as tmp:
        paths, generated = [], {}
        for chunk in chunks:
            path = Path(tmp, f"{chunk.name}.cpp")
            text, hosts = _materialize(chunk.text, os.path.realpath(path))
            path.write_text(text, encoding="utf-8")
            paths.append(path)
            generated[os.path.realpath(path)] = hosts
        locator = Locator(
            source_dir=source_dir,
            display_root=display_root if display_root is not None else str(source_dir),
            shim_dir=shim,
            generated=generated,
            catalog_lines=catalog_lines or {},
        )

        def work(index: int) -> ChunkResult:
            chunk, path = chunks[index], paths[index]
            code, output, seconds = compile_source(compiler, flags, path)
            diags = parse_compiler_output(output, locator)
            if code != 0 and not any(d.severity == "error" for d in diags):
                tail = " | ".join(output.strip().splitlines()[-3:]) or f"exit status {code}"
                diags.append(
                    Diagnostic("error", chunk.name, 0, 0, f"compiler failed: {tail}", where="other")
                )
            result = ChunkResult(
                chunk.name, chunk.unit, len(chunk.host_lines), code, seconds, diags
            )
            if on_done is not None:
                on_done(result)
            return result

        # Largest chunks first so the last one to finish is short; results keep chunk order.
        order = sorted(range(len(chunks)), key=lambda i: -len(chunks[i].text))
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            done = dict(zip(order, pool.map(work, order)))
        results = [done[i] for i in range(len(chunks))]
    return CheckResult(compiler, source_dir, mode, results, time.perf_counter() - start)


def check_library(
    source_dir: Path | None = None,
    *,
    families: Iterable[str] | None = None,
    dtypes: Iterable[str] | None = None,
    compiler: str | Compiler | None = None,
    jobs: int | None = None,
    syntax_only: bool = False,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    jit: bool = False,
    extra: Sequence[CheckChunk] = (),
    on_plan: Callable[[list[CheckChunk]], None] | None = None,
    on_done: Callable[[ChunkResult], None] | None = None,
) -> CheckResult:
    """Check a catalog tree's generated entry files (default: the bundled ``metal_src``) and,
    with ``jit``, each family's run-time source (:func:`jit_chunks`); ``extra`` chunks are
    compiled alongside. Raises UsageError for a tree without ``catalog.json``, a bad selection or
    no compiler; the caller decides what a failed result means (the CLI raises CheckFailed).
    """
    catalog = load_catalog(source_dir)
    located = compiler if isinstance(compiler, Compiler) else find_compiler(compiler)
    chunks = aot_chunks(catalog, families, dtypes, chunk_size)
    chunks += jit_chunks(catalog, families, dtypes) if jit else []
    chunks += extra
    if on_plan is not None:
        on_plan(chunks)
    return run_check(
        chunks,
        source_dir=catalog.source_dir,
        compiler=located,
        jobs=jobs,
        syntax_only=syntax_only,
        display_root=shown_path(catalog.source_dir, Path.cwd()),
        catalog_lines=catalog.form_lines(),
        on_done=on_done,
    )


def shown_path(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` when it is under it (a tree under the working directory,
    a header under the tree), else as given."""
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)
