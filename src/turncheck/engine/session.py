"""One suite's connection to its providers, all through the suite's cassette.

The model, the judge and the embedding calls of a suite share one cassette
transport, so a suite has exactly one cassette beside it. A sample file's grader
likewise calls through the sample file's own cassette (`GraderSession`).
"""

from __future__ import annotations

import asyncio
import json
import shlex
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import ValidationError

from turncheck.choices import Mode, embedding_provider
from turncheck.engine.budget import CallGuard, Ledger, chat_plan, embedding_plan
from turncheck.engine.interruption import STOP
from turncheck.engine.judge import GRADE_ANSWER
from turncheck.engine.repeats import RepeatSetting, sample_seed
from turncheck.engine.usage import chat_usage, embedding_usage
from turncheck.formats import templates
from turncheck.formats.suite import Metadata, Suite
from turncheck.providers.base import (
    AnswerSchema,
    ChatMessage,
    ChatRequest,
    ChatResponse,
    EmbeddingResponse,
    Provider,
)
from turncheck.providers.call_context import calling_as
from turncheck.providers.cassettes import Cassette
from turncheck.providers.factory import (
    base_url_for,
    make_provider,
    open_cassette,
    select_provider,
)
from turncheck.providers.http import RetryPolicy, Sleep
from turncheck.providers.secrets import SecretBinder
from turncheck.report.spend import Usage
from turncheck.text.credentials import url_credentials

if TYPE_CHECKING:
    from turncheck.formats.grader import Grader  # Jinja: only for sample files
    from turncheck.formats.protocol import ProtocolSuite  # loads with a protocol suite

Item = TypeVar("Item")
Result = TypeVar("Result")
JUDGE_MAX_OUTPUT_TOKENS = 256
SIMULATOR_MAX_OUTPUT_TOKENS = 512
SIMULATOR_CALLER = "simulator"
"""The label of a simulated user's calls in the cassette (`CALLER_HEADER`)."""


@dataclass
class SessionSettings:
    timeout_s: float = 60.0
    attempts: int = 4
    backoff_base_s: float = 0.5
    sleep: Sleep | None = None
    ledger: Ledger | None = None
    """The run's hard budgets (set by `run_suite_files`); None: no budget."""
    prune: bool = False
    """`record --prune`: each cassette keeps only what this run used (`Cassette.save`)."""
    apps_refused: str | None = None
    """Why no app target may be started in this run (each such eval errors with it); None:
    apps start. The action sets it where the PR's code would run next to a token."""
    isolate_apps: bool = False
    """Run `python` targets in a child process with the app's environment, not in
    turncheck's own (the action's, which holds a token)."""
    app_threads: int = 8
    """The run's concurrency: a sync `python` target's worker threads."""

    def guard(
        self, mode: Mode, label: str, suite: Suite | ProtocolSuite | None
    ) -> CallGuard | None:
        """The budget guard of one session; None without a ledger (calls go straight out)."""
        if self.ledger is None:
            return None
        limits = suite.metadata.budget if suite is not None else None
        return self.ledger.guard(mode, label, limits)

    def policy(self) -> RetryPolicy:
        return RetryPolicy(
            max_attempts=self.attempts, timeout=self.timeout_s, backoff_base=self.backoff_base_s
        )


def _templated_strings(value: Any) -> Iterator[str]:
    """Every string in `value` (dicts and lists, walked without recursion) holding `{{`;
    a text many fields share (one prompt file referenced by every eval) is read once."""
    pending = [value]
    seen: set[int] = set()
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if id(item) not in seen and "{{" in item:
                yield item
            seen.add(id(item))
        elif isinstance(item, dict):
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)


def declared_secrets(suite: Suite | ProtocolSuite) -> set[str]:
    """Every name the suite reads with `secret('NAME')`: its declaration of secrets.

    Reserved names (the runner's, the action's inputs, the API keys) are never among
    them: validation refuses such a suite, and they are dropped here as well."""
    # A protocol's turns are Jinja templates, checked (and their secrets listed) when loaded.
    model = suite if isinstance(suite, Suite) else suite.metadata
    names: set[str] = set()
    # Not a JSON serialisation: that would copy a prompt file every eval references once
    # per eval; the dump shares the strings themselves.
    for text in _templated_strings(model.model_dump(by_alias=True)):
        try:
            names |= templates.secret_names(text)
        except templates.TemplateError:
            continue
    if not isinstance(suite, Suite):  # a protocol suite (its module loads with one)
        names |= set(suite.secret_names)
    return {name for name in names if templates.reserved_secret(name) is None}


