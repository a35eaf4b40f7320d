"""``metallib-builder vendor DIR``: ``metallib_embed_headers`` and its generator written into a
project's own folder, so the project builds its run-time sources with no package installed.

What is written, each file naming the version it came from on its first line:

- ``DIR/MetallibEmbed.cmake``: the package's ``cmake/MetallibEmbed.cmake`` (the same function,
  the same signature), its generator part (between its ``metallib-builder vendor`` marks)
  replaced by ``cmake/vendor/generator.cmake``, which runs the vendored script with the
  interpreter FindPython3 finds, ``python -I -S``: standard library only, nothing from
  site-packages (an installed or editable ``builder`` cannot stand in). The two helper
  functions it shares with the package (``_metallib_require_cxx``,
  ``_metallib_namespace_problem``) are copied from ``cmake/MetallibPython.cmake``.
- ``DIR/metallib_embed/metallib_embed.py``: the script, ``python -m builder.jit`` of this
  package: it puts its folder first on ``sys.path``, refuses a ``builder`` imported from
  elsewhere, and runs :mod:`builder.jit.__main__`.
- ``DIR/metallib_embed/builder/...``: the modules ``python -m builder.jit embed`` imports,
  found by reading their imports (:func:`generator_modules`), copied unchanged but for two
  comment lines before them. The generator exists once, in this package: the vendored copy is
  this code, so it writes the bytes the package writes.

Same version, same bytes: nothing of the machine, the time or the folder goes into a file.
``check_vendored`` compares a folder with what :func:`vendored_files` would write now.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from pathlib import Path

import builder
from builder.errors import UsageError
from builder.files.atomic import make_dirs, write_if_changed
from builder.files.output_folder import replaced_folder
from builder.files.reading import UnreadableFile, open_regular, read_bytes, read_text
from builder.resources import own_cmake_dir

__all__ = [
    "CMAKE_MODULE",
    "FOLDER",
    "SCRIPT",
    "check_vendored",
    "generator_modules",
    "vendored_files",
    "write_vendored",
]

CMAKE_MODULE = "MetallibEmbed.cmake"
FOLDER = "metallib_embed"
SCRIPT = f"{FOLDER}/metallib_embed.py"
_ENTRY = "builder.jit.__main__"  # (its lazy import of generate is read like any other)
_MARK = "metallib-builder vendor"
_HEADER = re.compile(rb"\A# Vendored from metallib-builder (\S+) ")
_PACKAGE = Path(builder.__file__).resolve().parent
_OWN = "a file of metallib-builder"


def _header(path: str, version: str) -> str:
    return (
        f"# Vendored from metallib-builder {version} ({path}) by `metallib-builder vendor`: do "
        "not edit;\n# `metallib-builder vendor --check DIR` says whether this copy is current.\n"
    )


_SCRIPT = '''"""metallib_embed_headers' generator: ``python -m builder.jit`` of metallib-builder.

