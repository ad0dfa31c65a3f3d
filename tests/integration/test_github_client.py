from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from turncheck.git.changes import ChangedFile
from turncheck.github.client import (
    ACTIONS_BOT_LOGIN,
    Annotation,
    GitHubApiError,
    GitHubPermissionError,
    PyGithubApi,
    default_retry,
)

if TYPE_CHECKING:
    from tests.support.github_fake import FakeGitHub
    from tests.support.prism import PrismGitHub

# Loaded as plugins (not imported) so pytest rewrites their asserts and registers fixtures.

MARKER = "<!-- turncheck -->"
SHA = "0123456789abcdef0123456789abcdef01234567"
PR = 7


def make_api(base_url: str, repository: str = "octo-org/widgets", **options: object) -> PyGithubApi:
    settings: dict[str, object] = {
        "retry": None,
        "seconds_between_requests": 0,
        "seconds_between_writes": 0,
        **options,
    }
    return PyGithubApi("test-token", repository, base_url, **settings)  # type: ignore[arg-type]


@pytest.fixture
def api(github_fake: FakeGitHub) -> PyGithubApi:
    return make_api(github_fake.base_url)


def report(text: str) -> str:
    return f"{MARKER}\n{text}"


def make_annotations(count: int) -> list[Annotation]:
    return [
        Annotation(f"evals/suite{i}.yaml", i + 1, i + 1, "failure", f"eval {i} failed", f"e{i}")
        for i in range(count)
    ]


# ---- comments -------------------------------------------------------------------


def test_upsert_creates_then_edits_the_same_comment(
    api: PyGithubApi,
    github_fake: FakeGitHub,
) -> None:
    first = api.upsert_comment(PR, report("run 1"), MARKER)
    second = api.upsert_comment(PR, report("run 2"), MARKER)

    assert (first.action, second.action) == ("created", "updated")
    assert first.id == second.id
    assert first.url.endswith(f"#issuecomment-{first.id}")
    assert [c.body for c in github_fake.comments_on(PR)] == [report("run 2")]


def test_finds_our_comment_beyond_the_first_page(
    api: PyGithubApi,
    github_fake: FakeGitHub,
) -> None:
    for i in range(150):
        github_fake.add_comment(PR, f"comment {i}", login=f"user{i}")
    ours = github_fake.add_comment(PR, report("old"), login=github_fake.token_login)

    result = api.upsert_comment(PR, report("new"), MARKER)

    assert (result.id, result.action) == (ours.id, "updated")
    assert ours.body == report("new")
    assert len(github_fake.comments_on(PR)) == 151
    pages = [r.query.get("page", "1") for r in github_fake.requests_matching("GET", "/comments")]
    assert pages == ["1", "2"]


def test_marker_in_a_comment_by_someone_else_is_not_edited(
    api: PyGithubApi,
    github_fake: FakeGitHub,
) -> None:
    forged = github_fake.add_comment(PR, report("forged"), login="mallory")

    result = api.upsert_comment(PR, report("real"), MARKER)

    assert result.action == "created"
    assert forged.body == report("forged")
    assert not github_fake.requests_matching("PATCH", "/comments/")


def test_a_comment_by_the_same_bot_that_only_quotes_the_marker_is_not_edited(
    api: PyGithubApi,
    github_fake: FakeGitHub,
) -> None:
    # Issue 23, defect 11: every workflow using GITHUB_TOKEN posts as github-actions[bot];
    # another bot's comment quoting our marker is not ours and must never be overwritten.
    github_fake.simulate_github_token()
    quoting = github_fake.add_comment(
        PR, f"Deploy preview ready. turncheck said:\n> {MARKER}\n> 2 regressions",
        login=ACTIONS_BOT_LOGIN)
    trailing = github_fake.add_comment(PR, f"coverage report\n{MARKER}", login=ACTIONS_BOT_LOGIN)

    result = api.upsert_comment(PR, report("real"), MARKER)

    assert result.action == "created"
    assert MARKER in quoting.body and quoting.body.startswith("Deploy preview")
    assert trailing.body == f"coverage report\n{MARKER}"
    assert not github_fake.requests_matching("PATCH", "/comments/")
    # Our own comment (marker first) is found and edited on the next run.
    assert api.upsert_comment(PR, report("again"), MARKER).id == result.id


def test_a_body_that_does_not_start_with_the_marker_is_refused(api: PyGithubApi) -> None:
    with pytest.raises(ValueError, match="start with the marker"):
        api.upsert_comment(PR, f"text first\n{MARKER}", MARKER)


def test_on_change_skips_an_identical_body(
    api: PyGithubApi,
    github_fake: FakeGitHub,
) -> None:
    api.upsert_comment(PR, report("same"), MARKER)

    result = api.upsert_comment(PR, report("same"), MARKER, mode="on-change")

    assert result.action == "unchanged"
    assert not github_fake.requests_matching("PATCH", "/comments/")


