"""``metallib-builder check``: compile every kernel instantiation as C++ against the Metal shim.

No Metal compiler runs on Linux, so kernel sources would otherwise go unchecked until a Mac build.
Every catalog instantiation is rendered into generated translation units (the same text the AOT
build compiles), each compiled by the host compiler with ``-I metal_src/shim -I metal_src``; the
explicit instantiations force every dtype path of every template to be compiled. Each
translation unit compiled is a *chunk* (docs/architecture.md, glossary): an AOT unit's chunk as
the build cuts it, or a JIT unit's run-time source compiled whole. Chunks run in parallel, and
compiler output is attributed back to kernel source lines (``diagnostics``).

The chunk list is open: the JIT build can add its generated sources (each with an instantiation
line appended) as extra :class:`CheckChunk` values to :func:`run_check`.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from builder.files.bounds import MAX_JSON
from builder.files.reading import read_text
from builder.kernels.bounded_run import Compiler, find_compiler
from builder.kernels.catalog import Catalog, Instantiation, load_catalog
from builder.kernels.catalog_tree import DEFAULT_CHUNK_SIZE, generate_tree
from builder.kernels.diagnostics import Diagnostic, Locator, parse_compiler_output

__all__ = [
    "CHECK_SCHEMA",
    "CheckChunk",
    "CheckResult",
    "ChunkResult",
    "aot_chunks",
    "check_library",
    "jit_chunk",
    "run_check",
    "shim_dir_for",
]

CHECK_SCHEMA = 2
"""2: ``chunks[]`` with ``chunk`` and ``unit`` (1 said ``units[]`` with ``unit`` and ``family``)."""

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


@dataclass
class ChunkResult:
    """The outcome of compiling one chunk."""

    chunk: str
    unit: str | None
    instantiations: int
    returncode: int
    seconds: float
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not any(d.severity == "error" for d in self.diagnostics)


@dataclass
class CheckResult:
    """All chunks' outcomes plus totals; ``ok`` is the verdict."""

    compiler: Compiler
    source_dir: Path
    mode: str
    chunks: list[ChunkResult]
    seconds: float

    @property
    def diagnostics(self) -> list[Diagnostic]:
        """Diagnostics of all chunks, merged when several chunks hit the same line."""
        merged: dict[tuple[str, int, int, str, str], Diagnostic] = {}
        for chunk in self.chunks:
            for diag in chunk.diagnostics:
                key = (diag.path, diag.line, diag.column, diag.severity, diag.message)
                if key in merged:
                    seen = merged[key].host_names
                    seen.extend(h for h in diag.host_names if h not in seen)
                else:
                    merged[key] = Diagnostic(
                        **{**diag.__dict__, "host_names": list(diag.host_names)}
                    )
        return list(merged.values())

    @property
    def errors(self) -> int:
        return sum(1 for d in self.diagnostics if d.severity == "error")

    @property
    def warnings(self) -> int:
        return sum(1 for d in self.diagnostics if d.severity == "warning")

    @property
    def instantiations(self) -> int:
        return sum(c.instantiations for c in self.chunks)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.chunks)

    def to_json(self) -> dict[str, object]:
        """The machine-readable result (schema :data:`CHECK_SCHEMA`)."""
        return {
            "schema": CHECK_SCHEMA,
            "ok": self.ok,
            "compiler": self.compiler.version,
            "mode": self.mode,
            "source_dir": str(self.source_dir),
            "instantiations": self.instantiations,
            "errors": self.errors,
            "warnings": self.warnings,
            "seconds": round(self.seconds, 3),
            "chunks": [
                {
                    "chunk": c.chunk,
                    "unit": c.unit,
                    "instantiations": c.instantiations,
                    "ok": c.ok,
                    "seconds": round(c.seconds, 3),
                }
                for c in self.chunks
            ],
            "diagnostics": [d.to_json() for d in self.diagnostics],
        }


