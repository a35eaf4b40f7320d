"""No command writes over one of its inputs (issue 17): ``report X -o X``, ``compare A B -o B``,
``slim IN -o IN``, a keep list or rule file as the output, ``variants --from L -o`` a folder
holding L (or the kernel tree, or an -I folder), ``build --build-dir`` the kernel tree. Each is
exit 2 with one line naming the output, whether the output is spelled the same, reached through
a symbolic link or ``..``, or a hard link to the input; and the input is left byte for byte.
A ``variants`` OUT that is not an earlier run's output is refused rather than emptied.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from clirun import run_cli
from synthetic import synthetic_parts

from builder.metallib import library_bytes
from builder.resources import metal_src_dir

pytestmark = pytest.mark.both_container_codes  # reads containers: both codes

Spell = Callable[[Path], Path]


def _same(path: Path) -> Path:
    return path


def _symlink(path: Path) -> Path:
    link = path.parent / f"link-to-{path.name}"
    link.symlink_to(path.name)
    return link


def _hard_link(path: Path) -> Path:
    link = path.parent / f"hard-{path.name}"
    os.link(path, link)
    return link


def _dotdot(path: Path) -> Path:
    (path.parent / "sub").mkdir(exist_ok=True)
    return path.parent / "sub" / ".." / path.name


SPELLINGS = {"same": _same, "symlink": _symlink, "hard link": _hard_link, "dotdot": _dotdot}


@pytest.fixture
def library(tmp_path: Path) -> Path:
    path = tmp_path / "lib.metallib"
    path.write_bytes(library_bytes(synthetic_parts(6, seed=5)))
    return path


def _refused(
    args: list[object], capsys: pytest.CaptureFixture[str], output: Path, *kept: Path
) -> str:
    """Run; expect exit 2, nothing on stdout, one line naming ``output``; ``kept`` unchanged."""
    before = {path: path.read_bytes() for path in kept}
    code, out, err = run_cli([str(a) for a in args], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith(f"error: {output}: refusing to write over the input"), err
    assert {path: path.read_bytes() for path in kept} == before
    return err


@pytest.mark.parametrize("spell", SPELLINGS.values(), ids=SPELLINGS.keys())
def test_slim_report_and_compare_over_their_input(
    spell: Spell, library: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "other.metallib"
    other.write_bytes(library_bytes(synthetic_parts(4, seed=6)))
    out = spell(library)
    _refused(["slim", library, "-o", out, "--keep", "kernel_1*"], capsys, out, library)
    _refused(["report", library, "-o", out], capsys, out, library)
    _refused(["compare", other, library, "-o", out], capsys, out, library, other)
    _refused(["compare", library, other, "-o", out, "--format", "json"], capsys, out, library)


def test_slim_in_place_is_still_allowed_and_says_how(
    library: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    link = _hard_link(library)
    err = _refused(["slim", library, "-o", link, "--keep", "kernel_1*"], capsys, link, library)
    assert err.endswith("; pass --in-place to do that\n")
    code, _, err = run_cli(
        ["slim", str(library), "-o", str(library), "--keep", "kernel_1*", "--in-place"], capsys
    )
    assert code == 0, err


def test_a_saved_report_rules_or_keep_list_as_the_output(
    library: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = tmp_path / "saved.json"
    code, _, err = run_cli(["report", str(library), "--format", "json", "-o", str(saved)], capsys)
    assert code == 0, err
    _refused(["report", saved, "--format", "json", "-o", saved], capsys, saved, saved)
    rules = tmp_path / "rules.txt"
    rules.write_text("kernel ^kernel_\n")
    _refused(["report", library, "--rules", rules, "-o", rules], capsys, rules, rules)
    keep = tmp_path / "keep.txt"
    keep.write_text("kernel_1*\n")
    _refused(["slim", library, "-o", keep, "--keep-list", keep], capsys, keep, keep)
    json.loads(saved.read_text())  # still the saved report


def _tree(root: Path) -> Path:
    tree = root / "tree"
    tree.mkdir(parents=True)
    (tree / "k.metal").write_text("// an entry file\n")
    return tree


def test_variants_into_a_folder_holding_an_input(
    library: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    inside = out / "all-aot" / "lib.metallib"
    inside.parent.mkdir()
    inside.write_bytes(library.read_bytes())
    (out / "variants.json").write_text("{}")  # an earlier run's OUT: replaced as a whole
    tree = _tree(tmp_path)
    link = tmp_path / "link-to-out"
    link.symlink_to(out)
    for args, spelled in (
        (["--from", inside, "--source-dir", tree, "-o", out], out),
        (["--from", inside, "--source-dir", tree, "-o", link], link),
        (["--from", library, "--source-dir", _tree(out), "-o", out], out),
        (["--from", library, "--source-dir", tree, "-I", out / "all-aot", "-o", out], out),
        (["--from", library, "--source-dir", tree, "-o", tmp_path], tmp_path),
    ):
        err = _refused(["variants", *args], capsys, spelled, inside, library)
        assert "it is inside this folder, which is replaced as a whole" in err
    assert sorted(p.name for p in out.iterdir()) == ["all-aot", "tree", "variants.json"]


def test_variants_never_empties_a_folder_it_did_not_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A catalog library (two unary kernels of the bundled tree) into a folder of the user's."""
    from builder.kernels.discovery import load_tree

    names = [k.name for k in load_tree(metal_src_dir()).by_source()["unary/unary.h"][:2]]
    from synthetic import new_function, new_library

    library = tmp_path / "unary.metallib"
    library.write_bytes(
        library_bytes(new_library([new_function(n, b"BC\xc0\xde" + bytes(64)) for n in names]))
    )
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("the user's")
    args = ["variants", "--from", str(library), "--source-dir", str(metal_src_dir())]
    code, out, err = run_cli([*args, "-o", str(mine)], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert f"{mine}: holds files but no variants.json" in err
    assert os.listdir(mine) == ["notes.txt"]
    assert sorted(os.listdir(tmp_path)) == ["mine", "unary.metallib"]  # no lock, no temporary
    new = tmp_path / "new"
    code, _, err = run_cli([*args, "-o", str(new), "--format", "json"], capsys)
    assert code == 0, err
    new.chmod(0o750)
    before = new.stat().st_ino
    code, _, err = run_cli([*args, "-o", str(new), "--format", "json"], capsys)
    assert code == 0, err  # an earlier run's output is replaced (a new folder, the same mode)
    assert new.stat().st_ino != before and stat.S_IMODE(new.stat().st_mode) == 0o750
    assert sorted(os.listdir(tmp_path)) == ["mine", "new", "unary.metallib"]


def test_build_into_the_kernel_tree(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = _tree(tmp_path)
    code, out, err = run_cli(
        ["build", "--jit", "*", "--source-dir", str(tree), "--build-dir", str(tree)], capsys
    )
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert "refusing to write over the input" in err
    assert os.listdir(tree) == ["k.metal"]