def test_always_mode_edits_an_identical_body(
    api: PyGithubApi,
    github_fake: FakeGitHub,
) -> None:
    api.upsert_comment(PR, report("same"), MARKER)

    assert api.upsert_comment(PR, report("same"), MARKER, mode="always").action == "updated"
    assert len(github_fake.requests_matching("PATCH", "/comments/")) == 1


def test_github_token_author_falls_back_to_the_actions_bot(
    api: PyGithubApi,
    github_fake: FakeGitHub,
) -> None:
    github_fake.simulate_github_token()
    ours = github_fake.add_comment(PR, report("old"), login=ACTIONS_BOT_LOGIN)

    assert api.upsert_comment(PR, report("new"), MARKER).id == ours.id
    assert api.comment_author() == ACTIONS_BOT_LOGIN


def test_author_lookup_failure_other_than_forbidden_is_an_api_error(
    api: PyGithubApi,
    github_fake: FakeGitHub,
) -> None:
    github_fake.force_error("GET", "^/user$", 500, "boom")

    with pytest.raises(GitHubApiError) as caught:
        api.upsert_comment(PR, report("x"), MARKER)
    assert not isinstance(caught.value, GitHubPermissionError)
    assert caught.value.status == 500


def test_body_without_the_marker_is_refused(api: PyGithubApi) -> None:
    with pytest.raises(ValueError, match="marker"):
        api.upsert_comment(PR, "no marker here", MARKER)


# ---- check runs -----------------------------------------------------------------


def test_annotations_are_sent_in_batches_of_fifty(
    api: PyGithubApi,
    github_fake: FakeGitHub,
) -> None:
    url = api.create_check_run(
        SHA, "turncheck", "2 failed", "summary", "text", "failure", make_annotations(120)
    )

    posts = github_fake.requests_matching("POST", "/check-runs$")
    patches = github_fake.requests_matching("PATCH", "/check-runs/")
    assert (len(posts), len(patches)) == (1, 2)
    sizes = [len(r.body["output"]["annotations"]) for r in posts + patches]
    assert sizes == [50, 50, 20]
    (run,) = github_fake.check_runs.values()
    assert url.endswith(f"/runs/{run.id}")
    assert [a["message"] for a in run.annotations] == [f"eval {i} failed" for i in range(120)]
    assert (run.status, run.conclusion, run.output["title"]) == ("completed", "failure", "2 failed")


def test_check_run_without_annotations_is_one_request(
    api: PyGithubApi,
    github_fake: FakeGitHub,
) -> None:
    api.create_check_run(SHA, "turncheck", "ok", "all passed", "", "success")

    assert len(github_fake.requests) == 1
    (run,) = github_fake.check_runs.values()
    assert run.conclusion == "success"


def test_check_run_output_and_annotations_are_capped(
    api: PyGithubApi,
    github_fake: FakeGitHub,
) -> None:
    huge = Annotation("a.yaml", 3, 1, "warning", "é" * 40_000, "t" * 300)

    api.create_check_run(SHA, "turncheck", "t", "s" * 70_000, "ü" * 40_000, "neutral", [huge])

    (run,) = github_fake.check_runs.values()
    # Capped in UTF-8 bytes: 40,000 "ü" are 80,000 bytes though fewer than 65,535 characters.
    assert len(run.output["summary"].encode()) == len(run.output["text"].encode()) == 65_535
    assert run.output["text"].endswith("…(truncated)")
    (sent,) = run.annotations
    assert len(sent["title"]) == 255
    assert len(sent["message"].encode()) <= 64 * 1024
    assert (sent["start_line"], sent["end_line"]) == (3, 3)


# ---- statuses and files ---------------------------------------------------------


def test_create_status(api: PyGithubApi, github_fake: FakeGitHub) -> None:
    api.create_status(SHA, "failure", "cost +12% " + "x" * 200, "turncheck/cost", "https://ci/1")

    (status,) = github_fake.statuses
    assert (status["sha"], status["state"], status["context"]) == (SHA, "failure", "turncheck/cost")
    assert status["target_url"] == "https://ci/1"
    assert len(status["description"]) == 140


def test_pr_files_reads_every_page(api: PyGithubApi, github_fake: FakeGitHub) -> None:
    for i in range(250):
        github_fake.add_pr_file(PR, f"evals/f{i}.yaml", "added")
    github_fake.add_pr_file(PR, "evals/new.yaml", "renamed", previous="evals/old.yaml")
    github_fake.add_pr_file(PR, "gone.yaml", "removed")

    files = api.pr_files(PR)

    assert len(files) == 252
    assert files[250] == ChangedFile("evals/new.yaml", "renamed", "evals/old.yaml")
    assert files[251] == ChangedFile("gone.yaml", "removed", None)
    assert len(github_fake.requests_matching("GET", "/files$")) == 3


# ---- permissions and errors -----------------------------------------------------


