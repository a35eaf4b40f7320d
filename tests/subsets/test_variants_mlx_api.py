"""Issue 28 items 2 and 3 on MLX v0.32.1's real headers (mlx-metal 0.32.1 wheel): ``variants
--from`` writes run-time sources in MLX's own interface, with exactly the functions MLX's
``jit/includes.h`` declares, and counts their bytes as the ``cstring`` API stores them, checked
against the strings libmlx.dylib (mlx-metal 0.32.1) and executorch 1.5.1's MLX delegate ship.

The wheel ships the headers, not the ``.metal`` entry files, so the tree here
(``support.mlx_stand_in``) has one stand-in entry file per entry file of MLX v0.32.1, each with
that file's quoted includes (MLX's own lists) and no kernel: the function set and the embedded
text depend only on which headers each entry file includes and on the headers themselves, which
are MLX's. ``metallib.toml`` is docs/mlx.md's, read from the doc (``support.mlx_doc``), one file
for every platform: its ``[kernels.requires]`` leaves out what the macOS 14 library's build left
out, its ``[build]`` gives the interface, the table of functions and what is always embedded.
The numbers docs/mlx.md states about the embedded bytes are checked against what is measured
here.
"""

from __future__ import annotations

import collections
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from binaries import tool
from clirun import run_cli
from support.mlx_doc import DOC, KERNELS, metallib_toml, table_row
from support.mlx_stand_in import (
    ALWAYS,
    MACOS14,
    MACOS26,
    UNCONDITIONAL,
    VERSION,
    add_kernels,
    declared,
    defined,
    lay_out,
    member,
    wheel,
)

from builder.files.reading import parse_toml
from builder.size.host_strings import host_strings

pytestmark = pytest.mark.realdata


def _toml(text: str) -> dict[str, Any]:
    """``text`` parsed as the tool parses settings (tomllib, or tomli on Python 3.10)."""
    return parse_toml(text.encode("utf-8"), "the TOML text of this test")


@pytest.fixture(scope="module")
def mlx_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The include root: the wheel's headers and jit/includes.h, the stand-in entry files and
    docs/mlx.md's metallib.toml in the kernel folder."""
    return lay_out(tmp_path_factory.mktemp("mlx") / "include")


def _variants(
    root: Path, platform: str, out: Path, capsys: pytest.CaptureFixture[str]
) -> dict[str, Any]:
    """``variants --from`` the mlx-metal 0.32.1 library of ``platform`` (a wheel tag): the
    platform is the library's own, the settings the doc's, nothing on the command line."""
    library = member(
        wheel("mlx-metal", VERSION, platform), "mlx/lib/mlx.metallib", out.parent / "m.lib"
    )
    args = ["variants", "--from", str(library), "--source-dir", str(root / KERNELS)]
    code, _, err = run_cli([*args, "-I", str(root), "-o", str(out)], capsys)
    assert code == 0, err
    doc = json.loads((out / "variants.json").read_text(encoding="utf-8"))
    return {v["name"]: v for v in doc["variants"]} | {"": doc}


def _stated(variant: str) -> dict[str, str]:
    """The row of docs/mlx.md's table of embedded bytes for ``variant`` (its first cell)."""
    header = table_row("variant")
    return dict(zip(header, table_row(variant), strict=True))


def _number(cell: str) -> int:
    return int(cell.replace(",", ""))


