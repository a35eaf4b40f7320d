"""Discovery on MLX-style entry files over MLX's real headers: exactly the kernels each file
emits, with entry file, template and arguments; #if blocks switched by -D; the mirrored names
exist in the real library of the same release; and what happens on bad input."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest
from kernels.discovery.expected import (
    BY_FILE,
    DETAILS,
    MIRRORED,
    OWN,
    VERSIONED_320,
    VERSIONED_DEFAULT,
)
from mlx_tree import MLX_PLATFORM, MLX_VERSION, extract_kernel_headers

from builder.errors import UsageError
from builder.kernels.discovery import KernelRecord, discover_file, load_tree
from builder.kernels.kernel_scan import scan_kernels
from builder.kernels.kernel_tree import KernelTree
from builder.kernels.preprocess import (
    METAL_HEADERS,
    STANDIN_DIR,
    find_preprocessor,
    metal_defines,
    preprocess,
)
from builder.kernels.tree_files import entry_files, path_matches


def _by_file(tree) -> dict[str, set[str]]:
    return {source: {r.name for r in records} for source, records in tree.by_source().items()}


@pytest.mark.realdata
def test_every_file_emits_exactly_the_expected_kernels(mlx_style, mlx_headers) -> None:
    tree = load_tree(mlx_style, include_dirs=[mlx_headers])
    assert tree.kind == "discovered"
    assert _by_file(tree) == BY_FILE
    assert len(tree.kernels) == sum(len(v) for v in BY_FILE.values())  # no duplicates
    records = {r.name: r for r in tree.kernels}
    for name, (template, args) in DETAILS.items():
        assert (records[name].template, records[name].args) == (template, args), name
    # Order within a file is source order: the first unary layer expands v_, v2_, gn1_.
    unary = [r.name for r in tree.kernels if r.source == "unary_subset.metal"]
    assert unary[:3] == ["v_Absfloat16float16", "v2_Absfloat16float16", "gn1_Absfloat16float16"]


@pytest.mark.realdata
def test_defines_switch_if_blocks(mlx_style, mlx_headers) -> None:
    def versioned(*defines: str) -> set[str]:
        tree = load_tree(mlx_style, include_dirs=[mlx_headers], defines=defines)
        return _by_file(tree)["versioned.metal"]

    assert versioned() == VERSIONED_DEFAULT
    assert versioned("__METAL_VERSION__=320") == VERSIONED_320
    assert versioned("WITH_EXTRA_KERNELS") == VERSIONED_DEFAULT | {"extra_kernel"}
    # iOS instead of macOS: __METAL_MACOS__ is then not defined.
    assert versioned("__METAL_IOS__") == {"before_msl32"}


@pytest.mark.realdata
def test_mirrored_names_exist_in_the_real_library(mlx_style, mlx_headers, mlx_metallib, run_cli):
    code, out, _ = run_cli(
        ["list", str(mlx_metallib(MLX_VERSION, MLX_PLATFORM)), "--format", "json"]
    )
    assert code == 0
    library = {f["name"] for f in json.loads(out)["functions"]}
    tree = load_tree(mlx_style, include_dirs=[mlx_headers], defines=["__METAL_VERSION__=320"])
    found = set(tree.source_of())
    assert MIRRORED <= found
    assert MIRRORED <= library
    assert not (OWN & library)


@pytest.mark.realdata
def test_parallel_and_sequential_agree(mlx_style, mlx_headers) -> None:
    one = load_tree(mlx_style, include_dirs=[mlx_headers], jobs=1)
    two = load_tree(mlx_style, include_dirs=[mlx_headers], jobs=2)
    assert one.kernels == two.kernels and one.sources == two.sources


@pytest.mark.realdata
def test_progress_counts_every_file(mlx_style, mlx_headers) -> None:
    seen: list[tuple[int, int]] = []
    load_tree(
        mlx_style, include_dirs=[mlx_headers], on_progress=lambda d, t, _e: seen.append((d, t))
    )
    assert [d for d, _ in seen] == list(range(1, len(BY_FILE) + 1))
    assert {t for _, t in seen} == {len(BY_FILE)}


@pytest.mark.realdata
def test_exclude_globs_cross_folders(mlx_style, mlx_headers) -> None:
    tree = load_tree(mlx_style, include_dirs=[mlx_headers], exclude=["*tile*", "plain_*.metal"])
    assert set(tree.sources) == set(BY_FILE) - {"tiles/tile_copy.metal", "plain_kernels.metal"}
    assert path_matches("steel/gemm/kernels/x_nax.metal", ["steel/**/*_nax.metal"])
    assert path_matches("steel/x_nax.metal", ["steel/**/*_nax.metal"])  # ** also no folder
    assert path_matches("a/b/c.metal", ["*.metal"])  # '*' crosses '/'
    assert not path_matches("fence.metal.bak", ["fence.metal"])
    assert not path_matches("sub/fence.metal", ["fence.metal"])


def test_entry_files_skip_hidden_folders(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "x.metal").write_text("")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "k.metal").write_text("")
    (tmp_path / "a.metal").write_text("")
    (tmp_path / "notes.h").write_text("")
    assert entry_files(tmp_path) == ["a.metal", "b/k.metal"]


def test_stand_in_folder_holds_exactly_the_documented_headers() -> None:
    present = {p.relative_to(STANDIN_DIR).as_posix() for p in STANDIN_DIR.rglob("*") if p.is_file()}
    assert present == set(METAL_HEADERS)
    assert all((STANDIN_DIR / h).stat().st_size == 0 for h in METAL_HEADERS)


def _write(tree: Path, name: str, text: str) -> None:
    (tree / name).write_text(text, encoding="utf-8")


def test_host_macros_do_not_leak_and_metal_ones_are_set(tmp_path: Path) -> None:
    _write(
        tmp_path,
        "probe.metal",
        """
