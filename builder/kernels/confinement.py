"""What a kernel tree may make the tool read: its own files, and folders the command line named.

A tree may be anyone's (a pull request analysed in CI, docs/security.md), and what discovery reads
reaches outputs: kernel names, the files each kernel is written in, and through the JIT side the
text of every header inlined into a shipped ``jit_sources.cpp``. So a tree's files stay inside the
tree, compared as real paths (``..`` and symbolic links resolved):

- folders a tree's own ``metallib.toml`` names (``[kernels] include-dirs``) lie inside the tree
  (:func:`confine_folders`); folders elsewhere come only from the command line (``-I``), where
  the user chose them;
- entry files resolve inside the tree or an include folder (:func:`confine_entries`);
- an include folder outside the tree was chosen by the user (``-I``), with whatever links it
  holds: a file reached through it counts as inside when its path, ``..`` folded but links
  kept, lies in that folder (``-I /opt/homebrew/include`` is links into the Cellar). Inside
  the tree, links count where they lead (:class:`TreeBounds`);
- every file the preprocessor read for an entry file (its line markers: quoted includes, angle
  includes, computed includes alike) lies inside them too, or among the tool's own stand-ins
  (:func:`check_markers`); when preprocessing fails, the diagnostic is checked the same way
  before any of it is shown (:func:`check_diagnostic`).

Each refusal is one line (exit 2) naming the key and value, the entry file, or the including
file and line, with where it resolves: a path, never a byte of the file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from builder.errors import UsageError
from builder.kernels.definitions import LineStarts, marker_file, tree_path

__all__ = [
    "OutsideTreeError",
    "TreeBounds",
    "check_diagnostic",
    "check_markers",
    "check_run",
    "confine_entries",
    "confine_folders",
    "confine_preambles",
    "inside",
    "real_roots",
    "tree_bounds",
]

# "# LINE "FILE" FLAGS": flag 1 enters an included file, 2 returns to the including one.
_MARKER = LineStarts(r'# (\d+) "((?:[^"\\\n]|\\.)*)"((?: \d+)*)[ \t]*$', re.MULTILINE)
# Where GCC and clang name a place: "In file included from F:L:", "   from F:L,", "F:L:C: ..."
_LOCATION = re.compile(r"^(?:In file included from |\s+from )?(?P<file>[^\s:][^:]*):(?P<line>\d+)")
_HINT = "a folder outside the tree comes only from the command line (-I DIR)"


class OutsideTreeError(UsageError):
    """A tree names or reads a file outside itself and its include folders (exit 2)."""


def inside(real: Path, roots: Iterable[Path]) -> bool:
    """Whether the real path ``real`` is one of ``roots`` or lies under one."""
    return any(real == root or real.is_relative_to(root) for root in roots)


def real_roots(folders: Iterable[str | os.PathLike[str]]) -> tuple[Path, ...]:
    """``folders`` as real paths, each once, in order."""
    return tuple(dict.fromkeys(Path(os.path.realpath(f)) for f in folders))


def _shown(roots: Sequence[Path]) -> str:
    return ", ".join(str(r) for r in roots)


@dataclass(frozen=True)
class TreeBounds:
    """Where the files a tree makes the tool read may lie."""

    roots: tuple[Path, ...]
    """Real paths: the tree, then its include folders."""
    chosen: tuple[Path, ...] = ()
    """Include folders outside the tree, absolute with ``..`` folded: the user's, links and
    all."""
    own: tuple[Path, ...] = ()
    """The tool's own files (the preprocessor's stand-ins and prelude)."""

    def allows(self, path: str | os.PathLike[str]) -> bool:
        """Whether ``path`` (absolute) may be read."""
        if inside(Path(os.path.realpath(path)), (*self.roots, *self.own)):
            return True
        return bool(self.chosen) and inside(Path(os.path.normpath(path)), self.chosen)

    def with_own(self, own: Sequence[Path]) -> TreeBounds:
        return TreeBounds(self.roots, self.chosen, (*self.own, *own))

    def shown(self) -> str:
        return _shown(self.roots)


def tree_bounds(root: Path, include_dirs: Sequence[Path]) -> TreeBounds:
    """The bounds of the tree at ``root`` searched with ``include_dirs`` (absolute)."""
    tree = Path(os.path.realpath(root))
    chosen = [
        Path(os.path.normpath(os.path.abspath(d)))
        for d in include_dirs
        if not inside(Path(os.path.realpath(d)), (tree,))
    ]
    return TreeBounds(real_roots([root, *include_dirs]), tuple(dict.fromkeys(chosen)))


def confine_folders(
    settings: Path, key: str, values: Sequence[str], resolved: Sequence[Path], tree: Path
) -> None:
    """OutsideTreeError when a folder the tree's settings file names (``values`` as written,
    ``resolved`` from the file's folder) is not inside ``tree``, as real paths: ``..`` leaving
    it, an absolute path elsewhere, a symlinked folder inside it that points out."""
    root = Path(os.path.realpath(tree))
    for value, folder in zip(values, resolved):
        real = Path(os.path.realpath(folder))
        if not inside(real, (root,)):
            raise OutsideTreeError(
                f"{settings}: {key} {value!r} resolves to {real}, outside the tree {root}; {_HINT}"
            )


def confine_preambles(
    settings: Path | None,
    preambles: Mapping[str, Sequence[Path]],
    folders: Sequence[Path],
    trusted: Sequence[Path] = (),
) -> None:
    """OutsideTreeError naming the header and the folders when a ``[build.preambles]`` header
    of the ``settings`` file, its symlinks followed, lies outside ``folders`` (the source
    folder and the file's include folders) and the ``trusted`` ones (the command line's): a
    preamble is shipped inside the app, so a tree must not pull ``/etc/shadow`` or a CI secret
    into it."""
    if not preambles:
        return
    roots = real_roots([*folders, *trusted])
    for function, headers in preambles.items():
        for header in headers:
            real = Path(os.path.realpath(header))
            if not inside(real, roots):
                named = str(header) if real == Path(header) else f"{header} (-> {real})"
                raise OutsideTreeError(
                    f"{settings}: [build.preambles] {function}: {named} is outside the "
                    f"source folder and its include folders ({_shown(roots)}); "
                    "pass -I DIR on the command line if the tree really needs its folder"
                )


def confine_entries(root: Path, entries: Sequence[str], bounds: TreeBounds) -> None:
    """OutsideTreeError naming the first entry file (relative to ``root``) that lies outside
    ``bounds`` (a symbolic link leaving the tree): it is not the tree's to analyse."""
    for entry in entries:
        path = Path(os.path.abspath(root / entry))
        if not bounds.allows(path):
            raise OutsideTreeError(
                f"{entry}: entry file resolves to {os.path.realpath(path)}, outside the tree "
                f"and its include folders ({bounds.shown()}); {_HINT}"
            )


