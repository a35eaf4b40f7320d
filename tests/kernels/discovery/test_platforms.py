"""Platforms from the library (issue 28 item 4): ``[kernels.requires]`` names the entry files
only some platforms build, and a library's header and VERS tags say which platform it is, so
``report --source-dir`` and ``variants --from`` need no per-platform ``-D`` or ``--exclude``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clirun import run_cli
from synthetic import new_function, new_library

from builder.errors import UsageError
from builder.kernels.discovery import load_tree
from builder.kernels.platforms import Platform, left_out, platform_of
from builder.metallib import library_bytes

REQUIRES = """
[kernels.requires]
"fence.metal" = { metal-version = 320 }
"*_nax.metal" = { metal-version = 400, deployment-target = "26.2" }
"""
ALL = {"common.metal", "fence.metal", "sub/big_nax.metal"}


def _tree(root: Path, settings: str = REQUIRES) -> Path:
    files = {
        "common.metal": "kernel void common_k() {}\n",
        "fence.metal": "kernel void fence_k() {}\n",
        # MLX's NAX kernels are MSL 4 code: the version define must reach discovery too
        "sub/big_nax.metal": "#if __METAL_VERSION__ >= 400\nkernel void nax_k() {}\n#endif\n",
        "metallib.toml": settings,
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def _kernels(root: Path, platform: Platform | None = None, **options: object) -> set[str]:
    return {k.name for k in load_tree(root, platform=platform, **options).kernels}  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("platform", "kernels", "skipped"),
    [
        (None, {"common_k"}, ("fence.metal", "*_nax.metal")),  # MSL 3.1, as before
        (Platform(310, "macOS", "14.0"), {"common_k"}, ("fence.metal", "*_nax.metal")),
        (Platform(320, "macOS", "15.0"), {"common_k", "fence_k"}, ("*_nax.metal",)),
        (Platform(400, "macOS", "26.2"), {"common_k", "fence_k", "nax_k"}, ()),
        # MSL 4 below the deployment target NAX needs: MLX's CMake builds no NAX file there
        (Platform(400, "macOS", "26.0"), {"common_k", "fence_k"}, ("*_nax.metal",)),
    ],
)
def test_the_platform_decides_which_entry_files_are_discovered(
    tmp_path: Path, platform: Platform | None, kernels: set[str], skipped: tuple[str, ...]
) -> None:
    tree = load_tree(_tree(tmp_path), platform=platform)
    assert {k.name for k in tree.kernels} == kernels
    assert left_out(tree.config) == skipped
    assert tree.config.platform is not None
    assert tree.config.platform.metal_version == (platform.metal_version if platform else 310)
    listed = tree.to_json()["platform"]
    assert listed["left_out"] == list(skipped)
    assert listed["deployment_target"] == (platform.deployment_target if platform else None)


def test_the_command_line_define_wins_over_the_library(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    macos26 = Platform(400, "macOS", "26.2", "mlx.metallib")
    assert _kernels(root, macos26, defines=["__METAL_VERSION__=310"]) == {"common_k"}
    # the version is the flag's, the deployment target still the library's
    macos14 = Platform(310, "macOS", "14.0", "mlx.metallib")
    assert _kernels(root, macos14, defines=["__METAL_VERSION__=400"]) == {"common_k", "fence_k"}


def test_the_library_wins_over_the_settings_file(tmp_path: Path) -> None:
    file = '[kernels]\nmetal-version = 400\ndefines = ["__METAL_VERSION__=400"]\n'
    root = _tree(tmp_path, file + REQUIRES)
    # no library: the file's MSL 4; no deployment target is stated, so none is checked
    assert _kernels(root) == {"common_k", "fence_k", "nax_k"}
    tree = load_tree(root, platform=Platform(310, "macOS", "14.0", "old.metallib"))
    assert {k.name for k in tree.kernels} == {"common_k"}
    assert "__METAL_VERSION__=400" not in tree.config.defines


def test_an_ios_library_defines_metal_ios_and_meets_no_macos_requirement(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        '[kernels.requires]\n"fence.metal" = { platform = "macOS" }\n'
        '"*_nax.metal" = { platform = ["iOS", "macOS"] }\n',
    )
    (root / "sub/big_nax.metal").write_text(
        "#ifdef __METAL_IOS__\nkernel void ios_k() {}\n#endif\n"
        "#ifdef __METAL_MACOS__\nkernel void macos_k() {}\n#endif\n"
    )
    ios = load_tree(root, platform=Platform(310, "iOS", "17.0", "app.metallib"))
    assert {k.name for k in ios.kernels} == {"common_k", "ios_k"}
    assert "__METAL_IOS__=1" in ios.config.defines
    assert _kernels(root, Platform(310, "macOS", "14.0")) == {"common_k", "fence_k", "macos_k"}


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ('"a.metal" = 320', "'a.metal' must be a table such as { metal-version = 320 }, got 320"),
        ('"a.metal" = {}', "'a.metal' states no minimum: give one of metal-version,"),
        ('"a.metal" = { platform = [] }', "'a.metal' states no minimum: give one of"),
        (
            '"a.metal" = { metal-versoin = 320 }',
            "'a.metal': unknown key 'metal-versoin'; did you mean 'metal-version'?",
        ),
        (
            '"a.metal" = { metal-version = "3.2" }',
            (
                "'a.metal' metal-version must be an integer such as 310 (MSL 3.1) or 320 "
                "(MSL 3.2), got '3.2'"
            ),
        ),
        (
            '"a.metal" = { deployment-target = "macOS 14" }',
            "'a.metal' deployment-target must be an OS version such as \"14.0\", got 'macOS 14'",
        ),
        ('"a.metal" = { platform = "macos" }', "'a.metal' platform must be an OS name or a list"),
    ],
)
def test_a_bad_requirement_is_one_line_naming_the_file(
    tmp_path: Path, entry: str, words: str
) -> None:
    root = _tree(tmp_path, f"[kernels.requires]\n{entry}\n")
    (root / "a.metal").write_text("kernel void a() {}\n")
    with pytest.raises(UsageError) as info:
        load_tree(root)
    assert str(info.value).startswith(f"{root / 'metallib.toml'}: [kernels.requires] {words}")


def test_a_requirement_matching_no_entry_file_is_refused(tmp_path: Path, capsys) -> None:
    root = _tree(tmp_path, '[kernels.requires]\n"fence.mteal" = { metal-version = 320 }\n')
    code, out, err = run_cli(["kernels", "--source-dir", str(root)], capsys)
    assert (code, out) == (2, "")
    assert err == (
        f"error: {root / 'metallib.toml'}: [kernels.requires] 'fence.mteal' matches no entry "
        f"file of {root} (3 entry files)\n"
    )
    root = _tree(tmp_path, "[kernels]\nrequires = 3\n")
    assert (
        "[kernels] requires must be a table"
        in run_cli(["kernels", "--source-dir", str(root)], capsys)[2]
    )


def test_platform_of_reads_what_provenance_states() -> None:
    stated = {"metal_language_versions": ["3.1", "4.0"], "deployment_target": "26.2"}
    assert platform_of({**stated, "platform": "macOS"}, "a.metallib") == Platform(
        400, "macOS", "26.2", "a.metallib"
    )
    assert platform_of({"metal_language_versions": []}, "x") is None
    assert platform_of(None, "x") is None
    # a saved report's values are untrusted: anything else is ignored, nothing raises
    odd = {"metal_language_versions": ["3.1", 7, "99"], "platform": ["x"], "deployment_target": 5}
    assert platform_of(odd, "x") == Platform(310, "macOS", None, "x")


def _library(path: Path, names: list[str], msl: tuple[int, int], target: tuple[int, int]) -> Path:
    functions = [
        new_function(n, n.encode() * 40, version=(2, 6, *msl), reflection=bytes(8)) for n in names
    ]
    path.write_bytes(library_bytes(new_library(functions, deployment_target=target)))
    return path


@pytest.mark.parametrize(
    ("msl", "target", "names"),
    [
        ((3, 1), (14, 0), ["common_k"]),
        ((3, 2), (15, 0), ["common_k", "fence_k"]),
        ((4, 0), (26, 2), ["common_k", "fence_k", "nax_k"]),
    ],
)
def test_report_and_variants_take_the_platform_from_the_library(
    tmp_path: Path, capsys, msl: tuple[int, int], target: tuple[int, int], names: list[str]
) -> None:
    root = _tree(tmp_path / "tree")
    lib = _library(tmp_path / "mlx.metallib", names, msl, target)
    code, out, err = run_cli(
        ["report", str(lib), "--source-dir", str(root), "--format", "json"], capsys
    )
    assert code == 0 and "warning" not in err, err
    assert (
        f"for MSL {msl[0]}.{msl[1]}, macOS {target[0]}.{target[1]} (mlx.metallib's header)" in err
    )
    groups = {g["name"]: g["function_count"] for g in json.loads(out)["groups"]}
    assert "other" not in groups and sum(groups.values()) == len(names)
    code, out, err = run_cli(
        [
            "variants",
            "--from",
            str(lib),
            "--source-dir",
            str(root),
            "-o",
            str(tmp_path / "v"),
            "--format",
            "json",
        ],
        capsys,
    )
    assert (code, err) == (0, "")
    source = json.loads(out)["source"]
    assert (source["tree"]["kernels"], source["not_in_tree"], source["tree_kernels_missing"]) == (
        len(names),
        0,
        0,
    )


def test_variants_warns_when_the_flags_do_not_fit_the_library(tmp_path: Path, capsys) -> None:
    root = _tree(tmp_path / "tree")
    lib = _library(tmp_path / "mlx.metallib", ["common_k", "fence_k", "nax_k"], (4, 0), (26, 2))
    code, out, err = run_cli(
        [
            "variants",
            "--from",
            str(lib),
            "--source-dir",
            str(root),
            "-o",
            str(tmp_path / "v"),
            "--format",
            "json",
            "-D",
            "__METAL_VERSION__=310",
        ],
        capsys,
    )
    assert code == 0  # the run itself is fine; the mismatch is said, whatever stdout holds
    assert err.startswith(
        f"warning: {lib}: 2 function(s) of the library are produced by no entry file of {root}"
    ), err
    assert json.loads(out)["source"]["not_in_tree"] == 2


@pytest.mark.parametrize(
    ("options", "units"),
    [
        ({}, ["common.metal"]),
        ({"std": "metal3.2"}, ["common.metal", "fence.metal"]),
        ({"std": "metal4.0", "deployment_target": "26.0"}, ["common.metal", "fence.metal"]),
        ({"std": "metal4.0", "deployment_target": "26.2"}, sorted(ALL)),
    ],
)
def test_a_build_leaves_out_what_its_platform_does_not_build(
    tmp_path: Path, options: dict[str, str], units: list[str]
) -> None:
    from builder.cmake_build.plan import make_plan
    from builder.cmake_build.plan_model import BuildRequest

    plan = make_plan(BuildRequest().replace(source_dir=_tree(tmp_path), **options))
    assert [u.name for u in plan.units] == units
