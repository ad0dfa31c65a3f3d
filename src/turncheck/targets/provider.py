"""A target as a provider: the engine drives an app the way it drives a model.

`TargetProvider.chat` sends the conversation's newest turn to the app and answers with a
`TargetResponse`: the app's reply, the tool calls it reports, and the model calls it made
through the recording proxy during the turn (their usage summed, each priced by the
engine). The app is started on the first turn (setup, start, ready, proxy) and stopped
with the session, however the run ends.

Turns go to the app concurrently (`Target.runs_concurrently`: by default, except a
command app, which says so with `concurrent: true`): each turn has an id, and the proxy
attributes the app's model calls to their turn by the header naming it (an http app with
`forwards_header`, a python target's httpx calls) or by the user messages they carry
(`attribution.py`); `TurnGate` keeps turns whose calls could not be told apart from being
open at once, and turns to one at a time when a call carries no open turn's messages
(saying so once). Otherwise turns go one at a time, each call the open turn's.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from turncheck.formats.target import DEFAULT_TURN_TIMEOUT_S, Target
from turncheck.providers.base import (
    ChatMessage,
    ChatRequest,
    ChatResponse,
    EmbeddingResponse,
    Provider,
    ProviderError,
    RecordingMissing,
)
from turncheck.providers.cassettes import Cassette
from turncheck.targets.attribution import user_history
from turncheck.targets.base import (
    AppGone,
    AppReply,
    Runtime,
    TargetKind,
    TargetResponse,
    Turn,
    well_formed_reply,
)
from turncheck.targets.command_target import CommandKind
from turncheck.targets.conversation import current_conversation
from turncheck.targets.function_target import FunctionKind
from turncheck.targets.http_target import HttpKind
from turncheck.targets.offline import refused_message
from turncheck.targets.ports import free_port
from turncheck.targets.process import (
    AppError,
    AppProcess,
    adopt_orphans,
    app_environment,
    end_escaped_processes,
    hide_own_environment,
    run_setup,
    wait_ready,
)
from turncheck.targets.proxy import RecordingProxy, TurnScope, Upstreams
from turncheck.targets.replay_guard import ReplayGuard
from turncheck.targets.turn_gate import TurnGate

logger = logging.getLogger(__name__)
_NAMING_THE_TURN = {
    "http": "copy each turn's X-Turncheck-Turn request header onto its model calls "
            "(forwards_header: true)",
    "python": "make the call with httpx, as the openai and anthropic SDKs do (turncheck "
              "then names its turn)",
    "command": "send the line's id as the X-Turncheck-Turn header of the model call",
}

EXIT_WAIT_S = 1.0
"""How long a failed turn waits for the app's process to be seen exiting (a crash)."""
FUNCTION_WORKER = "turncheck.targets.function_worker"


@dataclass(frozen=True)
class AppPolicy:
    """Whether this run may start apps, and how (docs/trust-model.md, "App targets")."""

    refused: str | None = None
    """Why no app may start: every conversation with one is an error saying so."""
    isolate: bool = False
    """`python` targets run in a child process with the app's environment."""
    concurrency: int = 8
    """The run's concurrency: a sync python function's worker threads."""


