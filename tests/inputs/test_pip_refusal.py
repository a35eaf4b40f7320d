"""A download pip refuses ends in one line naming the cause pip gave (issue 33, item 6), with
pip's whole output kept in a log file the line names.

A stand-in pip (a script run as ``sys.executable -m pip``, printing what pip 23 prints in each
case, its informational lines on stdout and its errors on stderr) covers causes that need no
index; the real pip, against the real package index, covers a version that cannot exist.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest
from clirun import run_cli

LOOKING = "Looking in indexes: https://pypi.org/simple\n"
NO_SUCH_VERSION = (
    "ERROR: Could not find a version that satisfies the requirement pkg==9.9 "
    "(from versions: 0.1, 0.2, 0.3, 1.0, 1.1, 1.2)\n"
    "ERROR: No matching distribution found for pkg==9.9\n"
)
NO_WHEEL_AT_ALL = (
    "ERROR: Could not find a version that satisfies the requirement pkg==9.9 "
    "(from versions: none)\n"
    "ERROR: No matching distribution found for pkg==9.9\n"
)
OFFLINE = (
    "WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) "
    "after connection broken by 'NewConnectionError('<pip._vendor.urllib3.connection."
    "HTTPConnection object at 0x7f>: Failed to establish a new connection: [Errno 111] "
    "Connection refused')': /simple/pkg/\n" + NO_WHEEL_AT_ALL
)
HASHES = (
    "ERROR: THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE. If you have "
    "updated the package versions, please update the hashes. Otherwise, examine the package "
    "contents carefully; someone may have tampered with them.\n"
    "    pkg==9.9 from https://files/pkg-9.9-py3-none-macosx_14_0_arm64.whl:\n"
    "        Expected sha256 aaaa\n"
    "             Got        bbbb\n"
)
OTHER = "ERROR: Could not install packages due to an OSError: [Errno 28] No space left on device\n"


@pytest.fixture
def standin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``sys.executable`` replaced by a script that prints ``$PIP_SAYS`` (the informational
    line to stdout, the rest to stderr) and exits with ``$PIP_EXIT``; returns the cache."""
    script = tmp_path / "python"
    script.write_text(
        '#!/bin/sh\nprintf "%s" "$PIP_STDOUT"\nprintf "%s" "$PIP_STDERR" >&2\nexit "$PIP_EXIT"\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(sys, "executable", str(script))
    monkeypatch.setenv("PIP_INDEX_URL", "file:///nowhere")  # no look at the index's zip directory
    monkeypatch.setenv("METALLIB_BUILDER_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


CASES = [
    (
        NO_SUCH_VERSION,
        (
            "pkg==9.9: no macOS wheel for macosx_14_0_arm64 on the package index: no such "
            "version, or none built for that platform (versions with one: 0.2, 0.3, 1.0, 1.1, "
            "1.2 and 1 older)"
        ),
    ),
    (
        NO_WHEEL_AT_ALL,
        (
            "pkg==9.9: no macOS wheel for macosx_14_0_arm64 on the package index, in any "
            "version of pkg (or no such package)"
        ),
    ),
    (
        OFFLINE,
        (
            "pkg==9.9: the package index cannot be reached (Failed to establish a new connection: "
            "[Errno 111] Connection refused)"
        ),
    ),
    (HASHES, "pkg==9.9: pip refused the download: it does not match the index's SHA-256"),
    (
        OTHER,
        (
            "pkg==9.9: pip could not download it for macosx_14_0_arm64: Could not install packages "
            "due to an OSError: [Errno 28] No space left on device"
        ),
    ),
]


@pytest.mark.parametrize(("says", "line"), CASES)
@pytest.mark.parametrize("command", ["list", "verify", "report", "slim"])
def test_one_line_names_the_cause_and_the_log_keeps_pips_output(
    standin: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
    says: str,
    line: str,
) -> None:
    monkeypatch.setenv("PIP_STDOUT", LOOKING)
    monkeypatch.setenv("PIP_STDERR", says)
    monkeypatch.setenv("PIP_EXIT", "1")
    extra = ["--keep", "*", "-o", str(standin.parent / "out.metallib")] if command == "slim" else []
    code, out, err = run_cli([command, "pkg==9.9", *extra], capsys)
    assert code == 2 and out == ""
    progress, error = err.splitlines()  # the download notice, then one line: nothing of pip's
    assert progress.startswith("pkg==9.9: macOS wheel for macosx_14_0_arm64")
    log = standin / "wheels" / "pip-pkg-9.9-macosx_14_0_arm64.log"
    assert error == f"error: {line}; pip's output: {log}"
    assert log.read_text() == LOOKING + says  # all of it, stdout and stderr
    assert not list((standin / "wheels").glob("*.whl"))


def test_a_pip_that_exits_0_without_a_wheel_says_so(
    standin: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PIP_STDOUT", LOOKING)
    monkeypatch.setenv("PIP_STDERR", "")
    monkeypatch.setenv("PIP_EXIT", "0")
    code, _, err = run_cli(["verify", "pkg==9.9"], capsys)
    assert code == 2
    assert err.splitlines()[-1].startswith(
        "error: pkg==9.9: pip downloaded no wheel for macosx_14_0_arm64; pip's output: "
    )


@pytest.mark.realdata
def test_the_real_pip_refusing_a_version_that_cannot_exist(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """metal-linalg has macOS wheels; version 0.0.0.post999 was never published."""
    monkeypatch.setenv("METALLIB_BUILDER_CACHE", str(tmp_path / "cache"))
    code, out, err = run_cli(["list", "metal-linalg==0.0.0.post999"], capsys)
    assert code == 2 and out == ""
    error = err.splitlines()[-1]
    if "cannot be reached" in error:
        pytest.skip(f"PACKAGE INDEX UNREACHABLE, real-pip test skipped: {error}")
    assert len(err.splitlines()) == 2 and error.startswith(
        "error: metal-linalg==0.0.0.post999: no macOS wheel for macosx_14_0_arm64 on the "
        "package index: no such version"
    )
    assert "(versions with one: " in error  # those pip found a macOS wheel of
    log = Path(error.rsplit("pip's output: ", 1)[1])
    text = log.read_text()
    assert "No matching distribution found for metal-linalg==0.0.0.post999" in text
    assert "2.19.0" in text  # a version with a macOS 14 wheel (../shared/REAL_DATA.md)
    assert os.path.dirname(log) == str(tmp_path / "cache" / "wheels")