def secret_values(suite: Suite | ProtocolSuite, env: Mapping[str, str],
                  declared: set[str] | None = None) -> dict[str, str]:
    """Values of the suite's declared secrets (`declared`, if known) that `env` sets."""
    names = declared_secrets(suite) if declared is None else declared
    return {name: env[name] for name in sorted(names) if env.get(name)}


CONNECTION_FIELDS = ("provider", "base_url")
"""Secrets in these are bound when the session opens (the URL is needed to connect); the
exact-match scrubber keeps the value out of cassettes, reports and logs."""


def bind_tokens(text: str, secrets: Mapping[str, str]) -> str:
    return templates.SECRET_TOKEN.sub(lambda m: secrets.get(m[1], m[0]), text)


RENDERED_BY_SESSION = tuple(f for f in templates.METADATA_FIELDS if f != "system_prompt")
"""Metadata the session renders once; `system_prompt` is rendered into each conversation."""


def render_metadata(metadata: Metadata, variables: Mapping[str, str],
                    secrets: Mapping[str, str]) -> tuple[Metadata, str | None]:
    """`metadata` with its templated fields rendered, or why it cannot be (with a
    templated provider and base URL left out, so the session can still be built).

    The reason names the field and its line; it never holds a rendered value (which
    may contain a secret).
    """
    rendered, problem = _rendered_fields(metadata, variables, secrets)
    problem = problem or _conversation_problem(metadata, variables, secrets)
    if problem is None:
        return metadata.model_copy(update=rendered), None
    unusable = {name: None for name in ("provider", "base_url")
                if templates.has_template(getattr(metadata, name) or "")}
    return metadata.model_copy(update=unusable), problem


def _rendered_fields(metadata: Metadata, variables: Mapping[str, str],
                     secrets: Mapping[str, str]) -> tuple[dict[str, str], str | None]:
    rendered: dict[str, str] = {}
    for field_name in RENDERED_BY_SESSION:
        value = getattr(metadata, field_name)
        if not isinstance(value, str) or not templates.has_template(value):
            continue
        try:
            rendered[field_name] = templates.render(value, variables)
            if field_name in CONNECTION_FIELDS:  # where to connect: needed before any request
                rendered[field_name] = bind_tokens(rendered[field_name], secrets)
        except (KeyError, templates.TemplateError) as exc:
            return {}, _metadata_problem(metadata, field_name, str(exc.args[0]))
        if templates.has_template(rendered[field_name]):
            return {}, _metadata_problem(metadata, field_name,
                                         "the rendered value still holds a template")
    if not rendered:
        return rendered, None
    try:  # the rendered values meet the same rules as literal ones
        Metadata.model_validate({"name": metadata.name, "model": metadata.model, **rendered})
    except ValidationError as exc:
        problem = exc.errors()[0]
        return {}, _metadata_problem(metadata, str(problem["loc"][0]),
                                     f"the rendered value is invalid: {problem['msg']}")
    return rendered, None


def _conversation_problem(metadata: Metadata, variables: Mapping[str, str],
                          secrets: Mapping[str, str]) -> str | None:
    """A missing var in the system prompt or opening messages, found once with its line
    (each conversation renders them again)."""
    texts = [("system_prompt", metadata.system_prompt)]
    texts += [("messages", message.content) for message in metadata.messages or ()]
    for field_name, text in texts:
        try:
            templates.render(text or "", variables)
        except (KeyError, templates.TemplateError) as exc:
            return _metadata_problem(metadata, field_name, str(exc.args[0]))
    return None


def _metadata_problem(metadata: Metadata, field_name: str, reason: str) -> str:
    line = metadata.line_of(field_name)
    where = f" (line {line})" if line is not None else ""
    return f"template in metadata.{field_name}{where}: {reason}"


def record_command(suite_path: Path, provider: str | None, base_url: str | None,
                   variables: Mapping[str, str], repeat: RepeatSetting | None = None) -> str:
    """The `turncheck record` command that repeats this run's requests for `suite_path`:
    with the options that shaped them (provider, base URL, vars, the run's `--repeat`,
    without which samples after the first are not recorded), and `--prune`, so the
    answers the changed requests replace leave the cassette instead of piling up."""
    words = ["turncheck", "record"]
    if provider:
        words += ["--provider", provider]
    if base_url:
        words += ["--base-url", base_url]
    if repeat is not None:
        words += ["--repeat", str(repeat)]
    for name, value in variables.items():
        words += ["--var", f"{name}={value}"]
    return shlex.join([*words, str(suite_path), "--prune"])


