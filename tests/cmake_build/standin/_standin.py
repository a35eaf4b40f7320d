"""Shared code of the stand-in Metal tools (NOT Apple's compiler): argument checks, recording.

The AOT build cannot run Apple's ``metal``/``metallib`` on Linux, so the tests point
METAL_COMPILER / METALLIB_LINKER at ``metal-standin`` / ``metallib-standin``. They accept exactly
the command lines cmake/MetalAot.cmake writes (anything else exits 2, so a changed rule shows up),
do the bookkeeping a compiler does (real recursive include scan -> a true depfile; host names from
the instantiation lines -> a placeholder AIR module; a real-format metallib from those), and append
one JSON line per call to $METAL_STANDIN_LOG so tests can see what ran and with which inputs.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

AIR_MAGIC = "; metallib-builder stand-in AIR (placeholder module, not Apple's AIR)\n"
VERSION = "metallib-builder stand-in {tool} 1.0 (records calls, writes placeholders)"
_QUOTED_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.MULTILINE)
_INSTANTIATION = re.compile(r'^\s*instantiate_kernel\(\s*"([^"]+)"', re.MULTILINE)


def fail(tool: str, message: str) -> None:
    """Exit 2 with a compiler-like diagnostic."""
    print(f"{tool}-standin: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def record(tool: str, argv: list[str], **extra: object) -> None:
    """Append one call to $METAL_STANDIN_LOG (one JSON object per line; O_APPEND is atomic enough
    for Ninja's parallel jobs at these line lengths)."""
    log = os.environ.get("METAL_STANDIN_LOG")
    if not log:
        return
    tag = os.environ.get("METAL_STANDIN_TAG")  # set by a test's METAL_COMPILER_LAUNCHER
    line = json.dumps({"tool": tool, "argv": argv, "tag": tag, **extra}) + "\n"
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def scan_includes(source: Path, include_dirs: list[Path]) -> list[Path]:
    """Every file reached through quoted includes, recursively, in first-seen order.

    Like a compiler: a quoted include is looked up beside the including file, then in each -I
    directory; angle includes (<metal_stdlib>) are system headers and not followed. An include
    that resolves nowhere is an error, as it would be for the real compiler.
    """
    seen: dict[Path, None] = {}
    stack = [source]
    while stack:
        current = stack.pop()
        text = current.read_text(encoding="utf-8")
        for name in reversed(_QUOTED_INCLUDE.findall(text)):
            for base in [current.parent, *include_dirs]:
                candidate = (base / name).resolve()
                if candidate.is_file():
                    break
            else:
                fail("metal", f"{current}: '{name}' file not found")
            if candidate not in seen:
                seen[candidate] = None
                stack.append(candidate)
    return list(seen)


def host_names_of(source: Path) -> list[str]:
    """The host names a source instantiates, in order."""
    return _INSTANTIATION.findall(source.read_text(encoding="utf-8"))


def read_air(path: Path) -> list[str]:
    """Host names held by a stand-in AIR file; exit 2 for anything else."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        fail("metallib", f"cannot read {path}: {exc}")
    if not text.startswith(AIR_MAGIC):
        fail("metallib", f"{path} is not a stand-in AIR module")
    return [line[len("kernel ") :] for line in text.splitlines() if line.startswith("kernel ")]


def depfile_escape(path: str) -> str:
    return path.replace("\\", "\\\\").replace(" ", "\\ ").replace("#", "\\#").replace("$", "$$")
