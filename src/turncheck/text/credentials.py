"""Every credential turncheck knows of, by environment variable: the one list.

The providers read their API keys by these names, the redactor and the action's masks
cover their values, and a suite's `secret()` may not name any of them (nor a variable
of the runner or of the action: `RUNNER_CREDENTIAL_PREFIXES`). The provider keys come
from the provider table (`turncheck.choices.PROVIDERS`): a provider added there is
covered everywhere at once.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlsplit

from turncheck.choices import PROVIDERS

PROVIDER_KEY_ENV = {name: spec.key_env for name, spec in PROVIDERS.items()}
"""Provider name → the variable holding its API key."""
OTHER_CREDENTIAL_ENV = ("GOOGLE_API_KEY", "GITHUB_TOKEN", "GH_TOKEN", "ACTIONS_RUNTIME_TOKEN",
                        "ACTIONS_ID_TOKEN_REQUEST_TOKEN")
"""Keys turncheck does not read itself but that sit beside the ones it does: Google's
SDKs read GOOGLE_API_KEY for Gemini; the GitHub CLI and the runner hold tokens."""
CREDENTIAL_ENV_VARS = frozenset({*PROVIDER_KEY_ENV.values(), *OTHER_CREDENTIAL_ENV})
RUNNER_CREDENTIAL_PREFIXES = ("GITHUB_", "ACTIONS_", "RUNNER_", "INPUT_")
"""Variables of the runner and of the action (tokens, the action's inputs)."""


BASE_URL_ENV = tuple(spec.base_url_env for spec in PROVIDERS.values() if spec.base_url_env)
"""Variables the providers read a base URL from: one may carry a credential in its query."""
_CREDENTIAL_PARAM = re.compile(r"key|token|secret|pass|pwd|auth|sig|credential|session",
                               re.IGNORECASE)
"""A query parameter whose name holds one of these carries a credential (`key`, `api-key`,
`access_token`, `sig`, ...)."""


def url_credentials(url: str | None) -> list[str]:
    """The credentials a URL carries: the values of its credential-like query parameters
    and its user information (`https://user:password@host`)."""
    if not url:
        return []
    try:
        parts = urlsplit(url)
        found = [parts.password or "", parts.username or ""]
    except ValueError:  # an unparseable port, say: the query is still read below
        found = []
    query = url.partition("?")[2].partition("#")[0]
    found += [value for name, value in parse_qsl(query, keep_blank_values=True)
              if _CREDENTIAL_PARAM.search(name)]
    return [value for value in found if value]


def is_credential_env(name: str) -> bool:
    """Whether the variable `name` (any case) holds, or may hold, a credential."""
    upper = name.upper()
    return upper in CREDENTIAL_ENV_VARS or upper.startswith(RUNNER_CREDENTIAL_PREFIXES)
