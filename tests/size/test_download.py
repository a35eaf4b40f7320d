"""The download model (``builder.size.download``): every byte's share of the library compressed as
a wheel stores it, checked against real wheels (the zip directory's compressed sizes), against a
real removal (slim + zlib level 6), against data whose compressed size is known without the model
(random bytes do not compress, a repeat of the previous 32 KiB costs almost nothing), and C
against the pure-Python path. Real data: mlx-metal 0.28.0 and 0.29.0, the smallest cached wheels.
"""

from __future__ import annotations

import json
import os
import zlib
from pathlib import Path
from typing import Any

import pytest
from clirun import run_cli
from synthetic import synthetic_bytes

from builder.metallib import Metallib, open_metallib
from builder.metallib.native import native_module
from builder.size.attribution import attribute
from builder.size.download import cuts, deflate_share, download_share, segments

from .conftest import zip_members

PLATFORM = "macosx_14_0_arm64"  # of the cached wheels used here
HAS_C = native_module() is not None and bool(getattr(native_module(), "HAS_DEFLATE", False))


@pytest.fixture(scope="module")
def wheel_report(download_report_28: tuple[Path, Path]) -> tuple[Path, dict[str, Any]]:
    wheel, saved = download_report_28
    return wheel, json.loads(saved.read_text())


@pytest.mark.realdata
def test_every_share_adds_up_to_the_modelled_total(
    wheel_report: tuple[Path, dict[str, Any]],
) -> None:
    _, doc = wheel_report
    total = doc["download_bytes"]
    functions = sum(f["download_bytes"] for f in doc["functions"])
    assert functions + doc["overhead_download_bytes"] == total
    assert sum(o["download_bytes"] for o in doc["overhead"]) == doc["overhead_download_bytes"]
    assert sum(g["download_bytes"] for g in doc["groups"]) == functions
    by_group: dict[str, int] = {}
    for f in doc["functions"]:
        by_group[f["group"]] = by_group.get(f["group"], 0) + f["download_bytes"]
    assert by_group == {g["name"]: g["download_bytes"] for g in doc["groups"]}
    assert doc["download_model"]["level"] == 6 and "zlib" in doc["download_model"]["description"]


@pytest.mark.realdata
def test_model_is_within_one_percent_of_the_wheel_member(
    wheel_report: tuple[Path, dict[str, Any]],
) -> None:
    wheel, doc = wheel_report
    members = zip_members(wheel)
    size, compressed = members["mlx/lib/mlx.metallib"]
    assert doc["file_size"] == size
    assert doc["download_member"] == {
        "name": "mlx/lib/mlx.metallib",
        "bytes": size,
        "download_bytes": compressed,
    }
    assert abs(doc["download_bytes"] - compressed) < compressed / 100
    assert doc["download_model_error_bytes"] == doc["download_bytes"] - compressed


@pytest.mark.realdata
def test_a_wheel_lists_every_file_with_its_real_compressed_size(
    wheel_report: tuple[Path, dict[str, Any]],
) -> None:
    wheel, doc = wheel_report
    listed = {f["name"]: (f["bytes"], f["download_bytes"]) for f in doc["wheel"]["files"]}
    assert listed == zip_members(wheel)
    assert "mlx/lib/libmlx.dylib" in listed
    assert doc["wheel"]["bytes"] == os.path.getsize(wheel)
    assert doc["wheel"]["download_bytes"] == sum(c for _, c in listed.values())


@pytest.mark.realdata
@pytest.mark.skipif(
    not HAS_C, reason="the C pass is not in use (built without zlib, or METALLIB_BUILDER_NATIVE=0)"
)
def test_c_and_python_give_the_same_numbers_on_real_data(
    mlx_metallib: Any,
) -> None:
    """A real 6 MB slice (function list, metadata and modules), cut into 1 MiB parts."""
    with open_metallib(mlx_metallib("0.28.0", PLATFORM)) as lib:
        layout = segments(lib, attribute(lib))
        end = 6 << 20
        starts = [s for s in layout.starts if s < end]
        data = bytes(lib.data[:end])
    parts = cuts(starts, end)
    assert len(parts) >= 5
    native = deflate_share(data, parts, starts, 2)
    assert deflate_share(data, parts, starts, 1) == native  # the thread count changes nothing
    assert deflate_share(data, parts, starts, 2, native=False) == native
    sizes, costs = native
    assert sum(costs) == 8 * sum(sizes)
    assert deflate_share(data, parts, starts, 2, attribute=False)[0] == sizes


