"""scripts/release_checks.py's judgement of an artifact set, on file names written here: the set
the release workflow must upload (one sdist, one wheel per CPython of pyproject's
``[tool.cibuildwheel] build`` and platform), then that set with one thing wrong at a time. The
script on real artifacts (twine check included): test_artifacts.py."""

from __future__ import annotations

from .script import release_checks

PYTHONS = ["cp310", "cp311", "cp312", "cp313", "cp314"]
TAGS = {
    "linux-x86_64": "manylinux_2_27_x86_64.manylinux_2_28_x86_64",
    "linux-aarch64": "manylinux_2_26_aarch64.manylinux_2_28_aarch64",
    "macos-arm64": "macosx_11_0_arm64",
    "macos-x86_64": "macosx_11_0_x86_64",
}
"""Platform tags as cibuildwheel 4.2's manylinux_2_28 images and delocate write them."""


def _release(version: str = "0.2.0") -> list[str]:
    wheels = [
        f"metallib_builder-{version}-{py}-{py}-{tag}.whl" for py in PYTHONS for tag in TAGS.values()
    ]
    return [f"metallib_builder-{version}.tar.gz", *wheels]


def test_the_pythons_are_pyprojects_build_selectors() -> None:
    assert release_checks.pythons() == PYTHONS
    assert sorted(release_checks.PLATFORMS) == sorted(TAGS)


def test_the_whole_set_passes() -> None:
    assert release_checks.missing_and_extra(_release(), PYTHONS) == []


def test_a_missing_wheel_or_sdist_is_named() -> None:
    names = [n for n in _release() if "cp312" not in n or "aarch64" not in n]
    assert release_checks.missing_and_extra(names, PYTHONS) == [
        "0 wheels for cp312 on linux-aarch64, want one"
    ]
    assert release_checks.missing_and_extra(_release()[1:], PYTHONS) == [
        "0 sdists, want exactly one"
    ]


def test_wheels_the_release_does_not_build_are_named() -> None:
    extra = [
        "metallib_builder-0.2.0-cp314-cp314t-macosx_11_0_arm64.whl",  # free-threaded
        "metallib_builder-0.2.0-cp313-cp313-musllinux_1_2_x86_64.whl",
        "metallib_builder-0.2.0-cp313-cp313-linux_x86_64.whl",  # not repaired: PyPI refuses it
        "metallib_builder-0.2.0-cp39-cp39-macosx_11_0_arm64.whl",
    ]
    problems = release_checks.missing_and_extra([*_release(), *extra], PYTHONS)
    assert problems == [
        *(f"{name}: not an sdist or a wheel of this release's platforms" for name in extra[:3]),
        "a wheel for cp39 on macos-arm64, not built (pyproject.toml)",
    ]


def test_two_wheels_for_one_build_or_two_versions_are_named() -> None:
    twice = "metallib_builder-0.2.0-cp310-cp310-macosx_12_0_arm64.whl"
    assert release_checks.missing_and_extra([*_release(), twice], PYTHONS) == [
        "2 wheels for cp310 on macos-arm64, want one"
    ]
    mixed = [*_release()[:-1], _release("0.2.1")[-1]]
    assert release_checks.missing_and_extra(mixed, PYTHONS) == [
        "artifacts of several versions: 0.2.0, 0.2.1"
    ]
