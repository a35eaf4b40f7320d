"""The release workflow (.github/workflows/release.yml), read offline: GitHub's schema and zizmor
as for action.yml and the macOS workflow, then what trusted publishing rests on (only the publish
job may ask for an OIDC token, it runs only for a pushed tag and only after every artifact passed
the checks, and it runs no code of the repository), and that the wheels are built for the four
platforms the checks of scripts/release_checks.py expect. The artifacts themselves:
test_artifacts.py."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML
from support.workflow_lint import assert_lint_clean

from .script import release_checks

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github/workflows/release.yml"
PUBLISH_ACTION = "pypa/gh-action-pypi-publish"
RUNNER_PLATFORMS = {
    "ubuntu-24.04": "linux-x86_64",
    "ubuntu-24.04-arm": "linux-aarch64",
    "macos-15": "macos-arm64",
    "macos-15-intel": "macos-x86_64",
}
"""GitHub's runners and the machine each is (docs.github.com, "GitHub-hosted runners"), written
out here: cibuildwheel builds for the runner's own architecture (archs = native)."""


@pytest.fixture(scope="module")
def workflow() -> dict[str, Any]:
    data: dict[str, Any] = YAML(typ="safe").load(WORKFLOW.read_text(encoding="utf-8"))
    return data


def _uses(job: dict[str, Any]) -> list[str]:
    return [step["uses"].split("@")[0] for step in job["steps"] if "uses" in step]


def test_the_workflow_passes_the_schema_and_zizmor() -> None:
    assert_lint_clean(WORKFLOW, "vendor.github-workflows")


def test_every_action_is_pinned_by_commit_with_its_version_named() -> None:
    uses = re.findall(r"uses:\s*(\S+)(.*)", WORKFLOW.read_text(encoding="utf-8"))
    assert {u.split("@")[0] for u, _ in uses} >= {PUBLISH_ACTION, "pypa/cibuildwheel"}
    assert all(re.fullmatch(r"[\w-]+/[\w-]+@[0-9a-f]{40}", u) for u, _ in uses)
    assert all(re.fullmatch(r" # v\d+\.\d+\.\d+", comment) for _, comment in uses)


def test_only_the_publish_job_can_mint_an_id_token(workflow: dict[str, Any]) -> None:
    assert workflow["permissions"] == {}
    jobs = workflow["jobs"]
    for name, job in jobs.items():
        wanted = {"id-token": "write"} if name == "publish" else {"contents": "read"}
        assert job["permissions"] == wanted, name
    publish = jobs["publish"]
    assert _uses(publish) == ["actions/download-artifact", PUBLISH_ACTION]
    # No checkout, no run step: the job holding the token runs none of the repository's code.
    assert all("run" not in step for step in publish["steps"])
    assert publish["environment"]["name"] == "pypi"


def test_publishing_waits_for_every_check_and_a_pushed_tag(workflow: dict[str, Any]) -> None:
    jobs = workflow["jobs"]
    assert jobs["publish"]["needs"] == ["check"]
    assert sorted(jobs["check"]["needs"]) == ["sdist", "wheels"]
    assert workflow["on"]["push"] == {"tags": ["v*"]}
    condition = jobs["publish"]["if"]
    assert "github.event_name == 'push'" in condition
    assert "startsWith(github.ref, 'refs/tags/v')" in condition
    # A run by hand builds and checks; only the tag's run gets past the condition.
    assert set(workflow["on"]) == {"push", "workflow_dispatch"}


def test_the_wheels_are_built_on_the_four_platforms(workflow: dict[str, Any]) -> None:
    wheels = workflow["jobs"]["wheels"]
    runners = wheels["strategy"]["matrix"]["runner"]
    assert sorted(RUNNER_PLATFORMS[r] for r in runners) == sorted(release_checks.PLATFORMS)
    assert _uses(wheels) == ["actions/checkout", "pypa/cibuildwheel", "actions/upload-artifact"]


def test_every_artifact_reaches_the_check_and_the_publish_job(workflow: dict[str, Any]) -> None:
    """The uploads' names all match the one pattern both downloads take."""
    jobs = workflow["jobs"]
    uploaded = [
        step["with"]["name"]
        for name in ("sdist", "wheels")
        for step in jobs[name]["steps"]
        if step.get("uses", "").startswith("actions/upload-artifact@")
    ]
    assert len(uploaded) == 2
    for name in ("check", "publish"):
        (download,) = (s for s in jobs[name]["steps"] if "download-artifact@" in s.get("uses", ""))
        pattern = download["with"]["pattern"]
        assert pattern.endswith("*") and all(u.startswith(pattern[:-1]) for u in uploaded)
        assert download["with"]["merge-multiple"] is True


def test_the_check_steps_run_the_release_checks(workflow: dict[str, Any]) -> None:
    runs = [
        step["run"] for job in workflow["jobs"].values() for step in job["steps"] if "run" in step
    ]
    checks = [r.split() for r in runs if "scripts/release_checks.py" in r]
    assert checks == [
        ["python", "scripts/release_checks.py", "tag", "dist"],
        ["python", "scripts/release_checks.py", "artifacts", "dist"],
    ]
