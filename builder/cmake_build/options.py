"""``python -m builder.cmake_build.options --write/--check``: the files generated from the build
options (the settings a ``BuildRequest`` holds, each declared once in
builder/settings/declared.py):

* ``cmake/MetallibBuildOptions.cmake``: the ``METALLIB_*`` cache variables of a plain CMake run
  of this project, and ``metallib_build_request(<out>)``, which words them as the request's JSON
  for the planner (the CLI passes ``-DMETALLIB_PLAN`` instead and never reads them);
* the option table of docs/build.md, between its ``options`` markers.

``--check`` exits 1 naming a stale file (the test suite runs it); ``--write`` rewrites them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from builder.cmake_build.plan_model import request_settings
from builder.files.reading import read_text
from builder.settings.declared import DEFAULT_METAL_FLAGS
from builder.settings.model import Setting

__all__ = ["CMAKE_FILE", "cmake_text", "docs_table", "generated", "main"]

CMAKE_FILE = "cmake/MetallibBuildOptions.cmake"
DOCS_FILE = "docs/build.md"
BEGIN, END = "<!-- options:begin -->", "<!-- options:end -->"
_SPLIT_COMMAS = ("names", "globs")
"""List kinds whose items may also be separated by ','."""
_CMAKE_BOOLEAN = "^(ON|YES|TRUE|Y|OFF|NO|FALSE|N|IGNORE|NOTFOUND|.*-NOTFOUND)$"
_CMAKE_NUMBER = r"^[+-]?([0-9]+\\.?[0-9]*|\\.[0-9]+)(E[+-]?[0-9]+)?$"
"""What ``if(<constant>)`` reads as a boolean (the text upper-cased): its named constants, and
a number (true unless zero). Quoted for the generated file (its ``\\.`` is a dot)."""


def _default(option: Setting[object]) -> str:
    if option.cmake_default is not None:
        return option.cmake_default
    value = option.default
    if isinstance(value, bool):
        return "ON" if value else "OFF"
    if value is None:
        return ""
    if isinstance(value, tuple):
        return ";".join(value)
    return str(value)


def _cmake_type(kind: str) -> str:
    return {"bool": "BOOL", "path": "FILEPATH", "real_path": "PATH"}.get(kind, "STRING")


def _quoted(text: str, *, expand: bool = False) -> str:
    """``text`` as a CMake quoted argument (``expand``: its ``${...}`` references stay)."""
    text = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + (text if expand else text.replace("${", "$\\{")) + '"'


def _request_lines(option: Setting[object]) -> list[str]:
    var, kind, name = option.cmake, option.kind, option.name
    if kind == "bool":
        return [
            f"  if({var})",
            f'    string(JSON json SET "${{json}}" {name} true)',
            "  else()",
            f'    string(JSON json SET "${{json}}" {name} false)',
            "  endif()",
        ]
    if kind == "switch":  # ON, OFF (any CMake spelling) or empty: not given
        return [
            f'  string(TOUPPER "${{{var}}}" value)',
            '  if(value MATCHES "^(ON|YES|TRUE|Y|1)$")',
            f'    string(JSON json SET "${{json}}" {name} true)',
            '  elseif(value MATCHES "^(OFF|NO|FALSE|N|0)$")',
            f'    string(JSON json SET "${{json}}" {name} false)',
            '  elseif(NOT value STREQUAL "")',
            f'    message(FATAL_ERROR "{var}=${{{var}}}: ON, OFF or empty")',
            "  endif()",
        ]
    if kind == "int":
        return [
            f'  if(NOT "${{{var}}}" MATCHES "^[0-9]+$")',
            f'    message(FATAL_ERROR "{var}=${{{var}}}: not a whole number")',
            "  endif()",
            f'  string(JSON json SET "${{json}}" {name} "${{{var}}}")',
        ]
    if kind in ("text", "path", "real_path"):
        return [
            f'  if(NOT "${{{var}}}" STREQUAL "")',
            f'    _metallib_json_string(value "${{{var}}}")',
            f'    string(JSON json SET "${{json}}" {name} "${{value}}")',
            "  endif()",
        ]
    if option.bare is not None:  # a CMake boolean: the bare value (true) or none (false)
        return [
            f'  string(TOUPPER "${{{var}}}" value)',
            f'  string(REPLACE "," ";" items "${{{var}}}")',
            f'  if(value MATCHES "{_CMAKE_BOOLEAN}" OR value MATCHES "{_CMAKE_NUMBER}")',
            "    if(${value})  # a constant, as if() reads it",
            f'      set(items "{option.bare}")',
            "    else()",
            '      set(items "")',
            "    endif()",
            "  endif()",
            "  _metallib_json_list(value ${items})",
            f'  string(JSON json SET "${{json}}" {name} "${{value}}")',
        ]
    if kind == "flags":
        split = f'  string(REGEX REPLACE ",-" ";-" items "${{{var}}}")'
    elif kind in _SPLIT_COMMAS:
        split = f'  string(REPLACE "," ";" items "${{{var}}}")'
    else:
        split = f'  set(items "${{{var}}}")'
    return [
        split,
        "  _metallib_json_list(value ${items})",
        f'  string(JSON json SET "${{json}}" {name} "${{value}}")',
    ]


def cmake_text() -> str:
    """The text of ``cmake/MetallibBuildOptions.cmake``."""
    lines = [
        "# Generated by `python -m builder.cmake_build.options --write` from the settings of",
        "# BuildRequest (builder/settings/declared.py). Do not edit: edit the setting, then write.",
        "#",
        "# The METALLIB_* cache variables of a plain CMake run of this project, and",
        "# metallib_build_request(<out>): them as the build request's JSON, which the",
        "# planner reads (BuildRequest.from_json). The CLI configures with",
        "# -DMETALLIB_PLAN=<plan.json> instead, and this file is not read. Lists may be",
        "# separated by ';' (and the selections by ',').",
        "include_guard(GLOBAL)",
        "",
    ]
    options = [o for o in request_settings().values() if o.cmake]
    for option in options:
        if option.kind == "bool":
            lines.append(f"option({option.cmake} {_quoted(option.help)} {_default(option)})")
        else:
            default = _quoted(_default(option), expand=True)
            kind = _cmake_type(option.kind)
            lines.append(f"set({option.cmake} {default} CACHE {kind} {_quoted(option.help)})")
    lines += [
        "",
        "function(_metallib_json_string out text)",
        '  string(REPLACE "\\\\" "\\\\\\\\" text "${text}")',
        '  string(REPLACE "\\"" "\\\\\\"" text "${text}")',
        '  set(${out} "\\"${text}\\"" PARENT_SCOPE)',
        "endfunction()",
        "",
        "function(_metallib_json_list out)",
        '  set(json "[]")',
        "  foreach(item IN LISTS ARGN)",
        '    if(NOT item STREQUAL "")',
        '      _metallib_json_string(item "${item}")',
        '      string(JSON n LENGTH "${json}")',
        '      string(JSON json SET "${json}" ${n} "${item}")',
        "    endif()",
        "  endforeach()",
        '  set(${out} "${json}" PARENT_SCOPE)',
        "endfunction()",
        "",
        "# metallib_build_request(<out>): the cache variables above as the build request's JSON.",
        "function(metallib_build_request out)",
        '  set(json "{}")',
    ]
    for option in options:
        lines += _request_lines(option)
    lines += ['  set(${out} "${json}" PARENT_SCOPE)', "endfunction()", ""]
    return "\n".join(lines)


def _shown(option: Setting[object]) -> str:
    if option.shown_default is not None:
        return option.shown_default
    text = _default(option)
    return f"`{text}`" if text else "empty"


def docs_table() -> str:
    """The option table of docs/build.md: every build option, its CMake variable and default."""
    rows = [
        "| CMake cache variable | `build` option | default | what it is |",
        "|---|---|---|---|",
    ]
    for option in request_settings().values():
        if not option.cmake:
            continue
        flag = f"`{option.option}`" if option.option else "-"
        text = option.help.replace("|", "\\|")
        rows.append(f"| `{option.cmake}` | {flag} | {_shown(option)} | {text} |")
    return "\n".join(rows) + "\n"


def _with_table(docs: str) -> str:
    head, found, rest = docs.partition(BEGIN)
    _, found_end, tail = rest.partition(END)
    if not found or not found_end:
        raise SystemExit(f"{DOCS_FILE}: no {BEGIN} ... {END} markers")
    return f"{head}{BEGIN}\n{docs_table()}{END}{tail}"


def _metal_aot_flags_line() -> str:
    return f"set(METALLIB_DEFAULT_FLAGS {' '.join(DEFAULT_METAL_FLAGS)})"


def generated(root: Path) -> dict[Path, str]:
    """Each generated file under ``root`` (the checkout) with the text it should have."""
    docs = read_text(root / DOCS_FILE, "the build docs")
    return {root / CMAKE_FILE: cmake_text(), root / DOCS_FILE: _with_table(docs)}


def main(argv: Sequence[str] | None = None) -> int:
    """--write the generated files, or --check them (exit 1 naming each stale one)."""
    parser = argparse.ArgumentParser(prog="python -m builder.cmake_build.options")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true")
    mode.add_argument("--check", action="store_true")
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[2])
    args = parser.parse_args(argv)
    stale = []
    for path, text in generated(args.root).items():
        now = read_text(path, "a generated file") if path.is_file() else None
        if now == text:
            continue
        if args.write:
            from builder.files.atomic import write_atomic

            write_atomic(path, text)
        else:
            stale.append(path)
    aot = args.root / "cmake/MetalAot.cmake"
    if _metal_aot_flags_line() not in read_text(aot, "MetalAot.cmake"):
        print(f"{aot}: expected `{_metal_aot_flags_line()}` (DEFAULT_METAL_FLAGS)", file=sys.stderr)
        return 1
    for path in stale:
        print(f"{path}: stale; run python -m builder.cmake_build.options --write", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
