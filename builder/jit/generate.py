"""``embed``: a standalone C++ source with one run-time preamble per header, and the names of
its functions.

``metallib-builder embed`` calls :func:`write_embed`; CMake runs it at build time through
``python -m builder.jit embed`` (``cmake/MetallibEmbed.cmake``, which checks this module imports).
Only the standard library and what embedding needs of the layers below are imported (files,
the C++ name rules of ``builder.settings.text_rules``, a tree's confinement), because
scikit-build-core runs the generator in an isolated build environment without click or rich,
and ``metallib-builder vendor`` copies every module it imports into a project.
A tree's host library, a catalog's too, is ``builder.cmake_build.tree_jit``.

Every output is written atomically and only when its bytes change, so a regenerated but
identical file does not trigger a recompile (Ninja ``restat``). The depfile
(``builder.files.atomic``) lists the headers inlined, so touching one regenerates only what
embeds it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from builder.errors import UsageError
from builder.files.atomic import check_not_an_input, write_depfile, write_if_changed
from builder.jit.literals import comment_text, cxx_string
from builder.jit.preamble import Preamble, inline_preamble
from builder.jit.writer import preamble_code
from builder.settings import text_rules
from builder.settings.text_rules import APIS, CXX_KEYWORDS, DEFAULT_NAMESPACE, read_text

__all__ = [
    "Named",
    "cxx_identifier",
    "embed_headers",
    "function_names",
    "named_preambles",
    "render_standalone",
    "root_names",
    "write_embed",
]


def cxx_identifier(text: str) -> str:
    """``text`` as a C++ identifier: other characters than ``[A-Za-z0-9_]`` become ``_``, a
    leading digit gets a ``_`` before it and a C++ keyword one after it."""
    out = re.sub(r"[^A-Za-z0-9_]", "_", text)
    out = out if not out[:1].isdigit() else f"_{out}"
    return f"{out}_" if out in CXX_KEYWORDS else out


def function_names(names: Sequence[str]) -> list[str]:
    """C++ function names for preambles: the header's stem; its path without the suffix when
    stems clash (``a/util.h``, ``b/util.h``); its whole path when those clash too (``fft.h``,
    ``fft.metal``).

    Any other character than ``[A-Za-z0-9_]`` becomes ``_``, a leading digit gets a ``_``
    before it and a C++ keyword one after it; names that still coincide (``a-b.h``, ``a_b.h``)
    get ``_2``, ``_3``, ... in order, so every function is defined once.
    """

    ident = cxx_identifier
    stems = [ident(Path(n).stem) for n in names]
    full = [ident(str(Path(n).with_suffix(""))) for n in names]
    whole = [ident(str(n)) for n in names]
    chosen = [
        s if stems.count(s) == 1 else f if full.count(f) == 1 else w
        for s, f, w in zip(stems, full, whole)
    ]
    taken: set[str] = set()
    out = []
    for name in chosen:
        unique, k = name, 1
        while unique in taken:
            k += 1
            unique = f"{name}_{k}"
        taken.add(unique)
        out.append(unique)
    return out


Named = Sequence[tuple[str, Sequence[str | os.PathLike[str]]]]
"""Preambles given a function name: ``(function, headers)``, the headers inlined in order into
one preamble (``embed --preamble NAME=HEADER``, a tree's ``[build.preambles]``)."""


def embed_headers(
    headers: Sequence[str | os.PathLike[str]],
    include_dirs: Sequence[str | os.PathLike[str]],
    defines: Sequence[str] = (),
    namespace: str = DEFAULT_NAMESPACE,
    *,
    named: Named = (),
    strip: bool = False,
    api: str = "string",
    lookup: bool = True,
    allow_outside_includes: bool = False,
) -> tuple[str, list[Preamble]]:
    """A standalone C++ source with one preamble per header (``metallib-builder embed``), named
    by :func:`function_names`, then one per ``named`` entry under its own name.

    ``api`` is ``string`` or ``cstring`` (:func:`render_standalone` says what each gives).
    Raises UsageError (IncludeError) for an unresolvable quoted include, naming file and line,
    and for one resolving outside ``include_dirs`` and the headers' folders unless
    ``allow_outside_includes`` (``builder.jit.preamble``); for a name that is no C++ function
    name or names two preambles.
    """
    if not headers and not named:
        raise UsageError("embed needs at least one header (HEADER or --preamble NAME=HEADER)")
    _check_interface(namespace, api, "--jit-namespace", "--jit-api", UsageError)

    def inline(roots: Sequence[str | os.PathLike[str]]) -> Preamble:
        return inline_preamble(
            roots, include_dirs, defines, strip=strip, allow_outside_includes=allow_outside_includes
        )

    preambles = [inline([h]) for h in headers]
    names = [p.headers[0] for p in preambles]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise UsageError(f"header given twice: {', '.join(duplicates)}")
    funcs = function_names(names)
    for function, roots in named:
        if not function or cxx_identifier(function) != function:
            raise UsageError(f"--preamble {function}=...: {function!r} is not a C++ function name")
        if function in funcs:
            raise UsageError(f"--preamble {function}=...: {function!r} names two preambles")
        preamble = inline(roots)
        preambles.append(preamble)
        names.append(", ".join(root_names(preamble, roots)))
        funcs.append(function)
    if api == "cstring":
        for name, preamble in zip(names, preambles):
            if "\0" in preamble.text:  # a C string would end there
                raise UsageError(
                    f"{name}: the inlined text holds a NUL character; use --api string"
                )
    entries = list(zip(names, funcs, preambles))
    text = render_standalone(entries, namespace, ", ".join(names), api=api, lookup=lookup)
    return text, preambles


def _check_interface(
    namespace: str, api: str, namespace_where: str, api_where: str, error: type[Exception]
) -> None:
    """``namespace`` and ``api`` read as their settings (``jit_namespace``, ``jit_api``) read
    them, by the rules themselves (``builder.settings.text_rules``): the generator imports no
    settings registry, so its vendored copy does not hold one (``builder.jit.vendor``)."""
    read_text(namespace, namespace_where, validate=text_rules.namespace, error=error)
    read_text(api, api_where, choices=APIS, error=error)


def named_preambles(values: Sequence[str]) -> list[tuple[str, list[Path]]]:
    """``--preamble NAME=HEADER`` values as :data:`Named` entries: each NAME once, in the order
    first given, with its headers in the order given."""
    named: dict[str, list[Path]] = {}
    for value in values:
        name, equals, header = value.partition("=")
        if not equals or not header:
            raise UsageError(f"--preamble {value!r}: expected NAME=HEADER")
        named.setdefault(name, []).append(Path(header))
    return list(named.items())


def root_names(preamble: Preamble, roots: Sequence[str | os.PathLike[str]]) -> list[str]:
    """How ``preamble`` names its root headers ``roots`` (its ``files`` and ``headers`` share
    one order)."""
    files = [os.path.realpath(f) for f in preamble.files]
    return [preamble.headers[files.index(os.path.realpath(root))] for root in roots]


def write_embed(
    output: str | os.PathLike[str],
    embedded: tuple[str, list[Preamble]],
    depfile: str | os.PathLike[str] | None = None,
) -> tuple[bool, list[Preamble]]:
    """:func:`embed_headers`'s source ``embedded`` written to ``output``, and a depfile naming
    every file inlined.

    Both files are written atomically and only when their bytes change (a no-op regeneration
    leaves timestamps alone, for Ninja's ``restat``). The depfile's target is ``output`` as given
    (as a compiler's ``-MD`` names its ``-o``); its prerequisites are the real paths of all files
    read, roots and includes, in inclusion order. Returns (output written, preambles).

    UsageError, before anything is written, when ``output`` or ``depfile`` is one of the files
    read (``builder.files.atomic.check_not_an_input``), or both name the same file: an input is
    never written over.
    """
    text, preambles = embedded
    inputs = [f for p in preambles for f in p.files]
    check_not_an_input(output, inputs, hint="; choose another file")
    if depfile is not None:
        check_not_an_input(depfile, inputs, hint="; choose another file")
        if os.path.realpath(output) == os.path.realpath(depfile):
            raise UsageError(f"-o and --depfile name the same file ({os.fspath(output)})")
    changed = write_if_changed(output, text)
    if depfile is not None:
        write_depfile(depfile, output, inputs)
    return changed, preambles


def render_standalone(
    entries: Sequence[tuple[str, str, Preamble]],
    namespace: str,
    origin: str,
    *,
    api: str = "string",
    lookup: bool = True,
) -> str:
    """A self-contained C++17 source with one preamble per entry ``(name, function, preamble)``.

    For other projects (``metallib-builder embed``): no dependency on our host library. Each
    preamble is a function returning its text, and ``preamble(name)`` looks one up by the header
    name it was made from. Without ``lookup`` there is no ``preamble(name)``: a host that calls
    the functions by name (MLX) can then embed several sources into one namespace, and each would
    otherwise define the same lookup. ``api`` chooses the return type and so the storage
    (:func:`preamble_code`):

    - ``string``: ``const std::string& f()``, a function-local static string assembled on first
      use (thread-safe) from pieces stored once however many preambles share them;
    - ``cstring``: ``const char* f()`` (MLX's ``jit/includes.h``) returning the preamble's whole
      text, one string literal (adjacent raw-string pieces under the literal limit, joined by the
      compiler): each function's text stored on its own, as MLX's ``make_jit_source`` stores it,
      valid for the whole program, static destructors included, with no copy at run time.
    """
    _check_interface(namespace, api, "namespace", "api", ValueError)
    returns = "const std::string&" if api == "string" else "const char*"
    lines = [
        f"// Generated by metallib-builder embed from {comment_text(origin)}. Do not edit.",
        "// Each preamble is a header with its quoted includes inlined (each file once, with",
        "// #line markers); angle includes are left for the run-time compiler. Declarations:",
        f"//   namespace {namespace} {{",
    ]
    lines += [f"//   {returns} {func}();  // {comment_text(name)}" for name, func, _ in entries]
    if lookup:
        lines.append('//   std::string_view preamble(std::string_view header);  // "" if unknown')
    lines.append("//   }")
    if api == "string":
        lines += ["#include <cstddef>", "#include <initializer_list>", "#include <string>"]
    if api == "string" or lookup:
        lines.append("#include <string_view>")
    lines += ["", f"namespace {namespace} {{", ""]
    code = preamble_code(entries, api=api)
    if code.definitions:
        lines += ["namespace {", "", *code.definitions, "", "}  // namespace", ""]
    lines += list(code.functions)
    if lookup:
        lines.append("std::string_view preamble(std::string_view header) {")
        for name, func, _ in entries:
            lines.append(f"  if (header == {cxx_string(name)}) return {func}();")
        lines += ["  return {};", "}", ""]
    lines.append(f"}}  // namespace {namespace}")
    return "\n".join(lines) + "\n"
