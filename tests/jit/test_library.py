"""The host JIT library built for real (CMake + Ninja through cmake/MetalJit.cmake) and read back
through the ctypes binding: registry contents against the catalog, sources, embed.json facts,
compression, determinism, incremental rebuilds and generator failures."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from jit.conftest import ALL_FAMILIES, FAMILIES, JitBuild, build_jit
from support.jit_library import JitLibrary, JitLibraryError

from builder.jit.check import CheckChunk, jit_chunks, run_check
from builder.jit.preamble import anchor_line_markers, inline_preamble
from builder.kernels import load_catalog
from builder.kernels.bounded_run import find_compiler
from builder.resources import metal_src_dir

pytestmark = pytest.mark.cmake

_MARKER = re.compile(r'^#line \d+ "([^"]*)"$', re.MULTILINE)


def test_registry_matches_the_catalog(jit_build: JitBuild) -> None:
    lib = JitLibrary(jit_build.library)
    catalog = load_catalog()
    expected = [inst for family in FAMILIES for inst in catalog.expand([family])]
    assert lib.names() == [inst.host_name for inst in expected]  # FAMILIES order, then catalog
    assert lib.families() == list(FAMILIES)
    assert not lib.compressed
    for inst in expected:
        assert lib.family(inst.host_name) == inst.family
    assert lib.family("binary_vv_add_float32") is None  # a family not selected
    with pytest.raises(KeyError):
        lib.source("no_such_kernel")
    with pytest.raises(KeyError):
        lib.preamble("binary")


def test_sources_are_preamble_plus_instantiation_line(jit_build: JitBuild) -> None:
    lib = JitLibrary(jit_build.library)
    catalog = load_catalog()
    root = metal_src_dir()
    for family in FAMILIES:
        preamble = lib.preamble(family)
        spec = catalog.families[family]
        inlined = inline_preamble([root / spec.header], [root])
        assert preamble == inlined.text
        assert list(dict.fromkeys(_MARKER.findall(preamble))) == [
            h for h in inlined.headers if f'"{h}"' in preamble
        ]
        assert set(_MARKER.findall(preamble)) == set(inlined.headers)
        for inst in catalog.expand([family]):
            source = lib.source(inst.host_name)
            assert source == preamble + inst.instantiation_line() + "\n"


def test_library_sources_pass_the_kernel_check(jit_build: JitBuild) -> None:
    """Each family's preamble read back from the library, with all its instantiation lines."""
    lib = JitLibrary(jit_build.library)
    catalog = load_catalog()
    chunks = jit_chunks(catalog, FAMILIES, preambles={f: lib.preamble(f) for f in FAMILIES})
    result = run_check(
        chunks, source_dir=catalog.source_dir, compiler=find_compiler(), syntax_only=True
    )
    assert result.ok, [d.format() for d in result.diagnostics]
    assert result.instantiations == len(lib.names())


def test_embed_json_is_measured_from_the_output(jit_build: JitBuild) -> None:
    facts = json.loads((jit_build.gen_dir / "embed.json").read_text(encoding="utf-8"))
    lib = JitLibrary(jit_build.library)
    assert facts["schema"] == 3 and facts["kind"] == "catalog" and facts["target"] == "mbjit"
    assert facts["compressed"] is False and facts["dedup"] is True
    assert [f["name"] for f in facts["units"]] == list(FAMILIES)
    root = metal_src_dir()
    for family in facts["units"]:
        assert family["source_bytes"] == len(lib.preamble(family["name"]).encode())
        assert family["host_names"] == [n for n in lib.names() if lib.family(n) == family["name"]]
        assert family["headers"] == list(
            inline_preamble([root / load_catalog().families[family["name"]].header], [root]).headers
        )
    # Shared pieces (common headers) are listed once, and the total adds up.
    assert facts["shared"], "the test families share common headers"
    assert all(len(s["units"]) > 1 for s in facts["shared"])
    total = sum(f["embedded_bytes"] for f in facts["units"]) + sum(
        s["bytes"] for s in facts["shared"]
    )
    assert facts["embedded_bytes"] == total
    # Every shared piece is defined once, in the shared source, and once in the library's
    # read-only data.
    data = jit_build.library.read_bytes()
    for piece in facts["shared"]:
        text = _piece_text(jit_build.gen_dir / "_shared_preambles.cpp", piece["name"])
        assert data.count(text.encode() + b"\0") == 1
        for family in facts["units"]:
            own = (jit_build.gen_dir / f"{family['name']}.cpp").read_text(encoding="utf-8")
            assert piece["name"] not in own


def _piece_text(cpp: Path, name: str) -> str:
    source = cpp.read_text(encoding="utf-8")
    match = re.search(rf'{name}\[\] = R"(\w+)\((.*?)\)\1";', source, re.DOTALL)
    assert match, name
    return match.group(2)