def test_parts_are_what_zlib_gives_each_part_primed_with_the_32_kib_before_it() -> None:
    """An independent reference for the part sizes: zlib, part by part, as the docs state it."""
    data = synthetic_bytes([(f"k{i}_float32", 5000 + 37 * i) for i in range(400)])
    lib = Metallib(data)
    layout = segments(lib, attribute(lib))
    parts = cuts(layout.starts, len(data), shard_bytes=200_000)
    assert len(parts) > 3
    sizes, _ = deflate_share(data, parts, layout.starts, 2)
    expected = []
    for k, a in enumerate(parts):
        b = parts[k + 1] if k + 1 < len(parts) else len(data)
        prime = {"zdict": data[max(0, a - 32768) : a]} if a else {}
        packer = zlib.compressobj(6, zlib.DEFLATED, -15, 8, zlib.Z_DEFAULT_STRATEGY, **prime)
        flush = zlib.Z_FINISH if b == len(data) else zlib.Z_SYNC_FLUSH
        expected.append(len(packer.compress(data[a:b]) + packer.flush(flush)))
    assert sizes == expected


def test_bits_go_to_the_bytes_they_encode() -> None:
    """Random bytes cost about their size, zeros and a repeat of the previous 32 KiB almost
    nothing: the charge follows the data, not the segment's length."""
    noise = os.urandom(20_000)
    data = noise + noise + bytes(40_000) + os.urandom(40_000)
    starts = [0, 20_000, 40_000, 80_000]
    sizes, costs = deflate_share(data, [0], starts, 1)
    random_a, repeat, zeros, random_b = (c / 8 for c in costs)
    assert sum(costs) == 8 * sum(sizes)
    assert 0.98 * 20_000 < random_a < 1.03 * 20_000 and 0.98 * 40_000 < random_b < 1.03 * 40_000
    assert repeat < 300 and zeros < 300


def test_shares_match_between_c_and_python_on_a_whole_library() -> None:
    data = synthetic_bytes([(f"f{i}_int32", 300 + 101 * i) for i in range(60)])
    lib = Metallib(data)
    attribution = attribute(lib)
    native = download_share(lib, attribution)
    python = download_share(lib, attribution, native=False)
    assert (native.total, native.functions, native.overhead) == (
        python.total,
        python.functions,
        python.overhead,
    )
    assert sum(native.functions) + sum(native.overhead) == native.total
    # one part: the model is exactly the single stream a zip member holds
    packer = zlib.compressobj(6, zlib.DEFLATED, -15)
    assert native.total == len(packer.compress(data) + packer.flush())


@pytest.mark.realdata
@pytest.mark.slow
def test_a_groups_share_predicts_what_removing_it_saves(
    wheel_report: tuple[Path, dict[str, Any]],
    tmp_path: Path,
) -> None:
    """The honest use of the number: drop the largest family (slim), compress the rest as the
    wheel would, and the saving is what the report said, within 8% (measured: 0.1%)."""
    from builder.subsets.slim import slim_file

    wheel, doc = wheel_report
    largest = max(doc["groups"], key=lambda g: g["download_bytes"])
    assert largest["download_bytes"] > doc["download_bytes"] / 10
    names = [f["name"] for f in doc["functions"] if f["group"] == largest["name"]]
    out = tmp_path / "without.metallib"
    slim_file(doc["source"]["path"], out, drop=names)
    packer = zlib.compressobj(6, zlib.DEFLATED, -15)
    rest = len(packer.compress(out.read_bytes()) + packer.flush())
    saved = zip_members(wheel)["mlx/lib/mlx.metallib"][1] - rest
    assert abs(largest["download_bytes"] - saved) < 0.08 * saved


def test_a_schema_2_report_reads_as_schema_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Schema 3 calls the model's deflate inputs shards (a part is a row of a binary's account):
    ``download_model.shards`` counts the cuts, ``shard_bytes`` is their size. A report saved with
    schema 2's names (``parts``, ``part_bytes``) still reads, to the same report."""
    data = synthetic_bytes([(f"k{i}_float32", 5000 + 37 * i) for i in range(400)])
    library = tmp_path / "k.metallib"
    library.write_bytes(data)
    code, out, _ = run_cli(["report", str(library), "--download", "--format", "json"], capsys)
    doc = json.loads(out)
    model = doc["download_model"]
    assert code == 0 and doc["schema"] == 3 and not {"parts", "part_bytes"} & set(model)
    assert model["shard_bytes"] == 1 << 20  # docs/download-size.md: "about 1 MiB"
    whole = len(data) // model["shard_bytes"]  # each cut at least that far past the last
    assert whole >= 4 and whole <= model["shards"] <= whole + 1
    old = {**doc, "schema": 2, "download_model": dict(model)}
    old["download_model"]["parts"] = old["download_model"].pop("shards")
    old["download_model"]["part_bytes"] = old["download_model"].pop("shard_bytes")
    written = []
    for name, saved in (("new.json", doc), ("old.json", old)):
        (tmp_path / name).write_text(json.dumps(saved))
        code, out, err = run_cli(["report", str(tmp_path / name), "--format", "json"], capsys)
        assert code == 0, err
        written.append(json.loads(out))
    assert written[0]["download_model"] == written[1]["download_model"] == model
    assert written[0] == written[1]
