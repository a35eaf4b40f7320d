"""docs/ci-recipe.md's "Gates on content", run: every command of its shell blocks with the exit
code its comment states, its budgets as written, and the first lines it quotes, on the real
mlx-metal 0.32.1 and torch 2.14.1 wheels (issue 35, item 9). ``pip download`` is run as the
tool's own wheel cache runs it (``builder.inputs.wheels.download_wheel``), the wheel linked
under the name pip gives it."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from clirun import run_cli
from synthetic import new_library

from builder.inputs import wheel_cache, wheels
from builder.metallib import library_bytes

pytestmark = pytest.mark.realdata

ROOT = Path(__file__).resolve().parents[2]
SECTION = (
    (ROOT / "docs" / "ci-recipe.md")
    .read_text(encoding="utf-8")
    .split("## Gates on content\n", 1)[1]
    .split("\n## ", 1)[0]
)


def _blocks(language: str) -> list[list[str]]:
    return [
        body.strip("\n").splitlines()
        for body in re.findall(rf"^```{language}\n(.*?)^```$", SECTION, re.MULTILINE | re.DOTALL)
    ]


def _pip_download(line: str, folder: Path) -> None:
    args = shlex.split(line)
    name, version = args[2].split("==")
    platform = args[args.index("--platform") + 1]
    try:
        wheel = wheels.download_wheel(name, version, platform)
    except wheel_cache.DownloadError as exc:
        pytest.skip(f"PACKAGE INDEX UNREACHABLE, real-data test skipped: {exc}")
    (folder / wheel.name).symlink_to(wheel)


def test_the_commands_exit_as_the_doc_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    ran = []
    for block in _blocks("sh"):
        for line in block:
            if line.startswith("pip download "):
                _pip_download(line, tmp_path)
                continue
            command, _, comment = line.partition("  # ")
            stated = re.fullmatch(r"exit (\d)", comment.strip())
            assert command.startswith("metallib-builder ") and stated, line
            code, _, err = run_cli(shlex.split(command)[1:], capsys)
            assert code == int(stated[1]), (line, err)
            ran.append((command, err))
    assert len(ran) == 6
    # the first lines and figures the prose quotes are the runs'
    (quoted_md,) = [b for b in _blocks("markdown") if b[0].startswith("<!--")]
    assert (tmp_path / "size.md").read_text().splitlines()[:4] == quoted_md
    removed = ran[2][1]
    assert "888 '*_nax*' functions removed (38.33 MB): " in removed
    quoted = re.search(r"`888 '\*_nax\*' functions removed \(38\.33 MB\):\n'([^']+)'", SECTION)
    assert quoted is not None and f"removed (38.33 MB): '{quoted[1]}', " in removed
    change = "platform changed: deployment target macOS 26.2 → 14.0; Metal 4.0 → 3.1; AIR 2.8 → 2.6"
    assert change in removed and change in " ".join(SECTION.split())
    assert "deployment target 26.2 is above 14.0" in ran[3][1]
    assert "metal_40 states Metal language 4.0, above 3.1" in ran[5][1]


def test_the_budgets_hold_as_the_doc_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    mlx, empty = _blocks("toml")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "metallib-size.toml").write_text("\n".join(mlx) + "\n")
    code, _, err = run_cli(["budget"], capsys)
    assert code == 0, err
    # the empty library: a link step given no .air
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "mlx.metallib").write_bytes(library_bytes(new_library([])))
    (tmp_path / "metallib-size.toml").write_text("\n".join(empty) + "\n")
    code, out, _ = run_cli(["budget", "--format", "markdown"], capsys)
    (first,) = [b for b in _blocks("markdown") if b[0].startswith("❌ build/")]
    assert code == 1 and out.splitlines()[3] == first[0]
