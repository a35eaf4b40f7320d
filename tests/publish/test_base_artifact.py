"""``base-artifact`` and the action's "Find the base report" step: the base of a comparison comes
only from an artifact that a push to the base branch of this repository uploaded, never from a
pull request's run (a fork's branch named ``main`` above all), against the REST API stand-in on
127.0.0.1 (conftest.py) serving a repository, its workflow runs and its artifact list."""

from __future__ import annotations

from pathlib import Path

import pytest
from clirun import run_cli
from publish.action_steps import run_step
from publish.standin_api import REPOSITORY, TOKEN, StandIn

NAME = "metallib-size-main"
FORK = 777


def _runs_read(github: StandIn) -> set[int]:
    """The workflow runs the tool looked up, by id."""
    prefix = f"/repos/{REPOSITORY}/actions/runs/"
    return {int(path[len(prefix) :]) for _, path in github.requests if path.startswith(prefix)}


def test_a_fork_branch_named_main_is_never_the_base(
    github: StandIn, capsys: pytest.CaptureFixture[str]
) -> None:
    run, artifact = github.upload(NAME)  # main's own push: the only valid base
    github.upload(NAME, branch="feature")  # a push to another branch
    dispatched, _ = github.upload(NAME, event="workflow_dispatch")  # main, but not a push
    github.upload(NAME, event="pull_request", head_repository=FORK)  # a fork's branch "main"
    github.upload("metallib-size", event="push")  # another artifact name
    github.upload(NAME, expired=True)  # a newer push, expired
    github.upload(NAME, event="pull_request", head_repository=FORK)  # the newest: a fork again
    code, out, err = run_cli(["base-artifact", NAME, "--branch", "main"], capsys)
    assert code == 0, err
    assert out == f"run-id={run}\nartifact-id={artifact}\n"
    assert (
        f"base: artifact '{NAME}' #{artifact} of run {run} (a push to main of {REPOSITORY}" in err
    )
    # forks and other branches are ruled out from the list itself; the event needs the run
    assert _runs_read(github) == {dispatched, run}
    assert TOKEN not in out + err


def test_the_run_is_checked_when_the_list_names_this_repository(
    github: StandIn, capsys: pytest.CaptureFixture[str]
) -> None:
    """An artifact list that gives this repository as a fork run's head is not taken on its
    word: the run itself must be a push from this repository."""
    run, _ = github.upload(NAME, event="push", head_repository=FORK)
    github.artifacts[0]["workflow_run"]["head_repository_id"] = github.repository_id
    code, out, err = run_cli(["base-artifact", NAME, "--branch", "main"], capsys)
    assert (code, out) == (2, "") and len(err.splitlines()) == 1
    assert err.startswith(
        f"error: no artifact '{NAME}' from a push to 'main' of {REPOSITORY} (1 listed, 1 from "
        "pull requests, forks, other branches or events, or expired): save one on that branch"
    )
    assert _runs_read(github) == {run}


def test_the_base_is_found_on_a_later_page(
    github: StandIn, capsys: pytest.CaptureFixture[str]
) -> None:
    github.page_size = 2
    run, artifact = github.upload(NAME)
    for _ in range(5):
        github.upload(NAME, event="pull_request", head_repository=FORK)
    code, out, err = run_cli(["base-artifact", NAME, "--branch", "main"], capsys)
    assert code == 0, err
    assert out == f"run-id={run}\nartifact-id={artifact}\n"
    listed = [p for _, p in github.requests if "/actions/artifacts" in p]
    assert len(listed) == 3 and listed[2].endswith("page=3") and f"name={NAME}" in listed[2]


def test_the_action_step_hands_the_run_to_the_download(github: StandIn, tmp_path: Path) -> None:
    """The step as the runner runs it (the real tool, the stand-in API): its outputs are the run
    and the artifact of main's own push, although a fork's run named main is newer."""
    run, artifact = github.upload(NAME)
    github.upload(NAME, event="pull_request", head_repository=FORK)
    env = {"GITHUB_TOKEN": TOKEN, "MLB_ARTIFACT": NAME, "MLB_BRANCH": "main"}
    done, outputs = run_step("base", env, tmp_path)
    assert done.returncode == 0, done.stderr
    assert outputs == {"run-id": str(run), "artifact-id": str(artifact)}
    github.artifacts.pop(1)  # only the fork's is left: the step fails, naming why
    done, outputs = run_step("base", env, tmp_path)
    assert done.returncode == 2 and outputs == {}
    assert f"error: no artifact '{NAME}' from a push to 'main' of {REPOSITORY}" in done.stderr


def test_a_refusal_names_the_permission(
    github: StandIn, capsys: pytest.CaptureFixture[str]
) -> None:
    github.refuse["GET"] = 403
    code, out, err = run_cli(["base-artifact", NAME, "--branch", "main"], capsys)
    assert (code, out) == (2, "") and len(err.splitlines()) == 1
    assert f"cannot read the repository {REPOSITORY}: HTTP 403" in err
    assert "give the job 'permissions: actions: read'" in err and TOKEN not in err
