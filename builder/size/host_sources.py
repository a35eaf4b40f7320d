"""A shipped host library's run-time sources as a report's JIT rows, each named by the header of
a kernel tree it was made from.

``report libmlx.dylib --source-dir TREE``: MLX's host library holds no metallib, but it holds
the preambles its host compiles at run time, each returned by a ``const char* name()``
function. ``builder.size.host_strings`` finds each of those strings in the binary itself (the
function's body, decoded, points at a NUL-ended literal of ``__TEXT,__cstring``); this module
turns them into rows a report shows like a build's JIT units:

* **Which header.** A source names the file it was made from in its first lines: MLX's
  generator writes ``// Auto generated source for mlx/backend/metal/kernels/utils.h``, this
  tool's inliner starts each file's text with ``#line 1 "utils.h"``. That path is looked up as
  a quoted include resolves: under the tree's root, then each ``-I`` folder; failing that, under
  the root with the path's leading folders taken off one at a time (``--source-dir
  mlx/backend/metal/kernels`` without ``-I``). The row is the header as found, relative to the
  folder it was found in (``mlx/backend/metal/kernels/utils.h`` under an include root,
  ``indexing/gather.h`` under the kernels folder).
* **Not in the tree.** A source whose header the tree lacks (another release), or that names
  none (MLX's CPU ``get_prebuilt_preamble``), keeps the name the binary gives it: the header it
  names, its function's C++ name, or ``(unnamed at 0x…)`` in a stripped binary. These are
  listed in ``HostLibrary.unmatched`` for the warning ``report`` prints.
* **Bytes.** What the file holds for the string, its NUL included; sources of one name (the
  slices of a fat file) are added up. The rest of the file is one row: no symbol is read.

Without a tree every row keeps the binary's name. Standard library only.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from builder.files.reading import open_regular
from builder.size.jit_sizes import HostLibrary, JitUnit

__all__ = ["STRINGS_METHOD", "measure_host_sources", "source_header"]

STRINGS_METHOD = "run-time source strings"
"""``host_library.measured_by`` of a host library measured by its run-time sources."""

_HEAD = 4096  # a source names its header in its first lines
_NAMED = re.compile(rb'// Auto generated source for ([^\s"]{1,512})|#line \d+ "([^"\n]{1,512})"')


def source_header(head: bytes) -> str | None:
    """The header a run-time source says it was made from (its first lines: MLX's comment or
    a ``#line`` marker), as a relative POSIX path; None when it names none, or a path that
    could leave a folder (absolute, ``..``)."""
    found = _NAMED.search(head)
    if found is None:
        return None
    text = (found.group(1) or found.group(2) or b"").decode("utf-8", "replace")
    path = PurePosixPath(text)
    if path.is_absolute() or ".." in path.parts or "\\" in text or not path.parts:
        return None
    return path.as_posix()


def _in_tree(header: str, folders: Sequence[Path]) -> str | None:
    """``header`` as found in the tree (``folders``: its root, then the -I folders): relative to
    the folder holding it; None when no folder holds it."""
    path = PurePosixPath(header)
    for folder in folders:
        if (folder / path).is_file():
            return path.as_posix()
    if folders:
        for start in range(1, len(path.parts)):
            tail = PurePosixPath(*path.parts[start:])
            if (folders[0] / tail).is_file():
                return tail.as_posix()
    return None


def measure_host_sources(
    path: Path, folders: Sequence[Path] = ()
) -> tuple[list[JitUnit], HostLibrary] | None:
    """The run-time sources of the Mach-O host library at ``path`` as JIT rows, named by the
    tree whose root and -I folders are ``folders`` (none: the binary's names), and the host
    library they add up to; None when it holds none (or is no Mach-O)."""
    from builder.size.host_strings import host_strings

    found = host_strings(path)
    if not found:
        return None
    sizes: dict[str, int] = {}
    unmatched: dict[str, None] = {}
    with open_regular(os.fspath(path), "the host library") as handle:
        for source in found:
            handle.seek(source.offset)
            header = source_header(handle.read(min(source.size, _HEAD)))
            name = _in_tree(header, folders) if header is not None and folders else None
            if name is None:
                name = header or source.label
                if folders:
                    unmatched.setdefault(name)
            sizes[name] = sizes.get(name, 0) + source.size
    rows = [JitUnit(name, size, size) for name, size in sizes.items()]
    size = os.path.getsize(path)
    return rows, HostLibrary(str(path), size, STRINGS_METHOD, 0, tuple(unmatched))