def test_the_jit_split_defines_exactly_what_includes_h_declares(
    mlx_tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The macOS 26 library (NAX in): the doc's [build.preambles] is jit/includes.h's 49
    declarations; the JIT split defines them and no other; all-aot the 12 MLX embeds outside
    if(MLX_METAL_JIT); the bytes are the doc's."""
    settings = _toml(metallib_toml())["build"]
    names = declared(mlx_tree)
    assert len(names) == 49 and sorted(settings["preambles"]) == sorted(names)
    assert all((mlx_tree / KERNELS / h).is_file() for h in settings["preambles"].values())
    assert settings["always-embed"] == ALWAYS
    variants = _variants(mlx_tree, MACOS26, tmp_path / "out", capsys)
    jit = variants["jit-mode"]
    assert defined(Path(jit["jit_sources_file"]), mlx_tree) == set(names)
    assert len(jit["preambles"]) == 49 and jit["embedded_storage"] == "separate"
    aot = variants["all-aot"]
    assert defined(Path(aot["jit_sources_file"]), mlx_tree) == UNCONDITIONAL
    stated = _stated("`jit-mode`, macOS 26")
    assert (_number(stated["functions"]), _number(stated["embedded bytes"])) == (
        len(jit["preambles"]),
        jit["embedded_bytes"],
    )
    interface = variants[""]["jit_interface"]
    assert interface == {
        "namespace": "mlx::core::metal",
        "api": "cstring",
        "lookup": False,
        "storage": "separate",
        "preamble_set": "table",
        "always_embed": ALWAYS,
    }
    # The command each variant names writes the same file.
    again = tmp_path / "again.cpp"
    code, _, err = run_cli([*jit["embed_command"][1:-2], "-o", str(again)], capsys)
    assert code == 0, err
    assert again.read_bytes() == Path(jit["jit_sources_file"]).read_bytes()


_FORMAT = re.compile(
    r"^(#line .*|/{10,}|// Contents from .*|// Auto generated source for .*"
    r"|// Copyright © 2025 Apple Inc\.|\s*)$"
)


def _shipped(dylib: Path, namespace: str | None) -> dict[str, str]:
    """The run-time sources a Mach-O binary ships (``sources``), named by the header MLX's
    generator names in each one's banner."""
    data = dylib.read_bytes()
    found = {}
    for string in host_strings(dylib, namespace) or []:
        text = data[string.offset : string.offset + string.size - 1].decode("utf-8")
        named = re.search(rf"// Auto generated source for {KERNELS}/(\S+)\.h", text)
        if named is not None:
            found[Path(named.group(1)).name] = text
    return found


def _lines(text: str) -> collections.Counter[str]:
    """The source lines of a preamble: formatting left out (MLX's banners, #line markers,
    blank lines), so MLX's generator and ours compare on what the compiler reads."""
    return collections.Counter(line for line in text.split("\n") if not _FORMAT.match(line))


def _texts(jit_sources: Path) -> dict[str, str]:
    """Each function's text in a cstring jit_sources.cpp, read back by compiling it for arm64
    macOS and reading the dylib as ``sources`` does: what the file stores, byte for byte."""
    obj, dylib = jit_sources.with_suffix(".o"), jit_sources.with_suffix(".dylib")
    compile_ = [
        tool("clang"),
        "-target",
        "arm64-apple-macos14",
        "-O2",
        "-std=c++17",
        "-nostdinc++",
        "-c",
    ]
    subprocess.run([*compile_, str(jit_sources), "-o", str(obj)], check=True)
    link = [tool("ld64.lld"), "-dylib", "-arch", "arm64", "-platform_version", "macos", "14", "14"]
    subprocess.run([*link, str(obj), "-o", str(dylib)], check=True)
    data = dylib.read_bytes()
    return {
        (s.function or "").rpartition("::")[2]: data[s.offset : s.offset + s.size - 1].decode()
        for s in host_strings(dylib, "mlx::core::metal") or []
    }


def test_embedded_bytes_are_what_mlx_ships(
    mlx_tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The macOS 14 library: the variants' embedded bytes, as the cstring API stores them, are
    what a binary built from jit_sources.cpp holds, and within 10% of what MLX ships:
    libmlx.dylib (mlx-metal 0.32.1) for all-aot, executorch 1.5.1's delegate for the JIT split.
    Every byte of the gap is accounted for: formatting (MLX's banners, our #line markers) and,
    for executorch, whose MLX is newer than 0.32.1, source lines that differ. docs/mlx.md's
    table says each of these numbers."""
    variants = _variants(mlx_tree, MACOS14, tmp_path / "out", capsys)
    libmlx = _shipped(
        member(wheel("mlx-metal", VERSION), "lib/libmlx.dylib", tmp_path / "libmlx.dylib"),
        "mlx::core::metal",
    )
    executorch = _shipped(
        member(
            wheel("executorch", "1.5.1"),
            "libexecutorch_backend_mlx.dylib",
            tmp_path / "delegate.dylib",
        ),
        None,
    )
    for name, shipped, formatting_only in (
        ("all-aot", libmlx, True),
        ("jit-mode", executorch, False),
    ):
        variant = variants[name]
        ours = _texts(Path(variant["jit_sources_file"]))
        assert set(ours) == set(shipped), name  # the same functions as the binary ships
        assert sum(len(t.encode()) for t in ours.values()) == variant["embedded_bytes"]
        theirs = sum(len(t.encode()) for t in shipped.values())
        assert abs(variant["embedded_bytes"] - theirs) <= 0.10 * theirs, (name, theirs)
        theirs_only = ours_only = 0  # bytes of the source lines one side has and the other lacks
        for function, text in shipped.items():
            extra, missing = (
                _lines(text) - _lines(ours[function]),
                _lines(ours[function]) - _lines(text),
            )
            theirs_only += sum(len(x.encode()) + 1 for x in extra.elements())
            ours_only += sum(len(x.encode()) + 1 for x in missing.elements())
            if formatting_only:  # the same release: the same source lines, every one
                assert not extra and not missing, function
        source_gap = theirs_only - ours_only  # net: what the differing lines add to MLX's bytes
        formatting = theirs - variant["embedded_bytes"] - source_gap
        print(
            f"{name}: {len(ours)} functions, theirs {theirs:,}, ours "
            f"{variant['embedded_bytes']:,}, formatting {formatting:,}, differing lines "
            f"{theirs_only:,} theirs only, {ours_only:,} ours only, net {source_gap:,}"
        )
        assert formatting > 0 and abs(source_gap) < 0.01 * theirs, (formatting, source_gap)
        stated = _stated(f"`{name}`, macOS 14")
        measured = [
            len(ours),
            variant["embedded_bytes"],
            theirs,
            formatting,
            theirs_only,
            ours_only,
            source_gap,
        ]
        cells = [
            "functions",
            "embedded bytes",
            "bytes MLX ships",
            "formatting",
            "lines only MLX's",
            "lines only ours",
            "lines, net",
        ]
        assert [_number(stated[c]) for c in cells] == measured, (name, measured)


def test_options_over_the_settings_and_the_bytes_each_api_stores(
    mlx_tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--jit-namespace / --jit-api / --jit-lookup win over metallib.toml; the string API stores
    pieces shared by several functions once, so the same split embeds fewer bytes than with
    cstring, and says so (deduplicated); a namespace that is no C++ name is exit 2."""
    cstring = _variants(mlx_tree, MACOS14, tmp_path / "c", capsys)["jit-mode"]
    library = tmp_path / "m.lib"
    args = ["variants", "--from", str(library), "--source-dir", str(mlx_tree / KERNELS)]
    args += ["-I", str(mlx_tree), "-o", str(tmp_path / "s")]
    options = ["--jit-api", "string", "--jit-namespace", "app::k", "--jit-lookup"]
    code, _, err = run_cli([*args, *options], capsys)
    assert code == 0, err
    doc = json.loads((tmp_path / "s" / "variants.json").read_text(encoding="utf-8"))
    assert doc["jit_interface"]["storage"] == "deduplicated"
    assert (doc["jit_interface"]["namespace"], doc["jit_interface"]["lookup"]) == (
        "app::k",
        True,
    )
    string = {v["name"]: v for v in doc["variants"]}["jit-mode"]
    assert string["preambles"] == cstring["preambles"]
    assert string["embedded_storage"] == "deduplicated"
    assert 0 < string["embedded_bytes"] < cstring["embedded_bytes"]
    text = Path(string["jit_sources_file"]).read_text(encoding="utf-8")
    assert "namespace app::k {" in text and "std::string_view preamble(" in text
    assert "--jit-namespace=app::k" in string["embed_command"]
    command = string["embed_command"]
    assert not any(a.startswith("--jit-api") or "lookup" in a for a in command)
    code, _, err = run_cli([*args[:-1], str(tmp_path / "bad"), "--jit-namespace", "a::"], capsys)
    assert (
        code == 2
        and "--jit-namespace must be a C++ namespace such as" in err
        and "got 'a::'" in err
    )


@pytest.fixture(scope="module")
def kernel_tree(mlx_tree: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``mlx_tree`` with one kernel per entry file MLX may compile at run time, so a ceiling
    moves files: each written, as MLX writes its kernels' code, in the entry file's own header
    (its last include), under the name of one of the real library's functions (a C name,
    distinct per file). The aot-only files write none (they never move)."""
    root = tmp_path_factory.mktemp("mlx-kernels") / "include"
    shutil.copytree(mlx_tree, root)
    return add_kernels(root)


@pytest.mark.parametrize("platform", [MACOS14, MACOS26])
def test_a_planned_split_defines_every_declared_function(
    kernel_tree: Path, platform: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 37 item 5: MLX's JIT build links host code naming every function jit/includes.h
    declares for the platform (the NAX ones from macOS 26), whichever families a split keeps
    AOT; a planned split (a ceiling one byte under the whole library: some entry files JIT,
    the rest AOT) defines each of them (compiled with includes.h first, read back with nm)."""
    library = member(
        wheel("mlx-metal", VERSION, platform), "mlx/lib/mlx.metallib", tmp_path / "m.lib"
    )
    out = tmp_path / "out"
    args = ["variants", "--from", str(library), "--source-dir", str(kernel_tree / KERNELS)]
    args += ["-I", str(kernel_tree), "-o", str(out), "--ceiling", str(library.stat().st_size - 1)]
    code, _, err = run_cli(args, capsys)
    assert code == 0, err
    doc = json.loads((out / "variants.json").read_text(encoding="utf-8"))
    planned = {v["name"]: v for v in doc["variants"]}["planned"]
    jit, aot = planned["jit_sources"], planned["aot_sources"]
    assert jit and len(aot) > len(doc["source"]["tree"]["held_aot"]), (jit, aot)  # mixed
    nax = platform == MACOS26
    wanted = {f for f in declared(kernel_tree) if nax or not f.endswith("_nax")}
    assert len(wanted) == (49 if nax else 41)
    assert defined(Path(planned["jit_sources_file"]), kernel_tree) == wanted


CHECKOUT = os.environ.get("METALLIB_BUILDER_MLX_CHECKOUT")


def _split_rows() -> dict[tuple[str, str], list[int]]:
    """docs/mlx.md's table of planned splits: (ceiling, planner) -> its numbers."""
    rows = {}
    for line in DOC.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 7 and (cells[0].endswith(" MB") or cells[0] == "–"):
            rows[(cells[0], cells[1])] = [_number(c) for c in cells[2:]]
    return rows


@pytest.mark.skipif(
    not CHECKOUT, reason="set METALLIB_BUILDER_MLX_CHECKOUT to a checkout of MLX v0.32.1"
)
def test_the_doc_states_the_planned_splits_of_mlx_own_tree(tmp_path: Path) -> None:
    """docs/mlx.md's planned splits on MLX's own v0.32.1 tree with the doc's metallib.toml
    (written into the checkout named by METALLIB_BUILDER_MLX_CHECKOUT, a copy): each row the
    proxy planner gives, and jit-mode's, is what variants --from measures now; each split's
    jit_sources.cpp defines the 41 functions jit/includes.h declares for macOS 14."""
    root = Path(str(CHECKOUT))
    (root / KERNELS / "metallib.toml").write_text(metallib_toml(), encoding="utf-8")
    rows = _split_rows()
    pinned = "proxy, `--keep-aot 'quantized*'`"
    runs = [
        (("60 MB", "proxy"), ["--ceiling", "60MB"]),
        (("60 MB", pinned), ["--ceiling", "60MB", "--keep-aot", "quantized*"]),
        (("30 MB", "proxy"), ["--ceiling", "30MB"]),
        (("30 MB", pinned), ["--ceiling", "30MB", "--keep-aot", "quantized*"]),
    ]
    for number, (row, options) in enumerate(runs):
        done = subprocess.run(
            [sys.executable, "-m", "builder", "variants", "--from", f"mlx-metal=={VERSION}"]
            + ["--source-dir", KERNELS, "-I", ".", "-o", str(tmp_path / str(number))]
            + [*options, "--format", "json"],
            cwd=root, capture_output=True, text=True, check=True,
        )  # fmt: skip
        variants = {v["name"]: v for v in json.loads(done.stdout)["variants"]}
        split = variants["planned"]
        measured = [len(split["jit_sources"]), split["jit_kernels"]]
        measured += [split["first_use_source_bytes_proxy"], split["metallib_bytes"]]
        assert [*measured, len(split["preambles"])] == rows[row], row
        jit = variants["jit-mode"]
        jit_row = [len(jit["jit_sources"]), jit["jit_kernels"], jit["first_use_source_bytes_proxy"]]
        assert [*jit_row, jit["metallib_bytes"], len(jit["preambles"])] == rows[("–", "`jit-mode`")]
