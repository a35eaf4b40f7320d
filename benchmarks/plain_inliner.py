"""Baseline for ``embed`` (issue 34 item 12): a plain Python inliner that writes the same text.

Reads a header, replaces each ``#include "NAME"`` line with the file it names (found beside the
including file, then in the ``-I`` folders; each file once, recursively), puts a ``#line N
"FILE"`` marker before each run of a file's lines, blanks ``#pragma once``, and writes the text
into a C++ raw string literal. No comment scan, no checks, no pieces: the least an inliner does.
Nothing of ``builder`` is imported. ``bench_embed.py`` checks first that its text equals the
preamble ``embed`` writes.

    python benchmarks/plain_inliner.py HEADER -I DIR ... -o OUT
"""

import os
import re
import sys
from pathlib import Path

QUOTED = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"')
PRAGMA_ONCE = re.compile(r"^[ \t]*#[ \t]*pragma[ \t]+once\b")

args = sys.argv[1:]
out_path = Path(args[args.index("-o") + 1])
dirs = [Path(os.path.realpath(args[i + 1])) for i, a in enumerate(args) if a == "-I"]
root = Path(os.path.realpath(args[0]))
seen: set[Path] = set()
parts: list[str] = []


def display(path: Path) -> str:
    for folder in dirs:
        if path.is_relative_to(folder):
            return path.relative_to(folder).as_posix()
    return path.relative_to(Path.cwd().resolve()).as_posix()


def inline(path: Path) -> None:
    seen.add(path)
    shown = display(path)
    lines = path.read_bytes().decode("utf-8").split("\n")
    if lines[-1] == "":
        lines.pop()
    run: list[str] = []
    start = 1

    def flush() -> None:
        if any(line.strip() for line in run):
            parts.append(f'#line {start} "{shown}"\n' + "".join(line + "\n" for line in run))

    for number, line in enumerate(lines, 1):
        found = QUOTED.match(line)
        if found:
            flush()
            run, start = [], number + 1
            for folder in (path.parent, *dirs):
                target = folder / found.group(1)
                if target.is_file():
                    target = Path(os.path.realpath(target))
                    if target not in seen:
                        inline(target)
                    break
            continue
        run.append("" if PRAGMA_ONCE.match(line) else line)
    flush()


inline(root)
text = "".join(parts)
out_path.write_text(f'const char preamble[] = R"mbjit({text})mbjit";\n', encoding="utf-8")
