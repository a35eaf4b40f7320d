"""``python -m builder.jit``: the JIT generator as CMake calls it (no Click, no rich).

Actions:

``family``  write one catalog family's generated source, facts JSON and depfile
``merge``   combine the families' facts into the target's embed.json
``embed``   the standalone generator (same as ``metallib-builder embed``; MetallibEmbed.cmake)

Exit status 2 with one ``error:`` line on stderr for any unusable input (missing include, bad
family): the build fails at that step and says why.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from builder.errors import step_exit
from builder.files.reading import read_json
from builder.kernels.runtime_sources import APIS, DEFAULT_NAMESPACE

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m builder.jit", allow_abbrev=False)
    sub = parser.add_subparsers(dest="action", required=True)

    fam = sub.add_parser("family", help="generate one family's source", allow_abbrev=False)
    fam.add_argument("--source-dir", type=Path, required=True, help="kernel tree root")
    fam.add_argument("--family", required=True)
    fam.add_argument("--dtypes", default=None, help="comma-separated dtypes (default: all)")
    fam.add_argument("--out-dir", type=Path, required=True)
    fam.add_argument("--depfile", type=Path, default=None)
    fam.add_argument("--compress", action="store_true")
    fam.add_argument("--no-dedup", action="store_true")
    fam.add_argument("--strip-comments", action="store_true")

    merge = sub.add_parser("merge", help="write embed.json", allow_abbrev=False)
    merge.add_argument("--target", required=True)
    merge.add_argument("--compress", action="store_true")
    merge.add_argument("--no-dedup", action="store_true")
    merge.add_argument("--strip-comments", action="store_true")
    merge.add_argument("--out", type=Path, required=True)
    merge.add_argument("facts", nargs="*", type=Path)

    emb = sub.add_parser("embed", help="standalone preamble source", allow_abbrev=False)
    emb.add_argument("headers", nargs="*")
    emb.add_argument("--preamble", dest="preambles", action="append", default=[])
    emb.add_argument("-I", dest="include_dirs", action="append", default=[])
    emb.add_argument("-D", dest="defines", action="append", default=[])
    emb.add_argument("-o", dest="output", type=Path, required=True)
    emb.add_argument("--jit-namespace", default=DEFAULT_NAMESPACE)
    emb.add_argument("--jit-api", choices=APIS, default=APIS[0])
    emb.add_argument("--no-jit-lookup", action="store_true")
    emb.add_argument("--depfile", type=Path, default=None)
    emb.add_argument("--strip-comments", action="store_true")
    emb.add_argument("--allow-outside-includes", action="store_true")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one action; 0 on success, 2 (one error line) on unusable input."""
    args = _parser().parse_args(argv)
    return step_exit(lambda: _run(args))


def _run(args: argparse.Namespace) -> None:
    from builder.jit import family_source, generate
    from builder.kernels.catalog import split_names
    from builder.records.manifest import write_embed_facts

    if args.action == "family":
        family_source.write_family(
            args.source_dir,
            args.family,
            args.out_dir,
            split_names(args.dtypes),
            compress=args.compress,
            dedup=not args.no_dedup,
            strip=args.strip_comments,
            depfile=args.depfile,
        )
    elif args.action == "merge":
        facts = [read_json(p, "the embed facts") for p in args.facts]
        merged = family_source.merge_facts(
            args.target, args.compress, not args.no_dedup, facts, args.strip_comments
        )
        write_embed_facts(args.out, merged)
    else:
        generate.write_embed(
            args.headers,
            args.include_dirs,
            args.output,
            args.defines,
            args.jit_namespace,
            strip=args.strip_comments,
            api=args.jit_api,
            lookup=not args.no_jit_lookup,
            depfile=args.depfile,
            allow_outside_includes=args.allow_outside_includes,
            named=generate.named_preambles(args.preambles),
        )


if __name__ == "__main__":
    raise SystemExit(main())
