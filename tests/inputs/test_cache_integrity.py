"""The wheel cache is checked, not trusted, and kept under its size limit (issue 33, item 10).

A member extracted into the cache is reused only when it holds the bytes written then: the
SHA-256 recorded at extraction (``builder.inputs.wheel_extract``). Edited in place with its size
kept (``gemm`` renamed ``EVIL``: the issue's attack), the member is extracted again, with a notice,
and every command reads the wheel's bytes. The reference is the metallib written into the wheel
here. Past ``METALLIB_BUILDER_CACHE_MAX`` the least recently used wheels and folders go.
"""

from __future__ import annotations

import json
import os
import shutil
import zipfile
from pathlib import Path

import pytest
from support.hostile import Cli, library_with

from builder.inputs.wheel_cache import cache_entries

MEMBER = "pkg/lib/kernels.metallib"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("METALLIB_BUILDER_CACHE", str(folder))
    return folder


def _wheel(folder: Path, name: str, library: bytes, extra: int = 0) -> Path:
    """A wheel holding ``library`` as MEMBER (and ``extra`` bytes of padding in a data file)."""
    path = folder / f"{name}-1.0-py3-none-macosx_14_0_arm64.whl"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(MEMBER, library)
        if extra:
            archive.writestr("pkg/lib/padding.so", os.urandom(extra))  # (extracted: a binary)
    return path


def _cached(cache: Path, wheel: Path) -> Path:
    (found,) = (cache / "metallibs").glob(f"{wheel.stem}-*/{MEMBER}")
    return found


def _names(cli: Cli, wheel: Path) -> tuple[list[str], str]:
    code, out, err = cli("report", wheel, "--format", "json")
    assert code == 0, err
    return [f["name"] for f in json.loads(out)["functions"]], err


LIBRARY = library_with(["gemm_a", "gemm_b", "copy_c"])


def test_a_member_edited_in_place_is_extracted_again(tmp_path: Path, cache: Path, cli: Cli) -> None:
    wheel = _wheel(tmp_path, "pkg", LIBRARY)
    names, err = _names(cli, wheel)
    assert names == ["gemm_a", "gemm_b", "copy_c"] and "note:" not in err
    cached = _cached(cache, wheel)
    assert cached.read_bytes() == LIBRARY
    tampered = LIBRARY.replace(b"gemm", b"EVIL")
    assert len(tampered) == len(LIBRARY) and tampered != LIBRARY
    with cached.open("r+b") as handle:  # in place: same size, same inode
        handle.write(tampered)
    names, err = _names(cli, wheel)
    assert names == ["gemm_a", "gemm_b", "copy_c"]
    assert "note:" in err and repr(MEMBER) in err and "SHA-256" in err
    assert cached.read_bytes() == LIBRARY
    code, out, err = cli("verify", wheel)
    assert code == 0 and "EVIL" not in out + err, err
    code, out, err = cli("list", wheel)  # and the next run reuses the restored copy quietly
    assert code == 0 and "gemm_a" in out and "EVIL" not in out and "note:" not in err


def test_a_member_with_its_times_put_back_is_still_caught(
    tmp_path: Path, cache: Path, cli: Cli
) -> None:
    """``touch -r`` puts the mtime back; the ctime cannot be, so the member is hashed again."""
    wheel = _wheel(tmp_path, "pkg", LIBRARY)
    _names(cli, wheel)
    cached = _cached(cache, wheel)
    before = cached.stat()
    cached.write_bytes(LIBRARY.replace(b"copy", b"EVIL"))
    os.utime(cached, ns=(before.st_atime_ns, before.st_mtime_ns))
    names, err = _names(cli, wheel)
    assert names == ["gemm_a", "gemm_b", "copy_c"] and "SHA-256" in err


def test_a_copied_cache_is_hashed_once_and_kept(tmp_path: Path, cache: Path, cli: Cli) -> None:
    """Copied (new inodes and times, the same bytes): each member is hashed again, matches,
    and is kept, not extracted again; its new stamp is recorded."""
    wheel = _wheel(tmp_path, "pkg", LIBRARY)
    _names(cli, wheel)
    moved = tmp_path / "moved"
    shutil.move(cache, moved)
    shutil.copytree(moved, cache)
    cached = _cached(cache, wheel)
    inode = cached.stat().st_ino
    record = cached.parents[2] / ".members.json"
    stamp = json.loads(record.read_text())["members"][MEMBER]
    assert stamp["inode"] != inode
    names, err = _names(cli, wheel)
    assert names == ["gemm_a", "gemm_b", "copy_c"] and "note:" not in err
    assert cached.stat().st_ino == inode  # kept
    assert json.loads(record.read_text())["members"][MEMBER]["inode"] == inode


