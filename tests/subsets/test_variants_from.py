"""``variants --from`` on a real library (issue 14): mlx-metal 0.32.0's mlx.metallib and our
MLX-style entry files over the same wheel's kernel headers (tests/data/mlx_style).

Expectations are independent of the code under test: which names each entry file produces comes
from tests/kernels/discovery/expected.py (worked out by hand); kept functions are compared with
the input's bytes; exact sizes of other splits come from the container writer's layout; the JIT
source is compared with what the real ``embed`` command writes, and its measured bytes with the
string literals of that file.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import subprocess
import sys
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
from clirun import run_cli
from kernels.discovery.expected import BY_FILE, OWN_TEMPLATES, RUNTIME_ONLY
from llvm import disassemble
from mlx_tree import DATA, MLX_PLATFORM, MLX_VERSION
from support.shared import shared_folder

from builder.metallib import Piece, layout, open_metallib, parts_from_library, verify

pytestmark = pytest.mark.realdata

JIT_1 = ("unary_subset.metal", "binary_subset.metal")
AOT_1 = "arange_subset.metal"
JIT_2 = "fft.metal"
JIT_3 = "tiles/*.metal"  # writes its kernel template itself: embedded whole
# embedded whole when JIT: they write kernel templates themselves, or (versioned.metal at MSL
# 3.1) every kernel they emit is written in them
WHOLE = {*OWN_TEMPLATES, "versioned.metal"}
PRODUCER = {name: source for source, names in BY_FILE.items() for name in names}


def _names(path: Path) -> list[str]:
    with open_metallib(path) as lib:
        return list(lib.columns().names)


def _size_keeping(library: Path, keep: Callable[[str], bool]) -> int:
    """The exact file size of the subset of ``library`` whose names ``keep`` accepts, as the
    writer lays it out (0 when it keeps nothing)."""
    with open_metallib(library) as lib:
        kept = [i for i, name in enumerate(lib.columns().names) if keep(name)]
        return layout(parts_from_library(lib, kept)).file_size if kept else 0


def _size_with_jit(library: Path, jit: Iterable[str]) -> int:
    files = set(jit)
    return _size_keeping(library, lambda name: PRODUCER.get(name) not in files)


def _per_file(library: Path) -> dict[str, tuple[int, int]]:
    """Entry file -> (functions of the library it produces, their bytes), from expected.py."""
    out: dict[str, list[int]] = {}
    with open_metallib(library) as lib:
        t = lib.columns()
        for i, name in enumerate(t.names):
            source = PRODUCER.get(name)
            if source is not None:
                total = (
                    t.entry_bytes[i]
                    + t.public_md_bytes[i]
                    + t.private_md_bytes[i]
                    + t.module_bytes[i]
                    + t.reflection_bytes[i]
                )
                slot = out.setdefault(source, [0, 0])
                slot[0] += 1
                slot[1] += total
    return {source: (n, size) for source, (n, size) in out.items()}


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "builder", *args], capture_output=True, text=True, check=False
    )


@pytest.fixture(scope="session")
def library(mlx_metallib: Callable[[str, str], Path]) -> Path:
    return mlx_metallib(MLX_VERSION, MLX_PLATFORM)


@pytest.fixture(scope="session")
def budget(library: Path) -> int:
    """Half the largest file's saving below the full size: at least one file must go JIT, and
    more than one answer fits."""
    largest = max(size for _, size in _per_file(library).values())
    return library.stat().st_size - largest // 2


@pytest.fixture(scope="session")
def run(
    library: Path, mlx_headers: Path, budget: int, tmp_path_factory: pytest.TempPathFactory
) -> tuple[dict[str, Any], Path]:
    """One ``variants --from`` run, made once for all workers (the tests only read it)."""

    def make(folder: Path) -> None:
        done = _cli(
            "variants",
            "--from",
            str(library),
            "--source-dir",
            str(DATA),
            "-I",
            str(mlx_headers),
            "-o",
            str(folder / "out"),
            "--jit",
            ",".join(JIT_1),
            "--aot",
            AOT_1,
            "--jit",
            JIT_2,
            "--jit",
            JIT_3,
            "--ceiling",
            str(budget),
            "--format",
            "json",
        )
        assert done.returncode == 0, done.stderr
        # progress only on a terminal; what always reaches stderr is the warning that this
        # partial tree and the library do not match, both ways
        source = json.loads(done.stdout)["source"]
        warned = done.stderr.splitlines()
        assert len(warned) == 2, done.stderr
        assert f": {source['not_in_tree']:,} function(s) of the library are produced" in warned[0]
        assert f": {source['tree_kernels_missing']:,} kernel(s) of " in warned[1]
        (folder / "stdout.json").write_text(done.stdout)

    out = shared_folder(tmp_path_factory, "variants-from", make) / "out"
    doc = json.loads((out.parent / "stdout.json").read_text())
    assert json.loads((out / "variants.json").read_text()) == doc
    return doc, out


def _variants(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {v["name"]: v for v in doc["variants"]}


def test_variants_and_their_splits(run: tuple[dict[str, Any], Path]) -> None:
    doc, _ = run
    variants = _variants(doc)
    assert list(variants) == ["all-aot", "aot-1", "jit-1", "jit-2", "jit-3", "planned"]
    everything = set(BY_FILE)
    assert set(variants["all-aot"]["aot_sources"]) == everything
    assert variants["all-aot"]["jit_sources"] == []
    assert set(variants["jit-1"]["jit_sources"]) == set(JIT_1)
    # the files that write kernel templates themselves go JIT too, embedded whole
    assert set(variants["aot-1"]["jit_sources"]) == everything - {AOT_1}
    assert variants["jit-2"]["jit_sources"] == ["fft.metal"]
    assert variants["jit-3"]["jit_sources"] == ["tiles/tile_copy.metal"]
    assert variants["jit-3"]["description"] == (
        "--jit tiles/*.metal: 1 entry file(s) JIT, the rest AOT"
    )
    assert doc["source"]["tree"]["held_aot"] == []
    assert doc["source"]["tree"]["whole_file"] == [s for s in BY_FILE if s in WHOLE]
    assert doc["source"]["tree"]["runtime_only"] == RUNTIME_ONLY
    for v in variants.values():
        assert set(v["jit_sources"]) | set(v["aot_sources"]) == everything
        assert not set(v["jit_sources"]) & set(v["aot_sources"])


def test_each_metallib_holds_exactly_its_aot_kernels_byte_identical(
    run: tuple[dict[str, Any], Path], library: Path, tmp_path: Path
) -> None:
    doc, _ = run
    source_names = _names(library)
    not_in_tree = [n for n in source_names if n not in PRODUCER]
    with open_metallib(library) as lib:
        original = {fn.name: fn for fn in lib.functions}
        for v in doc["variants"]:
            jit = set(v["jit_sources"])
            expected = [n for n in source_names if PRODUCER.get(n) not in jit]
            path = Path(v["metallib"])
            assert path.stat().st_size == v["metallib_bytes"]
            assert v["function_count"] == len(expected)
            assert v["jit_kernels"] == len(source_names) - len(expected)
            assert v["other_kernels"] == len(not_in_tree)
            assert v["aot_kernels"] + v["other_kernels"] == len(expected)
            assert v["jit_kernels_discovered"] == sum(len(BY_FILE[s]) for s in jit)
            with open_metallib(path) as out:
                # the AOT files' kernels and the not-in-tree ones, in the input's order
                assert out.columns().names == expected
                for fn in out.functions:  # byte-identical to the input
                    was = original[fn.name]
                    assert fn.stored(Piece.MODULE) == was.stored(Piece.MODULE), fn.name
                    assert fn.hash == was.hash
                report = verify(out)
                assert report.ok, report.problems
                kept_aot = [f for f in out.functions if PRODUCER.get(f.name)]
                module = tmp_path / "module.air"
                module.write_bytes(kept_aot[0].stored(Piece.MODULE))
                assert f'source_filename = "{kept_aot[0].name}"' in disassemble(module)
            by_source = {row["source"]: row for row in v["bytes_by_source"]}
            assert by_source["[not in tree]"]["function_count"] == len(not_in_tree)
            assert (
                sum(r["bytes"] for r in v["bytes_by_source"]) + v["overhead_bytes"]
                == v["metallib_bytes"]
            )


def test_all_aot_is_the_input(run: tuple[dict[str, Any], Path], library: Path) -> None:
    doc, _ = run
    all_aot = _variants(doc)["all-aot"]
    path = Path(all_aot["metallib"])
    assert _names(path) == _names(library)
    digest = [hashlib.sha256(p.read_bytes()).hexdigest() for p in (path, library)]
    assert digest[0] == digest[1]
    # run-time-only kernels are in no metallib: all-aot embeds their header too
    assert all_aot["preambles"] == ["indexing/scatter_rows.h"]
    assert all_aot["embedded_bytes"] > 0 and Path(all_aot["jit_sources_file"]).is_file()
    assert all_aot["total_bytes"] == library.stat().st_size + all_aot["embedded_bytes"]


_INCLUDE_LINE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*"[^"\n]*"[^\n]*\n', re.MULTILINE)


def _first_use(
    entry: str, mlx_headers: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> int:
    """The proxy of an entry file's run-time compile, as docs/report-schema.md defines it: the
    text of each preamble it needs, each written alone by ``embed`` and read back from the
    source's literals, plus (unless it is a run-time source itself) its text less its quoted
    include lines."""
    own = entry in DEFINES_KERNELS | WHOLE
    includes = [] if entry in WHOLE else _direct_includes(DATA / entry, [mlx_headers, DATA])
    total = 0
    for header in [*includes, *([(DATA / entry).resolve()] if own else [])]:
        out = tmp_path / "one.cpp"
        args = ["embed", str(header), "-I", str(mlx_headers), "-I", str(DATA), "-o", str(out)]
        code, _, err = run_cli(args, capsys)
        assert code == 0, err
        total += sum(len(t.encode()) for t in _literal_texts(out.read_text()).values())
    if not own:
        total += len(_INCLUDE_LINE.sub(b"", (DATA / entry).read_bytes()))
    return total


def test_planner_fits_and_no_file_can_go_back(
    run: tuple[dict[str, Any], Path],
    library: Path,
    budget: int,
    mlx_headers: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    doc, _ = run
    planned = _variants(doc)["planned"]
    plan = planned["plan"]
    jit = set(planned["jit_sources"])
    assert jit and planned["metallib_bytes"] <= budget == plan["ceiling"]
    assert Path(planned["metallib"]).stat().st_size == planned["metallib_bytes"]
    assert _size_with_jit(library, jit) == planned["metallib_bytes"]
    # Every single move back to AOT, sized independently, breaks the budget.
    for source in jit:
        back = _size_with_jit(library, jit - {source})
        assert back > budget, source
        assert {
            "source": source,
            "kernels": _per_file(library)[source][0],
            "saved_bytes": back - planned["metallib_bytes"],
            "metallib_bytes_if_aot": back,
            "first_use_source_bytes_proxy": _first_use(source, mlx_headers, tmp_path, capsys),
        } in plan["files"]
    # The tree is small: try every split and check that none fits compiling less at run time
    # (the proxy), or as much with fewer run-time kernels.
    per_file = _per_file(library)
    cost = {s: _first_use(s, mlx_headers, tmp_path, capsys) for s in per_file}
    fitting = []
    for r in range(len(per_file) + 1):
        for combo in itertools.combinations(sorted(per_file), r):
            if _size_with_jit(library, combo) <= budget:
                fitting.append((sum(cost[s] for s in combo), sum(per_file[s][0] for s in combo)))
    best = min(fitting)
    assert (planned["first_use_source_bytes_proxy"], planned["jit_kernels"]) == best
    assert plan["first_use_source_bytes_proxy"] == best[0]


def test_cap_below_the_least_reachable_size_fails(
    library: Path, mlx_headers: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    least = _size_keeping(library, lambda name: name not in PRODUCER)  # only not-in-tree stays
    args = ["variants", "--from", str(library), "--source-dir", str(DATA), "-I", str(mlx_headers)]
    code, out, err = run_cli(
        [*args, "-o", str(tmp_path / "no"), "--ceiling", str(least - 1)], capsys
    )
    assert code == 1 and out == "" and err.count("\n") == 1, err
    assert f"least reachable metallib size, {least:,} bytes" in err
    assert not (tmp_path / "no").exists()  # nothing written
    code, out, err = run_cli(
        [*args, "-o", str(tmp_path / "yes"), "--ceiling", str(least), "--format", "json"], capsys
    )
    assert code == 0, err
    planned = _variants(json.loads(out))["planned"]
    assert (
        planned["metallib_bytes"] == least == (tmp_path / "yes/planned/mlx.metallib").stat().st_size
    )


def _direct_includes(entry: Path, search: list[Path]) -> list[Path]:
    found = []
    for name in re.findall(r'^\s*#\s*include\s*"([^"]+)"', entry.read_text(), re.MULTILINE):
        path = next(d / name for d in [entry.parent, *search] if (d / name).is_file())
        found.append(path.resolve())
    return found


def _literal_texts(cpp: str) -> dict[str, str]:
    """The text pieces a generated source stores: ``char NAME[] = R"d(TEXT)d";`` by name."""
    pattern = re.compile(r'char (mbjit_t_\w+)\[\] = R"([^(]*)\((.*?)\)\2";', re.DOTALL)
    return {m.group(1): m.group(3) for m in pattern.finditer(cpp)}


DEFINES_KERNELS = {"plain_kernels.metal", "versioned.metal"}  # write kernels with a body
RUNTIME_HEADERS = [DATA / "indexing/scatter_rows.h"]


def test_embedded_bytes_equal_what_embed_writes(
    run: tuple[dict[str, Any], Path],
    mlx_headers: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    doc, _ = run
    checked = 0
    for v in doc["variants"]:
        headers: list[Path] = []
        for entry in v["jit_sources"]:  # tree order, each header once
            # a file embedded whole is its own preamble; one that writes kernel functions
            # itself (read off the files) carries its own code after its includes
            own = [(DATA / entry).resolve()] if entry in DEFINES_KERNELS | WHOLE else []
            includes = [] if entry in WHOLE else _direct_includes(DATA / entry, [mlx_headers, DATA])
            for header in [*includes, *own]:
                if header not in headers:
                    headers.append(header)
        headers += [h.resolve() for h in RUNTIME_HEADERS if h.resolve() not in headers]
        mine = tmp_path / f"{v['name']}.cpp"
        code, _, err = run_cli(
            ["embed", *map(str, headers), "-I", str(mlx_headers), "-I", str(DATA), "-o", str(mine)],
            capsys,
        )
        assert code == 0, err
        written = Path(v["jit_sources_file"]).read_text()
        assert written == mine.read_text()
        texts = _literal_texts(written)
        assert texts and v["embedded_bytes"] == sum(len(t.encode()) for t in texts.values())
        stream = "".join(texts.values()).encode()
        assert v["embedded_compressed_bytes"] == len(zlib.compress(stream, 9))
        assert v["total_bytes"] == v["metallib_bytes"] + v["embedded_bytes"]
        assert v["total_compressed_bytes"] == v["metallib_bytes"] + v["embedded_compressed_bytes"]
        assert v["embed_command"][1:] == [
            "embed",
            *map(str, headers),
            "-I",
            str(mlx_headers),
            "-I",
            str(DATA),
            "-o",
            v["jit_sources_file"],
        ]
        checked += 1
    assert checked == len(doc["variants"]) == 6


def test_other_formats_show_the_same_figures(
    library: Path, mlx_headers: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [
        "variants",
        "--from",
        str(library),
        "--source-dir",
        str(DATA),
        "-I",
        str(mlx_headers),
        "-o",
        str(tmp_path / "v"),
        "--jit",
        ",".join(JIT_1),
    ]
    code, table, err = run_cli(args, capsys)
    assert code == 0, err
    doc = json.loads((tmp_path / "v" / "variants.json").read_text())
    jit_1 = _variants(doc)["jit-1"]
    row = next(line for line in table.splitlines() if line.startswith("jit-1 "))
    assert row.split() == [
        "jit-1",
        f"{jit_1['metallib_bytes']:,}",
        f"{jit_1['embedded_bytes']:,}",
        f"{jit_1['embedded_compressed_bytes']:,}",
        f"{jit_1['total_bytes']:,}",
        f"{jit_1['total_compressed_bytes']:,}",
        f"{jit_1['jit_kernels']:,}",
        f"{jit_1['first_use_source_bytes_proxy']:,}",
        "2",
    ]
    code, markdown, err = run_cli([*args, "--format", "markdown"], capsys)
    assert code == 0, err
    assert f"| `jit-1` | {jit_1['metallib_bytes']:,} | {jit_1['embedded_bytes']:,} |" in markdown
    code, page, err = run_cli([*args, "--format", "html"], capsys)
    assert code == 0, err
    data = re.search(
        r'<script type="application/json" id="variants-data">(.*?)</script>', page, re.DOTALL
    )
    assert data is not None
    embedded = json.loads(data.group(1))
    assert embedded["variants"] == doc["variants"]
    assert "http://" not in page.replace("http://www.w3.org", "") and "https://" not in page


def test_bad_input_is_one_line_exit_2(
    run: tuple[dict[str, Any], Path],
    library: Path,
    mlx_headers: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, written = run
    tree = ["--source-dir", str(DATA), "-I", str(mlx_headers)]
    base = ["variants", "--from", str(library), *tree]
    for argv, words in (
        (
            [*base, "-o", str(tmp_path / "a"), "--jit", "nothing*.metal"],
            "'nothing*.metal' matches no",
        ),
        ([*base], "-o OUTDIR"),
        (["variants", "--from", str(library), "-o", str(tmp_path / "b")], "--source-dir"),
        ([*base, "-o", str(tmp_path / "c"), "--kernels", "unary"], "--kernels"),
        (["variants", *tree[2:], "--ceiling", "1MB"], "Missing option '--from'"),
        ([*base, "-o", str(tmp_path / "d"), "--ceiling", "lots"], "is not a size"),
        (
            [
                "variants",
                "--from",
                str(written / "all-aot/mlx.metallib"),
                *tree,
                "-o",
                str(written),
            ],
            "refusing to write over the input",
        ),
    ):
        code, out, err = run_cli(argv, capsys)
        assert code == 2 and out == "" and err.count("\n") == 1 and words in err, (argv, err)
    assert not any((tmp_path / name).exists() for name in "abcd")


def test_metallib_toml_jit_mode_aot_only_and_named_preambles(
    library: Path, mlx_headers: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """metallib.toml names aot-only files (a jit-mode variant; the planner never moves them),
    the library's name and a preamble made of two headers (rendered under that name)."""
    import shutil

    tree = tmp_path / "tree"
    shutil.copytree(DATA, tree)
    kernels = mlx_headers / "mlx/backend/metal/kernels"
    (tree / "metallib.toml").write_text(
        '[build]\nlibrary = "kernels"\naot-only = ["unary_*.metal"]\n'
        f'[build.preambles]\ncommon = ["{kernels / "utils.h"}", "{kernels / "binary_ops.h"}"]\n'
    )
    movable = {s for s in BY_FILE if s != "unary_subset.metal"}
    least = _size_with_jit(library, movable)
    args = ["variants", "--from", str(library), "--source-dir", str(tree), "--format", "json"]
    args += ["-I", str(mlx_headers)]  # a folder outside the tree: the command line's
    code, out, err = run_cli([*args, "-o", str(tmp_path / "v"), "--ceiling", str(least)], capsys)
    assert code == 0, err
    variants = _variants(json.loads(out))
    assert list(variants) == ["all-aot", "jit-mode", "planned"]
    assert set(variants["jit-mode"]["jit_sources"]) == movable
    assert variants["jit-mode"]["metallib_bytes"] == least
    assert variants["jit-mode"]["metallib"] == str(tmp_path / "v/jit-mode/kernels.metallib")
    planned = variants["planned"]
    assert "unary_subset.metal" not in planned["jit_sources"]
    assert planned["metallib_bytes"] == least
    cpp = Path(variants["jit-mode"]["jit_sources_file"]).read_text()
    assert "const std::string& common() {" in cpp
    assert "mlx/backend/metal/kernels/utils.h, mlx/backend/metal/kernels/binary_ops.h" in cpp
    # the named two-header preamble is written by `embed --preamble`, as the command says
    command = variants["jit-mode"]["embed_command"]
    assert f"--preamble=common={kernels / 'utils.h'}" in command
    mine = tmp_path / "mine.cpp"
    code, _, err = run_cli([*command[1:-2], "-o", str(mine)], capsys)
    assert code == 0, err
    assert mine.read_text() == cpp
    texts = _literal_texts(cpp)
    assert variants["jit-mode"]["embedded_bytes"] == sum(len(t.encode()) for t in texts.values())
    code, out, err = run_cli(
        [*args, "-o", str(tmp_path / "w"), "--ceiling", str(least - 1)], capsys
    )
    assert code == 1 and "1 entry file(s) that stay AOT" in err and f"{least:,} bytes" in err