def test_compression_round_trips(jit_build: JitBuild, jit_build_compressed: JitBuild) -> None:
    plain, packed = JitLibrary(jit_build.library), JitLibrary(jit_build_compressed.library)
    assert packed.compressed
    for family in FAMILIES:
        assert packed.preamble(family) == plain.preamble(family)
    for name in plain.names():
        assert packed.source(name) == plain.source(name)
    facts = json.loads((jit_build_compressed.gen_dir / "embed.json").read_text())
    assert facts["compressed"] is True
    for family in facts["units"]:
        assert 0 < family["registry_bytes"]
        assert family["preamble_bytes"] + family["shared_bytes"] < family["source_bytes"]


def test_whole_catalog_compressed(jit_build_compressed: JitBuild) -> None:
    """Every catalog instantiation has its source in the library (all families, COMPRESS)."""
    lib = JitLibrary(jit_build_compressed.library)
    catalog = load_catalog()
    expected = catalog.expand(ALL_FAMILIES)
    assert lib.names() == [inst.host_name for inst in expected]
    root = catalog.source_dir
    for family, spec in catalog.families.items():
        assert lib.preamble(family) == inline_preamble([root / spec.header], [root]).text
    for inst in expected:
        source = lib.source(inst.host_name)
        assert source.endswith("\n" + inst.instantiation_line() + "\n")
        assert lib.family(inst.host_name) == inst.family


def test_single_sources_from_the_library_compile(jit_build_compressed: JitBuild) -> None:
    """The first and last source of every family, each compiled alone, exactly as returned."""
    lib = JitLibrary(jit_build_compressed.library)
    catalog = load_catalog()
    chunks = []
    for family in ALL_FAMILIES:
        items = catalog.expand([family])
        for inst in {items[0].host_name: items[0], items[-1].host_name: items[-1]}.values():
            text = anchor_line_markers(lib.source(inst.host_name), catalog.source_dir)
            chunks.append(CheckChunk(inst.host_name, text, family))
    result = run_check(
        chunks, source_dir=catalog.source_dir, compiler=find_compiler(), syntax_only=True
    )
    assert result.ok, [d.format() for d in result.diagnostics]
    assert result.instantiations == len(chunks)


