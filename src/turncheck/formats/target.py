"""The `target` of a suite (docs/targets.md): the user's own app as the other side of the
conversation, instead of a bare model.

Three kinds, exactly one per target: `http` (one request per user turn to the app's
endpoint), `python` (`package.module:function`, called in-process) and `command` (a
process speaking JSON lines). `start`, `ready`, `setup` and `env` say how turncheck
starts the app; `session` and `stateful` how a conversation's state reaches it.

The templates of `http` (URL, headers, body) are Jinja, rendered in the sandbox with
`messages`, `last_message`, `session_id` and `vars`; their syntax is checked here, so a
broken template is a diagnostic at its line, not an error of every eval.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_validator,
)

from turncheck.choices import TARGET_KINDS

MAX_READY_TIMEOUT_S = 600.0
DEFAULT_READY_TIMEOUT_S = 30.0
DEFAULT_SETUP_TIMEOUT_S = 600.0
DEFAULT_TURN_TIMEOUT_S = 120.0
MAX_TEMPLATE_CHARS = 20_000
_FUNCTION = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
RESERVED_ENV = frozenset({"PORT", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY",
                          "ANTHROPIC_API_KEY"})
"""Set by turncheck for the app (the port and the recording proxy); a suite may not."""

NonEmpty = Annotated[StrictStr, Field(min_length=1)]
Seconds = Annotated[StrictFloat | StrictInt, Field(gt=0, le=MAX_READY_TIMEOUT_S)]
Command = NonEmpty | Annotated[list[NonEmpty], Field(min_length=1)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True, defer_build=True)


def template_problem(text: str) -> str | None:
    """Why `text` is not a usable Jinja template (syntax), or None."""
    if len(text) > MAX_TEMPLATE_CHARS:
        return f"a template may have at most {MAX_TEMPLATE_CHARS:,} characters"
    if "{{" not in text and "{%" not in text:
        return None
    from turncheck.text.environment import sandboxed_environment  # Jinja: only for targets

    try:
        sandboxed_environment().parse(text)
    except Exception as exc:  # jinja2.TemplateSyntaxError, RecursionError on deep nesting
        return f"template syntax error: {exc}"
    return None


def _templated_strings(value: Any) -> list[str]:
    pending, found = [value], []
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            found.append(item)
        elif isinstance(item, dict):
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return found


class HttpTarget(_Strict):
    """One request per user turn to the app's endpoint."""

    path: NonEmpty | None = Field(
        default=None, description="Path on the started app: http://127.0.0.1:{port}PATH.")
    url: Annotated[StrictStr, Field(pattern=r"^https?://\S+$")] | None = Field(
        default=None, description="A full URL instead of `path` (templated).")
    method: Literal["POST", "PUT", "PATCH", "GET"] = "POST"
    headers: dict[NonEmpty, StrictStr] | None = Field(
        default=None, description="Request headers (values templated).")
    body: Any = Field(
        default=None, description="The JSON body; its strings are templates. A string that is "
        "exactly `{{ name }}` is replaced by the value itself (a list of messages, say).")
    reply: NonEmpty | None = Field(
        default=None, description="Where the answer's text is in the JSON reply (a dotted "
        "path, list indexes as numbers); without it the whole reply text is the answer.")
    tool_calls: NonEmpty | None = Field(
        default=None, description="Where the app reports its tool calls in the JSON reply: "
        "a list of {name, arguments}.")
    timeout: Seconds = Field(default=DEFAULT_TURN_TIMEOUT_S,
                             description="Seconds one turn's reply may take.")
    then: HttpTarget | None = Field(
        default=None, description="A second request of the same turn, for an app that "
        "answers in two (POST the message, then GET /stream): the same keys; its templates "
        "also see `first_reply` (the first reply's JSON, or its text), and the turn's "
        "answer is its reply.")

    @field_validator("url", "headers", "body")
    @classmethod
    def _templates(cls, value: Any) -> Any:
        for text in _templated_strings(value):
            problem = template_problem(text)
            if problem is not None:
                raise ValueError(problem)
        return value

    @field_validator("path")
    @classmethod
    def _absolute(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith("/"):
            raise ValueError("http.path must start with /")
        return value

    @model_validator(mode="after")
    def _one_address(self) -> HttpTarget:
        if (self.path is None) == (self.url is None):
            raise ValueError("http needs exactly one of path (on the started app) or url")
        if self.then is not None and self.then.then is not None:
            raise ValueError("http.then may not have a then of its own (two requests a turn)")
        return self

    def requests(self) -> list[HttpTarget]:
        """This request, then its `then`."""
        return [self] if self.then is None else [self, self.then]


class SessionFromReply(_Strict):
    """The session id the app hands out in its first reply, sent back on later turns."""

    from_: Annotated[StrictStr, Field(pattern=r"^(header|json):\S+$")] = Field(
        alias="from", description='"header:NAME" or "json:PATH" of the first reply.')

    @property
    def source(self) -> tuple[Literal["header", "json"], str]:
        kind, _, where = self.from_.partition(":")
        return ("header" if kind == "header" else "json"), where


class Target(_Strict):
    """The app a suite talks to (docs/targets.md)."""

    start: Command | None = Field(
        default=None, description="Starts the app, in the suite's folder; {port} is a free "
        "port (also $PORT), {python} the interpreter running turncheck. Without it the app "
        "is not started by turncheck.")
    ready: NonEmpty | None = Field(
        default=None, description="Path (or URL) polled with GET until it answers.")
    ready_timeout: Seconds = Field(default=DEFAULT_READY_TIMEOUT_S,
                                   description="Seconds the app has to become ready.")
    setup: Command | None = Field(
        default=None, description="Run once per side before the app starts (installs its "
        "dependencies, say), in the suite's folder.")
    setup_timeout: Seconds = DEFAULT_SETUP_TIMEOUT_S
    env: dict[NonEmpty, StrictStr] | None = Field(
        default=None, description="Extra environment variables for the app.")
    http: HttpTarget | None = None
    python: Annotated[StrictStr, Field(pattern=_FUNCTION.pattern)] | None = Field(
        default=None, description="package.module:function, called in-process.")
    path: list[NonEmpty] | None = Field(
        default=None, description="python targets: folders (relative to the suite's folder, "
        "inside the repository) searched for the module before the suite's folder and the "
        "repository's root.")
    command: Command | None = Field(
        default=None, description="A process speaking JSON lines: one turn in, one reply out.")
    session: Literal["client"] | SessionFromReply | None = Field(
        default=None, description='"client" (turncheck mints one id per conversation) or '
        '{from: "header:NAME" | "json:PATH"} (the app\'s first reply holds it).')
    stateful: StrictBool = Field(
        default=False, description="Send only the newest user message (the app keeps history).")
    forwards_header: StrictBool = Field(
        default=False, description="The app copies the X-Turncheck-Turn header of each "
        "turn's request onto the model calls it makes for that turn, which are then "
        "counted in their turn by it (http targets; without it, by the user messages "
        "they carry).")
    concurrent: StrictBool | None = Field(
        default=None, description="Several conversations' turns in flight at once. http "
        "and python: on by default (false: one turn at a time); command: off by default "
        "(the app answers lines out of order, echoing each line's id).")

    @field_validator("session", mode="wrap")
    @classmethod
    def _one_session_error(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        try:
            return handler(value)
        except ValidationError:
            raise ValueError('session must be "client" or {from: "header:NAME"} or '
                             '{from: "json:PATH"}') from None

    @field_validator("env")
    @classmethod
    def _env_names(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        for name in value or {}:
            if not _ENV_NAME.match(name):
                raise ValueError(f"{name!r} is not an environment variable name")
            if name in RESERVED_ENV:
                raise ValueError(f"{name} is set by turncheck (the port and the recording "
                                 "proxy); a suite may not set it")
        return value

    @field_validator("path")
    @classmethod
    def _relative_folders(cls, value: list[str] | None) -> list[str] | None:
        for folder in value or []:
            if folder.startswith(("/", "\\")) or ":" in folder:
                raise ValueError(f"path {folder!r}: give a folder relative to the suite's "
                                 "folder (each side imports from its own tree)")
        return value

    @model_validator(mode="after")
    def _one_kind(self) -> Target:
        kinds = [kind for kind in TARGET_KINDS if getattr(self, kind) is not None]
        if len(kinds) != 1:
            found = f"found {', '.join(kinds)}" if kinds else "found none"
            raise ValueError(f"a target needs exactly one of http, python or command ({found})")
        if self.ready is not None and self.start is None and not self.ready.startswith("http"):
            raise ValueError("ready as a path needs start (the app's port); give a full URL")
        if self.forwards_header and self.http is None:
            raise ValueError("forwards_header needs an http target (the header comes with "
                             "each turn's request)")
        if self.path is not None and self.python is None:
            raise ValueError("path is for python targets (where the module is imported from)")
        if self.http is not None and self.start is None and \
                any(step.path is not None for step in self.http.requests()):
            raise ValueError("http.path needs start (turncheck starts the app on a port it "
                             "picks); give http.url for an app turncheck does not start")
        return self

    @property
    def runs_concurrently(self) -> bool:
        """Whether several turns go to the app at once (the proxy attributing the app's
        model calls by the turn's header or the user messages they carry)."""
        if self.command is not None:
            return self.concurrent is True
        return self.concurrent is not False

    @property
    def kind(self) -> str:
        return next(kind for kind in TARGET_KINDS if getattr(self, kind) is not None)


_SESSION_NAME = re.compile(r"\bsession_id\b")


def places_session(spec: HttpTarget) -> bool:
    """Whether a template of the http target (url, headers, body) names `session_id`."""
    texts = [text for step in spec.requests() for text in
             (step.url or "", *(step.headers or {}).values(), *_templated_strings(step.body))]
    return any(_SESSION_NAME.search(text) for text in texts if "{" in text)


def session_warnings(target: Target | None) -> list[str]:
    """A session the app will never see: an http target whose conversations have a
    session id that no template places (and that is not sent back in a header)."""
    if target is None or target.http is None or target.session is None:
        return []
    if places_session(target.http):
        return []
    if target.session == "client":
        return ['session: "client" gives each conversation an id, but no template of '
                "http (url, headers, body) places {{ session_id }}: the app never sees it "
                "and cannot tell conversations apart"]
    kind, where = target.session.source
    if kind == "json":
        return [f'session: {{from: "json:{where}"}} reads the id from the first reply, but '
                "no template of http (url, headers, body) places {{ session_id }}: it is "
                "never sent back, so the app opens a new session each turn"]
    return []
