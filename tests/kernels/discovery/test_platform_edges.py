"""The edges of what ``[kernels.requires]`` and a library's platform record accept (the
survivors of the seeded mutation pass over builder/kernels/platforms.py, issue 33): the last
Metal version a requirement may state, which characters make a glob unusable, and an OS name
that is none of Apple's."""

from __future__ import annotations

from pathlib import Path

import pytest

from builder.errors import UsageError
from builder.kernels.discovery import load_tree
from builder.kernels.platforms import Platform, left_out, platform_of


def _tree(root: Path, requires: str, entries: tuple[str, ...] = ("a.metal", "b.metal")) -> Path:
    for number, name in enumerate(entries):
        (root / name).write_text(f"kernel void k{number}() {{}}\n", encoding="utf-8")
    (root / "metallib.toml").write_text(f"[kernels.requires]\n{requires}\n", encoding="utf-8")
    return root


@pytest.mark.parametrize(
    ("version", "accepted"), [(100, True), (999, True), (99, False), (1000, False)]
)
def test_a_requirement_states_a_three_digit_metal_version(
    tmp_path: Path, version: int, accepted: bool
) -> None:
    root = _tree(tmp_path, f'"a.metal" = {{ metal-version = {version} }}')
    if accepted:  # MSL 3.1 meets 100, not 999
        tree = load_tree(root)
        assert left_out(tree.config) == (() if version == 100 else ("a.metal",))
        assert {k.name for k in tree.kernels} == ({"k0", "k1"} if version == 100 else {"k1"})
        return
    with pytest.raises(UsageError) as info:
        load_tree(root)
    said = f"metal-version must be an integer such as 310 (MSL 3.1) or 320 (MSL 3.2), got {version}"
    assert said in str(info.value)


@pytest.mark.parametrize("char", ["\x01", "\x1f", "\x7f", "\x9f"])
def test_a_glob_with_a_control_character_is_refused(tmp_path: Path, char: str) -> None:
    escaped = f"\\u{ord(char):04x}"  # TOML's escape: the glob holds the character itself
    root = _tree(tmp_path, f'"a{escaped}.metal" = {{ metal-version = 320 }}')
    with pytest.raises(UsageError) as info:
        load_tree(root)
    assert str(info.value) == (
        f"{root / 'metallib.toml'}: [kernels.requires] {f'a{char}.metal'!r} is not a glob"
    )


@pytest.mark.parametrize("name", ["my kernels.metal", "caf\u00e9\u00a0k.metal"])
def test_a_glob_with_spaces_or_other_printable_characters_is_a_glob(
    tmp_path: Path, name: str
) -> None:
    """A space (32) and characters from 160 on are ordinary in a file name."""
    root = _tree(tmp_path, f'"{name}" = {{ metal-version = 320 }}', entries=(name, "b.metal"))
    tree = load_tree(root)
    assert left_out(tree.config) == (name,)
    assert {k.name for k in tree.kernels} == {"k1"}


def test_an_os_name_apple_does_not_use_is_read_as_macos() -> None:
    """A saved report is untrusted: a platform string that is no OS of the list is ignored,
    as a value of the wrong type is."""
    record = {"metal_language_versions": ["3.2"], "platform": "Windows", "deployment_target": "1"}
    assert platform_of(record, "x") == Platform(320, "macOS", "1", "x")
    assert platform_of({**record, "platform": "iOS"}, "x") == Platform(320, "iOS", "1", "x")
