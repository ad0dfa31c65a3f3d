"""What a live run of some suites will cost, before it starts (`turncheck estimate`).

Two figures per suite and in total (docs/budgets.md):

- *worst case*: every follow-up fires (the costliest path through each eval's
  follow-up tree), every answer reaches `max_output_tokens` (or
  `DEFAULT_MAX_OUTPUT_TOKENS`), every repeat runs (`planned_samples`), and every
  `llm_judge` and `semantic` check calls its model on every turn. Input tokens are
  the same upper bound a budget reserves (`tokens.input_token_bound`): exact with
  the model's tokenizer where one is available offline, else one token per UTF-8
  byte, flagged as estimated. A live run never uses more, so a budget set to the
  worst case never stops it. An eval with tools takes `max_tool_rounds + 1` rounds on
  every turn, each call answered by the longest scripted result (one call per round:
  parallel calls are not bounded, so with them this is an approximation).
- protocol suites: every case runs every turn with its longest variant; a rendered
  prompt is taken as its template plus the case's data plus every earlier answer
  (prompts are rendered from earlier answers, so this is an approximation), and each
  judge or semantic scorer calls its model.
- sample files: their grader's calls, one per sample, each up to the grader's
  `max_output_tokens` (256 by default), priced at the grader's model.
- *expected*: what the same evals used in a previous run report (`--history`),
  repriced at this estimate's price timestamp; evals the history does not know are
  guessed as passing on their first turn with a typical answer length.

Prices come from genai-prices at one timestamp, the same rule as runs.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from turncheck.choices import embedding_provider, price_id
from turncheck.engine.budget import DEFAULT_MAX_OUTPUT_TOKENS
from turncheck.engine.calibration import grader_prompt, grader_template
from turncheck.engine.judge import JUDGE_SYSTEM_PROMPT, grader_messages, judge_messages
from turncheck.engine.pricing import Pricer
from turncheck.engine.scorers.judge_scale import JUDGE_SCALE_SYSTEM_PROMPT
from turncheck.engine.session import JUDGE_MAX_OUTPUT_TOKENS
from turncheck.engine.tokens import (
    MESSAGE_OVERHEAD_TOKENS,
    REQUEST_OVERHEAD_TOKENS,
    counted_exactly,
    input_token_bound,
    input_token_guess,
)
from turncheck.engine.tools import ToolSetup, result_text
from turncheck.formats import templates
from turncheck.formats.grader import Grader
from turncheck.formats.protocol import Case, JudgeScaleSpec, ProtocolSuite
from turncheck.formats.samples import Sample, SampleFile
from turncheck.formats.suite import (
    CheckList,
    Eval,
    FollowUp,
    LlmJudgeCheck,
    Metadata,
    OrGroup,
    SemanticCheck,
    Suite,
    level_items,
)
from turncheck.formats.suite_loader import SuiteFile
from turncheck.providers.base import ChatMessage
from turncheck.providers.factory import select_provider
from turncheck.report.estimate import Estimate, Figures, SuiteEstimate
from turncheck.report.run import EvalResult, Report
from turncheck.report.spend import Usage, add_costs


def planned_samples(suite: Suite | ProtocolSuite, override: int | None = None) -> int:
    """How many times each eval (or protocol case) of `suite` runs in one live run.

    The single place estimates (and so budgets' worst cases) learn the repeat count:
    `override` is the command line's `--repeat`, else the suite's `repeat: N`
    (`repeat: auto` counts one look here)."""
    if override is not None:
        return max(1, override)
    repeat = suite.metadata.repeat
    return repeat if isinstance(repeat, int) and repeat >= 1 else 1


@dataclass(frozen=True)
class _Models:
    model: str
    model_price: str | None
    judge: str
    judge_price: str | None
    embedding: str
    embedding_price: str | None


def _models(meta: Metadata, provider: str | None, base_url: str | None) -> _Models:
    base_url = base_url or meta.base_url
    provider = provider or meta.provider
    name, model = select_provider(meta.model, provider, base_url)
    judge_name, judge = select_provider(meta.judge_model or meta.model, provider, base_url)
    embedding_name, default = embedding_provider(name)
    return _Models(model, price_id(name, base_url), judge, price_id(judge_name, base_url),
                   meta.embedding_model or default, price_id(embedding_name, base_url))


@dataclass
class _Path:
    """Cost of one path through an eval's follow-up tree."""

    model: Usage = field(default_factory=Usage)
    judge: list[tuple[str, str | None, Usage]] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    """The conversation where the path ends (its answers counted in `replies`), which
    the next scripted turn is sent after."""
    replies: int = 0

    def then(self, rest: _Path) -> _Path:
        return _Path(self.model + rest.model, self.judge + rest.judge, rest.texts, rest.replies)


class _SuiteWalk:
    def __init__(self, suite: Suite, models: _Models, pricer: Pricer,
                 variables: dict[str, str]) -> None:
        self.suite = suite
        self.models = models
        self.pricer = pricer
        self.variables = {**(suite.metadata.vars or {}), **variables}
        self.max_out = suite.metadata.max_output_tokens or DEFAULT_MAX_OUTPUT_TOKENS
        self.tools = _ToolRounds()

    def render(self, text: str) -> str:
        try:
            return templates.render(text, self.variables)
        except (KeyError, ValueError):
            return text  # unknown variable or secret: the raw template is close enough

    def worst_eval(self, evaluation: Eval) -> Figures:
        system = self.suite.metadata.system_prompt
        texts = [self.render(system)] if system else []
        self.tools = _ToolRounds.of(ToolSetup.of(self.suite.metadata, evaluation))
        if evaluation.user is not None and evaluation.success is not None:
            return self._simulated(evaluation.user.max_turns, evaluation.success,
                                   [*texts, self.render(evaluation.first_prompt)])
        so_far = _Path(texts=texts)
        for step in evaluation.steps:  # scripted turns: each after the worst of the last
            paths = self._paths(step.checks, [*so_far.texts, self.render(step.prompt)],
                                so_far.replies)
            so_far = so_far.then(max(paths, key=lambda p: _weight(self._figures(p))))
        return self._figures(so_far)

    def _simulated(self, max_turns: int, success: CheckList, first: list[str]) -> Figures:
        """A simulated user: every turn up to max_turns (the simulator is not counted)."""
        later = sum((self._turn_usage(first, k * self.tools.rounds)
                     for k in range(1, max_turns)), Usage())
        paths = [_Path(path.model + later, path.judge)
                 for path in self._paths(success, first, 0)]
        return max((self._figures(p) for p in paths), key=_weight)

    def _turn_usage(self, texts: list[str], replies: int) -> Usage:
        """One turn: each of its rounds resends the conversation, the tools, and every
        earlier round's answer and tool result."""
        tools = self.tools
        inputs = sum(
            input_token_bound(self.models.model, [*texts, *tools.texts, *tools.results(k)])
            + (replies + k) * self.max_out
            for k in range(tools.rounds))
        return Usage(input_tokens=inputs, output_tokens=tools.rounds * self.max_out)

    def _paths(self, level: CheckList, texts: list[str], replies: int) -> list[_Path]:
        """Every path from this level on (one per chain of follow-ups that can fire)."""
        here = _Path()
        m = self.models
        here.model = self._turn_usage(texts, replies)
        rounds = self.tools.rounds
        checks, follow_ups = _level_contents(level)
        for check in checks:
            if isinstance(check, LlmJudgeCheck):
                conversation = [ChatMessage("user", t) for t in texts]
                framed = judge_messages(conversation, self.render(check.llm_judge.criteria))
                tokens = input_token_bound(m.judge, [x.content for x in framed]) \
                    + (replies + rounds) * self.max_out
                here.judge.append((m.judge, m.judge_price,
                                   Usage(input_tokens=tokens,
                                         output_tokens=JUDGE_MAX_OUTPUT_TOKENS)))
            elif isinstance(check, SemanticCheck):
                expected = self.render(check.semantic.expected)
                tokens = input_token_bound(m.embedding, [expected], chat=False) + self.max_out
                here.judge.append((m.embedding, m.embedding_price, Usage(input_tokens=tokens)))
        if not follow_ups:
            here.texts = [*texts, *self.tools.results(rounds - 1), ""]
            here.replies = replies + rounds
            return [here]
        paths = []
        for follow_up in follow_ups:
            reply = ""  # the assistant's reply: counted as max_out tokens via `replies`
            history = [*texts, *self.tools.results(rounds - 1), reply,
                       self.render(follow_up.prompt)]
            for rest in self._paths(follow_up.checks, history, replies + rounds):
                paths.append(here.then(rest))
        return paths

    def _figures(self, path: _Path) -> Figures:
        m = self.models
        return Figures(
            usage=path.model,
            cost_usd=self.pricer.cost(path.model, m.model, m.model_price),
            judge_usage=sum((usage for _, _, usage in path.judge), Usage()),
            judge_cost_usd=add_costs([self.pricer.cost(u, model, price)
                                      for model, price, u in path.judge]),
        )

    def guessed_eval(self, evaluation: Eval, typical_output: int) -> Figures:
        """Passes on its first turn (scripted: on each turn), answering `typical_output`
        tokens; no judge calls."""
        system = self.suite.metadata.system_prompt
        texts = [self.render(system)] if system else []
        usage = Usage()
        prompts = [step.prompt for step in evaluation.steps] or [evaluation.first_prompt]
        for answered, prompt in enumerate(prompts):
            texts.append(self.render(prompt))
            usage += Usage(
                input_tokens=input_token_guess(self.models.model, texts)
                + answered * typical_output,
                output_tokens=typical_output,
            )
        return Figures(usage=usage,
                       cost_usd=self.pricer.cost(usage, self.models.model, self.models.model_price))

    def from_history(self, result: EvalResult) -> Figures:
        m = self.models
        return Figures(
            usage=result.usage,
            cost_usd=self.pricer.cost(result.usage, m.model, m.model_price),
            judge_usage=result.judge_usage,
            judge_cost_usd=result.judge_cost_usd,
        )


@dataclass(frozen=True)
class _ToolRounds:
    """How tools grow a turn's worst case: `max_tool_rounds` answers with calls before
    the final one, each call answered by the longest scripted result (one call per
    round: parallel calls make a true bound impossible, so this is an approximation)."""

    rounds: int = 1
    texts: tuple[str, ...] = ()
    longest_result: str = ""

    @classmethod
    def of(cls, setup: ToolSetup) -> _ToolRounds:
        if not setup.tools:
            return cls()
        results = [result_text(entry) for entries in setup.results.values()
                   for entry in entries]
        return cls(setup.max_rounds + 1, (json.dumps(list(setup.tools)),),
                   max(results, key=len, default=""))

    def results(self, count: int) -> list[str]:
        return [self.longest_result] * count


def _weight(figures: Figures) -> tuple[float, int]:
    return (figures.total_cost_usd or 0.0, figures.tokens)


def _level_contents(level: CheckList) -> tuple[list[object], list[FollowUp]]:
    """The checks evaluated at a level and the follow-ups that can fire from it."""
    items, _ = level_items(level)
    checks: list[object] = []
    follow_ups: list[FollowUp] = []
    for item in items:
        if isinstance(item, FollowUp):
            follow_ups.append(item)
        elif isinstance(item, OrGroup):
            inner_checks, inner_follow_ups = _level_contents(item)
            checks += inner_checks
            follow_ups += inner_follow_ups
        else:
            checks.append(item)
            attached = item.follow_up
            if attached is not None:
                follow_ups.append(attached)
    return checks, follow_ups


def _history_index(history: Report | None) -> dict[tuple[str, str], EvalResult]:
    if history is None:
        return {}
    return {(s.path, e.name): e for s in history.suites for e in s.evals}


def _typical_output(history: Report | None, path: str, max_out: int) -> int:
    """Mean output tokens per turn of the suite in the history, else half the maximum."""
    if history is not None:
        turns = [t for s in history.suites if s.path == path for e in s.evals for t in e.turns]
        if turns:
            return round(sum(t.usage.output_tokens for t in turns) / len(turns))
    return max(1, max_out // 2)


def estimate_suite(
    suite_file: SuiteFile, suite: Suite, pricer: Pricer, history: Report | None, *,
    provider: str | None = None, base_url: str | None = None,
    variables: dict[str, str] | None = None, repeat: int | None = None,
) -> SuiteEstimate:
    models = _models(suite.metadata, provider, base_url)
    walk = _SuiteWalk(suite, models, pricer, variables or {})
    known = _history_index(history)
    samples = planned_samples(suite, repeat)
    typical = _typical_output(history, suite_file.path, walk.max_out)
    worst, expected, found = Figures(), Figures(), 0
    for evaluation in suite.evals:
        worst += walk.worst_eval(evaluation)
        past = known.get((suite_file.path, evaluation.display_name))
        found += past is not None
        expected += walk.from_history(past) if past is not None \
            else walk.guessed_eval(evaluation, typical)
    return SuiteEstimate(
        path=suite_file.path, name=suite.metadata.name, model=suite.metadata.model,
        evals=len(suite.evals), samples=samples,
        worst=worst.times(samples), expected=expected.times(samples),
        expected_source="history" if found else "guess", evals_from_history=found,
        tokens_exact=counted_exactly(models.model),
        max_output_tokens=walk.max_out,
        max_output_tokens_default=suite.metadata.max_output_tokens is None,
    )


def _grader_texts(grader: Grader, sample: Sample) -> list[str] | None:
    """The grader's messages for `sample`, or None when no call would be made."""
    if grader.criteria is not None:
        return [m.content for m in grader_messages(sample.messages, grader.criteria)]
    if grader.prompt is None:
        return None
    template = grader_template(grader.prompt)
    if isinstance(template, str):
        return None
    try:
        return [grader_prompt(template, sample)]
    except Exception:  # the sample is an error row at run time: no call is made
        return None


def estimate_sample_file(
    file: SampleFile, pricer: Pricer, history: Report | None, *,
    provider: str | None = None, base_url: str | None = None,
) -> SuiteEstimate | None:
    """The grader's calls: one per sample, answering up to its `max_output_tokens`."""
    grader = file.grader
    if grader is None or not file.samples:
        return None
    url = base_url or grader.base_url
    name, model = select_provider(grader.model, provider or grader.provider, url)
    price = price_id(name, url)
    max_out = grader.max_output_tokens or JUDGE_MAX_OUTPUT_TOKENS
    worst, guess = Figures(), Figures()
    for sample in file.samples:
        texts = _grader_texts(grader, sample)
        if texts is None:
            continue
        usage = Usage(input_tokens=input_token_bound(model, texts), output_tokens=max_out)
        worst += Figures(usage=usage, cost_usd=pricer.cost(usage, model, price))
        likely = Usage(input_tokens=input_token_guess(model, texts), output_tokens=max_out // 2)
        guess += Figures(usage=likely, cost_usd=pricer.cost(likely, model, price))
    past = next((c for c in (history.calibrations if history else []) if c.path == file.path),
                None)
    expected = guess
    if past is not None:
        used = Usage(input_tokens=past.input_tokens, output_tokens=past.output_tokens)
        expected = Figures(usage=used, cost_usd=pricer.cost(used, model, price))
    return SuiteEstimate(
        kind="samples", path=file.path, name=file.path, model=grader.model,
        evals=len(file.samples), samples=1, worst=worst, expected=expected,
        expected_source="history" if past is not None else "guess",
        evals_from_history=len(file.samples) if past is not None else 0,
        tokens_exact=counted_exactly(model), max_output_tokens=max_out,
        max_output_tokens_default=False,  # the grader always sends its cap (256 by default)
    )


def _protocol_case(protocol: ProtocolSuite, case: Case, models: _Models,
                   max_out: int) -> tuple[Usage, list[tuple[str, str | None, Usage]]]:
    """Worst case of one case: every turn, its longest variant, every answer `max_out`.

    A prompt is a template over the case and earlier answers, so its rendered size is
    taken as the template, plus the case's data, plus every earlier answer quoted."""
    case_data = json.dumps({"vars": case.vars, "ground_truth": case.ground_truth}, default=str)
    system = protocol.metadata.system_prompt
    context = input_token_bound(models.model, [system]) if system else REQUEST_OVERHEAD_TOKENS
    model = Usage()
    calls: list[tuple[str, str | None, Usage]] = []
    for answered, turn in enumerate(protocol.turns):
        prompts = [turn.prompt or "", *(v.prompt for v in turn.variants)]
        longest = max(prompts, key=lambda text: len(text.encode()))
        context += input_token_bound(models.model, [longest, case_data], chat=False) \
            + MESSAGE_OVERHEAD_TOKENS + answered * max_out
        model += Usage(input_tokens=context, output_tokens=max_out)
        context += max_out + MESSAGE_OVERHEAD_TOKENS
        for scorer in turn.scorers:
            calls += _scorer_calls(scorer.kind, scorer.spec, context, models, max_out)
    return model, calls


def _scorer_calls(kind: str, spec: object, context: int, models: _Models,
                  max_out: int) -> list[tuple[str, str | None, Usage]]:
    if kind in ("llm_judge", "judge_scale"):
        wording = spec.llm_judge.criteria if isinstance(spec, LlmJudgeCheck) \
            else spec.rubric if isinstance(spec, JudgeScaleSpec) else ""
        framed = input_token_bound(models.judge, [JUDGE_SYSTEM_PROMPT, JUDGE_SCALE_SYSTEM_PROMPT,
                                                  wording])
        usage = Usage(input_tokens=context + framed, output_tokens=JUDGE_MAX_OUTPUT_TOKENS)
        return [(models.judge, models.judge_price, usage)]
    if kind == "semantic":
        expected = spec.semantic.expected if isinstance(spec, SemanticCheck) else ""
        tokens = input_token_bound(models.embedding, [expected], chat=False) + max_out
        return [(models.embedding, models.embedding_price, Usage(input_tokens=tokens))]
    return []


def estimate_protocol(
    suite_file: SuiteFile, protocol: ProtocolSuite, pricer: Pricer, history: Report | None, *,
    provider: str | None = None, base_url: str | None = None, repeat: int | None = None,
) -> SuiteEstimate:
    models = _models(protocol.metadata, provider, base_url)
    max_out = protocol.metadata.max_output_tokens or DEFAULT_MAX_OUTPUT_TOKENS
    worst = Figures()
    for case in protocol.cases:
        model, calls = _protocol_case(protocol, case, models, max_out)
        worst += Figures(
            usage=model, cost_usd=pricer.cost(model, models.model, models.model_price),
            judge_usage=sum((u for _, _, u in calls), Usage()),
            judge_cost_usd=add_costs([pricer.cost(u, m, p) for m, p, u in calls]),
        )
    past = next((p for p in (history.protocols if history else []) if p.path == suite_file.path),
                None)
    known = {} if past is None else {c.id: c for c in past.cases}
    expected = Figures()
    for case in protocol.cases:
        found_case = known.get(case.id)
        # One sample's figures: a repeated case in the history sums all of its samples.
        seen = found_case.samples[0] if found_case is not None and found_case.samples \
            else found_case
        if seen is not None:
            expected += Figures(
                usage=seen.usage, cost_usd=pricer.cost(seen.usage, models.model,
                                                       models.model_price),
                judge_usage=seen.judge_usage, judge_cost_usd=seen.judge_cost_usd)
        else:
            model, _ = _protocol_case(protocol, case, models, max_out // 2)
            guess = Usage(input_tokens=model.input_tokens // 4, output_tokens=model.output_tokens)
            expected += Figures(usage=guess,
                                cost_usd=pricer.cost(guess, models.model, models.model_price))
    found = sum(case.id in known for case in protocol.cases)
    samples = planned_samples(protocol, repeat)
    return SuiteEstimate(
        kind="protocol", path=suite_file.path, name=protocol.metadata.name,
        model=protocol.metadata.model, evals=len(protocol.cases), samples=samples,
        worst=worst.times(samples), expected=expected.times(samples),
        expected_source="history" if found else "guess",
        evals_from_history=found, tokens_exact=counted_exactly(models.model),
        max_output_tokens=max_out,
        max_output_tokens_default=protocol.metadata.max_output_tokens is None,
    )


def estimate(
    suite_files: Sequence[SuiteFile], pricer: Pricer, history: Report | None = None, *,
    history_name: str | None = None, provider: str | None = None, base_url: str | None = None,
    variables: dict[str, str] | None = None, repeat: int | None = None,
    sample_files: Sequence[SampleFile] = (),
) -> Estimate:
    suites = [
        estimate_suite(f, f.suite, pricer, history, provider=provider, base_url=base_url,
                       variables=variables, repeat=repeat)
        for f in suite_files if f.suite is not None
    ]
    graded = (estimate_sample_file(f, pricer, history, provider=provider, base_url=base_url)
              for f in sample_files)
    suites += [entry for entry in graded if entry is not None]
    suites += [estimate_protocol(f, f.protocol, pricer, history, provider=provider,
                                 base_url=base_url, repeat=repeat)
               for f in suite_files if f.protocol is not None]
    not_estimated: list[str] = []
    return Estimate(
        price_source=pricer.source, suites=suites,
        worst=sum((s.worst for s in suites), Figures()),
        expected=sum((s.expected for s in suites), Figures()),
        history=history_name, not_estimated=not_estimated,
        unpriced_models=sorted(pricer.unpriced),
    )
