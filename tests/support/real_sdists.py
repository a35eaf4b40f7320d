"""llama-cpp-python's sdists from the package index, downloaded once (``pip download``) and
cached: only their vendored ``ggml/src`` files (the top level, for ``ggml-common.h``) and
``ggml/src/ggml-metal`` are unpacked. A test that needs one is skipped, saying so, only when the
index cannot be reached."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from builder.inputs.wheel_cache import cache_dir

__all__ = ["ggml_metal_or_skip"]

_SRC = "vendor/llama.cpp/ggml/src/"


def ggml_metal_or_skip(version: str) -> Path:
    """``ggml/src/ggml-metal`` of llama-cpp-python ``version``, with the ``ggml/src`` files its
    kernels include beside it (build with ``-I ..``)."""
    root = cache_dir() / "sdists" / f"llama_cpp_python-{version}"
    done = root / ".unpacked"
    if not done.is_file():
        download = cache_dir() / "sdists" / "downloads"
        download.mkdir(parents=True, exist_ok=True)
        archive = download / f"llama_cpp_python-{version}.tar.gz"
        if not archive.is_file():
            got = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    "--no-deps",
                    "--no-binary=llama-cpp-python",
                ]
                + ["-d", str(download), f"llama-cpp-python=={version}"],
                capture_output=True,
                text=True,
                check=False,
                timeout=300,
            )
            if got.returncode != 0 or not archive.is_file():
                pytest.skip(
                    f"PACKAGE INDEX UNREACHABLE, real-data test skipped: {got.stderr[-300:]}"
                )
        shutil.rmtree(root, ignore_errors=True)
        with tarfile.open(archive) as tar:
            for member in tar.getmembers():
                _, _, path = member.name.partition("/")
                wanted = path.startswith(_SRC) and (
                    "/" not in path[len(_SRC) :] or path.startswith(_SRC + "ggml-metal/")
                )
                if wanted and (member.isfile() or member.isdir()):
                    member.name = path[len(_SRC) :] or "."
                    tar.extract(member, root, filter="data")
        done.write_text("ok\n")
    return root / "ggml-metal"
