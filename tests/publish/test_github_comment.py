"""``--github-comment``: one sticky comment per pull request, through the REST API (a stand-in on
127.0.0.1, see conftest.py): created on the first run, edited on later ones, found across pages,
never a comment someone else wrote, and every refusal reported in one line without the token."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clirun import run_cli
from publish.standin_api import BOT, PR, REPOSITORY, TOKEN, StandIn

from builder.publish.github import Identity, written_by
from builder.publish.rest import Api
from builder.render.budget_tables import BUDGET_MARKER
from builder.render.pr_comment import MARKER


def _ours(github: StandIn, marker: str = MARKER) -> list[dict[str, object]]:
    return [c for c in github.comments if str(c["body"]).startswith(marker)]


def test_first_run_creates_the_comment_later_runs_edit_it(
    pair: tuple[Path, Path], github: StandIn, capsys: pytest.CaptureFixture[str]
) -> None:
    github.add("LGTM")
    base, head = map(str, pair)
    code, out, err = run_cli(
        ["compare", base, head, "--format", "markdown", "--github-comment"], capsys
    )
    assert code == 0, err
    (comment,) = _ours(github)
    assert comment["body"] == out  # the comment is the markdown compare prints
    assert [m for m, _ in github.requests] == ["GET", "POST"]
    assert f"created the size comment on pull request #{PR}" in err
    first = comment["id"]
    code, out, err = run_cli(
        ["compare", base, head, "--max-growth", "1%", "--github-comment"], capsys
    )
    assert code == 1  # the gate fails, and the comment still carries the verdict
    (comment,) = _ours(github)
    assert comment["id"] == first and len(github.comments) == 2
    assert [m for m, _ in github.requests] == ["GET", "POST", "GET", "POST", "PATCH"]
    assert github.requests[3] == ("POST", "/graphql")  # who the token is: its comment only
    assert github.requests[-1][1] == f"/repos/{REPOSITORY}/issues/comments/{first}"
    assert "❌ **FAIL**: --max-growth 1%" in str(comment["body"])
    assert f"updated the size comment on pull request #{PR}" in err and TOKEN not in err


def test_the_comment_is_found_on_a_later_page(
    pair: tuple[Path, Path], github: StandIn, capsys: pytest.CaptureFixture[str]
) -> None:
    github.page_size = 10
    for n in range(23):
        github.add(f"review comment {n} mentioning {MARKER} inside")  # not at the start: not ours
    ours = github.mine(MARKER + "\nold figures")
    github.add("after")
    code, _, err = run_cli(["compare", *map(str, pair), "--github-comment"], capsys)
    assert code == 0, err
    pages = [p for m, p in github.requests if m == "GET"]
    assert len(pages) == 3 and pages[1].endswith("page=2") and pages[2].endswith("page=3")
    assert ("POST", "/graphql") in github.requests  # who the token is, once a marker turned up
    assert github.requests[-1] == ("PATCH", f"/repos/{REPOSITORY}/issues/comments/{ours}")
    assert len(github.comments) == 25 and len(_ours(github)) == 1
    assert "old figures" not in str(_ours(github)[0]["body"])


def test_budget_and_compare_keep_separate_comments(
    pair: tuple[Path, Path],
    github: StandIn,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    budget = tmp_path / "metallib-size.toml"
    budget.write_text(f'[[budget]]\ntarget = "{pair[1].name}"\nmax-size = "1MB"\n')
    for _ in range(2):
        assert run_cli(["compare", *map(str, pair), "--github-comment"], capsys)[0] == 0
        assert run_cli(["budget", str(budget), "--github-comment"], capsys)[0] == 0
    assert len(_ours(github)) == 1 and len(_ours(github, BUDGET_MARKER)) == 1
    assert len(github.comments) == 2
    assert "✅ all 1 limits pass" in str(_ours(github, BUDGET_MARKER)[0]["body"])


def test_refused_request_is_one_line(
    pair: tuple[Path, Path], github: StandIn, capsys: pytest.CaptureFixture[str]
) -> None:
    github.refuse["POST"] = 403
    code, _, err = run_cli(["compare", *map(str, pair), "--github-comment"], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and TOKEN not in err
    assert err.startswith(
        f"error: GitHub API: cannot comment on pull request #{PR} in "
        f"{REPOSITORY}: HTTP 403 (Resource not accessible by integration): "
        "the token may not write comments: give the job 'permissions: "
        "pull-requests: write'"
    )
    github.refuse = {"GET": 401}
    code, _, err = run_cli(["compare", *map(str, pair), "--github-comment"], capsys)
    assert code == 2 and "HTTP 401" in err and "list the comments of pull request" in err


def test_a_next_page_on_another_server_is_not_followed(
    pair: tuple[Path, Path], github: StandIn, capsys: pytest.CaptureFixture[str]
) -> None:
    github.page_size = 1
    github.add("one")
    github.add("two")
    github.next_link = lambda url: url.replace("127.0.0.1", "localhost")
    code, _, err = run_cli(["compare", *map(str, pair), "--github-comment"], capsys)
    assert code == 2 and "the next page is on another server" in err
    assert [m for m, _ in github.requests] == ["GET"]  # nothing sent to the other origin


@pytest.mark.parametrize(
    "missing", ["GITHUB_TOKEN", "GITHUB_REPOSITORY", "GITHUB_API_URL", "GITHUB_EVENT_PATH"]
)
def test_missing_environment_fails_before_measuring(
    missing: str,
    github: StandIn,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv(missing)
    missing_file = str(tmp_path / "nothing.metallib")  # measuring would fail on this first
    code, out, err = run_cli(["compare", missing_file, missing_file, "--github-comment"], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(f"error: --github-comment needs {missing} in the environment")
    assert github.requests == []


def test_an_event_without_a_pull_request_is_refused(
    github: StandIn,
    tmp_path: Path,
    pair: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    push = tmp_path / "push.json"
    push.write_text(json.dumps({"ref": "refs/heads/main", "commits": []}))
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(push))
    code, _, err = run_cli(["compare", *map(str, pair), "--github-comment"], capsys)
    assert code == 2 and "not a pull request event (no pull_request.number)" in err


def test_a_strangers_marker_comment_is_never_edited(
    pair: tuple[Path, Path], github: StandIn, capsys: pytest.CaptureFixture[str]
) -> None:
    """A stranger posts the marker first, with fake numbers: the bot creates its own comment and
    edits only that one on later runs; the stranger's stays as they wrote it."""
    fake = MARKER + "\n✅ no growth (fake)"
    stranger = github.add(fake, "mallory")
    lookalike = github.add(fake, "github-actions")  # a person's login, not the bot's
    for run in range(2):
        github.requests.clear()
        code, _, err = run_cli(["compare", *map(str, pair), "--github-comment"], capsys)
        assert code == 0, err
        ours = [c for c in _ours(github) if c["id"] not in (stranger, lookalike)]
        assert len(ours) == 1 and ours[0]["user"] == {**_user(BOT), "type": "Bot"}
        assert [c["body"] for c in github.comments[:2]] == [fake, fake]
        edits = [p for m, p in github.requests if m == "PATCH"]
        assert edits == (
            [] if run == 0 else [f"/repos/{REPOSITORY}/issues/comments/{ours[0]['id']}"]
        )
        assert ("POST", "/graphql") in github.requests
        assert ("created" if run == 0 else "updated") + " the size comment" in err


