"""The platform a build plans for (issue 37, item 3): without ``--std`` the Metal version is the
one the deployment target runs, as MLX's CMake asks its compiler for it (``MLX_METAL_VERSION``),
so a tree's ``[kernels.requires]`` keeps what that platform builds; the entry files it leaves out
are named, on stderr and in the plan.

The tree is shaped like MLX's: its entry files sit where MLX's do, and its metallib.toml has the
``[kernels.requires]`` docs/mlx.md gives MLX's tree. What each platform should build is written
here from MLX's own CMake conditions (``kernels/CMakeLists.txt``: ``fence`` when
``MLX_METAL_VERSION GREATER_EQUAL 320``, the NAX files when ``MLX_METAL_VERSION GREATER_EQUAL
400 AND CMAKE_OSX_DEPLOYMENT_TARGET VERSION_GREATER_EQUAL 26.2``), and the version each
deployment target runs from Apple's Metal Shading Language Specification (macOS 14: MSL 3.1,
macOS 15: 3.2, macOS 26: 4.0; iOS 17: 3.1, iOS 26: 4.0)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from builder.cmake_build.plan import make_plan
from builder.cmake_build.plan_model import BuildRequest

from .conftest import METAL, cli_without_metal

KERNELS = "mlx/backend/metal/kernels"
ENTRIES = (
    "binary.metal",
    "fence.metal",
    "quantized_nax.metal",
    "steel/gemm/kernels/steel_gemm_fused_nax.metal",
)
SETTINGS = """[kernels.requires]    # what kernels/CMakeLists.txt compiles on which platform
"fence.metal" = { metal-version = 320 }
"*_nax.metal" = { metal-version = 400, deployment-target = "26.2" }

[build]
library = "mlx"
"""


@pytest.fixture
def mlx_shaped(tmp_path: Path) -> Path:
    root = tmp_path / "mlx" / KERNELS
    for entry in ENTRIES:
        name = Path(entry).stem
        (root / entry).parent.mkdir(parents=True, exist_ok=True)
        (root / entry).write_text(f"kernel void {name}_k() {{}}\n", encoding="utf-8")
    (root / "metallib.toml").write_text(SETTINGS, encoding="utf-8")
    return root


def _mlx_builds(version: int, target: tuple[int, int] | None) -> set[str]:
    """The entry files MLX's kernels/CMakeLists.txt compiles for MLX_METAL_VERSION ``version``
    and CMAKE_OSX_DEPLOYMENT_TARGET ``target`` (None: not set, no NAX file)."""
    built = {"binary.metal"}
    if version >= 320:
        built.add("fence.metal")
    if version >= 400 and target is not None and target >= (26, 2):
        built |= {e for e in ENTRIES if e.endswith("_nax.metal")}
    return built


@pytest.mark.parametrize(
    ("target", "std", "sdk", "version"),
    [
        ("26.2", None, "macosx", 400),
        ("14.0", None, "macosx", 310),
        ("15.0", None, "macosx", 320),
        ("26.0", None, "macosx", 400),  # MSL 4, but below the NAX files' 26.2
        ("17.0", None, "iphoneos", 310),  # iOS 17 runs MSL 3.1, macOS 17 does not exist
        ("26.2", "metal3.1", "macosx", 310),  # --std wins over the deployment target
        (None, None, "macosx", 310),  # nothing stated: MSL 3.1, as before
    ],
)
def test_the_deployment_target_chooses_the_metal_version(
    mlx_shaped: Path,
    tmp_path: Path,
    target: str | None,
    std: str | None,
    sdk: str,
    version: int,
) -> None:
    request = BuildRequest().replace(
        source_dir=mlx_shaped,
        deployment_target=target,
        std=std,
        sdk=sdk,
        build_dir=tmp_path / "b",
    )
    plan = make_plan(request)
    parsed = tuple(int(p) for p in target.split(".")) if target else None
    wanted = _mlx_builds(version, parsed[:2] if parsed else None)  # type: ignore[arg-type]
    assert {u.name for u in plan.units} == wanted
    assert plan.discovery is not None and plan.discovery.metal_version == version
    assert plan.left_out == tuple(sorted(set(ENTRIES) - wanted))
    # the compiles get no -std= the user did not ask for: the compiler's default for the target
    assert plan.std == std


def test_a_build_names_what_its_platform_leaves_out(mlx_shaped: Path, tmp_path: Path) -> None:
    """At 14.0 the stderr line and plan.json name fence and the NAX files, and the compiler is
    not given them; at 26.2 it compiles every entry file and no line is printed."""
    for target, version in (("14.0", 310), ("26.2", 400)):
        build_dir, log = tmp_path / target, tmp_path / f"{target}.log"
        done = cli_without_metal(
            "build",
            "--source-dir",
            str(mlx_shaped),
            "--deployment-target",
            target,
            "--metal-compiler",
            str(METAL),
            "--build-dir",
            str(build_dir),
            env={"METAL_STANDIN_LOG": str(log)},
        )
        assert done.returncode == 0, done.stderr
        left = sorted(set(ENTRIES) - _mlx_builds(version, (int(target[:2]), int(target[3]))))
        compiled = {
            Path(call["source"]).relative_to(mlx_shaped.resolve()).as_posix()
            for call in map(json.loads, log.read_text().splitlines())
            if call["mode"] == "compile"
        }
        assert compiled == set(ENTRIES) - set(left)
        plan = json.loads((build_dir / "metal_plan" / "plan.json").read_text())
        said = [line for line in done.stderr.splitlines() if line.startswith("Left out")]
        if target == "14.0":
            assert plan["left_out"] == left and len(left) == 3
            line = (
                "Left out for MSL 3.1, deployment target 14.0 by [kernels.requires] "
                "(--deployment-target or --std names another platform): "
                f"3 entry files, {', '.join(left)}"
            )
            assert said == [line]
        else:
            assert "left_out" not in plan and left == [] and said == []
