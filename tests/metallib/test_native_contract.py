"""What the C extension and the Python code must agree on, each stated once and checked here.

- the piece kinds: ``Piece`` in table.py, ``enum Piece`` in csrc/pieces.h;
- the parser's columns: ``COLUMNS`` in table.py, the ``COL_*`` enum in csrc/function_list.c;
- the ABI number: ``ABI = <n>`` in native.py, which CMake reads (``metallib_native_abi`` in
  cmake/MetallibNative.cmake) and compiles in; the installed extension reports the same number.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from builder.metallib import native
from builder.metallib.table import COLUMNS, Piece
from builder.size.attribution import FunctionBytes

pytestmark = pytest.mark.picks_container_code

ROOT = Path(__file__).resolve().parents[2]
CSRC = ROOT / "builder" / "metallib" / "csrc"


def _enum(text: str, prefix: str) -> list[tuple[str, int]]:
    """The members of the first C enum whose names start with ``prefix``: (name, value)."""
    body = next(b for b in re.findall(r"enum\s*\w*\s*\{(.*?)\}", text, re.DOTALL) if prefix in b)
    members, value = [], -1
    for item in re.sub(r"/\*.*?\*/", "", body, flags=re.DOTALL).split(","):
        name, _, explicit = (part.strip() for part in item.partition("="))
        if not name:
            continue
        value = int(explicit) if explicit else value + 1
        members.append((name, value))
    return members


def test_c_piece_numbers_are_the_python_ones() -> None:
    members = _enum((CSRC / "pieces.h").read_text(encoding="utf-8"), "PIECE_")
    assert members == [(f"PIECE_{piece.name}", piece.value) for piece in Piece] + [
        ("PIECES", len(Piece))
    ]


def test_c_parser_columns_are_the_table_columns_in_order() -> None:
    members = _enum((CSRC / "function_list.c").read_text(encoding="utf-8"), "COL_")
    assert [name for name, _ in members] == [f"COL_{column.upper()}" for column in COLUMNS] + [
        "COLUMNS"
    ]
    assert [value for _, value in members] == list(range(len(COLUMNS) + 1))
    # each piece has its offsets column, then its bytes column, in Piece order (COL_OFFSETS(piece))
    first = COLUMNS.index("entry_offsets")
    assert COLUMNS[first:] == tuple(
        f"{p.column}_{kind}" for p in Piece for kind in ("offsets", "bytes")
    )


def test_attribution_counts_pieces_in_piece_order() -> None:
    assert FunctionBytes._fields[2:] == tuple(piece.column for piece in Piece)


def test_cmake_reads_the_abi_number_stated_in_native_py(tmp_path: Path) -> None:
    """The number CMake compiles in (-DNATIVE_ABI) is the one native.py states; the C sources
    state none of their own."""
    import shutil

    cmake = shutil.which("cmake")
    if cmake is None:
        pytest.fail("cmake is a dependency of this package and must be on PATH")
    script = tmp_path / "abi.cmake"
    script.write_text(
        f'include("{ROOT / "cmake" / "MetallibNative.cmake"}")\n'
        f'metallib_native_abi(abi "{ROOT / "builder" / "metallib" / "native.py"}")\n'
        'message(STATUS "ABI=${abi}")\n',
        encoding="utf-8",
    )
    done = subprocess.run([cmake, "-P", str(script)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert f"ABI={native.ABI}" in done.stdout
    for source in CSRC.iterdir():
        assert not re.search(r"#\s*define\s+NATIVE_ABI\b", source.read_text(encoding="utf-8")), (
            source
        )


def test_cmake_refuses_a_file_without_one_abi_line(tmp_path: Path) -> None:
    import shutil

    cmake = shutil.which("cmake")
    assert cmake is not None
    stated = tmp_path / "twice.py"
    stated.write_text("ABI = 1\nABI = 2\n", encoding="utf-8")
    script = tmp_path / "abi.cmake"
    script.write_text(
        f'include("{ROOT / "cmake" / "MetallibNative.cmake"}")\n'
        f'metallib_native_abi(abi "{stated}")\n',
        encoding="utf-8",
    )
    done = subprocess.run([cmake, "-P", str(script)], capture_output=True, text=True, check=False)
    assert done.returncode != 0 and "expected one line 'ABI = <number>', found 2" in done.stderr


def test_the_installed_extension_is_builder_metallib_native() -> None:
    module = native.native_module()
    if module is None:
        pytest.skip(f"native parser not in use: {native.status()}")
    assert module.__name__ == "builder.metallib._native"
    assert module.ABI == native.ABI
    assert module.__file__ is not None
    assert Path(module.__file__).name.startswith("_native.")
    assert Path(module.__file__).parent.name == "metallib"
