"""``list``, ``verify`` and ``slim``: commands over the functions of metallibs.

``list`` and ``verify`` take every library a target holds in turn (a binary or wheel may hold
several: one block each, ``--member`` narrows to one); ``slim`` writes one.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import click

from builder.cli.publishing import emit_json, format_option, say
from builder.cli.tree_options import option
from builder.errors import CheckFailed, UsageError

if TYPE_CHECKING:
    from builder.inputs.targets import Library
    from builder.metallib.reader import Metallib
    from builder.metallib.verify import VerifyReport
    from builder.size.rollup import FunctionRow
    from builder.subsets.slim import SlimResult

__all__ = ["list_command", "slim_command", "verify_command"]

_FILE = click.Path(dir_okay=False, path_type=Path)


def _libraries(
    target: str, member: str | None, platform: str | None, command: str
) -> list[Library]:
    """Every library of TARGET whose functions ``command`` reads (``member`` keeps the one it
    names); a build with no metallib is refused, as for one library, and so is a saved report
    but by ``list``, which shows the functions it records."""
    from builder.inputs.targets import one_metallib, resolve_target

    found = resolve_target(target, platform=platform, member=member, progress=say)
    return [
        lib
        if lib.saved is not None and command == "list"
        else one_metallib(target, [lib], member=None, command=command)
        for lib in found
    ]


def _listed(library: Library, sort: str) -> tuple[tuple[int, str], list[FunctionRow]]:
    """The file size and format version of ``library`` and its function rows: read from the
    metallib, or from the saved report (``builder.size.saved``: the report model's
    function rows, checked as ``report`` reads them back)."""
    from builder.render.library import function_rows, sorted_rows

    if library.saved is not None:
        from builder.size.saved import read_report

        report = read_report(library.saved, library.target)
        return (report.file_size, report.format_version), sorted_rows(report.functions, sort)
    from builder.inputs.targets import open_library

    with open_library(library) as lib:
        return (lib.file_size, lib.header.format_version_text), function_rows(lib, sort)


@click.command(
    "list",
    epilog="""\b
Examples:
  metallib-builder list mlx.metallib --sort size | head
  metallib-builder list mlx.metallib --format json | jq '.functions[0]'
  metallib-builder list metal-linalg==2.19.0 --format json | jq '.libraries[].source'
""",
)
@click.argument("target")
@format_option(("table", "json"), "table for people; json (schema 1) for scripts.")
@option("member")
@click.option(
    "--sort",
    type=click.Choice(["index", "name", "size"]),
    default="index",
    show_default=True,
    help="Order of the rows: file order, by name, or largest module first.",
)
@option("platform")
def list_command(
    target: str, fmt: str, sort: str, member: str | None, platform: str | None
) -> None:
    """List the functions in a metallib with their type and sizes.

    bitcode is the size of the function's module in the bitcode section (wrapper and padding
    included); bytes is everything the function owns: its list entry, metadata pieces, module
    and reflection piece. TARGET is any target 'report' takes (a saved report .json: the
    functions it records, without their type: '-', null in JSON). A TARGET holding several
    metallibs lists each in turn (JSON: one document, its "libraries"); --member lists one.
    """
    from builder.render.library import rows_json, rows_table

    documents = []
    for number, library in enumerate(_libraries(target, member, platform, "list")):
        file, rows = _listed(library, sort)
        if fmt == "json":
            documents.append(rows_json(file, library.label, rows, library.member))
        else:
            text = rows_table(file, library.label, rows)
            sys.stdout.write(("\n" if number else "") + text + "\n")
    if fmt == "json":
        sys.stdout.write(_one_document(target, documents) + "\n")


def _one_document(target: str, documents: list[str]) -> str:
    """One library's JSON object (text) as it is; several as ``{"schema": 1, "source":
    TARGET, "libraries": [...]}``, so stdout is always one document."""
    if len(documents) == 1:
        return documents[0]
    from json.encoder import encode_basestring_ascii as quote

    from builder.files.dataclass_json import clean

    return f'{{"schema":1,"source":{quote(clean(target))},"libraries":[{",".join(documents)}]}}'


@click.command(
    "verify",
    epilog="""\b
Examples:
  metallib-builder verify mlx.metallib
  metallib-builder verify build/mlx.metallib --format json | jq '.problems'
  metallib-builder verify torch==2.14.1 --member '#2'

