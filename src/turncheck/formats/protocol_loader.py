"""Validate protocol suites with line-precise diagnostics.

Grammar (see the README, "Protocol suites"):

```
metadata:   as for eval suites, plus pass_threshold: 0..1
cases:      [{id, vars: {...}, ground_truth: {...}}, ...]  |  {file: cases.yaml|cases.json}
turns:      [Turn, ...]  (non-empty)
Turn      := {id, prompt: TEMPLATE | variants: [Variant, ...], scorers: [Scorer, ...],
              extract: {name: REGEX}}
Variant   := {id, when: EXPRESSION, prompt: TEMPLATE}; the last one has no `when` (default)
Scorer    := {id?, label?, weight?: >=0, <kind>: <spec>}, kind one of list_f1, order, judge_scale,
              self_assessment, match, not_match, min_tokens, max_tokens, semantic, llm_judge
aggregates: {final_f1: TURN.SCORER, self_assessment: TURN.SCORER,
             self_correction: {before: TURN.SCORER, after: TURN.SCORER},
             labels: {score|final_f1|self_correction|meta_cognition: LABEL}}
```

Every template and expression is parsed and its references checked here, so a
typo is a diagnostic at its line, not a failure halfway through a run. An
invalid case is reported and skipped; an invalid turn invalidates the protocol
(the turns depend on each other).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path as FsPath
from pathlib import PurePosixPath
from typing import Any

from turncheck.formats.files import FileRefused, read_text_bounded
from turncheck.formats.protocol import (
    AGGREGATE_LABELS,
    IDENTIFIER,
    SCORER_SPECS,
    AggregateSpec,
    Case,
    ProtocolMetadata,
    ProtocolSuite,
    Scorer,
    ScorerRef,
    SelfCorrection,
    Turn,
    Variant,
)
from turncheck.formats.protocol_templates import Analysis, Scope, check_expression, check_template
from turncheck.formats.reporting import Reporter, SuiteReporter
from turncheck.formats.suite import APP_CHECK_TYPES, CHECK_TYPES, TRAJECTORY_CHECK_TYPES
from turncheck.formats.yamlsource import Path, Pos, Positions, load_yaml
from turncheck.text.user_regex import UserRegexError, compile_user_regex

PROTOCOL_KEYS = ("metadata", "cases", "turns", "aggregates")
CASE_KEYS = ("id", "vars", "ground_truth")
CASE_FILE_KEYS = ("file",)
CASE_FILE_SUFFIXES = (".yaml", ".yml", ".json")
TURN_KEYS = ("id", "prompt", "variants", "scorers", "extract")
VARIANT_KEYS = ("id", "when", "prompt")
SCORER_KINDS = (*SCORER_SPECS, *(kind for kind in CHECK_TYPES
                                 if kind not in (*TRAJECTORY_CHECK_TYPES, *APP_CHECK_TYPES)))
SCORER_KEYS = ("id", "label", "weight", *SCORER_KINDS)
AGGREGATE_KEYS = ("final_f1", "self_correction", "self_assessment", "labels")
_IDENTIFIER = re.compile(IDENTIFIER)


def _validate_cases(reporter: Reporter, path: Path, raw: Any) -> list[Case]:
    """The valid cases of a list (invalid ones are reported and skipped)."""
    if not isinstance(raw, list) or not raw:
        reporter.error_at_value(path, "invalid-cases",
                                "cases must be a non-empty list of {id, vars, ground_truth}")
        return []
    cases: list[Case] = []
    seen: dict[str, int] = {}
    for index, item in enumerate(raw):
        before = len(reporter.diagnostics)
        built = _validate_case(reporter, (*path, index), item)
        if built is None or reporter.errors_since(before):
            continue
        if built.id in seen:
            reporter.error_at_value((*path, index, "id"), "duplicate-case-id",
                                    f'duplicate case id "{built.id}" (first used at line '
                                    f"{seen[built.id]})")
            continue
        seen[built.id] = reporter.positions.value((*path, index, "id")).line
        cases.append(built)
    return cases


def _validate_case(reporter: Reporter, path: Path, raw: Any) -> Case | None:
    if not isinstance(raw, dict):
        reporter.error_at_value(path, "invalid-case",
                                "a case must be a mapping with id, vars and ground_truth")
        return None
    before = len(reporter.diagnostics)
    for key in raw:
        if key not in CASE_KEYS:
            reporter.unknown_key(path, key, CASE_KEYS)
    for key in ("vars", "ground_truth"):
        if key in raw and not isinstance(raw[key], dict):
            reporter.error_at_value((*path, key), "invalid-value",
                                    f"{key} must be a mapping of names to values")
    if reporter.errors_since(before):
        return None
    data = {k: v for k, v in raw.items() if k in CASE_KEYS}
    built: Case | None = reporter.build(Case, data, path)
    return built


class ProtocolValidator(SuiteReporter):
    def __init__(
        self, file: str, positions: Positions, text: str, directory: FsPath | None
    ) -> None:
        super().__init__(file, positions)
        self.lines = text.splitlines()
        self.directory = directory
        self.secret_names: set[str] = set()
        self.cases_file: str | None = None
        self.scorer_index: dict[int, int] = {}
        """Index of each built scorer in its turn's raw `scorers` list."""

    # -- positions inside templates ------------------------------------------------

    def template_pos(self, path: Path, lineno: int) -> Pos:
        """Where line `lineno` of the template at `path` is in the file."""
        start = self.positions.value(path)
        if not 0 < start.line <= len(self.lines):
            return start
        indicator = self.lines[start.line - 1][start.column - 1 : start.column]
        line = start.line + lineno if indicator in ("|", ">") else start.line + lineno - 1
        if line == start.line or not 0 < line <= len(self.lines):
            return start
        text = self.lines[line - 1]
        return Pos(line, len(text) - len(text.lstrip()) + 1)

    def report(self, path: Path, analysis: Analysis, what: str) -> None:
        for problem in analysis.problems:
            pos = self.template_pos(path, problem.lineno)
            message = f"{what}: {problem.message}"
            if problem.severity == "error":
                self.error_at(pos, problem.code, message)
            else:
                self.warning_at(pos, problem.code, message)
        self.secret_names |= analysis.secrets

    def template(self, path: Path, value: Any, scope: Scope, what: str) -> None:
        if isinstance(value, str):
            self.report(path, check_template(value, scope), what)

    def expression(self, path: Path, value: Any, scope: Scope, what: str) -> None:
        if isinstance(value, str):
            self.report(path, check_expression(value, scope), what)

    # -- the suite -------------------------------------------------------------------

    def protocol(self, data: dict[str, Any]) -> ProtocolSuite | None:
        for key in data:
            if key not in PROTOCOL_KEYS:
                self.unknown_key((), key, PROTOCOL_KEYS)
        metadata = self.metadata(data.get("metadata"), ProtocolMetadata)
        if metadata is not None and not self.metadata_tools(metadata):
            metadata = None
        cases = self.cases(data.get("cases"))
        before = len(self.diagnostics)
        turns, invalid = self.turns(data.get("turns"), cases)
        turns_ok = not invalid and bool(turns) and not self.errors_since(before)
        aggregates = self.aggregates(data.get("aggregates"), turns, invalid)
        if not isinstance(metadata, ProtocolMetadata) or not cases or not turns_ok:
            return None
        if aggregates is None:
            return None
        return ProtocolSuite.model_construct(
            metadata=metadata, cases=cases, turns=turns, aggregates=aggregates,
            secret_names=sorted(self.secret_names), cases_file=self.cases_file,
        )

    # -- cases -----------------------------------------------------------------------

    def cases(self, raw: Any) -> list[Case]:
        path: Path = ("cases",)
        if raw is None:
            self.error_at_value((), "missing-key", 'missing required key "cases"')
            return []
        if isinstance(raw, dict):
            return self.cases_file_(raw)
        cases = _validate_cases(self, path, raw)
        if isinstance(raw, list) and raw and not cases:
            self.error_at_value(path, "no-valid-case", "no valid case: nothing to run")
        return cases

    def cases_file_(self, raw: dict[str, Any]) -> list[Case]:
        path: Path = ("cases",)
        for key in raw:
            if key not in CASE_FILE_KEYS:
                self.unknown_key(path, key, CASE_FILE_KEYS)
        value = raw.get("file")
        if not isinstance(value, str) or not value:
            self.error_at_value((*path, "file") if "file" in raw else path, "invalid-cases",
                                "cases must be a list, or {file: a .yaml or .json file "
                                "beside the suite}")
            return []
        where: Path = (*path, "file")
        relative = PurePosixPath(value)
        if relative.is_absolute() or ".." in relative.parts or "\\" in value:
            self.error_at_value(where, "invalid-cases-file",
                                f'cases file "{value}" must be a relative path inside the '
                                "suite's directory")
            return []
        if relative.suffix not in CASE_FILE_SUFFIXES:
            self.error_at_value(where, "invalid-cases-file",
                                f'cases file "{value}" must end in .yaml, .yml or .json')
            return []
        directory = self.directory if self.directory is not None else FsPath(self.file).parent
        full = directory / relative
        try:
            text = read_text_bounded(full, root=directory)
        except FileRefused as exc:
            if exc.code == "outside-workspace":
                self.error_at_value(where, "invalid-cases-file",
                                    f'cases file "{value}" leads outside the suite\'s directory')
            else:
                self.error_at_value(where, "invalid-cases-file",
                                    f'cannot read cases file "{value}": {exc.message}')
            return []
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            self.error_at_value(where, "invalid-cases-file",
                                f'cannot read cases file "{value}": {reason}')
            return []
        self.cases_file = relative.as_posix()
        shown = (PurePosixPath(FsPath(self.file).parent.as_posix()) / relative).as_posix()
        loaded = load_yaml(text, shown)
        self.diagnostics.extend(loaded.diagnostics)
        if loaded.data is None and loaded.diagnostics:
            return []
        data = loaded.data
        reporter = Reporter(shown, loaded.positions)
        inner: Path = ()
        if isinstance(data, dict) and set(data) == {"cases"}:
            data, inner = data["cases"], ("cases",)
        cases = _validate_cases(reporter, inner, data)
        self.diagnostics.extend(reporter.diagnostics)
        if isinstance(data, list) and data and not cases:
            self.error_at_value(where, "no-valid-case",
                                f'no valid case in "{value}": nothing to run')
        return cases

    # -- turns -----------------------------------------------------------------------

    def turns(self, raw: Any, cases: list[Case]) -> tuple[list[Turn], set[str] | None]:
        """The valid turns, and the ids of invalid ones (None when turns is not a list)."""
        path: Path = ("turns",)
        if not isinstance(raw, list) or not raw:
            self.error_at_value(path, "invalid-turns", "turns must be a non-empty list")
            return [], None
        built: list[Turn] = []
        seen: dict[str, int] = {}
        indices: list[int] = []
        invalid: set[str] = set()
        for index, item in enumerate(raw):
            raw_id = item.get("id") if isinstance(item, dict) else None
            duplicate = isinstance(raw_id, str) and raw_id in seen
            if isinstance(raw_id, str) and duplicate:
                self.error_at_value((*path, index, "id"), "duplicate-turn-id",
                                    f'duplicate turn id "{raw_id}" (first used at line '
                                    f"{seen[raw_id]})")
            elif isinstance(raw_id, str):
                seen[raw_id] = self.positions.value((*path, index, "id")).line
            turn = self.turn((*path, index), item)
            if turn is None or duplicate:
                if isinstance(raw_id, str):
                    invalid.add(raw_id)
                continue
            built.append(turn)
            indices.append(index)
        for position, (turn, index) in enumerate(zip(built, indices, strict=True)):
            self.turn_templates((*path, index), raw[index], turn,
                                Scope(built, position, cases, invalid=invalid))
        if len(built) < len(raw) and not invalid:
            invalid.add("")  # an invalid turn without a usable id
        return built, invalid

    def identifier(self, path: Path, value: Any, what: str) -> str | None:
        if not isinstance(value, str) or not _IDENTIFIER.match(value):
            shown = repr(value) if not isinstance(value, str) else f'"{value}"'
            self.error_at_value(path, "invalid-id",
                                f"{what} {shown} must be an identifier (letters, digits and _, "
                                "not starting with a digit) so templates can refer to it")
            return None
        return value

    def turn(self, path: Path, raw: Any) -> Turn | None:
        if not isinstance(raw, dict):
            self.error_at_value(path, "invalid-turn",
                                "a turn must be a mapping with id, prompt (or variants) and "
                                "scorers")
            return None
        before = len(self.diagnostics)
        for key in raw:
            if key not in TURN_KEYS:
                self.unknown_key(path, key, TURN_KEYS)
        if "id" not in raw:
            self.error_at_value(path, "missing-key", 'missing required key "id"')
            turn_id = None
        else:
            turn_id = self.identifier((*path, "id"), raw["id"], "turn id")
        if "prompt" in raw and "variants" in raw:
            self.error_at_key((*path, "variants"), "prompt-and-variants",
                              'a turn has either "prompt" or "variants", not both')
        elif "prompt" not in raw and "variants" not in raw:
            self.error_at_value(path, "missing-key",
                                'missing required key "prompt" (or "variants")')
        variants = self.variants((*path, "variants"), raw["variants"]) if "variants" in raw \
            else []
        scorers = self.scorers((*path, "scorers"), raw.get("scorers", []))
        extract = self.extract((*path, "extract"), raw.get("extract", {}))
        if turn_id is None or self.errors_since(before):
            return None
        data = {"id": turn_id, "variants": variants, "scorers": scorers, "extract": extract}
        if "prompt" in raw:
            data["prompt"] = raw["prompt"]
        turn: Turn | None = self.build(Turn, data, path)
        if turn is not None:
            pos = self.positions.value((*path, "id"))
            turn.at(pos.line, pos.column)
        return turn

    def variants(self, path: Path, raw: Any) -> list[Variant]:
        if not isinstance(raw, list) or not raw:
            self.error_at_value(path, "invalid-variants",
                                "variants must be a non-empty list of {id, when, prompt}")
            return []
        built: list[Variant] = []
        seen: set[str] = set()
        default_index: int | None = None
        for index, item in enumerate(raw):
            where = (*path, index)
            if not isinstance(item, dict):
                self.error_at_value(where, "invalid-variant",
                                    "a variant must be a mapping with id, when and prompt")
                continue
            for key in item:
                if key not in VARIANT_KEYS:
                    self.unknown_key(where, key, VARIANT_KEYS)
            if default_index is not None:
                self.error_at_value(where, "unreachable-variant",
                                    "this variant can never be chosen: the default variant "
                                    f"(no `when`, line {built[default_index].line}) must come "
                                    "last")
            variant: Variant | None = self.build(
                Variant, {k: v for k, v in item.items() if k in VARIANT_KEYS}, where
            )
            if variant is None:
                continue
            if variant.id in seen:
                self.error_at_value((*where, "id"), "duplicate-variant-id",
                                    f'duplicate variant id "{variant.id}"')
            seen.add(variant.id)
            if variant.when is None and default_index is None:
                default_index = len(built)
            built.append(variant)
        if default_index is None and built:
            self.error_at_key(path, "missing-default-variant",
                              "variants need a default: a last variant without `when`, used "
                              "when no condition holds")
        return built

    def scorers(self, path: Path, raw: Any) -> list[Scorer]:
        if not isinstance(raw, list):
            self.error_at_value(path, "invalid-scorers", "scorers must be a list")
            return []
        built: list[Scorer] = []
        seen: dict[str, int] = {}
        for index, item in enumerate(raw):
            scorer = self.scorer((*path, index), item)
            if scorer is None:
                continue
            if scorer.id in seen:
                where = (*path, index, "id") if isinstance(item, dict) and "id" in item \
                    else (*path, index)
                self.error_at_value(where, "duplicate-scorer-id",
                                    f'duplicate scorer id "{scorer.id}" in this turn (first at '
                                    f"line {seen[scorer.id]}); give each scorer its own `id`")
                continue
            seen[scorer.id] = scorer.line
            self.scorer_index[id(scorer)] = index
            built.append(scorer)
        return built

    def scorer(self, path: Path, raw: Any) -> Scorer | None:
        if not isinstance(raw, dict):
            self.error_at_value(path, "invalid-scorer",
                                "a scorer must be a mapping such as {list_f1: {...}, weight: 1}")
            return None
        before = len(self.diagnostics)
        for key in raw:
            if key not in SCORER_KEYS:
                self.unknown_key(path, key, SCORER_KEYS)
        kinds = [key for key in raw if key in SCORER_KINDS]
        if len(kinds) > 1:
            self.error_at_key((*path, kinds[1]), "multiple-scorer-types",
                              f'one item holds several scorers ("{kinds[0]}" and "{kinds[1]}"); '
                              "give each scorer its own list item")
            return None
        if not kinds:
            if not self.errors_since(before):
                self.error_at_value(path, "missing-scorer-type",
                                    f"a scorer needs one of: {', '.join(SCORER_KINDS)}")
            return None
        kind = kinds[0]
        scorer_id = self.identifier((*path, "id"), raw["id"], "scorer id") if "id" in raw \
            else kind
        spec = self.scorer_spec(path, kind, raw[kind])
        if scorer_id is None or spec is None or self.errors_since(before):
            return None
        data: dict[str, Any] = {"id": scorer_id, "kind": kind, "spec": spec}
        for optional in ("weight", "label"):
            if optional in raw:
                data[optional] = raw[optional]
        built: Scorer | None = self.build(Scorer, data, path)
        if built is not None:
            pos = self.positions.key((*path, kind))
            built.at(pos.line, pos.column)
        return built

    def scorer_spec(self, path: Path, kind: str, value: Any) -> Any:
        if kind in CHECK_TYPES:
            return self.build(CHECK_TYPES[kind], {kind: value}, path)
        where = (*path, kind)
        if not isinstance(value, dict):
            self.error_at_value(where, "invalid-scorer", f"{kind} needs a mapping of options")
            return None
        model = SCORER_SPECS[kind]
        allowed = tuple(model.model_fields)
        for key in value:
            if key not in allowed:
                self.unknown_key(where, key, allowed)
        spec = self.build(model, {k: v for k, v in value.items() if k in allowed}, where)
        if spec is not None and kind == "self_assessment" and spec.pattern is not None:
            self.regex((*where, "pattern"), spec.pattern)
        return spec

    def regex(self, path: Path, pattern: str) -> None:
        try:
            compiled = compile_user_regex(pattern)
        except UserRegexError as exc:
            self.error_at_value(path, "invalid-regex", f"invalid regular expression: {exc}")
            return
        if compiled.groups > 1:
            self.error_at_value(path, "invalid-regex",
                                "the regular expression may have at most one group")

    def extract(self, path: Path, raw: Any) -> dict[str, str]:
        if not isinstance(raw, dict):
            self.error_at_value(path, "invalid-extract",
                                "extract must be a mapping of names to regular expressions")
            return {}
        found: dict[str, str] = {}
        for name, pattern in raw.items():
            if self.identifier((*path, name), name, "extracted value name") is None:
                continue
            if not isinstance(pattern, str) or not pattern:
                self.error_at_value((*path, name), "invalid-regex",
                                    "expected a regular expression (a string)")
                continue
            self.regex((*path, name), pattern)
            found[name] = pattern
        return found

    # -- templates -------------------------------------------------------------------

    def turn_templates(self, path: Path, raw: dict[str, Any], turn: Turn, scope: Scope) -> None:
        self.template((*path, "prompt"), raw.get("prompt"), scope, f'turn "{turn.id}" prompt')
        for index, variant in enumerate(turn.variants):
            where = (*path, "variants", index)
            self.expression((*where, "when"), variant.when, scope,
                            f'variant "{variant.id}" when')
            matched = Scope(scope.turns, scope.current, scope.cases, allow_matched=True,
                            invalid=scope.invalid)
            self.template((*where, "prompt"), variant.prompt, matched,
                          f'variant "{variant.id}" prompt')
        for scorer in turn.scorers:
            where = (*path, "scorers", self.scorer_index[id(scorer)], scorer.kind)
            self.scorer_templates(where, scorer, scope)

    def scorer_templates(self, path: Path, scorer: Scorer, scope: Scope) -> None:
        spec, what = scorer.spec, f'scorer "{scorer.id}"'
        checks: dict[str, Callable[[Path, Any, Scope, str], None]] = {}
        if scorer.kind in ("match", "not_match"):
            self.template(path, getattr(spec, scorer.kind), scope, what)
        elif scorer.kind == "semantic":
            self.template((*path, "expected"), spec.semantic.expected, scope, what)
        elif scorer.kind == "llm_judge":
            self.template((*path, "criteria"), spec.llm_judge.criteria, scope, what)
        elif scorer.kind == "judge_scale":
            self.template((*path, "rubric"), spec.rubric, scope, what)
        elif scorer.kind == "list_f1":
            checks["expected"] = self.expression
        elif scorer.kind == "order":
            checks["pairs"] = self.expression
        elif scorer.kind == "self_assessment":
            checks["actual"] = self.expression
        for key, check in checks.items():
            check((*path, key), getattr(spec, key), scope, f"{what} {key}")

    # -- aggregates ------------------------------------------------------------------

    def aggregates(self, raw: Any, turns: list[Turn],
                   invalid: set[str] | None) -> AggregateSpec | None:
        path: Path = ("aggregates",)
        if raw is None:
            return AggregateSpec()
        if not isinstance(raw, dict):
            self.error_at_value(path, "invalid-aggregates",
                                "aggregates must be a mapping (final_f1, self_correction, "
                                "self_assessment)")
            return None
        before = len(self.diagnostics)
        for key in raw:
            if key not in AGGREGATE_KEYS:
                self.unknown_key(path, key, AGGREGATE_KEYS)
        skip = invalid if invalid is not None else None
        final = self.scorer_ref((*path, "final_f1"), raw.get("final_f1"), turns, skip,
                                "list_f1")
        assessed = self.scorer_ref((*path, "self_assessment"), raw.get("self_assessment"),
                                   turns, skip, "self_assessment")
        correction: SelfCorrection | None = None
        raw_correction = raw.get("self_correction")
        if raw_correction is not None:
            where = (*path, "self_correction")
            if not isinstance(raw_correction, dict) or set(raw_correction) != {"before",
                                                                               "after"}:
                self.error_at_value(where, "invalid-aggregates",
                                    "self_correction needs exactly {before: TURN.SCORER, "
                                    "after: TURN.SCORER}")
            else:
                before_ref = self.scorer_ref((*where, "before"), raw_correction["before"],
                                             turns, skip)
                after_ref = self.scorer_ref((*where, "after"), raw_correction["after"], turns,
                                            skip)
                if before_ref is not None and after_ref is not None:
                    correction = SelfCorrection.model_construct(before=before_ref,
                                                                after=after_ref)
        labels = self.aggregate_labels((*path, "labels"), raw.get("labels"))
        if self.errors_since(before):
            return None
        return AggregateSpec.model_construct(final_f1=final, self_assessment=assessed,
                                             self_correction=correction, labels=labels)

    def aggregate_labels(self, path: Path, raw: Any) -> dict[str, str]:
        """`aggregates.labels`: the suite's names for its aggregates."""
        if raw is None:
            return {}
        if not isinstance(raw, dict):
            self.error_at_value(path, "invalid-aggregates",
                                "labels must be a mapping such as {score: Interactive "
                                "reasoning, final_f1: Final hierarchy F1}")
            return {}
        labels = {}
        for key, label in raw.items():
            if key not in AGGREGATE_LABELS:
                self.unknown_key(path, key, tuple(AGGREGATE_LABELS))
            elif not isinstance(label, str) or not label.strip():
                self.error_at_value((*path, key), "invalid-aggregates",
                                    "a label must be a non-empty string")
            else:
                labels[key] = label.strip()
        return labels

    def scorer_ref(self, path: Path, raw: Any, turns: list[Turn], skip: set[str] | None,
                   kind: str | None = None) -> ScorerRef | None:
        """`raw` ("TURN.SCORER") checked; references into invalid turns (`skip`, or every
        turn when None) are not reported again."""
        if raw is None:
            return None
        if not isinstance(raw, str) or raw.count(".") != 1:
            self.error_at_value(path, "invalid-reference",
                                'expected "TURN.SCORER", e.g. "refinement.gates"')
            return None
        turn_id, scorer_id = raw.split(".")
        turn = next((t for t in turns if t.id == turn_id), None)
        if turn is None:
            if skip is not None and turn_id not in skip:
                self.error_at_value(path, "unknown-turn", f'unknown turn "{turn_id}"')
            return None
        scorer = next((s for s in turn.scorers if s.id == scorer_id), None)
        if scorer is None:
            self.error_at_value(path, "unknown-reference",
                                f'turn "{turn_id}" has no scorer "{scorer_id}"')
            return None
        if kind is not None and scorer.kind != kind:
            self.error_at_value(path, "invalid-reference",
                                f'"{raw}" is a {scorer.kind} scorer; expected {kind}')
            return None
        return ScorerRef.model_construct(turn=turn_id, scorer=scorer_id)


def parse_protocol(
    data: dict[str, Any], positions: Positions, text: str, file: str,
    directory: FsPath | None = None,
) -> tuple[ProtocolSuite | None, list[Any]]:
    """Validate a protocol suite already loaded as YAML; never raises on bad input."""
    validator = ProtocolValidator(file, positions, text, directory)
    protocol = validator.protocol(data)
    return protocol, validator.diagnostics
