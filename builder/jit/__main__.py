"""``python -m builder.jit``: the JIT generator as CMake calls it (no Click, no rich).

``embed``: the standalone generator (same as ``metallib-builder embed``; MetallibEmbed.cmake).
A tree's host library, the catalog's too, is written by ``python -m builder.cmake_build.tree_jit``.

Exit status 2 with one ``error:`` line on stderr for any unusable input (a missing include): the
build fails at that step and says why.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from builder.errors import step_exit
from builder.settings.text_rules import APIS, DEFAULT_NAMESPACE

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m builder.jit", allow_abbrev=False)
    sub = parser.add_subparsers(dest="action", required=True)

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
    from builder.jit import generate

    embedded = generate.embed_headers(
        args.headers,
        args.include_dirs,
        args.defines,
        args.jit_namespace,
        named=generate.named_preambles(args.preambles),
        strip=args.strip_comments,
        api=args.jit_api,
        lookup=not args.no_jit_lookup,
        allow_outside_includes=args.allow_outside_includes,
    )
    generate.write_embed(args.output, embedded, args.depfile)


if __name__ == "__main__":
    raise SystemExit(main())