\b
Exit status: 0 every check passed, 1 a function failed a check (named in the
output) or a library's deployment target is above its wheel's platform tag
(named), 2 the file is unreadable or not a metallib.
""",
)
@click.argument("target")
@option("member")
@format_option(("text", "json"), "text for people; json (schema 1) for scripts.")
@option("platform")
def verify_command(target: str, fmt: str, member: str | None, platform: str | None) -> None:
    """Check a metallib's structure and every function's SHA-256.

    Parsing checks the header, every offset and size, and that no regions overlap; then each
    module is hashed and compared with its HASH tag, and each module wrapper, metadata piece and
    reflection piece is walked. A library of a wheel whose deployment target is above the
    wheel's platform tag fails, unless its binary holds one that meets the tag (a note then);
    functions of several VERS versions, or of a Metal version newer than the deployment target
    allows, are warnings. TARGET is what 'list' takes; a TARGET holding several metallibs
    has each checked in turn, one block each and a last line with the verdict over all (JSON:
    one document, "ok" over all and its "libraries"); exit 1 when any fails. --member checks one.
    """
    from builder.inputs.targets import open_library
    from builder.metallib import verify
    from builder.render.library import verify_dict, verify_lines, verify_verdict

    libraries = _libraries(target, member, platform, "verify")
    documents = []
    failed: list[tuple[str, VerifyReport]] = []
    for library in libraries:
        shown = library.label
        with open_library(library) as lib:
            size = lib.header.bitcode.size
            report = _with_progress(partial(verify, lib), size)
            said = _platform(library, lib, report)
        if not report.ok:
            failed.append((shown, report))
        if fmt == "json":
            documents.append(verify_dict(report, shown, library.member, *said))
        else:
            click.echo("\n".join(verify_lines(report, shown, *said)))
    if fmt == "json":
        emit_json(
            documents[0]
            if len(documents) == 1
            else {"schema": 1, "source": target, "ok": not failed, "libraries": documents}
        )
    elif len(libraries) > 1:
        click.echo(verify_verdict(target, len(libraries), [name for name, _ in failed]))
    if failed:
        raise CheckFailed(_failure(failed, len(libraries)))


def _platform(library: Library, lib: Metallib, report: VerifyReport) -> tuple[list[str], list[str]]:
    """The warnings and notes about the platform ``lib`` states (its functions' versions, its
    wheel's platform tag: ``builder.size.platform_warnings``); a library whose deployment
    target is above its wheel's tag, in a file where no library meets the tag, is a problem of
    ``report`` at the header's deployment target field (byte 12): the verdict fails."""
    from builder.errors import MetallibFormatError
    from builder.metallib.reader import library_provenance
    from builder.metallib.verify import Problem
    from builder.size.platform_warnings import check_wheel_tag, version_warnings

    try:
        warnings = version_warnings(library_provenance(lib, sample=0).as_dict())
    except MetallibFormatError:  # a name that is not text: reported already, as a problem
        warnings = []
    major, minor = lib.header.deployment_target
    check = check_wheel_tag(library, f"{major}.{minor}", lib.header.platform)
    if check is None:
        return warnings, []
    if check.failed:
        report.problems.append(Problem(None, _DEPLOYMENT_TARGET, check.sentence()))
        return warnings, []
    return warnings, [check.sentence()]


_DEPLOYMENT_TARGET = 12
"""Where the header states the deployment target (docs/metallib-format.md, "Regions")."""


def _failure(failed: list[tuple[str, VerifyReport]], count: int) -> str:
    """The error line: the functions that failed (and in which library, of several), else what
    failed in the container (the first problem)."""
    parts = []
    for shown, report in failed:
        bad = report.bad_functions  # main() escapes the error line
        names = ", ".join(bad[:5]) + (f" and {len(bad) - 5} more" if len(bad) > 5 else "")
        what = f"{len(bad)} functions failed verification: {names}" if bad else None
        if count == 1:
            return what or _container_failure(report)
        parts.append(f"{shown} ({what or 'its ' + _container_failure(report)})")
    return f"{len(failed)} of {count} libraries failed verification: " + "; ".join(parts)


def _container_failure(report: VerifyReport) -> str:
    """What failed when no function did: the platform tag's sentence, else the container."""
    tag = [
        p.message for p in report.problems if p.function is None and p.offset == _DEPLOYMENT_TARGET
    ]
    return tag[0] if tag else "container check failed"


T = TypeVar("T")


def _with_progress(work: Callable[[Callable[[int], None] | None], T], total: int) -> T:
    """Run ``work(progress)`` with a progress bar on stderr when stderr is a terminal."""
    if not sys.stderr.isatty() or total < (32 << 20):
        return work(None)
    from rich.progress import BarColumn, DownloadColumn

    from builder.cli.console import stderr_bar

    with stderr_bar("hashing modules", BarColumn(), DownloadColumn()) as bar:
        task = bar.add_task("hash", total=total)
        return work(lambda done: bar.update(task, completed=done))


@click.command(
    "slim",
    epilog="""\b
Examples:
  metallib-builder slim mlx.metallib -o small.metallib --keep '*copy*' --keep 'vv_Add*'
  metallib-builder slim mlx-metal==0.32.1 -o small.metallib --drop '*bfloat16*'
  metallib-builder slim build/ -o small.metallib --keep-list kernels.txt --format json
  metallib-builder slim mlx_metal-0.32.1-py3-none-macosx_14_0_arm64.whl -o small.metallib \\
      --member mlx/lib/mlx.metallib --keep 'gemv*'
""",
)
@click.argument("target")
@click.option("-o", "--output", type=_FILE, required=True, help="The metallib to write.")
@click.option(
    "--keep", multiple=True, metavar="GLOB", help="Keep functions matching GLOB (repeatable)."
)
@click.option(
    "--drop", multiple=True, metavar="GLOB", help="Drop functions matching GLOB (repeatable)."
)
@click.option(
    "--keep-list",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="A file of names or globs to keep, one per line ('#' starts a comment).",
)
@option("member")
@option("platform")
@click.option(
    "--in-place",
    is_flag=True,
    help="Allow OUTPUT to be the same file as TARGET (a .metallib given by its path).",
)
@click.option(
    "--allow-hash-mismatch",
    is_flag=True,
    help="Copy kept functions whose module SHA-256 does not match their HASH tag (with a "
    "warning) instead of refusing.",
)
@format_option(("text", "json"), "text for people; json (schema 1) for scripts.")
def slim_command(
    target: str,
    output: Path,
    keep: tuple[str, ...],
    drop: tuple[str, ...],
    keep_list: Path | None,
    member: str | None,
    platform: str | None,
    in_place: bool,
    allow_hash_mismatch: bool,
    fmt: str,
) -> None:
    """Write a metallib holding a subset of TARGET's functions.

    TARGET is any target 'report' takes but a saved report .json (no functions to copy); one
    holding several metallibs needs --member ('#2'), a binary's is written as a standalone one.

    Kept functions keep their modules, metadata and reflection data byte for byte, in their
    original order; offsets, counts and sizes are recomputed and the subset gets a new UUID
    derived from its content (same input and selection give the same bytes). Keeping every
    function reproduces the input exactly.

    Each kept module's SHA-256 is checked against its HASH tag; a mismatch stops the run (exit
    2) unless --allow-hash-mismatch. A --keep or --drop GLOB that matches nothing is an error; a
    --keep-list line that matches nothing is a warning (the list may name kernels of another
    library version). OUTPUT is written to a temporary file and renamed only after every check
    passed; it keeps the mode of the file it replaces, and a symlink is written through.
    """
    from builder.files.atomic import check_not_an_input
    from builder.inputs.targets import one_metallib, resolve_target
    from builder.subsets.slim import read_keep_list, slim_file

    check_not_an_input(output, [keep_list])  # (the input: slim_file, which knows --in-place)
    listed = read_keep_list(keep_list) if keep_list else []
    if not keep and not listed and not drop:
        raise UsageError("say what to keep or drop: --keep GLOB, --drop GLOB or --keep-list FILE")
    found = resolve_target(target, platform=platform, progress=say)
    library = one_metallib(target, found, member=member, command="slim")
    if in_place and library.kind != "metallib":
        raise UsageError(
            f"--in-place rewrites a .metallib named by its path; {target} is not "
            "one (its metallib is read from a wheel or a build): give -o a new "
            "file"
        )
    assert library.path is not None  # one_metallib refuses a library without one
    result = slim_file(
        library.path,
        output,
        window=library.window,
        keep=keep,
        drop=drop,
        keep_list=listed,
        in_place=in_place,
        allow_hash_mismatch=allow_hash_mismatch,
    )
    _slim_warnings(result, keep_list)
    if fmt == "json":
        doc = result._asdict()
        del doc["kept"]  # the output's own function list names them
        doc["hash_mismatches"] = [m._asdict() for m in result.hash_mismatches]
        emit_json({"schema": 1, "target": target, **doc})
        return
    saved = result.bytes_before - result.bytes_after
    share = 100.0 * saved / result.bytes_before if result.bytes_before else 0.0
    click.echo(
        f"before: {result.functions_before} functions, {result.bytes_before} bytes ({result.input})"
    )
    click.echo(
        f"after:  {result.functions_after} functions, {result.bytes_after} bytes ({result.output})"
    )
    from builder.render.text import human_size  # not imported at start-up: text output only

    click.echo(f"saved:  {saved} bytes ({human_size(saved)}, {share:.1f}%)")


def _slim_warnings(result: SlimResult, keep_list: Path | None) -> None:
    """What slim let pass, on stderr: unmatched keep-list lines, functions with a bad hash."""
    from builder.subsets.slim import describe_mismatches

    missing = result.unmatched_keep_list
    if missing:
        shown = ", ".join(repr(p) for p in missing[:5]) + (" ..." if len(missing) > 5 else "")
        say(
            f"warning: {keep_list}: {len(missing)} line(s) match no function in {result.input}: "
            f"{shown}"
        )
    bad = result.hash_mismatches
    if bad:
        say(
            f"warning: copied {len(bad)} function(s) whose module SHA-256 does not match its "
            f"HASH tag (--allow-hash-mismatch): {describe_mismatches(bad)}"
        )