@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "zlib"])
def test_two_clean_builds_are_byte_identical(
    compressed: bool, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    jit_build: JitBuild = request.getfixturevalue(
        "jit_build_compressed" if compressed else "jit_build"
    )
    other, _ = build_jit(
        tmp_path / "elsewhere" / "deeper",
        ALL_FAMILIES if compressed else FAMILIES,
        options="COMPRESS" if compressed else "",
    )
    generated = sorted(p.name for p in jit_build.gen_dir.iterdir() if p.suffix in {".cpp", ".json"})
    assert generated == sorted(
        p.name for p in other.gen_dir.iterdir() if p.suffix in {".cpp", ".json"}
    )
    for name in generated:
        assert (jit_build.gen_dir / name).read_bytes() == (other.gen_dir / name).read_bytes(), name
    assert jit_build.library.read_bytes() == other.library.read_bytes()


def test_noop_and_incremental_rebuilds(tree_copy: Path, tmp_path: Path) -> None:
    build, _ = build_jit(tmp_path / "inc", source_dir=tree_copy)
    assert "no work to do" in build.ninja().stdout
    before = {p.name: p.stat().st_mtime_ns for p in build.gen_dir.glob("*.cpp")}
    # Touching a header without changing it regenerates the sources but recompiles nothing.
    (tree_copy / "softmax/softmax.h").touch()
    touched = build.ninja()
    assert "Embedding run-time preambles" in touched.stdout
    assert "Building CXX" not in touched.stdout
    # Editing it recompiles that family's source and the shared one (its functions) only.
    with (tree_copy / "softmax/softmax.h").open("a", encoding="utf-8") as handle:
        handle.write("// edited\n")
    edited = build.ninja()
    compiled = re.findall(r"Building CXX object \S+/(\w+)\.cpp\.o", edited.stdout)
    assert sorted(compiled) == ["_shared_preambles", "softmax"], edited.stdout
    after = {p.name: p.stat().st_mtime_ns for p in build.gen_dir.glob("*.cpp")}
    assert sorted(n for n in before if before[n] != after[n]) == [
        "_shared_preambles.cpp",
        "softmax.cpp",
    ]
    assert "// edited" in JitLibrary(build.library).preamble("softmax")


def test_generator_failure_fails_the_build(tree_copy: Path, tmp_path: Path) -> None:
    header = tree_copy / "arange/arange.h"
    header.write_text(header.read_text() + '#include "common/missing.h"\n')
    line = header.read_text().count("\n")
    _, result = build_jit(tmp_path / "broken", ["arange"], source_dir=tree_copy, check=False)
    assert result.returncode != 0
    assert f'arange.h:{line}: quoted include "common/missing.h" not found' in result.stdout


def test_no_dedup_stores_the_same_sources(jit_build: JitBuild, tmp_path: Path) -> None:
    build, _ = build_jit(tmp_path / "nodedup", options="NO_DEDUP")
    lib, plain = JitLibrary(build.library), JitLibrary(jit_build.library)
    assert lib.names() == plain.names()
    for name in plain.names():
        assert lib.source(name) == plain.source(name)
    facts = json.loads((build.gen_dir / "embed.json").read_text())
    dedup = json.loads((jit_build.gen_dir / "embed.json").read_text())
    assert facts["dedup"] is False and facts["shared"] == []
    assert all(f["shared_bytes"] == 0 for f in facts["units"])
    assert facts["embedded_bytes"] > dedup["embedded_bytes"]


def test_unknown_family_fails_at_configure_time(tmp_path: Path) -> None:
    _, result = build_jit(tmp_path / "unknown", ["unary", "nope"], check=False)
    assert result.returncode != 0
    text = " ".join((result.stdout + result.stderr).split())
    assert "unknown catalog family 'nope'; valid: unary, binary" in text


def test_empty_family_list_builds_an_empty_registry(tmp_path: Path) -> None:
    build, _ = build_jit(tmp_path / "empty", [])
    lib = JitLibrary(build.library)
    assert lib.names() == [] and lib.families() == []
    facts = json.loads((build.gen_dir / "embed.json").read_text())
    assert facts["units"] == [] and facts["embedded_bytes"] == 0


def test_dtype_selection_namespace_and_stripping(tmp_path: Path) -> None:
    build, _ = build_jit(
        tmp_path / "sel",
        ["unary", "arange"],
        options="DTYPES float16 int32 NAMESPACE my::jit STRIP_COMMENTS COMPRESS",
    )
    lib = JitLibrary(build.library)
    catalog = load_catalog()
    expected = catalog.expand(["unary", "arange"], ["float16", "int32"])  # catalog order
    assert lib.names() == [i.host_name for i in expected]
    symbols = build.library.read_bytes()
    assert b"_ZN2my3jit10source_for" in symbols  # the C++ API lives in the chosen namespace
    root = catalog.source_dir
    stripped = inline_preamble([root / "unary/unary.h"], [root], strip=True).text
    assert lib.preamble("unary") == stripped and "//" not in stripped
    facts = json.loads((build.gen_dir / "embed.json").read_text())
    assert facts["stripped"] is True and facts["compressed"] is True


def test_binding_errors(tmp_path: Path) -> None:
    with pytest.raises(JitLibraryError, match="cannot load"):
        JitLibrary(tmp_path / "missing.so")


def test_broken_kernel_fails_the_check(tree_copy: Path) -> None:
    header = tree_copy / "softmax/softmax.h"
    text = header.read_text()
    header.write_text(text.replace("metal::exp(", "metal::exp_nope(", 1))
    catalog = load_catalog(tree_copy)
    spec = catalog.families["softmax"]
    preamble = inline_preamble([tree_copy / spec.header], [tree_copy]).text
    chunks = jit_chunks(catalog, ["softmax"], preambles={"softmax": preamble})
    result = run_check(chunks, source_dir=tree_copy, compiler=find_compiler(), syntax_only=True)
    assert not result.ok
    assert any(
        d.path.endswith("softmax/softmax.h") and d.severity == "error" for d in result.diagnostics
    ), [d.format() for d in result.diagnostics]


def test_every_family_source_passes_the_check() -> None:
    """All catalog families, generated exactly as the library embeds them."""
    catalog = load_catalog()
    root = catalog.source_dir
    preambles = {
        name: inline_preamble([root / spec.header], [root]).text
        for name, spec in catalog.families.items()
    }
    result = run_check(
        jit_chunks(catalog, preambles=preambles),
        source_dir=root,
        compiler=find_compiler(),
        syntax_only=True,
    )
    assert result.ok, [d.format() for d in result.diagnostics]
    assert result.instantiations == len(catalog.expand())


def test_no_absolute_paths_in_generated_text(jit_build: JitBuild) -> None:
    for path in jit_build.gen_dir.iterdir():
        if path.suffix in {".cpp", ".json"}:
            text = path.read_text(encoding="utf-8")
            assert str(metal_src_dir()) not in text and str(jit_build.build_dir) not in text, path


def test_copy_of_tree_matches(tree_copy: Path) -> None:
    """Sanity for the fixtures: the private copy has the same catalog."""
    assert (tree_copy / "catalog.json").is_file()
    assert [i.host_name for i in load_catalog(tree_copy).expand(["arange"])] == [
        i.host_name for i in load_catalog().expand(["arange"])
    ]


def test_first_use_from_many_threads(jit_build_compressed: JitBuild, tmp_path: Path) -> None:
    """Fresh library (a copy, so nothing is assembled yet), eight threads racing on first use:
    ctypes releases the GIL, so the call_once guards are really exercised."""
    from concurrent.futures import ThreadPoolExecutor

    copy = tmp_path / "libfresh.so"
    shutil.copy(jit_build_compressed.library, copy)
    lib = JitLibrary(copy)
    catalog = load_catalog()
    picks = [items[k] for f in ALL_FAMILIES for items in [catalog.expand([f])] for k in (0, -1)]

    def fetch(offset: int) -> list[str]:
        order = picks[offset:] + picks[:offset]
        return [lib.source(inst.host_name) for inst in order]

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(fetch, range(8)))
    reference = JitLibrary(jit_build_compressed.library)
    for offset, got in enumerate(results):
        order = picks[offset:] + picks[:offset]
        assert got == [reference.source(inst.host_name) for inst in order]