class TargetProvider:
    """The `Provider` of a suite whose conversations are with an app."""

    price_provider_id: str | None = None

    def __init__(self, target: Target, folder: Path, cassette: Cassette | None,
                 env: Mapping[str, str], variables: Mapping[str, str],
                 openai_base: str | None = None, policy: AppPolicy = AppPolicy()) -> None:
        self.name = f"{target.kind} target"
        self.target = target
        self.policy = policy
        self.folder = folder
        self.cassette = cassette
        self.env = env
        self.variables = dict(variables)
        self.openai_base = openai_base
        self.offline = cassette is not None and cassette.mode == "replay"
        self.kind = _kind_of(target, policy, offline=self.offline)
        self.guard: ReplayGuard | None = None
        """Replay: what keeps the app's processes on the machine."""
        self.proxy: RecordingProxy | None = None
        self.app: AppProcess | None = None
        self._started = False
        self._start_error: ProviderError | None = None
        self._starting = asyncio.Lock()
        self._gate = TurnGate(target.runs_concurrently)
        self._names_turn = target.runs_concurrently and \
            (target.http is None or target.forwards_header)
        """Whether the app is given each turn's id (the line's `id`, the python target's
        header, with `forwards_header` the request's header)."""
        self._turn_numbers = itertools.count(1)

    async def chat(self, request: ChatRequest) -> ChatResponse:
        await self._ensure_started()
        conversation = current_conversation()
        session_id = conversation.client_id if self.target.session == "client" \
            else conversation.app_id
        turn_id = f"turn-{next(self._turn_numbers)}" if self.target.runs_concurrently else None
        turn = self._turn(request.messages, session_id, turn_id if self._names_turn else None)
        history = user_history([m.content for m in request.messages if m.role == "user"])
        async with self._gate.turn(history):
            assert self.proxy is not None
            scope = self.proxy.open_turn(turn_id, history)
            refusals = self.proxy.refusals
            left = len(self.guard.refused()) if self.guard is not None else 0
            started = time.perf_counter()
            try:
                reply = await self._answer(turn)
            except ProviderError as exc:
                self._raise_if_it_left(left, exc.message)
                _raise_for(scope)  # a replay miss is why the app failed: name the request
                if self.proxy.refusals > refusals and self.proxy.last_refusal:
                    raise ProviderError(f"{self.proxy.last_refusal} (then {exc.message})"
                                        ) from None
                raise
            finally:
                self.proxy.close_turn(turn_id)
            latency_ms = (time.perf_counter() - started) * 1000
        self._raise_if_it_left(left)  # even when the app swallowed the refusal
        _raise_for(scope)
        if reply.session_id and conversation.app_id is None and \
                self.target.session not in (None, "client"):
            conversation.app_id = reply.session_id
        return _response(reply, scope, self.cassette, latency_ms)

    async def embed(self, model: str, inputs: list[str]) -> EmbeddingResponse:
        raise ProviderError("an app target answers conversations; semantic checks need an "
                            "embedding model (metadata.embedding_model)")

    async def aclose(self) -> None:
        with contextlib.suppress(Exception):
            await self.kind.stop()
        if self.app is not None:
            await self.app.stop()
        end_escaped_processes()
        if self.proxy is not None:
            await self.proxy.stop()
        if self.guard is not None:
            await self.guard.stop()

    def _one_turn_at_a_time(self) -> None:
        """A call carried none of the open turns' user messages: from now on the app's
        turns go one at a time, so that each call is the open turn's."""
        if self._gate.serial:
            return
        self._gate.serial = True
        logger.warning(
            "turncheck: the %s's model calls cannot all be counted in their own turns: a "
            "call carried none of the user messages of the turns in flight (the app "
            "rewrites or summarises them), so its turns now go to it one at a time (a "
            "call made meanwhile is marked turn_guessed in the report). To keep them "
            "concurrent, include the user's message in the model call, or %s; or set "
            "concurrent: false to go one at a time from the start",
            self.name, _NAMING_THE_TURN[self.target.kind])

    def _raise_if_it_left(self, before: int, then: str | None = None) -> None:
        """Replay: the app tried to reach another host since `before` refusals."""
        refused = self.guard.refused_since(before) if self.guard is not None else []
        if refused:
            after = f" (then {then})" if then else ""
            raise AppError(refused_message(refused) + after) from None

    def _turn(self, messages: list[ChatMessage], session_id: str | None,
              turn_id: str | None) -> Turn:
        sent = [{"role": m.role, "content": m.content} for m in messages
                if m.role in ("system", "user", "assistant")]
        users = [m for m in sent if m["role"] == "user"]
        last = users[-1]["content"] if users else ""
        if self.target.stateful:
            sent = users[-1:]
        return Turn(sent, last, session_id, self.variables, turn_id)

    async def _answer(self, turn: Turn) -> AppReply:
        for app in self._processes():
            if app.exited:
                await app.drained()
                raise AppError(app.exit_message("during an earlier turn"))
        try:
            return well_formed_reply(await self.kind.answer(turn))
        except AppGone as exc:
            for app in self._processes():
                if app.process is not None:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(app.process.wait(), EXIT_WAIT_S)
                    if app.exited:
                        await app.drained()
                        raise AppError(app.exit_message("during this turn")) from None
            raise exc

    def _processes(self) -> list[AppProcess]:
        """The app's processes: the one `start` started, a command target's own."""
        command = getattr(self.kind, "app", None)
        return [app for app in (self.app, command) if isinstance(app, AppProcess)]

    async def _ensure_started(self) -> None:
        if self._started:
            return
        async with self._starting:
            if self._start_error is not None:
                raise self._start_error
            if self._started:
                return
            try:
                try:
                    await self._start()
                except ProviderError as exc:
                    self._raise_if_it_left(0, exc.message)  # at import or start-up
                    raise
            except ProviderError as exc:
                self._start_error = exc
                await self.aclose()
                raise
            self._started = True

    async def _start(self) -> None:
        target = self.target
        if self.policy.refused is not None:
            raise AppError(self.policy.refused)
        hide_own_environment()
        adopt_orphans()
        self.proxy = RecordingProxy(self.cassette,
                                    Upstreams.from_env(self.env, self.openai_base))
        self.proxy.on_unattributable = self._one_turn_at_a_time
        await self.proxy.start()
        port = free_port() if target.start is not None else None
        env = app_environment(self.env, target.env, self.proxy.app_env(), port)
        if target.setup is not None:
            await run_setup(target.setup, self.folder, env, target.setup_timeout)
        if self.offline:  # setup may install; the app itself stays on the machine
            self.guard = ReplayGuard()
            await self.guard.start()
            env = self.guard.env(env)
        if target.start is not None:
            self.app = AppProcess(target.start, self.folder, env, port)
            await self.app.start()
        if target.ready is not None:
            url = target.ready if target.ready.startswith("http") else \
                f"http://127.0.0.1:{port}{target.ready}"
            await wait_ready(self.app, url, target.ready_timeout)
        proxy_urls = {"openai_base_url": self.proxy.openai_base_url,
                      "anthropic_base_url": self.proxy.anthropic_base_url}
        await self.kind.start(Runtime(self.folder, env, port, proxy_urls))


