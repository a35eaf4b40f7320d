"""Two edges of the preamble inliner's reading that the mutation pass found untested (issue 24):
a stripped file keeps exactly its lines, and a file that cannot be read is a usage error naming
it, not a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from builder.jit.preamble import IncludeError, inline_preamble, quoted_includes

TEXT = 'int a; // one\n/* two */ int b;   \n#pragma once\n#include "c.h"\nint d;\n'


def test_a_stripped_file_keeps_each_line_once(tmp_path: Path) -> None:
    """Comments and trailing blanks go, newlines stay: the same lines as the file, so the
    ``#line`` markers still point at the right ones."""
    (tmp_path / "h.h").write_text(TEXT)
    (tmp_path / "c.h").write_text("int c; /* c */\n")
    for strip in (False, True):
        fragments = inline_preamble([tmp_path / "h.h"], [tmp_path], strip=strip).fragments
        lines = [
            "".join(f.text for f in fragments if f.path.endswith(n)).splitlines()
            for n in ("h.h", "c.h")
        ]
        # h.h: marker, 3 lines, marker, 1 line; c.h: marker, 1 line
        assert [len(x) for x in lines] == [6, 2], (strip, lines)
        h, c = lines
        assert h[4].startswith("#line 5 ") and h[5] == "int d;"
        if strip:
            assert h[1:4] == ["int a;", h[2], ""] and h[2].strip() == "int b;"
            assert c[1] == "int c;"
            assert not any("/" in line or line != line.rstrip() for line in h[1:4] + c[1:])
        else:
            assert h[1:4] == TEXT.splitlines()[:2] + [""] and c[1] == "int c; /* c */"


def test_a_file_that_cannot_be_read_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "gone.h"
    with pytest.raises(IncludeError, match=rf"^{missing}: cannot read: .*No such file"):
        quoted_includes(missing, [tmp_path])


def test_an_include_found_nowhere_is_named_with_its_line(tmp_path: Path) -> None:
    (tmp_path / "h.h").write_text('int a;\n#include "absent.h"\n')
    with pytest.raises(
        IncludeError, match=rf'^{tmp_path / "h.h"}:2: quoted include "absent.h" not found$'
    ):
        quoted_includes(tmp_path / "h.h", [tmp_path])