def test_a_personal_token_edits_its_own_comment_only(
    pair: tuple[Path, Path], github: StandIn, capsys: pytest.CaptureFixture[str]
) -> None:
    """With a personal token (GraphQL viewer: a person), the bot's marker comment from an
    earlier GITHUB_TOKEN run is someone else's; the person's own one is edited."""
    github.add(MARKER + "\nfrom the workflow token", BOT["login"])
    github.viewer = {"login": "alice", "databaseId": 7}
    alice = github.mine(MARKER + "\nold figures")
    code, _, err = run_cli(["compare", *map(str, pair), "--github-comment"], capsys)
    assert code == 0, err
    assert github.requests[-1] == ("PATCH", f"/repos/{REPOSITORY}/issues/comments/{alice}")
    assert str(github.comments[0]["body"]).endswith("from the workflow token")


def test_a_viewer_reply_without_a_login_is_one_line(
    pair: tuple[Path, Path], github: StandIn, capsys: pytest.CaptureFixture[str]
) -> None:
    github.add(MARKER + "\nsomeone's")
    github.viewer = {"login": None}
    code, _, err = run_cli(["compare", *map(str, pair), "--github-comment"], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and TOKEN not in err
    assert "cannot learn which account the token is (GraphQL viewer)" in err
    assert [m for m, _ in github.requests] == ["GET", "POST"]  # no comment posted or edited


def _user(account: dict[str, object]) -> dict[str, object]:
    return {"login": account["login"], "id": account["databaseId"]}


@pytest.mark.parametrize(
    ("user", "me", "ours"),
    [
        (
            {"login": "github-actions[bot]", "id": 41898282},
            Identity("github-actions[bot]", 41898282),
            True,
        ),
        (
            {"login": "github-actions[bot]", "id": 5},
            Identity("github-actions[bot]", 41898282),
            False,
        ),
        ({"login": "github-actions", "id": 9}, Identity("github-actions[bot]", 41898282), False),
        ({"login": "alice"}, Identity("alice", 7), True),  # no id: the login decides
        ({"login": "alice", "id": 7}, Identity("alice", None), True),
        ({"login": "Alice", "id": 8}, Identity("alice", None), False),
        (None, Identity("alice", 7), False),
    ],
)
def test_written_by_compares_the_id_else_the_login(
    user: dict[str, object] | None, me: Identity, ours: bool
) -> None:
    assert written_by({"id": 1, "body": MARKER, "user": user}, me) is ours


@pytest.mark.parametrize(
    ("api", "graphql"),
    [
        ("https://api.github.com", "https://api.github.com/graphql"),
        ("https://ghe.example/api/v3", "https://ghe.example/api/graphql"),
    ],
)
def test_graphql_is_on_the_api_server(api: str, graphql: str) -> None:
    assert Api(api, REPOSITORY, TOKEN).graphql_url == graphql
