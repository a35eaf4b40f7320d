"""Wheels are untrusted input: hostile names, lying sizes, bad CRCs, full or read-only caches.

Every failure must be one ``UsageError`` line (exit 2 from the CLI), write nothing outside the
cache, and leave no temporary file behind. The package index is never contacted: where a download
matters, ``pip download`` is replaced by a stand-in that copies a prepared wheel and counts calls
(the real download path is covered by the real-data tests).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import subprocess
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from clirun import run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from synthetic import synthetic_bytes

from builder.errors import UsageError
from builder.inputs import wheel_cache, wheel_extract, wheels
from builder.size.load import load_reports

from .hostile_wheels import WHEEL_NAME, corrupt_member, temp_files, tree, write_wheel

# Two libraries whose function names have equal lengths: equal sizes, different contents.
A_FUNCS = [("v_copyfloat32float32", 900), ("v_addfloat32", 700)]
B_FUNCS = [("v_copyfloat16float16", 900), ("v_addfloat16", 700)]
GOOD = synthetic_bytes(A_FUNCS)
MEMBER = "pkg/lib/app.metallib"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("METALLIB_BUILDER_CACHE", str(root))
    return root


def _good_wheel(folder: Path, data: bytes = GOOD, **kwargs: Any) -> Path:
    return write_wheel(folder / WHEEL_NAME, {MEMBER: data, "pkg/__init__.py": b""}, **kwargs)


def _one_error_line(err: str) -> str:
    assert "Traceback" not in err, err
    lines = err.splitlines()
    assert lines and lines[-1].startswith("error: "), err
    return lines[-1]


def _assert_clean_failure(code: int, out: str, err: str) -> str:
    assert code == 2 and out == ""
    assert err.count("\n") == 1, err
    return _one_error_line(err)


# --- zip slip -------------------------------------------------------------------------------

ESCAPES = [
    "../../../outside/app.metallib",  # from cache/metallibs/<key>/ up into tmp_path
    "pkg/../../../../outside/app.metallib",
    "{victim}",  # the absolute path of a file that exists
    "pkg\\..\\..\\..\\..\\outside\\app.metallib",
    "C:/outside/app.metallib",
    "C:\\outside\\app.metallib",
    "//server/share/app.metallib",
    "pkg/./app.metallib",
    "pkg//app.metallib",
]


@pytest.mark.parametrize("name", ESCAPES)
def test_escaping_member_is_refused_before_anything_is_written(
    name: str, tmp_path: Path, cache: Path
) -> None:
    victim = tmp_path / "victim" / "app.metallib"
    victim.parent.mkdir()
    victim.write_bytes(b"original")
    name = name.format(victim=victim)
    wheel = write_wheel(tmp_path / "in" / WHEEL_NAME, [(MEMBER, GOOD), (name, b"evil")])
    before = tree(tmp_path, skip=cache)
    with pytest.raises(wheel_cache.UnsafeWheelError) as info:
        wheel_extract.extract_metallibs(wheel)
    message = str(info.value)
    assert str(wheel) in message and repr(name) in message and "\n" not in message
    assert tree(tmp_path, skip=cache) == before  # victim intact, nothing new outside the cache
    assert not list(cache.rglob("*.metallib")) and not temp_files(cache)


@pytest.mark.parametrize("name", [ESCAPES[0], "{victim}", "C:\\outside\\app.metallib"])
def test_cli_refuses_escaping_member(
    name: str, tmp_path: Path, cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    victim = tmp_path / "victim" / "app.metallib"
    victim.parent.mkdir()
    victim.write_bytes(b"original")
    name = name.format(victim=victim)
    wheel = write_wheel(tmp_path / WHEEL_NAME, [(name, GOOD)])
    before = tree(tmp_path, skip=cache)
    line = _assert_clean_failure(*run_cli(["report", str(wheel)], capsys))
    assert str(wheel) in line and "refusing to extract member" in line
    assert tree(tmp_path, skip=cache) == before and not temp_files(cache)


def test_member_named_twice_is_refused(tmp_path: Path, cache: Path) -> None:
    wheel = write_wheel(tmp_path / WHEEL_NAME, [(MEMBER, GOOD), (MEMBER, b"second")])
    with pytest.raises(wheel_cache.UnsafeWheelError, match="two members"):
        wheel_extract.extract_metallibs(wheel)


def test_symlink_planted_in_the_cache_is_not_followed(tmp_path: Path, cache: Path) -> None:
    wheel = _good_wheel(tmp_path)
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    outside = tmp_path / "outside"
    outside.mkdir()
    planted = cache / "metallibs" / f"{wheel.stem}-{digest[:32]}"
    planted.mkdir(parents=True)
    (planted / "pkg").symlink_to(outside)
    with pytest.raises(
        wheel_cache.UnsafeWheelError, match="resolves outside the extraction folder"
    ):
        wheel_extract.extract_metallibs(wheel)
    assert not any(outside.iterdir())


# --- sizes and free space ----------------------------------------------------------------------


def test_declared_size_beyond_free_space_is_refused(tmp_path: Path, cache: Path) -> None:
    wheel = _good_wheel(tmp_path, declared={MEMBER: 2**60})  # ZIP64 central directory entry
    assert wheel.stat().st_size < 10_000
    with pytest.raises(wheel_cache.CacheWriteError) as info:
        wheel_extract.extract_metallibs(wheel)
    message = str(info.value)
    assert f"{2**60 / 1e9:,.1f} GB" in message and str(cache / "metallibs") in message
    assert "free" in message and str(wheel) in message
    assert not list(cache.rglob("*.metallib")) and not temp_files(cache)


@pytest.mark.parametrize("spare", [-1, 0])
def test_free_space_check_uses_the_cache_file_system(
    spare: int, tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wheel = _good_wheel(tmp_path)
    asked = []

    def disk_usage(path: str | Path) -> SimpleNamespace:
        asked.append(Path(path))
        return SimpleNamespace(total=10**9, used=10**9, free=len(GOOD) + spare)

    monkeypatch.setattr(shutil, "disk_usage", disk_usage)
    if spare < 0:
        with pytest.raises(wheel_cache.CacheWriteError, match=f"only {len(GOOD) - 1:,} bytes free"):
            wheel_extract.extract_metallibs(wheel)
        assert not list(cache.rglob("*.metallib"))
    else:
        [path] = wheel_extract.extract_metallibs(wheel)
        assert path.read_bytes() == GOOD
    assert asked == [cache / "metallibs"]


def _record_extract_writes(
    monkeypatch: pytest.MonkeyPatch, fail: Callable[[int], None]
) -> list[int]:
    """Wrap ``os.write``: for the extractor's temp files, record bytes written and let ``fail``
    (given the call number) raise; the first call writes only half its data, as a nearly full
    disk does."""
    real = os.write
    written: list[int] = []

    def write(fd: int, data: Any) -> int:
        if ".extract-" not in os.readlink(f"/proc/self/fd/{fd}"):
            return real(fd, data)
        fail(len(written))
        n = real(fd, bytes(data[: max(1, len(data) // 2)] if not written else data))
        written.append(n)
        return n

    monkeypatch.setattr(os, "write", write)
    return written


def test_member_longer_than_declared_is_never_written_past_its_size(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wheel = _good_wheel(tmp_path, declared={MEMBER: 10})
    written = _record_extract_writes(monkeypatch, lambda call: None)
    with pytest.raises(wheel_cache.CorruptWheelError, match=repr(MEMBER)):
        wheel_extract.extract_metallibs(wheel)
    assert sum(written) <= 10
    assert not list(cache.rglob("*.metallib")) and not temp_files(cache)


def test_member_shorter_than_declared_is_corrupt(tmp_path: Path, cache: Path) -> None:
    wheel = _good_wheel(tmp_path, declared={MEMBER: len(GOOD) + 5_000_000})
    with pytest.raises(wheel_cache.CorruptWheelError, match="ends 5000000 bytes short"):
        wheel_extract.extract_metallibs(wheel)
    assert not list(cache.rglob("*.metallib")) and not temp_files(cache)


# --- write failures ------------------------------------------------------------------------------


def test_disk_full_while_writing_is_one_error_and_no_temp_file(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    wheel = _good_wheel(tmp_path)

    def fail(call: int) -> None:
        if call >= 1:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    written = _record_extract_writes(monkeypatch, fail)
    with pytest.raises(wheel_cache.CacheWriteError) as info:
        wheel_extract.extract_metallibs(wheel)
    assert written and sum(written) < len(GOOD)  # it did get part of the way
    message = str(info.value)
    assert "No space left on device (ENOSPC)" in message and str(cache / "metallibs") in message
    assert not list(cache.rglob("*.metallib")) and not temp_files(cache)
    line = _assert_clean_failure(*run_cli(["report", str(wheel)], capsys))
    assert "ENOSPC" in line and MEMBER in line and not temp_files(cache)


@pytest.mark.parametrize("code", [errno.EROFS, errno.EACCES])
def test_unwritable_cache_is_one_error(
    code: int,
    tmp_path: Path,
    cache: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Creating the temp file fails as on a read-only mount or a folder we may not write to
    (monkeypatched: these tests run as root, which ignores permission bits)."""
    wheel = _good_wheel(tmp_path)
    real = os.open

    def fake_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if "/.extract-" in str(path):
            raise OSError(code, os.strerror(code), str(path))
        return real(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", fake_open)
    line = _assert_clean_failure(*run_cli(["report", str(wheel)], capsys))
    assert os.strerror(code) in line and errno.errorcode[code] in line
    assert "METALLIB_BUILDER_CACHE" in line and not temp_files(cache)


def test_cache_folder_that_cannot_exist_is_one_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_bytes(b"")
    monkeypatch.setenv("METALLIB_BUILDER_CACHE", str(blocker / "cache"))
    line = _assert_clean_failure(*run_cli(["report", str(_good_wheel(tmp_path))], capsys))
    assert str(blocker / "cache") in line and "ENOTDIR" in line


def test_interrupt_while_writing_leaves_no_temp_file(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wheel = _good_wheel(tmp_path)

    def fail(call: int) -> None:
        if call >= 1:
            raise KeyboardInterrupt

    _record_extract_writes(monkeypatch, fail)
    with pytest.raises(KeyboardInterrupt):
        wheel_extract.extract_metallibs(wheel)
    assert not list(cache.rglob("*.metallib")) and not temp_files(cache)


def test_interrupt_while_downloading_leaves_no_temp_folder(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def run(cmd: list[str], **kwargs: Any) -> None:
        Path(cmd[cmd.index("-d") + 1], "partial.whl").write_bytes(b"PK")
        raise KeyboardInterrupt

    monkeypatch.setattr(wheels, "subprocess", SimpleNamespace(run=run))
    monkeypatch.setattr(wheels, "check_remote", lambda *args: None)  # a fake pip: no index
    with pytest.raises(KeyboardInterrupt):
        wheels.download_wheel("pkg", "1.0")
    assert not temp_files(cache) and not list(cache.rglob("*.whl"))


def test_stale_temp_files_of_a_killed_run_are_swept(tmp_path: Path, cache: Path) -> None:
    old = time.time() - 2 * wheel_cache.STALE_AFTER_S

    def make(path: Path, age: float | None = old, data: bytes = b"x" * 1000) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        if age is not None:
            os.utime(path, (age, age))
        return path

    lib = cache / "metallibs" / "pkg-1.0-old" / "pkg"
    dead_extract = make(lib / ".extract-dead")
    live_extract = make(lib / ".extract-live", age=None)  # another run is writing it now
    dead_record = make(cache / "digests" / ".record-dead")
    dead_download = make(cache / "wheels" / ".download-dead" / "x.whl").parent
    busy_download = make(cache / "wheels" / ".download-busy" / "x.whl", age=None).parent
    for folder in (dead_download, busy_download):
        os.utime(folder, (old, old))
    keeper = make(lib / "app.metallib")  # old, but not a temp file
    # The cache root may be shared with other things: only the tool's own folders are swept.
    foreign = [make(cache / ".extract-theirs"), make(cache / "other" / ".download-theirs")]
    wheel_extract.extract_metallibs(_good_wheel(tmp_path))
    assert not dead_extract.exists() and not dead_record.exists() and not dead_download.exists()
    assert live_extract.exists() and busy_download.exists() and keeper.exists()
    assert all(path.exists() for path in foreign)


# --- content keying and corrupt wheels ---------------------------------------------------------


def test_same_file_name_different_wheels_give_their_own_metallibs(
    tmp_path: Path, cache: Path
) -> None:
    a_bytes, b_bytes = GOOD, synthetic_bytes(B_FUNCS)
    assert len(a_bytes) == len(b_bytes) and a_bytes != b_bytes
    stored = {"compression": zipfile.ZIP_STORED}
    wheel_a, wheel_b = (
        _good_wheel(tmp_path / "a", a_bytes, **stored),
        _good_wheel(tmp_path / "b", b_bytes, **stored),
    )
    assert wheel_a.name == wheel_b.name and wheel_a.stat().st_size == wheel_b.stat().st_size
    [path_a] = wheel_extract.extract_metallibs(wheel_a)
    [path_b] = wheel_extract.extract_metallibs(wheel_b)
    assert path_a.read_bytes() == a_bytes and path_b.read_bytes() == b_bytes
    # Replaced in place with the same size and mtime: still its own metallib, and its own report.
    before = wheel_a.stat()
    wheel_a.write_bytes(wheel_b.read_bytes())
    os.utime(wheel_a, ns=(before.st_atime_ns, before.st_mtime_ns))
    [path_c] = wheel_extract.extract_metallibs(wheel_a)
    assert path_c.read_bytes() == b_bytes
    [report] = load_reports(str(wheel_a))
    assert {f.name for f in report.functions} == {name for name, _ in B_FUNCS}


def test_unchanged_wheel_is_hashed_once(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wheel = _good_wheel(tmp_path)
    hashed = []
    real = hashlib.sha256

    def sha256(*data: bytes) -> Any:
        if not data:  # the content hash; record names hash the path in one call
            hashed.append(wheel)
        return real(*data)

    monkeypatch.setattr(wheel_cache, "hashlib", SimpleNamespace(sha256=sha256))
    first = wheel_extract.extract_metallibs(wheel)
    assert wheel_extract.extract_metallibs(wheel) == first and len(hashed) == 1
    os.utime(wheel, (time.time() + 5, time.time() + 5))  # touched: hash again, same folder
    assert wheel_extract.extract_metallibs(wheel) == first and len(hashed) == 2
    for record in (cache / "digests").glob("*.json"):
        record.write_text("{not json")
    assert wheel_extract.extract_metallibs(wheel) == first and len(hashed) == 3
    assert json.loads(next((cache / "digests").glob("*.json")).read_text())["sha256"] == (
        real(wheel.read_bytes()).hexdigest()
    )


def _crc_broken(folder: Path) -> Path:
    wheel = _good_wheel(folder, compression=zipfile.ZIP_STORED)
    corrupt_member(wheel, MEMBER, at=len(GOOD) // 2)
    return wheel


@pytest.mark.parametrize("damage", ["crc", "truncated", "empty", "text"])
def test_corrupt_user_wheel_is_named_and_left_alone(
    damage: str, tmp_path: Path, cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wheel = _crc_broken(tmp_path) if damage == "crc" else _good_wheel(tmp_path)
    if damage == "truncated":
        wheel.write_bytes(wheel.read_bytes()[: wheel.stat().st_size // 2])
    elif damage == "empty":
        wheel.write_bytes(b"")
    elif damage == "text":
        wheel.write_text("<html>404 Not Found</html>\n")
    original = wheel.read_bytes()
    with pytest.raises(wheel_cache.CorruptWheelError) as info:
        wheel_extract.extract_metallibs(wheel)
    expected = f"member {MEMBER!r}" if damage == "crc" else "not a readable wheel"
    assert str(wheel) in str(info.value) and expected in str(info.value)
    if damage == "crc":
        assert "Bad CRC-32" in str(info.value) and "local header at byte 0" in str(info.value)
    line = _assert_clean_failure(*run_cli(["report", str(wheel)], capsys))
    assert expected in line
    assert wheel.read_bytes() == original  # a user's file is never deleted or repaired
    assert not list(cache.rglob("*.metallib")) and not temp_files(cache)


@pytest.fixture
def fake_pip(monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    """Stand-in for ``pip download``: copies ``served`` into the ``-d`` folder, counts calls."""
    state = SimpleNamespace(served=None, calls=0)

    def run(cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        assert cmd[1:4] == ["-m", "pip", "download"] and cmd[-1] == "pkg==1.0"
        state.calls += 1
        shutil.copyfile(state.served, Path(cmd[cmd.index("-d") + 1], WHEEL_NAME))
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(wheels, "subprocess", SimpleNamespace(run=run))
    monkeypatch.setattr(wheels, "check_remote", lambda *args: None)  # nor its zip directory
    return state


@pytest.mark.parametrize("damage", ["crc", "truncated"])
def test_corrupt_cached_download_is_replaced_once(
    damage: str, tmp_path: Path, cache: Path, fake_pip: SimpleNamespace
) -> None:
    fake_pip.served = _good_wheel(tmp_path / "index")
    cached = cache / "wheels" / WHEEL_NAME
    cached.parent.mkdir(parents=True)
    if damage == "crc":
        shutil.copyfile(_crc_broken(tmp_path / "bad"), cached)
    else:
        good = fake_pip.served.read_bytes()
        cached.write_bytes(good[: len(good) // 2])  # an interrupted copy
    notes: list[str] = []
    wheel, [path] = wheels.fetch_metallibs("pkg", "1.0", notice=notes.append)
    assert wheel == cached and cached.read_bytes() == fake_pip.served.read_bytes()
    assert path.read_bytes() == GOOD and fake_pip.calls == 1
    assert len(notes) == 1 and str(cached) in notes[0] and "downloading it again" in notes[0]
    assert wheels.fetch_metallibs("pkg", "1.0")[1] == [path] and fake_pip.calls == 1
    assert not temp_files(cache)


def test_download_that_stays_corrupt_is_a_clear_error(
    tmp_path: Path, cache: Path, fake_pip: SimpleNamespace, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_pip.served = _crc_broken(tmp_path / "index")
    with pytest.raises(wheel_cache.CorruptWheelError, match="still unreadable"):
        wheels.fetch_metallibs("pkg", "1.0")
    assert fake_pip.calls == 2
    assert not list((cache / "wheels").glob("*.whl")) and not temp_files(cache)
    code, out, err = run_cli(["report", "pkg==1.0"], capsys)
    assert code == 2 and out == "" and fake_pip.calls == 4
    line = _one_error_line(err)
    assert "Bad CRC-32" in line and "still unreadable" in line
    assert fake_pip.served.exists()  # the index's copy, outside the cache, is not ours to delete


def test_cli_report_recovers_from_a_corrupt_cached_wheel(
    tmp_path: Path, cache: Path, fake_pip: SimpleNamespace, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_pip.served = _good_wheel(tmp_path / "index")
    (cache / "wheels").mkdir(parents=True)
    shutil.copyfile(_crc_broken(tmp_path / "bad"), cache / "wheels" / WHEEL_NAME)
    code, out, err = run_cli(["report", "pkg==1.0", "--format", "json"], capsys)
    assert code == 0 and "Traceback" not in err and fake_pip.calls == 1
    assert {f["name"] for f in json.loads(out)["functions"]} == {name for name, _ in A_FUNCS}
    assert "downloading it again" in err


def test_errors_are_usage_errors() -> None:
    for error in (
        wheel_cache.UnsafeWheelError,
        wheel_cache.CorruptWheelError,
        wheel_cache.CacheWriteError,
        wheel_cache.DownloadError,
    ):
        assert issubclass(error, UsageError) and error.exit_code == 2


# --- damaged bytes anywhere ----------------------------------------------------------------------


def _base_wheel(folder: Path) -> bytes:
    members = {MEMBER: GOOD, "pkg/other.metallib": GOOD[:300], "pkg/__init__.py": b"x = 1\n"}
    path = write_wheel(folder / "base.whl", members, compression=zipfile.ZIP_STORED)
    return path.read_bytes()


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_damaged_wheel_fails_cleanly_or_extracts_the_true_bytes(
    data: st.DataObject, tmp_path: Path, cache: Path
) -> None:
    raw = bytearray(_base_wheel(tmp_path / "base"))
    if data.draw(st.booleans(), label="truncate"):
        raw = raw[: data.draw(st.integers(0, len(raw) - 1), label="keep")]
    for _ in range(data.draw(st.integers(1, 4), label="flips")):
        if raw:
            at = data.draw(st.integers(0, len(raw) - 1), label="at")
            raw[at] ^= data.draw(st.integers(1, 255), label="xor")
    wheel = tmp_path / "fuzz" / WHEEL_NAME
    wheel.parent.mkdir(exist_ok=True)
    wheel.write_bytes(bytes(raw))
    try:
        paths = wheel_extract.extract_metallibs(wheel)
    except wheel_cache.WheelError as exc:
        assert "\n" not in str(exc) and str(wheel) in str(exc)
    else:  # damage outside the metallibs' names and data: what came out is what went in
        assert all(p.read_bytes() in (GOOD, GOOD[:300]) for p in paths)
        assert all(cache / "metallibs" in p.parents for p in paths)
    assert not temp_files(cache)
    assert set(tree(tmp_path, skip=cache)) == {"base/base.whl", f"fuzz/{WHEEL_NAME}"}


def test_a_wheel_cached_for_another_platform_is_not_taken(tmp_path: Path) -> None:
    """mlx-metal 0.32.0 has a macosx_14_0 and a macosx_26_0 wheel with different kernels: the
    cached 14 wheel must not stand in for 26 (pip, asked, takes the 26 one). What pip chose once
    is recorded, so a wheel pip took for another tag (metal-flash-sdpa's macosx_11_0 for 14) is
    found again without asking."""
    from builder.inputs.wheel_index import cached_wheel, remember_choice

    m14 = tmp_path / "mlx_metal-0.32.0-py3-none-macosx_14_0_arm64.whl"
    m14.write_bytes(b"")
    assert cached_wheel(tmp_path, "mlx-metal", "0.32.0", "macosx_26_0_arm64") is None
    assert cached_wheel(tmp_path, "mlx-metal", "0.32.0", "macosx_14_0_arm64") == m14
    m11 = tmp_path / "metal_flash_sdpa-0.1.2-cp312-cp312-macosx_11_0_arm64.whl"
    m11.write_bytes(b"")
    assert cached_wheel(tmp_path, "metal-flash-sdpa", "0.1.2", "macosx_14_0_arm64") is None
    remember_choice(tmp_path, "metal-flash-sdpa", "0.1.2", "macosx_14_0_arm64", m11)
    assert cached_wheel(tmp_path, "metal-flash-sdpa", "0.1.2", "macosx_14_0_arm64") == m11
    assert cached_wheel(tmp_path, "metal-flash-sdpa", "0.1.2", "macosx_15_0_arm64") is None
    m11.unlink()  # a record of a wheel no longer cached sends back to the index
    assert cached_wheel(tmp_path, "metal-flash-sdpa", "0.1.2", "macosx_14_0_arm64") is None