#include <metal_stdlib>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>
#if defined(__GNUC__) || defined(__linux__) || defined(__x86_64__) || defined(_GNU_SOURCE) \\
    || defined(unix) || defined(__STDC_IEC_559__) || defined(__clang__)
kernel void host_macro_leaked() {}
#endif
#if __METAL_VERSION__ == 310 && __METAL__ && __METAL_MACOS__ && __HAVE_BFLOAT__
kernel void metal_macros_set() {}
#endif
#if __cplusplus == 201402L
kernel void cxx14() {}
#endif
#if __has_feature(anything)
kernel void has_feature_true() {}
#endif
""",
    )
    assert [r.name for r in load_tree(tmp_path).kernels] == ["metal_macros_set", "cxx14"]
    msl4 = load_tree(tmp_path, defines=["__METAL_VERSION__=400"])
    assert [r.name for r in msl4.kernels] == []  # MSL 4 is C++17: __cplusplus 201703L


def test_a_project_shim_wins_over_the_stand_ins(tmp_path: Path) -> None:
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "metal_stdlib").write_text("#define FROM_SHIM 1\n")
    src = tmp_path / "src"
    src.mkdir()
    _write(
        src, "a.metal", "#include <metal_stdlib>\n#if FROM_SHIM\nkernel void shimmed() {}\n#endif\n"
    )
    assert [r.name for r in load_tree(src, include_dirs=[shim]).kernels] == ["shimmed"]
    assert [r.name for r in load_tree(src).kernels] == []


def _error(source_dir: Path, **kwargs) -> str:
    with pytest.raises(UsageError) as info:
        load_tree(source_dir, **kwargs)
    message = str(info.value)
    assert "\n" not in message
    return message


@pytest.mark.realdata
def test_broken_file_names_the_file_and_the_first_diagnostic(tree_copy, mlx_headers) -> None:
    _write(
        tree_copy,
        "broken.metal",
        '#include "mlx/backend/metal/kernels/utils.h"\n#if 1\n#error "nope"\n',
    )
    message = _error(tree_copy, include_dirs=[mlx_headers])
    assert message.startswith("broken.metal: does not preprocess: broken.metal:3:")
    assert 'error: #error "nope"' in message
    # Two broken files: the first in tree order is named, with any -j.
    _write(tree_copy, "a_first.metal", "#if\n")
    for jobs in (1, 2):
        assert _error(tree_copy, include_dirs=[mlx_headers], jobs=jobs).startswith("a_first.metal:")


@pytest.mark.realdata
def test_missing_include_is_one_line(tree_copy, mlx_headers) -> None:
    _write(tree_copy, "tiles/needs.metal", '#include "not/there.h"\n')
    message = _error(tree_copy, include_dirs=[mlx_headers])
    assert message.startswith("tiles/needs.metal: does not preprocess: tiles/needs.metal:1:")
    assert "not/there.h: No such file or directory" in message
    # Without -I the real headers are missing: the first file names utils.h.
    assert "mlx/backend/metal/kernels/utils.h" in _error(tree_copy)


def test_host_headers_are_not_found(tmp_path: Path) -> None:
    _write(tmp_path, "a.metal", "#include <cmath>\n")
    assert "cmath: No such file or directory" in _error(tmp_path)


def test_non_literal_host_name_is_an_error(tmp_path: Path) -> None:
    _write(tmp_path, "a.metal", "template [[host_name(NAME)]] [[kernel]] void f<float>();\n")
    message = _error(tmp_path)
    assert message.startswith("a.metal: [[host_name(...)]] must hold string literals, got: (NAME)")


def test_no_entry_files_and_all_excluded(tmp_path: Path) -> None:
    assert "no .metal entry files and no catalog.json" in _error(tmp_path)
    _write(tmp_path, "a.metal", "")
    assert "all 1 entry files are excluded" in _error(tmp_path, exclude=["*"])
    assert "not a folder" in _error(tmp_path / "missing")
    assert "include folder" in _error(tmp_path, include_dirs=[tmp_path / "nope"])


def test_no_preprocessor_names_what_was_looked_for(tmp_path, monkeypatch) -> None:
    _write(tmp_path, "a.metal", "")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("CXX", raising=False)
    message = _error(tmp_path)
    assert "no C++ preprocessor found: looked for g++, clang++, cpp on PATH" in message
    monkeypatch.setenv("CXX", "my-cxx")
    assert "'my-cxx'" in _error(tmp_path)


@pytest.mark.realdata
@pytest.mark.parametrize("name", ["cpp", "g++"])
def test_any_host_preprocessor_gives_the_same_kernels(mlx_style, mlx_headers, name) -> None:
    # g++ (and cpp with it) comes with scripts/setup.sh: a missing one fails, naming it.
    tree = load_tree(mlx_style, include_dirs=[mlx_headers], compiler=name)
    assert _by_file(tree) == BY_FILE


def test_header_extraction_refuses_unsafe_members(tmp_path: Path) -> None:
    prefix = "mlx/include/mlx/backend/metal/kernels/"
    for bad in (prefix + "../../../../../evil.h", prefix + "a//b.h", prefix + "a\\..\\b.h"):
        wheel = tmp_path / "bad.whl"
        with zipfile.ZipFile(wheel, "w") as archive:
            archive.writestr(prefix + "ok.h", "ok")
            archive.writestr(bad, "evil")
        dest = tmp_path / "out"
        with pytest.raises(ValueError, match="unsafe member"):
            extract_kernel_headers(wheel, dest)
        assert not dest.exists() and not (tmp_path / "evil.h").exists()
    good = tmp_path / "good.whl"
    with zipfile.ZipFile(good, "w") as archive:
        archive.writestr(prefix + "utils.h", "u")
        archive.writestr("mlx/lib/mlx.metallib", "x")
    root = extract_kernel_headers(good, tmp_path / "good")
    assert (root / "mlx/backend/metal/kernels/utils.h").read_text() == "u"
    assert not (root / "mlx" / "lib").exists()


def test_one_compiler_run_for_several_files_gives_the_same_texts(tmp_path: Path) -> None:
    for name, body in {
        "a.metal": "kernel void a() {}",
        "b.metal": "#define X 1\nkernel void b() {}",
    }.items():
        _write(tmp_path, name, body + "\n")
    (tmp_path / "sub").mkdir()
    _write(
        tmp_path / "sub",
        "c.metal",
        'template [[host_name("c")]] [[kernel]] decltype(f<int>) f<int>;\n',
    )
    pp = find_preprocessor("g++")
    assert pp.batches
    entries = ["a.metal", "b.metal", "sub/c.metal"]
    defines = metal_defines([])
    together = preprocess(pp, entries, [], defines, tmp_path)
    alone = [preprocess(pp, [e], [], defines, tmp_path)[0] for e in entries]
    assert together == alone
    assert "__metallib_builder_entry__" not in "".join(together)
    assert [k.name for t, e in zip(together, entries) for k in scan_kernels(t, e)] == [
        "a",
        "b",
        "c",
    ]


def test_a_failing_file_in_a_batch_is_named_with_its_own_diagnostic(tmp_path: Path) -> None:
    _write(tmp_path, "a.metal", "kernel void a() {}\n")
    _write(tmp_path, "b.metal", "#error first\n")
    _write(tmp_path, "c.metal", "#error second\n")
    with pytest.raises(UsageError) as info:
        preprocess(find_preprocessor("g++"), ["a.metal", "b.metal", "c.metal"], [], [], tmp_path)
    assert str(info.value).startswith(
        "b.metal: does not preprocess: b.metal:1:2: error: #error first"
    )


def test_cpp_is_never_given_two_files(tmp_path: Path) -> None:
    # `cpp IN OUT` writes IN's output into OUT: a batch would overwrite an entry file.
    pp = find_preprocessor("cpp")
    assert not pp.batches
    _write(tmp_path, "a.metal", "kernel void a() {}\n")
    _write(tmp_path, "b.metal", "kernel void b() {}\n")
    texts = preprocess(pp, ["a.metal", "b.metal"], [], metal_defines([]), tmp_path)
    assert (tmp_path / "b.metal").read_text() == "kernel void b() {}\n"
    assert [len(scan_kernels(t)) for t in texts] == [1, 1]


@pytest.mark.realdata
def test_discovery_in_batches_equals_one_file_per_run(mlx_style, mlx_headers, tmp_path) -> None:
    tree = tmp_path / "tree"
    for copy in ("a", "b", "c"):  # 21 entry files: enough for several per compiler run
        shutil.copytree(mlx_style, tree / copy)

    def run(jobs: int) -> tuple[KernelTree, list[int]]:
        done: list[int] = []
        found = load_tree(
            tree,
            include_dirs=[mlx_headers],
            jobs=jobs,
            on_progress=lambda d, _t, _e: done.append(d),
        )
        return found, done

    batched, steps = run(1)
    assert steps == [5, 10, 15, 20, 21]  # progress moves one compiler run (five files) at a time
    single, steps = run(21)
    assert sorted(steps) == list(range(1, 22))  # one file per run
    assert batched.kernels == single.kernels and batched.sources == single.sources
    assert batched.written_in == single.written_in and batched.runtime_only == single.runtime_only
    assert len(batched.sources) == 21 and len(batched.kernels) > 21


def test_one_file_with_the_flags_a_compiler_would_get(tmp_path: Path) -> None:
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "names.h").write_text('#define NAME(x) "k_" #x\n')
    _write(
        tmp_path,
        "one.metal",
        '#include "names.h"\n#ifdef EXTRA\nkernel void extra() {}\n#endif\n'
        "template [[host_name(NAME(float))]] [[kernel]] decltype(f<float>) f<float>;\n",
    )
    found = discover_file(tmp_path / "one.metal", [inc], ["EXTRA"])
    assert found == [
        KernelRecord("extra", "one.metal", None, ()),
        KernelRecord("k_float", "one.metal", "f", ("float",)),
    ]
    assert [r.name for r in discover_file(tmp_path / "one.metal", [inc])] == ["k_float"]