@dataclass
class SuiteSession:
    metadata: Metadata
    provider_name: str
    model: str
    chat_provider: Provider
    judge_model: str
    judge_provider: Provider
    embedding_model: str
    embedding_provider: Provider
    transport: Cassette | None
    secrets: dict[str, str] = field(default_factory=dict)
    live_tokens: int = 0
    """Tokens of calls that reached the provider (not answered from the cassette)."""
    guard: CallGuard | None = None
    """Hard budgets every call of this session reserves on (engine/budget.py)."""
    variables: dict[str, str] = field(default_factory=dict)
    """The suite's `vars` overridden by the run's (`--var`)."""
    template_error: str | None = None
    """Why the metadata's templates could not be rendered: every eval ends in this error."""
    provider_for: Callable[[str], Provider] | None = None
    """Builds (once) the provider of a name, through the suite's cassette: a simulated
    user's model is reached as the suite's `model` is (`simulate`)."""
    routing: tuple[str | None, str | None] = (None, None)
    """The run's or suite's provider and base URL, which choose the simulator's provider."""
    built: dict[str, Provider] = field(default_factory=dict)

    @property
    def price_provider_id(self) -> str | None:
        return self.chat_provider.price_provider_id

    @property
    def judge_price_provider_id(self) -> str | None:
        return self.judge_provider.price_provider_id

    @property
    def embedding_price_provider_id(self) -> str | None:
        return self.embedding_provider.price_provider_id

    def _count(self, response: ChatResponse | EmbeddingResponse) -> None:
        if not response.replayed:
            output = response.output_tokens if isinstance(response, ChatResponse) else 0
            self.live_tokens += (response.input_tokens or 0) + (output or 0)

    async def chat(self, messages: list[ChatMessage], tools: tuple[dict[str, Any], ...] = (),
                   tool_choice: str | dict[str, Any] | None = None) -> ChatResponse:
        """The model's answer; `tools` (OpenAI's format) are offered when given."""
        request = ChatRequest(
            model=self.model,
            messages=messages,
            temperature=self.metadata.temperature,
            max_output_tokens=self.metadata.max_output_tokens,
            seed=sample_seed(self.metadata.seed),
            tools=tools,
            tool_choice=tool_choice if tools else None,
            reasoning_effort=self.metadata.reasoning_effort,
        )
        response = await guarded_chat(
            self.guard, self.chat_provider, request, self.price_provider_id
        )
        self._count(response)
        return response

    async def judge(self, messages: list[ChatMessage], schema: AnswerSchema) -> ChatResponse:
        request = ChatRequest(
            model=self.judge_model,
            messages=messages,
            temperature=0,
            max_output_tokens=JUDGE_MAX_OUTPUT_TOKENS,
            seed=sample_seed(self.metadata.seed),
            json_object=True,
            answer_schema=schema,
        )
        response = await guarded_chat(
            self.guard, self.judge_provider, request, self.judge_price_provider_id
        )
        self._count(response)
        return response

    async def simulate(self, model: str, messages: list[ChatMessage], temperature: float | None,
                       seed: int | None, schema: AnswerSchema) -> tuple[ChatResponse, str,
                                                                         str | None]:
        """A simulated user's next message from its `model` (id as in a suite), labelled as
        the simulator's in the cassette; with the model id sent and its price id."""
        assert self.provider_for is not None, "open_session sets provider_for"
        name, model_id = select_provider(model, *self.routing)
        provider = self.provider_for(name)
        request = ChatRequest(
            model=model_id, messages=messages, temperature=temperature,
            max_output_tokens=SIMULATOR_MAX_OUTPUT_TOKENS, seed=sample_seed(seed),
            json_object=True, answer_schema=schema,
        )
        with calling_as(SIMULATOR_CALLER):
            response = await guarded_chat(self.guard, provider, request,
                                          provider.price_provider_id)
        self._count(response)
        return response, model_id, provider.price_provider_id

    async def embed(self, inputs: list[str]) -> EmbeddingResponse:
        model, provider = self.embedding_model, self.embedding_provider

        async def send() -> EmbeddingResponse:
            return await provider.embed(model, inputs)

        if self.guard is None:
            response = await send()
        else:
            response = await self.guard.call(
                lambda: embedding_plan(model, provider.price_provider_id, inputs),
                send,
                _embedding_used,
            )
        self._count(response)
        return response

    async def close(self) -> None:
        await _close(
            [self.chat_provider, self.judge_provider, self.embedding_provider,
             *self.built.values()], self.transport
        )