def test_a_cap_every_entry_file_fits_says_nothing_moved(
    library: Path, mlx_headers: Path, tmp_path: Path
) -> None:
    """A budget above the whole library plans no move: the markdown says so instead of an empty
    table of moves (and the page's script does the same)."""
    done = _cli(
        "variants",
        "--from",
        str(library),
        "--source-dir",
        str(DATA),
        "-I",
        str(mlx_headers),
        "-o",
        str(tmp_path / "out"),
        "--ceiling",
        str(library.stat().st_size + 1),
        "--format",
        "markdown",
    )
    assert done.returncode == 0, done.stderr
    planned = done.stdout[done.stdout.index("plan of `planned`") :]
    assert "Nothing moved to JIT: every entry file fits AOT." in planned
    assert "| moved to JIT |" not in planned


def test_keep_aot_pins_entry_files_in_the_plan(
    run: tuple[dict[str, Any], Path],
    library: Path,
    mlx_headers: Path,
    budget: int,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--keep-aot keeps a file the unpinned plan moves AOT (the plan still fits); pinning every
    file is a failed check naming the pins; --keep-aot without --ceiling is a usage error."""
    chosen = min(_variants(run[0])["planned"]["jit_sources"])
    args = ["variants", "--from", str(library), "--source-dir", str(DATA), "-I", str(mlx_headers)]
    code, out, err = run_cli(
        [*args, "-o", str(tmp_path / "k"), "--ceiling", str(budget), "--keep-aot", chosen]
        + ["--format", "json"],
        capsys,
    )
    assert code == 0, err
    planned = _variants(json.loads(out))["planned"]
    assert chosen not in planned["jit_sources"] and planned["plan"]["keep_aot"] == [chosen]
    assert _size_with_jit(library, planned["jit_sources"]) == planned["metallib_bytes"] <= budget
    code, out, err = run_cli(
        [*args, "-o", str(tmp_path / "all"), "--ceiling", str(budget), "--keep-aot", "*"], capsys
    )
    assert code == 1 and out == "" and "--keep-aot / [build] keep-aot pin AOT" in err, err
    assert not (tmp_path / "all").exists()
    code, _, err = run_cli([*args, "-o", str(tmp_path / "n"), "--keep-aot", chosen], capsys)
    assert code == 2 and "give --ceiling SIZE" in err
