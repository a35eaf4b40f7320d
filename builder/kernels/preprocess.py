"""Running the host C++ preprocessor over a Metal entry file, as Apple's compiler would see it.

Discovery needs only what the preprocessor produces: which ``[[host_name]]`` instantiations and
kernel functions survive ``#if`` and macro expansion. Metal's front end is clang with C++14 (MSL
3.x) or C++17 (MSL 4) rules, so any host ``g++``/``clang++``/``cpp`` gives the same text, given:

- the host's own predefined macros removed (``-undef``: no ``__GNUC__``, ``__x86_64__``,
  ``__linux__``; ``-U_GNU_SOURCE``, which g++ defines even then; ``-nostdinc`` also drops glibc's
  implicit ``stdc-predef.h`` and its ``__STDC_IEC_559__``...). The standard macros stay:
  ``__cplusplus`` (201402L, or 201703L from MSL 4.0), ``__STDC__``, ``__STDC_HOSTED__``.
- Metal's predefined macros defined (:data:`METAL_MACROS`, ``-D`` overrides them);
- clang's ``__has_feature``/``__has_extension`` answering 0 under GCC (:data:`PRELUDE`);
- Apple's angle-bracket headers found as empty stand-ins (``metal_headers/``, searched last with
  ``-idirafter``, so a project's own shim on an ``-I`` path wins), and no host system headers.

See docs/discovery.md for the list of stand-ins and where Apple documents each macro.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from builder.errors import UsageError
from builder.kernels.bounded_run import PreprocessError, first_diagnostic, run_bounded

if TYPE_CHECKING:
    from builder.kernels.confinement import TreeBounds
    from builder.kernels.definitions import LineStarts

__all__ = [
    "CANDIDATES",
    "DEFAULT_METAL_VERSION",
    "METAL_HEADERS",
    "PRELUDE",
    "STANDIN_DIR",
    "Preprocessor",
    "check_regular",
    "find_preprocessor",
    "metal_defines",
    "operand",
    "preprocess",
    "preprocess_command",
]

CANDIDATES = ("g++", "clang++", "cpp")
STANDIN_DIR = Path(__file__).resolve().parent / "metal_headers"
# Read before the entry file: clang's __has_feature/__has_extension for GCC, which lacks them.
PRELUDE = Path(__file__).resolve().parent / "prelude.h"
# Read after it when a run preprocesses several files: where each file's output starts.
ENTRY_MARKER = Path(__file__).resolve().parent / "entry_marker.h"
_OWN = (STANDIN_DIR, PRELUDE, ENTRY_MARKER)  # what a run may read besides the tree's files
# Apple's headers a Metal source may include with angle brackets: the Metal Standard Library
# headers of the Metal Shading Language Specification (chapter "Metal Standard Library"), the
# MetalPerformancePrimitives framework header (MSL 4 tensor ops; MLX's NAX kernels include it)
# and <simd/simd.h>, which Apple's SDK offers to shaders and host code alike.
METAL_HEADERS = (
    "metal_stdlib",
    "metal_array",
    "metal_atomic",
    "metal_command_buffer",
    "metal_common",
    "metal_compute",
    "metal_cooperative_tensor",
    "metal_geometric",
    "metal_graphics",
    "metal_imageblocks",
    "metal_integer",
    "metal_interpolate",
    "metal_limits",
    "metal_logging",
    "metal_math",
    "metal_matrix",
    "metal_mesh",
    "metal_numeric",
    "metal_pack",
    "metal_quadgroup",
    "metal_raytracing",
    "metal_relational",
    "metal_simdgroup",
    "metal_simdgroup_matrix",
    "metal_tensor",
    "metal_tessellation",
    "metal_texture",
    "metal_type_traits",
    "metal_types",
    "metal_uniform",
    "metal_utility",
    "MetalPerformancePrimitives/MetalPerformancePrimitives.h",
    "simd/simd.h",
)
# MSL 3.1: what Apple's compiler reports for a macOS 14 deployment target, the oldest macOS that
# MLX supports and the platform of its most used wheels (kernels guarded by ">= 320" then stay
# out, as in those wheels' libraries). `-D __METAL_VERSION__=320` or metal-version = 320 for more.
DEFAULT_METAL_VERSION = 310
_BARE_CPP = re.compile(r"(?:^|-)cpp(?:-[\d.]+)?$")


@functools.cache
def _entry_marker() -> LineStarts:
    """The line entry_marker.h writes before each entry file's text in a batch run (made on
    first use: one file, as a stand-in compiler preprocesses, never needs it)."""
    from builder.kernels.definitions import LineStarts

    return LineStarts(r'__metallib_builder_entry__ "((?:[^"\\\n]|\\.)*)"\n?')


@dataclass(frozen=True)
class Preprocessor:
    """A located host compiler (or ``cpp``) used only for ``-E``."""

    path: str

    @property
    def batches(self) -> bool:
        """Whether one run may preprocess several files: true for compiler drivers (g++,
        clang++, c++), never for ``cpp`` (or ``clang-cpp``...), which takes a second file name
        as its OUTPUT file."""
        names = (os.path.basename(self.path), os.path.basename(os.path.realpath(self.path)))
        return not any(_BARE_CPP.search(name) for name in names)


def metal_defines(defines: Sequence[str], metal_version: int | None = None) -> list[str]:
    """``-D`` arguments: Metal's predefined macros, then ``defines`` (later ones win by name).

    ``__METAL_VERSION__`` is ``metal_version`` (default :data:`DEFAULT_METAL_VERSION`);
    ``__METAL__`` is 1; ``__METAL_MACOS__`` is 1 unless ``defines`` name ``__METAL_IOS__``;
    ``__HAVE_BFLOAT__`` (MSL 3.1's ``bfloat`` type) is 1 from version 310 on.
    """
    version = DEFAULT_METAL_VERSION if metal_version is None else metal_version
    user: dict[str, str] = {}
    if defines:  # the settings' validators, only when there is something to check
        from builder.settings.validators import parse_define
    for text in defines:
        name, arg = parse_define(text)
        user[name] = arg
    merged: dict[str, str] = {"__METAL_VERSION__": f"__METAL_VERSION__={version}"}
    merged["__METAL__"] = "__METAL__=1"
    if "__METAL_IOS__" not in user:
        merged["__METAL_MACOS__"] = "__METAL_MACOS__=1"
    if version >= 310:
        merged["__HAVE_BFLOAT__"] = "__HAVE_BFLOAT__=1"
    merged.update(user)
    return list(merged.values())


def _language_version(defines: Sequence[str]) -> int:
    """The ``__METAL_VERSION__`` the defines settle on (for the C++ standard to preprocess as)."""
    for arg in reversed(defines):
        name, _, value = arg.partition("=")
        if name == "__METAL_VERSION__":
            try:
                return int(value.strip() or 0)
            except ValueError:
                return DEFAULT_METAL_VERSION
    return DEFAULT_METAL_VERSION


def find_preprocessor(
    explicit: str | None = None, env: Mapping[str, str] | None = None
) -> Preprocessor:
    """``explicit``, else ``$CXX``, else the first of g++, clang++, cpp on PATH; or UsageError.

    Nothing is run to tell GCC from clang: the flags work for both (see :data:`PRELUDE`).
    """
    env = os.environ if env is None else env
    wanted = explicit or env.get("CXX")
    names = [wanted] if wanted else list(CANDIDATES)
    for name in names:
        path = shutil.which(name, path=env.get("PATH"))
        if path is not None:
            return Preprocessor(path)
    if wanted:
        raise UsageError(f"C++ preprocessor {wanted!r} (from --compiler or CXX) not found on PATH")
    raise UsageError(
        f"no C++ preprocessor found: looked for {', '.join(CANDIDATES)} on PATH; "
        "install g++ (Debian/Ubuntu: apt-get install g++) or clang, or set CXX"
    )


def preprocess_command(
    pp: Preprocessor,
    entries: Sequence[str],
    include_dirs: Sequence[Path],
    defines: Sequence[str],
    *,
    line_markers: bool = False,
) -> list[str]:
    """The argument list preprocessing ``entries`` (paths relative to the working directory the
    caller runs it in) with ``-I include_dirs`` and the ``-D`` arguments ``defines`` (as from
    :func:`metal_defines`). Several entries need a compiler driver (:attr:`Preprocessor.batches`).
    ``line_markers`` keeps the ``# LINE "FILE"`` lines (no ``-P``): where each line comes from.

    No name from the tree can be read as an option: entry files are passed as ``./NAME`` (a
    folder named ``-Bfoo`` or ``-o`` stays a folder; GCC has no ``--``), folders as joined
    absolute ``-I/abs`` arguments.
    """
    std = "gnu++17" if _language_version(defines) >= 400 else "gnu++14"
    cmd = [
        pp.path,
        "-E",
        *(() if line_markers else ("-P",)),
        "-x",
        "c++",
        f"-std={std}",
        "-undef",
        "-nostdinc",
        "-nostdinc++",
    ]
    cmd += ["-U_GNU_SOURCE", "-include", str(PRELUDE)]
    if len(entries) > 1:
        cmd += ["-include", str(ENTRY_MARKER)]
    cmd += [f"-D{arg}" for arg in defines]
    cmd += [f"-I{os.path.abspath(directory)}" for directory in include_dirs]
    cmd += [f"-idirafter{STANDIN_DIR}", *map(operand, entries)]
    return cmd


def operand(entry: str) -> str:
    """``entry`` as a command-line operand that no program reads as an option: a relative path
    gets ``./`` in front (``-o/x.metal`` -> ``./-o/x.metal``)."""
    return entry if os.path.isabs(entry) else "./" + entry


def _c_quoted(name: str) -> str:
    """``name`` as the compiler spells it inside ``__BASE_FILE__``'s string literal (other
    unusual bytes only make a batch fall back to one run per file)."""
    return name.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _split(text: str, entries: Sequence[str]) -> list[str] | None:
    """The batch output cut at the prelude's markers, one text per entry (marker lines
    dropped), or None if the markers do not name ``entries`` in order."""
    names: list[str] = []
    texts: list[str] = []
    last = -1  # the text before the first marker is the prelude's
    for start, match in _entry_marker().finditer(text):
        if last >= 0:
            texts.append(text[last:start])
        names.append(match.group(1))
        last = match.end()
    if last >= 0:
        texts.append(text[last:])
    wanted = [_c_quoted(operand(e)) for e in entries]
    if len(names) != len(entries) or any(n != w for n, w in zip(names, wanted)):
        return None
    return texts


def check_regular(cwd: Path, entry: str) -> None:
    """An entry file must be a regular file (a symlink to one is fine): a FIFO would hang the
    compiler, a device (``/dev/zero``) feed it without end."""
    try:
        mode = os.stat(os.path.join(cwd, entry)).st_mode
    except OSError as exc:
        raise PreprocessError(f"{entry}: cannot read: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):
        from builder.files.reading import file_kind

        raise PreprocessError(
            f"{entry}: not a regular file ({file_kind(mode)}); entry files must be files"
        )


def preprocess(
    pp: Preprocessor,
    entries: Sequence[str],
    include_dirs: Sequence[Path],
    defines: Sequence[str],
    cwd: Path,
    *,
    line_markers: bool = False,
    confine: TreeBounds | None = None,
) -> list[str]:
    """The preprocessed text of each of ``entries`` (relative to ``cwd``), in order.

    ``confine`` (needs ``line_markers``): every file the preprocessor read must lie in these
    bounds or be one of the tool's stand-ins, and a failed run's diagnostic is shown
    only when it names no other file (``builder.kernels.confinement``): a tree's output must
    hold nothing of a file outside it.

    A compiler driver preprocesses them all in one run (each file still gets its own front-end
    process; the driver's start-up, about 5 ms, is paid once). If that run fails, each file runs
    alone, in order, so that PreprocessError names the first failing file and its own first
    diagnostic, exactly as a one-file run would (a run stopped by a bound of
    ``builder.files.bounds``
    too: then the message names the file that needs the time, memory or output).
    """
    for entry in entries:
        check_regular(cwd, entry)
    # A name with a control character or an undecodable byte runs alone (entry_marker.h).
    if len(entries) > 1 and pp.batches and all(e.isprintable() for e in entries):
        command = preprocess_command(pp, entries, include_dirs, defines, line_markers=line_markers)
        try:
            code, out, _ = run_bounded(command, cwd, entries[0])
        except PreprocessError:
            code, out = 1, ""
        texts = _split(out, entries) if code == 0 else None
        if texts is not None:
            for entry, text in zip(entries, texts):
                _check_run(entry, text, "", cwd, confine)
            return texts
    result = []
    for entry in entries:
        code, out, err = run_bounded(
            preprocess_command(pp, [entry], include_dirs, defines, line_markers=line_markers),
            cwd,
            entry,
        )
        _check_run(entry, out, err if code != 0 else "", cwd, confine)
        if code != 0:
            raise PreprocessError(f"{entry}: does not preprocess: {first_diagnostic(err, entry)}")
        result.append(out)
    return result


def _check_run(entry: str, out: str, err: str, cwd: Path, confine: TreeBounds | None) -> None:
    """``confinement.check_run`` of one run, loading the confinement checks only for a run
    that has bounds to keep (discovery's; a single file's has none)."""
    if confine is not None:
        from builder.kernels.confinement import check_run

        check_run(entry, out, err, cwd, confine, _OWN)
