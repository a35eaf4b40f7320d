"""``metallib-builder check`` on a tree that is not a catalog: file by file, what the host C++
compiler can prove without Apple's (preprocess, templates, run-time sources; the three checks
and why are in ``builder.jit.check``'s docstring). A file that does not preprocess is reported and
the rest are still checked (discovery runs again without it)."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from builder.errors import UsageError
from builder.files.dataclass_json import dump
from builder.jit.check import compile_source, shown_path
from builder.jit.generate import embed_headers
from builder.jit.tree_preambles import jit_preambles
from builder.kernels.bounded_run import Compiler, find_compiler
from builder.kernels.discovery import discover
from builder.kernels.kernel_tree import KernelTree
from builder.kernels.tree_config import TreeConfig
from builder.kernels.tree_files import entry_files

__all__ = ["CHECKS", "FileCheck", "TreeCheck", "check_tree"]

CHECKS = ("preprocess", "templates", "run-time source")
"""What is checked, in the order it is reported."""


@dataclass
class FileCheck:
    """The findings for one file of the tree (an entry file, or a header a preamble is made
    from): one line each, empty when the file is clean."""

    path: str
    kind: str  # "entry file" or "preamble"
    kernels: int = 0
    findings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.findings


@dataclass(frozen=True)
class TreeCheck:
    """Every file's result; ``ok`` when no file has a finding."""

    root: Path
    files: tuple[FileCheck, ...]
    compiler: str

    @property
    def ok(self) -> bool:
        return all(f.ok for f in self.files)

    def to_json(self) -> dict[str, object]:
        return {
            "schema": 1,
            "kind": "discovered",
            "source_dir": str(self.root),
            "checks": list(CHECKS),
            "compiler": self.compiler,
            "ok": self.ok,
            "files": dump(self.files),  # each file's fields, in order
        }


def _discover_each(
    root: Path, config: TreeConfig, compiler: str | None
) -> tuple[KernelTree | None, dict[str, str]]:
    """Discovery of the tree, leaving out each entry file that does not preprocess (named with
    its error) and trying again: a tree with F broken files costs F + 1 passes."""
    failed: dict[str, str] = {}
    while True:
        try:
            return discover(root, config, compiler=compiler), failed
        except UsageError as exc:  # "<entry>: ..." for a file that fails; else not per file
            message = str(exc)
            entry = message.split(":", 1)[0]
            if entry in failed or entry not in entry_files(root, config.exclude):
                raise
            failed[entry] = message[len(entry) + 1 :].strip().removeprefix("does not preprocess: ")
            config = replace(config, exclude=(*config.exclude, entry))
            if not entry_files(root, config.exclude):
                return None, failed


def _template_findings(tree: KernelTree) -> dict[str, list[str]]:
    """Entry file -> one finding per template it instantiates but no file it reads defines."""
    found: dict[str, list[str]] = {}
    for (source, template, name), (where, count) in tree.code_sites.items():
        if template is not None and (source, name) not in tree.written_in:
            found.setdefault(source, []).append(
                f"instantiates {template} ({count} kernel(s)), defined in no file it reads"
            )
    return found


def _compile_string_form(text: str, cxx: Compiler) -> str | None:
    """The first error line of compiling ``text`` as C++17, or None when it compiles."""
    with tempfile.TemporaryDirectory(prefix="metallib-check-") as tmp:
        source = Path(tmp) / "preamble.cpp"
        source.write_text(text, encoding="utf-8")
        code, output, _ = compile_source(cxx, ["-std=c++17", "-fsyntax-only"], source)
    if code == 0:
        return None
    lines = [line for line in output.splitlines() if "error" in line]
    return (lines[0] if lines else output.strip()).replace(str(source), "<string form>")


def check_tree(root: Path, config: TreeConfig, *, compiler: str | None = None) -> TreeCheck:
    """Check the discovered tree at ``root`` with ``config`` (its settings and flags merged)."""
    cxx = find_compiler(compiler)
    tree, failed = _discover_each(root, config, compiler)
    results: dict[str, FileCheck] = {
        entry: FileCheck(entry, "entry file", findings=[f"does not preprocess: {why}"])
        for entry, why in failed.items()
    }
    if tree is not None:
        templates = _template_findings(tree)
        for entry, records in tree.by_source().items():
            results[entry] = FileCheck(entry, "entry file", len(records), templates.get(entry, []))
        for key, check in _preamble_checks(tree, cxx).items():
            if key in results:  # an entry file embedded whole: its own row says how it embeds
                results[key].findings.extend(check.findings)
            else:
                results[key] = check
    ordered = sorted(results.values(), key=lambda f: (f.kind != "entry file", f.path))
    return TreeCheck(root, tuple(ordered), cxx.version)


def _preamble_checks(tree: KernelTree, cxx: Compiler) -> dict[str, FileCheck]:
    """One result per run-time source a JIT build of the tree could embed (a preamble, or an
    entry file embedded whole), keyed by its first header."""
    include_dirs = [*tree.config.include_dirs, tree.root.resolve()]
    results: dict[str, FileCheck] = {}
    for spec in jit_preambles(tree, tree.sources):  # every entry file may be JIT
        shown = shown_path(spec.headers[0], tree.root)
        check = FileCheck(shown, "preamble")
        whole = spec.embedding == "whole-file"
        try:
            text, _ = embed_headers([], include_dirs, named=[(spec.function, spec.headers)])
        except UsageError as exc:
            check.findings.append(f"does not embed: {exc}")
        else:
            error = _compile_string_form(text, cxx)
            if error is not None:
                check.findings.append(
                    f"{spec.function}(): its string form does not compile: {error}"
                )
        results[spec.entries[0] if whole else f"preamble:{shown}"] = check
    return results