def _chat_used(response: ChatResponse) -> tuple[Usage, bool, bool]:
    usage = chat_usage(response)
    reported = response.input_tokens is not None and response.output_tokens is not None
    return usage, reported, response.replayed


def _embedding_used(response: EmbeddingResponse) -> tuple[Usage, bool, bool]:
    usage = embedding_usage(response)
    return usage, response.input_tokens is not None, response.replayed


async def guarded_chat(
    guard: CallGuard | None, provider: Provider, request: ChatRequest, price_id: str | None
) -> ChatResponse:
    """`provider.chat(request)`, reserving its worst case on `guard`'s budgets first."""
    if guard is None:
        return await provider.chat(request)
    return await guard.call(
        lambda: chat_plan(request.model, price_id, request.messages, request.max_output_tokens,
                          json.dumps(request.tools) if request.tools else ""),
        lambda: provider.chat(request),
        _chat_used,
    )


async def _close(providers: list[Provider], transport: Cassette | None) -> None:
    """Close each provider once, then save (record mode) and close the shared cassette."""
    for provider in {id(p): p for p in providers}.values():
        await provider.aclose()
    if transport is not None:
        if transport.mode == "record":
            transport.save(finished=not STOP.requested)  # an interrupted run prunes nothing
        await transport.close()


def open_session(
    suite_path: Path,
    suite: Suite | ProtocolSuite,
    mode: Mode,
    provider: str | None,
    base_url: str | None,
    env: Mapping[str, str],
    settings: SessionSettings,
    variables: Mapping[str, str] | None = None,
    shown_as: str | None = None,
    repeat: RepeatSetting | None = None,
) -> SuiteSession:
    """`variables` are the run's (`--var`); they override the suite's `vars`. `shown_as`:
    the suite's path relative to the run's root, which messages (a replay miss's record
    command) name instead of `suite_path`, wherever the file was read from; `repeat`
    the run's `--repeat`, which that command repeats."""
    hint = record_command(Path(shown_as or suite_path), provider, base_url, variables or {},
                          repeat)
    declared = declared_secrets(suite)
    secrets = secret_values(suite, env, declared)
    merged = {**(suite.metadata.vars or {}), **(variables or {})}
    metadata, template_error = render_metadata(suite.metadata, merged, secrets)
    provider = provider or metadata.provider
    base_url = base_url or metadata.base_url
    binder = SecretBinder({name: secrets.get(name) for name in declared})
    # An undeclared credential in the URL's query is kept out of outputs like a secret.
    secrets = {**secrets, **{f"base_url credential {n}": value
                             for n, value in enumerate(url_credentials(base_url), 1)}}
    transport = open_cassette(suite_path, mode, env=env, secrets=secrets.values(),
                              record_command=hint, binder=binder, prune=settings.prune,
                              shown_as=shown_as)
    built: dict[str, Provider] = {}

    def provider_for(name: str) -> Provider:
        if name not in built:
            url = base_url_for(name, provider, base_url)
            built[name] = make_provider(
                name,
                env=env,
                policy=settings.policy(),
                transport=transport,
                base_url=url,
                sleep=settings.sleep,
                secrets=list(secrets.values()),
                binder=binder,
            )
        return built[name]

    name, model = select_provider(metadata.model, provider, base_url)
    chat_provider = provider_for(name)
    if _has_targets(suite):  # the app is the other side; the model, its fallback and label
        from turncheck.targets.provider import (  # aiohttp's server: only for apps
            AppPolicy,
            Targets,
        )

        chat_provider = Targets(metadata.target, suite_path.parent, transport, env, merged,
                                chat_provider, base_url,
                                AppPolicy(settings.apps_refused, settings.isolate_apps,
                                          settings.app_threads))
    judge_name, judge_model = select_provider(
        metadata.judge_model or metadata.model, provider, base_url
    )
    embedding_name, default_embedding = embedding_provider(name)
    return SuiteSession(
        metadata=metadata,
        provider_name=chat_provider.name if metadata.target is not None else name,
        model=model,
        chat_provider=chat_provider,
        judge_model=judge_model,
        judge_provider=provider_for(judge_name),
        embedding_model=metadata.embedding_model or default_embedding,
        embedding_provider=provider_for(embedding_name),
        transport=transport,
        secrets=secrets,
        guard=settings.guard(mode, suite_path.as_posix(), suite),
        variables=merged,
        template_error=template_error,
        provider_for=provider_for,
        routing=(provider, base_url),
        built=built,
    )