@pytest.mark.parametrize("damage", ["deleted", "empty", "other hash"])
def test_a_member_without_a_true_record_is_extracted_again(
    damage: str, tmp_path: Path, cache: Path, cli: Cli
) -> None:
    """A cache written before records (or with its record lost or changed) is not trusted
    either: the member is written again from the wheel."""
    wheel = _wheel(tmp_path, "pkg", LIBRARY)
    _names(cli, wheel)
    cached = _cached(cache, wheel)
    record = cached.parents[2] / ".members.json"
    if damage == "deleted":
        record.unlink()
    elif damage == "empty":
        record.write_text("{}")
    else:  # (and touched: while its stamp is the recorded one, the member is not hashed)
        doc = json.loads(record.read_text())
        doc["members"][MEMBER]["sha256"] = "0" * 64
        record.write_text(json.dumps(doc))
        os.utime(cached)
    inode = cached.stat().st_ino
    names, err = _names(cli, wheel)
    assert names == ["gemm_a", "gemm_b", "copy_c"]
    assert cached.stat().st_ino != inode and cached.read_bytes() == LIBRARY
    assert ("SHA-256" in err) == (damage == "other hash")
    assert json.loads(record.read_text())["members"][MEMBER]["inode"] == cached.stat().st_ino


def _age(entry_path: Path, cache: Path, seconds_ago: float) -> None:
    """Make ``entry_path``'s last use ``seconds_ago``: the mtime of its record."""
    (entry,) = [e for e in cache_entries(cache) if e.path == entry_path]
    record = entry.record if entry.record is not None else entry_path / ".members.json"
    when = record.stat().st_mtime - seconds_ago
    os.utime(record, (when, when))


def test_the_cache_keeps_under_its_limit_least_recently_used_first(
    tmp_path: Path, cache: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    wheels = {
        name: _wheel(tmp_path, name, library_with([f"{name}_k"]), extra=100_000)
        for name in ("aa", "bb", "cc", "dd")
    }
    folders: dict[str, Path] = {}
    for age, name in enumerate(("aa", "bb", "cc")):
        _names(cli, wheels[name])
        folders[name] = _cached(cache, wheels[name]).parents[2]
    for age, name in ((300, "aa"), (200, "bb"), (100, "cc")):
        _age(folders[name], cache, age)
    sizes = {e.path: e.size for e in cache_entries(cache)}
    assert all(sizes[f] > 100_000 for f in folders.values())
    one = max(sizes.values())
    monkeypatch.setenv("METALLIB_BUILDER_CACHE_MAX", str(3 * one + one // 2))  # room for three
    _names(cli, wheels["bb"])  # used again: now the most recent of the three
    names, err = _names(cli, wheels["dd"])  # a fourth: the least recently used goes
    assert names == ["dd_k"]
    assert "METALLIB_BUILDER_CACHE_MAX" in err and "removed the 1 least recently used" in err
    left = {p.name.split("-")[0] for p in (cache / "metallibs").iterdir()}
    assert left == {"bb", "cc", "dd"}
    assert sum(e.size for e in cache_entries(cache)) <= 3 * one + one // 2
    names, err = _names(cli, wheels["aa"])  # gone from the cache: extracted again, cc goes
    assert names == ["aa_k"]
    assert {p.name.split("-")[0] for p in (cache / "metallibs").iterdir()} == {"aa", "bb", "dd"}


def test_the_runs_own_entry_stays_however_small_the_limit(
    tmp_path: Path, cache: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("METALLIB_BUILDER_CACHE_MAX", "1")
    first = _wheel(tmp_path, "aa", library_with(["aa_k"]))
    second = _wheel(tmp_path, "bb", library_with(["bb_k"]))
    assert _names(cli, first)[0] == ["aa_k"]
    names, err = _names(cli, second)
    assert names == ["bb_k"] and "removed the 1 least recently used" in err
    assert [p.name.split("-")[0] for p in (cache / "metallibs").iterdir()] == ["bb"]


def test_downloaded_wheels_count_and_go_with_their_digest_record(
    tmp_path: Path, cache: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A wheel in the cache's ``wheels/`` (as ``pip download`` left it) is an entry too: its
    last use is its digest record's mtime, and both go together."""
    downloaded = cache / "wheels"
    downloaded.mkdir(parents=True)
    old = _wheel(downloaded, "old", library_with(["old_k"]), extra=200_000)
    assert _names(cli, old)[0] == ["old_k"]  # digests it, extracts it
    (record,) = (cache / "digests").iterdir()
    _age(old, cache, 1000)
    _age(_cached(cache, old).parents[2], cache, 1000)
    monkeypatch.setenv("METALLIB_BUILDER_CACHE_MAX", "150000")  # the new folder fits, not more
    new = _wheel(tmp_path, "new", library_with(["new_k"]))
    names, err = _names(cli, new)
    assert names == ["new_k"] and "removed the 2 least recently used" in err
    assert not old.exists() and not record.exists()
    assert [p.name.split("-")[0] for p in (cache / "metallibs").iterdir()] == ["new"]
