"""Issue 34, item 4: the environment the Actions runner gives the action (container or
step) reaches the app only through the allow-list: no token, no input, no key."""

from __future__ import annotations

from turncheck.github.app_exposure import job_secrets
from turncheck.providers.factory import API_KEY_ENV_VARS
from turncheck.targets.process import ALLOWED_ENV, app_environment

RUNNER_ENV = {
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "eyJ-oidc", "ACTIONS_ID_TOKEN_REQUEST_URL": "https://x",
    "ACTIONS_RUNTIME_TOKEN": "eyJ-runtime", "ACTIONS_RUNTIME_URL": "https://x",
    "ACTIONS_CACHE_URL": "https://x", "ACTIONS_RESULTS_URL": "https://x",
    "GITHUB_TOKEN": "ghs_token", "GITHUB_EVENT_PATH": "/github/workflow/event.json",
    "GITHUB_ENV": "/github/file_commands/set_env", "GITHUB_WORKSPACE": "/github/workspace",
    "INPUT_GITHUB-TOKEN": "ghs_token", "INPUT_MODE": "replay", "RUNNER_TEMP": "/runner/_temp",
    "RUNNER_TOOL_CACHE": "/opt/hostedtoolcache", "CI": "true", "HOME": "/github/home",
    "PATH": "/usr/local/bin:/usr/bin", **{name: "sk-key" for name in API_KEY_ENV_VARS},
}


def test_nothing_of_the_runner_s_environment_but_the_allow_list_reaches_the_app() -> None:
    env = app_environment(RUNNER_ENV, None, {}, None)
    assert set(env) == {"HOME", "PATH", "PYTHONUNBUFFERED"}
    assert not any(name.startswith(("ACTIONS_", "GITHUB_", "INPUT_", "RUNNER_"))
                   for name in ALLOWED_ENV)


def test_the_values_an_app_must_never_see_are_the_tokens_and_keys() -> None:
    secrets = job_secrets(RUNNER_ENV, "ghs_token_from_input")
    assert {b"eyJ-oidc", b"eyJ-runtime", b"ghs_token_from_input"} <= set(secrets)
    assert b"replay" not in secrets and b"short" not in job_secrets({"GH_TOKEN": "short"}, "")