def _has_targets(suite: Suite | ProtocolSuite) -> bool:
    """Whether some conversation of the suite is with an app (its own or an eval's target)."""
    if suite.metadata.target is not None:
        return True
    return isinstance(suite, Suite) and any(e.target is not None for e in suite.evals)


@dataclass
class GraderSession:
    """A sample file's grader: its provider, through the sample file's cassette."""

    grader: Grader
    provider_name: str
    model: str
    provider: Provider
    transport: Cassette | None
    live_tokens: int = 0
    """Tokens of calls that reached the provider (not answered from the cassette)."""
    guard: CallGuard | None = None
    url_credentials: list[str] = field(default_factory=list)
    """What the grader's base URL carries in its query: kept out of results."""

    @property
    def price_provider_id(self) -> str | None:
        return self.provider.price_provider_id

    async def grade(self, messages: list[ChatMessage]) -> ChatResponse:
        request = ChatRequest(
            model=self.model,
            messages=messages,
            temperature=self.grader.temperature,
            max_output_tokens=self.grader.max_output_tokens or JUDGE_MAX_OUTPUT_TOKENS,
            seed=self.grader.seed,
            json_object=True,
            answer_schema=GRADE_ANSWER,
        )
        response = await guarded_chat(self.guard, self.provider, request, self.price_provider_id)
        if not response.replayed:
            self.live_tokens += (response.input_tokens or 0) + (response.output_tokens or 0)
        return response

    async def close(self) -> None:
        await _close([self.provider], self.transport)


def open_grader_session(
    sample_path: Path,
    grader: Grader,
    mode: Mode,
    provider: str | None,
    base_url: str | None,
    env: Mapping[str, str],
    settings: SessionSettings,
    shown_as: str | None = None,
) -> GraderSession:
    """Like `open_session`: `provider`/`base_url` (the command line's) override the grader's."""
    hint = record_command(Path(shown_as or sample_path), provider, base_url, {})
    provider = provider or grader.provider
    base_url = base_url or grader.base_url
    name, model = select_provider(grader.model, provider, base_url)
    credentials = url_credentials(base_url)
    transport = open_cassette(sample_path, mode, env=env, secrets=credentials,
                              record_command=hint, prune=settings.prune, shown_as=shown_as)
    chat_provider = make_provider(
        name,
        env=env,
        policy=settings.policy(),
        transport=transport,
        base_url=base_url_for(name, provider, base_url),
        sleep=settings.sleep,
    )
    guard = settings.guard(mode, sample_path.as_posix(), None)
    return GraderSession(grader, name, model, chat_provider, transport, guard=guard,
                         url_credentials=credentials)


async def run_then_close(
    session: SuiteSession | GraderSession,
    items: Iterable[Item],
    work: Callable[[Item], Awaitable[Result]],
    limits: Sequence[asyncio.Semaphore],
    on_done: Callable[[Result], None] | None,
    interrupted: Callable[[Item], Result] | None = None,
) -> list[Result]:
    """`work` on every item at once, each holding all `limits` (taken in order) while it
    runs; `on_done` with each result as it comes. The session is closed however it ends.

    On SIGINT/SIGTERM (`interruption.STOP`) an item that has not finished in time gets
    `interrupted(item)` instead; the session still closes and saves its cassette."""

    async def one(item: Item) -> Result:
        async with AsyncExitStack() as held:
            for limit in limits:
                await held.enter_async_context(limit)
            if interrupted is None:
                result = await work(item)
            else:
                result = await STOP.guard(partial(work, item), partial(interrupted, item))
        if on_done is not None and not STOP.requested:  # interrupted: no more progress lines
            on_done(result)
        return result

    try:
        return list(await asyncio.gather(*(one(item) for item in items)))
    finally:
        await session.close()
