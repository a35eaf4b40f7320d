"""How each entry file of a discovered tree is embedded when it is JIT.

Two embeddings of one entry file as run-time source:

- **whole-file**: the entry file's own text, its quoted includes inlined (each file once, with
  ``#line`` markers), is one run-time source. The host compiles it and gets every kernel the file
  defines, instantiations included: what ggml's ``GGML_METAL_EMBED_LIBRARY`` and candle's
  ``new_library_with_source`` do.
- **preamble**: MLX's way. The headers the entry file includes are preambles (shared ones once),
  and the host writes the instantiation lines itself.

The choice is automatic: an entry file that writes its own kernel templates (MLX's
``arg_reduce.metal``, ggml's ``ggml-metal.metal``), or that defines its kernels itself with none of
them written in a header (candle's ``unary.metal``), gets the whole-file embedding; no header
holds its code, so a host working from preambles could not build it. Every other entry file keeps
the preamble embedding. ``[build.embedding]`` in metallib.toml overrides the choice per glob
(later globs win); a glob that matches no entry file is an error naming it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from builder.errors import UsageError
from builder.kernels.tree_files import entry_files, path_matches, unmatched_glob

if TYPE_CHECKING:
    from builder.kernels.discovery import KernelTree

__all__ = ["PREAMBLE", "WHOLE_FILE", "automatic_embedding", "embeddings"]

WHOLE_FILE = "whole-file"
PREAMBLE = "preamble"


def automatic_embedding(tree: KernelTree) -> dict[str, str]:
    """Entry file -> its embedding without settings, for every entry file in tree order."""
    if tree.kind == "catalog":
        return {source: PREAMBLE for source in tree.sources}
    own_templates = tree.own_templates()
    in_entry: dict[str, bool] = {}  # entry file -> every kernel's code written in it
    for (source, _, _), (where, _count) in tree.code_sites.items():
        in_entry[source] = in_entry.get(source, True) and where == source
    return {
        source: WHOLE_FILE if source in own_templates or in_entry.get(source) else PREAMBLE
        for source in tree.sources
    }


def embeddings(tree: KernelTree) -> dict[str, str]:
    """Entry file -> ``whole-file`` or ``preamble``: the automatic choice with
    ``[build.embedding]`` over it. UsageError (exit 2) for a glob that names no entry file (one
    that names only excluded files is no typo) or for settings on a catalog tree."""
    chosen = automatic_embedding(tree)
    settings = tree.config.embedding
    if not settings:
        return chosen
    if tree.kind == "catalog":
        raise UsageError(
            f"{tree.config.path}: [build.embedding] applies to a folder of .metal entry files; "
            f"{tree.root} is a catalog tree, whose families are embedded as preambles"
        )
    globs = [glob for glob, _ in settings]
    if unmatched_glob(globs, tree.sources) is not None:
        missing = unmatched_glob(globs, entry_files(tree.root))
        if missing is not None:
            count = len(tree.sources)
            raise UsageError(
                f"{tree.config.path}: [build.embedding] {missing!r} matches no entry file of "
                f"{tree.root} ({count:,} entry file{'s' if count != 1 else ''})"
            )
    for source in chosen:
        for glob, value in settings:
            if path_matches(source, [glob]):
                chosen[source] = value
    return chosen