def test_fork_pull_request_writes_raise_permission_errors(
    api: PyGithubApi,
    github_fake: FakeGitHub,
) -> None:
    github_fake.writes_forbidden = True

    with pytest.raises(GitHubPermissionError) as comment_error:
        api.upsert_comment(PR, report("x"), MARKER)
    with pytest.raises(GitHubPermissionError) as check_error:
        api.create_check_run(SHA, "turncheck", "t", "s", "", "success", make_annotations(1))
    with pytest.raises(GitHubPermissionError) as status_error:
        api.create_status(SHA, "success", "ok", "turncheck")

    assert comment_error.value.operation == "create comment"
    assert comment_error.value.status == 403
    assert comment_error.value.message == "Resource not accessible by integration"
    assert check_error.value.operation == "create check run"
    assert status_error.value.operation == "create commit status"


def test_permission_errors_are_not_retried(github_fake: FakeGitHub) -> None:
    github_fake.writes_forbidden = True
    api = make_api(github_fake.base_url, retry=default_retry())

    with pytest.raises(GitHubPermissionError):
        api.create_status(SHA, "success", "ok", "turncheck")
    assert len(github_fake.requests) == 1


def test_token_without_checks_permission_can_still_comment(
    api: PyGithubApi,
    github_fake: FakeGitHub,
) -> None:
    github_fake.checks_forbidden = True

    assert api.upsert_comment(PR, report("x"), MARKER).action == "created"
    with pytest.raises(GitHubPermissionError):
        api.create_check_run(SHA, "turncheck", "t", "s", "", "success")


def test_not_found_on_a_write_is_a_permission_error(
    api: PyGithubApi,
    github_fake: FakeGitHub,
) -> None:
    github_fake.force_error("POST", "/statuses/", 404, "Not Found")

    with pytest.raises(GitHubPermissionError) as caught:
        api.create_status(SHA, "success", "ok", "turncheck")
    assert caught.value.status == 404


def test_not_found_on_a_read_is_an_api_error(
    api: PyGithubApi,
    github_fake: FakeGitHub,
) -> None:
    github_fake.force_error("GET", "/files$", 404, "Not Found")

    with pytest.raises(GitHubApiError) as caught:
        api.pr_files(PR)
    assert not isinstance(caught.value, GitHubPermissionError)
    assert caught.value.operation == "list pull request files"


def test_server_errors_are_api_errors(
    api: PyGithubApi,
    github_fake: FakeGitHub,
) -> None:
    github_fake.force_error("POST", "/check-runs$", 502, "Bad Gateway")

    with pytest.raises(GitHubApiError) as caught:
        api.create_check_run(SHA, "turncheck", "t", "s", "", "success")
    assert (caught.value.status, caught.value.message) == (502, "Bad Gateway")


def test_connection_failure_is_an_api_error_without_status() -> None:
    api = make_api("http://127.0.0.1:9", timeout=2)

    with pytest.raises(GitHubApiError) as caught:
        api.pr_files(PR)
    assert caught.value.status is None


# ---- GitHub's OpenAPI contract, through Prism -------------------------------------

PRISM_REPOSITORY = "octocat/Hello-World"


@pytest.fixture
def prism_api(prism: PrismGitHub) -> PyGithubApi:
    return make_api(prism.base_url, PRISM_REPOSITORY)


@pytest.mark.prism
def test_prism_create_comment(prism_api: PyGithubApi, prism: PrismGitHub) -> None:
    result = prism_api.upsert_comment(PR, report("hello"), MARKER)

    assert result.action == "created"
    prism.assert_no_violations()
    assert [(e.method, e.path.split("?")[0]) for e in prism.exchanges] == [
        ("GET", "/user"),
        ("GET", f"/repos/{PRISM_REPOSITORY}/issues/{PR}/comments"),
        ("POST", f"/repos/{PRISM_REPOSITORY}/issues/{PR}/comments"),
    ]


@pytest.mark.prism
def test_prism_edit_comment(prism_api: PyGithubApi, prism: PrismGitHub) -> None:
    # The spec's example comment is by "octocat" (also GET /user's example) and says "Me too".
    result = prism_api.upsert_comment(PR, "Me too, edited", marker="Me too")

    assert result.action == "updated"
    prism.assert_no_violations()
    assert [e.method for e in prism.exchanges] == ["GET", "GET", "PATCH"]


@pytest.mark.prism
def test_prism_check_run_with_annotation_batches(
    prism_api: PyGithubApi,
    prism: PrismGitHub,
) -> None:
    prism_api.create_check_run(
        SHA, "turncheck", "t", "summary", "text", "failure", make_annotations(60)
    )

    prism.assert_no_violations()
    assert [e.method for e in prism.exchanges] == ["POST", "PATCH"]


@pytest.mark.prism
def test_prism_create_status(prism_api: PyGithubApi, prism: PrismGitHub) -> None:
    prism_api.create_status(SHA, "success", "all evals passed", "turncheck", "https://ci/1")

    prism.assert_no_violations()


@pytest.mark.prism
def test_prism_pr_files(prism_api: PyGithubApi, prism: PrismGitHub) -> None:
    files = prism_api.pr_files(PR)

    assert files
    prism.assert_no_violations()