def _kind_of(target: Target, policy: AppPolicy, offline: bool = False) -> TargetKind:
    """The target's kind; `offline` (replay): a python target's connections to other
    hosts are refused."""
    concurrent = target.runs_concurrently
    if target.http is not None:
        return HttpKind(target.http, target.session)
    if target.python is not None and policy.isolate:
        worker = [sys.executable, "-m", FUNCTION_WORKER, target.python,
                  "--threads", str(max(1, policy.concurrency)),
                  *(word for folder in target.path or () for word in ("--path", folder)),
                  *(["--offline"] if offline else [])]
        return CommandKind(worker, DEFAULT_TURN_TIMEOUT_S, concurrent)
    if target.python is not None:
        return FunctionKind(target.python, policy.concurrency if concurrent else 1,
                            target.path or (), offline)
    assert target.command is not None
    return CommandKind(target.command, DEFAULT_TURN_TIMEOUT_S, concurrent)


def _raise_for(scope: TurnScope) -> None:
    """A budget stop, a replay miss or a failed proxied call ends the turn (an error
    naming the request)."""
    if scope.refused is not None:
        raise scope.refused
    if scope.misses:
        raise RecordingMissing(f"the app's model call: {scope.misses[0]}")
    if scope.errors:
        raise ProviderError(f"the app's model call failed: {scope.errors[0]}")


def _response(reply: AppReply, scope: TurnScope, cassette: Cassette | None,
              latency_ms: float) -> TargetResponse:
    calls = tuple(scope.calls)
    if calls:
        input_tokens: int | None = sum(c.input_tokens or 0 for c in calls)
        output_tokens: int | None = sum(c.output_tokens or 0 for c in calls)
        if any(c.input_tokens is None for c in calls):
            output_tokens = None  # some call reported none: the engine estimates
    else:
        input_tokens, output_tokens = reply.input_tokens, reply.output_tokens
        if input_tokens is None and output_tokens is None:
            input_tokens = output_tokens = 0  # the app made no model call
    replaying = cassette is not None and cassette.mode == "replay"
    return TargetResponse(
        text=reply.text,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        latency_ms=latency_ms,
        model=calls[-1].model if calls else None,
        replayed=all(c.replayed for c in calls) if calls else replaying,
        tool_calls=reply.tool_calls,
        cached_input_tokens=sum(c.cached_input_tokens for c in calls) or None,
        calls=calls,
        app_tool_calls=True,
        first_token_ms=reply.first_token_ms,
        tokens_estimated=any(c.estimated for c in calls),
    )


class Targets:
    """The `Provider` of a suite with a target: each conversation goes to its eval's target
    (`Conversation.target`), else the suite's; each distinct target is one app, started on
    its first turn."""

    price_provider_id: str | None = None

    def __init__(self, default: Target | None, folder: Path, cassette: Cassette | None,
                 env: Mapping[str, str], variables: Mapping[str, str],
                 model: Provider, openai_base: str | None = None,
                 policy: AppPolicy = AppPolicy()) -> None:
        self.name = f"{default.kind} target" if default is not None else model.name
        self._default = default
        self._model = model
        """Where conversations without a target go (an eval without one in a suite
        without one)."""
        self._made: dict[str, TargetProvider] = {}
        self._parts = (folder, cassette, env, variables, openai_base, policy)

    def provider_for(self, target: Target | None) -> Provider:
        chosen = target or self._default
        if chosen is None:
            return self._model
        key = chosen.model_dump_json()
        if key not in self._made:
            self._made[key] = TargetProvider(chosen, *self._parts)
        return self._made[key]

    async def chat(self, request: ChatRequest) -> ChatResponse:
        return await self.provider_for(current_conversation().target).chat(request)

    async def embed(self, model: str, inputs: list[str]) -> EmbeddingResponse:
        return await self._model.embed(model, inputs)

    async def aclose(self) -> None:
        for provider in self._made.values():
            await provider.aclose()
        await self._model.aclose()
