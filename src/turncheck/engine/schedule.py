"""One scheduler for the cases of a suite, whatever their kind (evals, protocol cases).

A suite opens one session (its cassette), runs every case concurrently and closes
the session however that ends. The limits — the suite's `threads`, then the run's
global concurrency — are handed to the kind's runner, which holds them per sample
(`engine/repeats.py`), so repeats share them fairly. Per kind stays only how one
case runs and what the suite's result is.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Protocol, TypeVar

from turncheck.engine.metering import session_redactor
from turncheck.engine.session import SuiteSession, open_session, run_then_close
from turncheck.engine.settings import RunSettings
from turncheck.formats import templates
from turncheck.formats.suite import Suite
from turncheck.formats.suite_loader import SuiteFile
from turncheck.report.model import ReportModel
from turncheck.report.results import writable

if TYPE_CHECKING:
    from turncheck.formats.protocol import ProtocolSuite  # loads with a protocol suite

Case = TypeVar("Case", contravariant=True)
Result = TypeVar("Result", bound=ReportModel)
Outcome = TypeVar("Outcome", covariant=True)
Summary = TypeVar("Summary")


class CaseRunner(Protocol[Case, Outcome]):
    async def run_case(self, case: Case, /) -> Outcome: ...

    def interrupted(self, case: Case, /) -> Outcome: ...


def open_suite_session(suite_file: SuiteFile, suite: Suite | ProtocolSuite,
                       settings: RunSettings) -> SuiteSession:
    return open_session(suite_file.source, suite, settings.mode, settings.provider,
                        settings.base_url, settings.env, settings.session, settings.variables,
                        shown_as=suite_file.path, repeat=settings.repeat)


def sent_system_prompt(suite: Suite | ProtocolSuite, session: SuiteSession,
                       settings: RunSettings) -> str | None:
    """The system prompt as the suite's cases send it, for the report; None when there is
    none or it cannot be rendered (each case's error then says why)."""
    system = suite.metadata.system_prompt
    if not system or session.template_error is not None:
        return None
    try:
        text = templates.render(system, {**(suite.metadata.vars or {}), **settings.variables})
    except KeyError:
        return None
    return session_redactor(session, settings.env).text(text)


async def run_suite_cases(
    session: SuiteSession,
    cases: Sequence[Case],
    threads: int | None,
    limit: asyncio.Semaphore,
    runner: Callable[[list[asyncio.Semaphore]], CaseRunner[Case, Result]],
    summary: Callable[[list[Result]], Summary],
    on_done: Callable[[Summary, Result], None] | None,
) -> tuple[Summary, int]:
    """Every case of one suite: the suite's result (`summary`) and the tokens it sent over
    the network. `on_done(so_far, result)` hears of each case as it finishes."""
    run = runner([asyncio.Semaphore(threads or max(1, len(cases))), limit])
    notify = None if on_done is None else partial(on_done, summary([]))
    results = await run_then_close(session, cases, partial(_writable_case, run), [], notify,
                                   run.interrupted)
    return summary(results), session.live_tokens


async def _writable_case(run: CaseRunner[Case, Result], case: Case) -> Result:
    return writable(await run.run_case(case))
