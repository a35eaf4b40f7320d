"""A tree's settings are checked before its target is resolved: ``report PACKAGE==VERSION
--source-dir TREE`` (and compare, budget, ``variants --from``) discover the tree for the
library's platform, so only after the wheel is there; a mistake in the tree's own settings, which
no platform changes, must not wait for (or be hidden behind) a download. The downloads here go to
a stand-in that records each call and fails as an unreachable index does."""

from __future__ import annotations

from pathlib import Path

import pytest
from clirun import run_cli

from builder.inputs import wheel_cache, wheels

SPEC = "mlx-metal==0.32.1"

BAD = {
    "not TOML": ("[kernels\n", "metallib.toml"),
    "an include folder that is not there": (
        '[kernels]\ninclude-dirs = ["missing"]\n',
        "missing (from ",
    ),
    "a requirement matching no entry file": (
        '[kernels.requires]\n"fence.metal" = { metal-version = 320 }\n',
        "[kernels.requires] 'fence.metal' matches no entry file",
    ),
    "an exclude matching no entry file": (
        '[kernels]\nexclude = ["nope_*.metal"]\n',
        "nope_*.metal",
    ),
    "an always-embedded preamble the table lacks": (
        '[build]\nalways-embed = ["utils"]\n[build.preambles]\nutil = "common.h"\n',
        "always-embed names 'utils'",
    ),
}


def _commands(tree: Path, out: Path) -> dict[str, list[str]]:
    budget = out / "metallib-size.toml"
    budget.parent.mkdir(parents=True, exist_ok=True)
    budget.write_text(
        f'[[budget]]\nname = "b"\ntarget = "{SPEC}"\nmax-size = "200MB"\nsource-dir = "{tree}"\n',
        encoding="utf-8",
    )
    tree_args = ["--source-dir", str(tree)]
    return {
        "report": ["report", SPEC, *tree_args],
        "compare": ["compare", SPEC, "mlx-metal==0.32.4", *tree_args],
        "budget": ["budget", str(budget)],
        "variants --from": ["variants", "--from", SPEC, *tree_args, "-o", str(out / "v")],
    }


@pytest.fixture
def downloads(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """Every download asked for; each fails as a package index out of reach does."""
    asked: list[str] = []

    def fetch(name: str, version: str, platform: str = "", **_: object) -> None:
        asked.append(f"{name}=={version}")
        raise wheel_cache.DownloadError(f"could not download {name}=={version}: no network here")

    monkeypatch.setattr(wheels, "fetch_metallibs", fetch)
    monkeypatch.setattr(wheels, "download_wheel", fetch)
    monkeypatch.setenv("METALLIB_BUILDER_CACHE", str(tmp_path / "cache"))  # nothing cached
    return asked


def _tree(root: Path, settings: str | None) -> Path:
    root.mkdir(parents=True)
    (root / "common.h").write_text("#pragma once\n", encoding="utf-8")
    (root / "a.metal").write_text('#include "common.h"\nkernel void a() {}\n', encoding="utf-8")
    if settings is not None:
        (root / "metallib.toml").write_text(settings, encoding="utf-8")
    return root


@pytest.mark.parametrize("command", ["report", "compare", "budget", "variants --from"])
@pytest.mark.parametrize("mistake", list(BAD))
def test_a_bad_tree_is_exit_2_before_any_download(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    downloads: list[str],
    command: str,
    mistake: str,
) -> None:
    settings, said = BAD[mistake]
    tree = _tree(tmp_path / "tree", settings)
    code, _, err = run_cli(_commands(tree, tmp_path / "out")[command], capsys)
    assert (code, downloads) == (2, []), err
    assert said in err and "Traceback" not in err, err
    assert "download" not in err, err


@pytest.mark.parametrize("command", ["report", "compare", "budget", "variants --from"])
def test_a_good_tree_goes_on_to_the_download(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], downloads: list[str], command: str
) -> None:
    """The same commands with nothing wrong in the tree reach the stand-in: what the test
    above shows is the order, not a download that never happens."""
    tree = _tree(tmp_path / "tree", '[kernels]\nexclude = ["a*.metal"]\ninclude-dirs = ["."]\n')
    (tree / "b.metal").write_text("kernel void b() {}\n", encoding="utf-8")
    code, _, err = run_cli(_commands(tree, tmp_path / "out")[command], capsys)
    assert downloads and downloads[0] == SPEC, err
    assert code == 2 and "no network here" in err, err