MetallibEmbed.cmake runs it as ``python -I -S metallib_embed.py embed ...``. It needs only
Python's standard library (3.10 or newer): the ``builder`` folder beside it holds the modules
of metallib-builder's ``embed``, copied unchanged but for two comment lines.
"""

import os
import sys

if sys.version_info < (3, 10):
    sys.stderr.write("error: the vendored generator needs Python 3.10 or newer\\n")
    raise SystemExit(2)
sys.dont_write_bytecode = True  # no __pycache__ in the project's source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import builder  # noqa: E402

if os.path.dirname(os.path.dirname(os.path.abspath(builder.__file__))) != HERE:
    # (an installed or editable metallib-builder's import hook came first: not this copy)
    sys.stderr.write(
        f"error: this Python imports metallib-builder from {builder.__file__}, not the vendored "
        "copy beside this script; run it as python -I -S\\n"
    )
    raise SystemExit(2)
if sys.argv[1:] == ["--version"]:
    print(f"metallib-builder {builder.__version__} (vendored)")
    raise SystemExit(0)

from builder.jit.__main__ import main  # noqa: E402

raise SystemExit(main(sys.argv[1:]))
'''


def _module_path(name: str) -> Path:
    folder = _PACKAGE.parent.joinpath(*name.split("."))
    return folder / "__init__.py" if folder.is_dir() else folder.with_suffix(".py")


def _imports(name: str) -> set[str]:
    """The ``builder`` modules ``name`` imports, at any depth of its code but under ``if
    TYPE_CHECKING`` (``from builder.x import y`` names ``builder.x.y`` when that is a module)."""
    tree = ast.parse(read_bytes(_module_path(name), _OWN))
    found: set[str] = set()
    nodes: list[ast.AST] = [tree]
    while nodes:
        node = nodes.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                nodes.extend(child.orelse)
                continue
            if isinstance(child, ast.Import):
                found.update(a.name for a in child.names if a.name.split(".")[0] == "builder")
            elif (
                isinstance(child, ast.ImportFrom)
                and child.level == 0
                and (child.module or "").split(".")[0] == "builder"
            ):
                module = str(child.module)
                found.add(module)
                subs = (f"{module}.{a.name}" for a in child.names)
                found.update(s for s in subs if _module_path(s).is_file())
            nodes.append(child)
    return found


def generator_modules() -> list[str]:
    """The modules ``python -m builder.jit embed`` can import, sorted: ``builder.jit.__main__``,
    every module it imports, directly or not, at any depth of the code (a function's lazy import
    too), and the packages holding them: read from the code, never a kept list."""
    seen: set[str] = set()
    todo = [_ENTRY]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]
        todo += sorted(_imports(name))
    return sorted(seen)


def _cmake_function(text: str, name: str) -> str:
    """The definition of CMake function ``name`` in ``text``, from ``function(`` to its end."""
    found = re.search(rf"^function\({name} .*?^endfunction\(\)\n", text, re.MULTILINE | re.DOTALL)
    if found is None:  # the package's own files: a bug, not an input
        raise AssertionError(f"cmake/MetallibPython.cmake defines no {name}")
    return found.group(0)


def _cmake_module(version: str, files: Iterable[str]) -> str:
    cmake = own_cmake_dir()
    embed = read_text(cmake / CMAKE_MODULE, _OWN)
    python = read_text(cmake / "MetallibPython.cmake", _OWN)
    generator = read_text(cmake / "vendor" / "generator.cmake", _OWN)
    for token, text in (
        ("@VERSION@", version),
        ("@REQUIRE_CXX@", _cmake_function(python, "_metallib_require_cxx")),
        ("@NAMESPACE_PROBLEM@", _cmake_function(python, "_metallib_namespace_problem")),
        ("@FILES@", "".join(f"      {f}\n" for f in files).rstrip("\n")),
    ):
        generator = generator.replace(token, text)
    part = re.search(
        rf"^# {_MARK}: the generator, .*?^# {_MARK}: end of the generator\.\n",
        embed,
        re.MULTILINE | re.DOTALL,
    )
    if part is None:
        raise AssertionError(f"cmake/{CMAKE_MODULE} has no generator part between its marks")
    module = embed[: part.start()] + generator + embed[part.end() :]
    return _header(CMAKE_MODULE, version) + module


def vendored_files() -> dict[str, bytes]:
    """What ``vendor`` writes, by path relative to DIR, sorted: the same bytes for the same
    version wherever and whenever it runs."""
    version = builder.__version__
    files: dict[str, bytes] = {}
    for name in generator_modules():
        path = _module_path(name)
        relative = path.relative_to(_PACKAGE.parent).as_posix()
        text = read_bytes(path, _OWN)
        files[f"{FOLDER}/{relative}"] = _header(relative, version).encode() + text
    files[SCRIPT] = (_header(Path(SCRIPT).name, version) + _SCRIPT).encode()
    listed = sorted(f.removeprefix(f"{FOLDER}/") for f in files)
    files[CMAKE_MODULE] = _cmake_module(version, listed).encode()
    return dict(sorted(files.items()))


def _vendored_version(path: Path) -> str | None:
    """The version a file written by ``vendor`` names on its first line; None for any other."""
    try:
        with open_regular(path, "a vendored file") as handle:
            found = _HEADER.match(handle.read(200))
    except UnreadableFile:
        return None
    return found.group(1).decode("ascii", "replace") if found else None


def _present(folder: Path) -> list[str]:
    """The files of a vendored copy in ``folder`` (bytecode caches left out)."""
    files = [CMAKE_MODULE] if (folder / CMAKE_MODULE).exists() else []
    root = folder / FOLDER
    if root.is_dir():
        for path in sorted(root.rglob("*")):
            relative = path.relative_to(folder)
            if "__pycache__" not in relative.parts and not path.is_dir():
                files.append(relative.as_posix())
    return files


def _difference(folder: Path, name: str, expected: bytes | None) -> str | None:
    """What differs between ``folder/name`` and ``expected`` (None: not written by vendor)."""
    path = folder / name
    if expected is None:
        return "not written by metallib-builder vendor (remove it, or vendor again)"
    if not path.exists():
        return "missing"
    version = _vendored_version(path)
    if version is None:
        return "not written by metallib-builder vendor (its first line is not vendor's)"
    if version != builder.__version__:
        return f"vendored from metallib-builder {version}, this is {builder.__version__}"
    with open_regular(path, "a vendored file") as handle:
        actual = handle.read(len(expected) + 1)
    if actual == expected:
        return None
    for number, (mine, theirs) in enumerate(
        zip(actual.splitlines(), expected.splitlines()), start=1
    ):
        if mine != theirs:
            return f"edited: line {number} differs from metallib-builder {version}'s"
    return f"edited: {len(actual):,} bytes, metallib-builder {version} writes {len(expected):,}"


def _check_folder(folder: Path) -> None:
    if not folder.is_dir() or _vendored_version(folder / CMAKE_MODULE) is None:
        raise UsageError(
            f"{folder}: not a vendored folder (no {CMAKE_MODULE} written by "
            "metallib-builder vendor)"
        )


def check_vendored(folder: Path) -> tuple[str | None, int]:
    """One line naming the first file of ``folder``'s vendored copy that differs from what
    ``vendor`` writes now, and what differs (None when current); and the number of files.

    UsageError when ``folder`` holds no vendored copy (exit 2)."""
    _check_folder(folder)
    expected = vendored_files()
    problems = []
    for name in sorted(set(expected) | set(_present(folder))):
        difference = _difference(folder, name, expected.get(name))
        if difference is not None:
            problems.append(f"{folder / name}: {difference}")
    if not problems:
        return None, len(expected)
    more = len(problems) - 1
    line = problems[0] + (f" (and {more} more file{'s' * (more > 1)})" if more else "")
    return line, len(expected)


def write_vendored(folder: Path) -> tuple[bool, dict[str, bytes]]:
    """Write the vendored copy into ``folder`` (created when missing); (written, its files).

    Nothing is written when the copy there is current. The generator's folder is replaced as a
    whole (``builder.files.output_folder``), then the CMake module atomically: a build never
    sees a module without its generator. UsageError (exit 2) when ``folder`` is a file, or its
    ``MetallibEmbed.cmake`` or ``metallib_embed/`` are not ``vendor``'s: nothing of the project
    is replaced."""
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{folder}: not a folder")
    module = folder / CMAKE_MODULE
    if module.exists() and _vendored_version(module) is None:
        raise UsageError(
            f"{module}: not written by metallib-builder vendor; move it away to vendor here"
        )
    files = vendored_files()
    if module.exists() and check_vendored(folder)[0] is None:
        return False, files
    make_dirs(folder)
    with replaced_folder(folder / FOLDER, marker=Path(SCRIPT).name) as staged:
        for name, data in files.items():
            if name.startswith(f"{FOLDER}/"):
                path = staged / name.removeprefix(f"{FOLDER}/")
                make_dirs(path.parent)
                path.write_bytes(data)
    write_if_changed(module, files[CMAKE_MODULE])
    return True, files
