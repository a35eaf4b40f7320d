"""``PACKAGE==VERSION`` reads the wheel's zip directory on the index with HTTP range requests
before downloading it: a wheel with nothing to read fails without the download, one with a
metallib (or a server without ranges) is downloaded as before. A local index stands in for the
package index (which answers ranges with ``206 Partial Content``)."""

from __future__ import annotations

import io
import threading
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from synthetic import synthetic_parts

from builder.errors import UsageError
from builder.inputs import wheel_cache
from builder.inputs.targets import resolve_target
from builder.inputs.wheel_index import compatible
from builder.metallib import library_bytes

PURE = "pure-1.0-py3-none-any.whl"
KERNELS = "kern-2.0-py3-none-macosx_11_0_arm64.whl"


def _wheel(filename: str, members: dict[str, bytes]) -> bytes:
    """A wheel pip accepts: ``members`` plus its .dist-info (METADATA, WHEEL, RECORD)."""
    name, version, tag = filename.removesuffix(".whl").split("-", 2)
    info = f"{name}-{version}.dist-info"
    members = {
        **members,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{info}/WHEEL": f"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: {tag}\n".encode(),
        f"{info}/RECORD": b"",
    }
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for member, data in members.items():
            archive.writestr(member, data)
    return out.getvalue()


class _Index(BaseHTTPRequestHandler):
    files: ClassVar[dict[str, bytes]] = {}
    ranges = True
    log: ClassVar[list[tuple[str, str | None, int]]] = []  # (path, Range header, bytes sent)

    def do_GET(self) -> None:
        if self.path.startswith("/simple/"):
            project = self.path.split("/")[2]
            links = "".join(
                f'<a href="/files/{f}">{f}</a>' for f in self.files if f.startswith(project)
            )
            self._send(200, f"<html><body>{links}</body></html>".encode(), "text/html")
            return
        data = self.files.get(self.path.removeprefix("/files/"))
        if data is None:
            self._send(404, b"", "text/plain")
            return
        wanted = self.headers.get("Range")
        if wanted and self.ranges:
            start, _, end = wanted.removeprefix("bytes=").partition("-")
            first, last = int(start), min(int(end), len(data) - 1)
            self._send(206, data[first : last + 1], "application/octet-stream", len(data), first)
        else:
            self._send(200, data, "application/octet-stream")

    def _send(self, code: int, body: bytes, kind: str, total: int = 0, first: int = 0) -> None:
        self.log.append((self.path, self.headers.get("Range"), len(body)))
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        if code == 206:
            self.send_header("Content-Range", f"bytes {first}-{first + len(body) - 1}/{total}")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[type[_Index]]:
    handler: Any = type("Index", (_Index,), {"log": [], "ranges": True})
    handler.files = {
        PURE: _wheel(PURE, {"pure/__init__.py": b"x = 1\n" * 1000, "pure/a.txt": bytes(5000)}),
        KERNELS: _wheel(KERNELS, {"kern/k.metallib": library_bytes(synthetic_parts(3, seed=5))}),
    }
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("PIP_INDEX_URL", f"http://127.0.0.1:{server.server_port}/simple/")
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", "")
    monkeypatch.setenv("PIP_FIND_LINKS", "")
    monkeypatch.setenv("PIP_NO_INDEX", "")
    monkeypatch.setenv("METALLIB_BUILDER_CACHE", str(tmp_path / "cache"))
    try:
        yield handler
    finally:
        server.shutdown()
        server.server_close()


def test_a_wheel_with_nothing_to_read_is_not_downloaded(index: type[_Index]) -> None:
    with pytest.raises(UsageError, match="without downloading the wheel") as caught:
        resolve_target("pure==1.0")
    assert PURE in str(caught.value) and "5 files" in str(caught.value)
    reads = [entry for entry in index.log if entry[0].startswith("/files/")]
    assert reads and all(rng is not None for _, rng, _ in reads)  # only ranges, no whole GET
    assert sum(n for _, _, n in reads) < len(index.files[PURE])
    assert not list((wheel_cache.cache_dir() / "wheels").glob("*.whl"))


def test_a_wheel_with_a_metallib_is_then_downloaded(index: type[_Index]) -> None:
    [lib] = resolve_target("kern==2.0")  # a macosx_11_0 wheel serves the default macosx_14_0
    assert lib.path is not None and lib.path.name == "k.metallib"
    assert any(rng is None and path == f"/files/{KERNELS}" for path, rng, _ in index.log)
    before = len(index.log)
    [again] = resolve_target("kern==2.0")  # cached: nothing asked of the index
    assert again.path == lib.path and len(index.log) == before


def test_an_index_without_ranges_gets_the_whole_download(index: type[_Index]) -> None:
    index.ranges = False
    with pytest.raises(UsageError, match="contains no metallib"):
        resolve_target("pure==1.0")
    assert any(rng is None and path == f"/files/{PURE}" for path, rng, _ in index.log)


def test_which_wheels_pip_would_take() -> None:
    assert compatible(KERNELS, "kern", "2.0", "macosx_14_0_arm64") is not None
    assert compatible(KERNELS, "kern", "2.1", "macosx_14_0_arm64") is None
    later = "kern-2.0-cp312-cp312-macosx_15_0_arm64.whl"
    assert compatible(later, "kern", "2.0", "macosx_14_0_arm64") is None
    native = "kern-2.0-cp312-cp312-macosx_14_0_arm64.whl"
    ranks = [compatible(f, "kern", "2.0", "macosx_14_0_arm64") for f in (native, KERNELS)]
    assert ranks[0] is not None and ranks[1] is not None and ranks[0] < ranks[1]