def aot_chunks(
    catalog: Catalog,
    families: Iterable[str] | None = None,
    dtypes: Iterable[str] | None = None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
) -> list[CheckChunk]:
    """The catalog's generated entry files as chunks, the same texts the build compiles
    (``builder.kernels.catalog_tree``: the same content-defined cuts, named alike), so a check
    compiles what a build compiles."""
    wanted = set(families) if families is not None else None
    chosen = [f for f in catalog.family_names if wanted is None or f in wanted]
    if wanted is not None:
        catalog.expand(sorted(wanted), None)  # an unknown family is the usual UsageError
    tree = generate_tree(catalog, chosen, list(dtypes) if dtypes else None, chunk_size)
    return [CheckChunk(e.name, e.text(), e.unit) for e in tree.entries]


def jit_chunk(name: str, source: str, instantiations: Sequence[Instantiation]) -> CheckChunk:
    """A generated JIT source with its instantiation lines appended, as the JIT build compiles it
    at run time; check it like an AOT chunk (``run_check`` / ``check_library(extra=...)``)."""
    lines = "\n".join(inst.instantiation_line() for inst in instantiations)
    unit = instantiations[0].family if instantiations else None
    return CheckChunk(name, f"{source.rstrip()}\n\n{lines}\n", unit)


def shim_dir_for(source_dir: Path) -> Path:
    """The tree's own shim when it has one, else the bundled shim."""
    own = source_dir / "shim"
    if (own / "metal_stdlib").is_file():
        return own
    from builder.resources import metal_src_dir

    return metal_src_dir() / "shim"


def _catalog_lines(catalog: Catalog) -> dict[str, int]:
    """Host name -> line of its form's declaration in catalog.json (where a bad template
    name or argument pattern would have to be fixed)."""
    text = read_text(catalog.path, "the catalog", MAX_JSON)
    form_line: dict[tuple[str, str], int] = {}
    for family in catalog.families.values():
        start = text.find(f'"{family.name}": {{', text.find('"families"'))
        for form in family.forms:
            pos = text.find(f'"{form.name}": {{', max(start, 0))
            form_line[(family.name, form.name)] = text.count("\n", 0, pos) + 1 if pos >= 0 else 1
    return {inst.host_name: form_line[(inst.family, inst.form)] for inst in catalog.expand()}


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


def _compile(compiler: Compiler, flags: list[str], path: Path) -> tuple[int, str, float]:
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
            code, output, seconds = _compile(compiler, flags, path)
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


def _display_root(source_dir: Path) -> str:
    """Show a tree under the working directory by its relative path, others as given."""
    try:
        return str(source_dir.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(source_dir)


def check_library(
    source_dir: Path | None = None,
    *,
    families: Iterable[str] | None = None,
    dtypes: Iterable[str] | None = None,
    compiler: str | Compiler | None = None,
    jobs: int | None = None,
    syntax_only: bool = False,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    extra: Sequence[CheckChunk] = (),
    on_plan: Callable[[list[CheckChunk]], None] | None = None,
    on_done: Callable[[ChunkResult], None] | None = None,
) -> CheckResult:
    """Check a kernel tree's catalog instantiations (default: the bundled ``metal_src``).

    ``extra`` chunks are compiled alongside (the JIT build's generated sources, see
    :func:`jit_chunk`). Raises UsageError for a tree without ``catalog.json``, a bad selection or
    no compiler; the caller decides what a failed result means (the CLI raises CheckFailed).
    """
    catalog = load_catalog(source_dir)
    located = compiler if isinstance(compiler, Compiler) else find_compiler(compiler)
    chunks = aot_chunks(catalog, families, dtypes, chunk_size) + list(extra)
    if on_plan is not None:
        on_plan(chunks)
    return run_check(
        chunks,
        source_dir=catalog.source_dir,
        compiler=located,
        jobs=jobs,
        syntax_only=syntax_only,
        display_root=_display_root(catalog.source_dir),
        catalog_lines=_catalog_lines(catalog),
        on_done=on_done,
    )