def _outside_include(where: str, path: Path, bounds: TreeBounds) -> OutsideTreeError:
    return OutsideTreeError(
        f"{where}: includes {os.path.realpath(path)}, outside the tree and its include folders "
        f"({bounds.shown()}); {_HINT}"
    )


def check_markers(entry: str, text: str, cwd: Path, bounds: TreeBounds) -> None:
    """OutsideTreeError naming the including file and line of the first file in ``text`` (the
    preprocessed ``entry``, with line markers, run in ``cwd``) that lies outside ``bounds``.
    The stack of markers gives the place: a marker entering a file comes right where the
    including file's ``#include`` line was."""
    stack: list[tuple[str, int, int]] = []  # (file as marked, its line at offset, offset)
    checked: set[str] = set()
    for start, match in _MARKER.finditer(text):
        line, name, flags = int(match.group(1)), marker_file(match.group(2)), match.group(3)
        if "1" in flags.split() and stack:
            parent, parent_line, offset = stack[-1]
            at = parent_line + text.count("\n", offset, start)
            place = f"{tree_path(parent, cwd)}:{at}" if not parent.startswith("<") else entry
        else:
            place = entry
        if "2" in flags.split() and stack:
            stack.pop()
        if "1" in flags.split() or not stack:
            stack.append((name, line, match.end() + 1))
        else:
            stack[-1] = (name, line, match.end() + 1)
        if name.startswith("<") or name in checked:
            continue
        checked.add(name)
        path = Path(os.path.join(cwd, name))
        if not bounds.allows(path):
            raise _outside_include(place, path, bounds)


def check_diagnostic(entry: str, stderr: str, cwd: Path, bounds: TreeBounds) -> None:
    """OutsideTreeError when the diagnostic of a failed run names a file outside ``bounds``:
    its text (an ``#error`` line, a quoted source line) is not the tree's to show. The place
    named is the include that led out, when the diagnostic gives it."""
    chain: list[tuple[str, str]] = []  # "included from" places, innermost first
    for line in stderr.splitlines():
        found = _LOCATION.match(line)
        if found is None:
            continue
        place = (found.group("file"), found.group("line"))
        # GCC names the innermost including file first, the outer ones on "   from" lines;
        # clang writes one "In file included from" line per level, outermost first
        if line.startswith("In file included from ") and chain:
            chain.insert(0, place)
        else:
            chain.append(place)
        if line.startswith(("In file included from ", " ")):
            continue
        # chain[-1] is where the diagnostic is; chain[:-1] included it, innermost first
        outward = [chain[-1], *chain[:-1]]
        for number in range(len(outward) - 1, -1, -1):  # the outermost file first
            name = outward[number][0]
            path = Path(os.path.join(cwd, name))
            if not name.startswith("<") and not bounds.allows(path):
                outer = outward[number + 1] if number + 1 < len(outward) else None
                where = f"{tree_path(outer[0], cwd)}:{outer[1]}" if outer else entry
                raise _outside_include(where, path, bounds)
        chain = []


def check_run(
    entry: str, out: str, err: str, cwd: Path, bounds: TreeBounds | None, own: Sequence[Path]
) -> None:
    """One preprocessor run of ``entry`` within ``bounds`` (None: unchecked) and the tool's
    ``own`` files: the files its output ``out`` (partial when it failed) read, then its
    diagnostic ``err`` ("" when it succeeded)."""
    if bounds is None:
        return
    bounds = bounds.with_own(own)
    check_markers(entry, out, cwd, bounds)
    if err:
        check_diagnostic(entry, err, cwd, bounds)
