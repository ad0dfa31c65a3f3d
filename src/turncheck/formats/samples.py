"""Sample files (TOML): conversations paired with the score a grader should give them.

Two layouts are accepted (docs/samples.md):

    [[samples]]                          # list layout; id defaults to samples[<index>]
    id = "correct-math"
    messages = [{ role = "user", content = "What is 2+2?" }]
    expected = { score = 3, reason = "Correct" }

    [samples.happy-path]                 # keyed layout; the table name is the id
    score = 3
    [[samples.happy-path.messages]]
    role = "user"
    content = "hi"

Loading never raises on bad input: every problem becomes a `Diagnostic` pointing at
the offending key (or the sample's header), the invalid sample is skipped and the
others are kept. An optional `[grader]` table is validated too (see `formats.grader`);
an invalid grader is reported and not used.

Bolt Foundry's older sample layout (`userMessage` and `assistantResponse` instead of
`messages`, which aibff still reads) is converted to a user and an assistant message,
with one warning per file that says how to migrate.

Only `[grader]` and the samples can change grading. Another top-level *table* (aibff
writes `[meta]` and `[contexts]`) is ignored with a warning, unless its name is close
to `samples` or `grader` (a typo would silently drop them: an error). Any other
unknown top-level key is an error.
"""

from __future__ import annotations

import difflib
import json
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    ValidationError,
    model_validator,
)
from pydantic_core import ErrorDetails

from turncheck.diagnostics import Diagnostic, error, warning
from turncheck.formats import templates
from turncheck.formats.files import read_bytes_bounded, read_diagnostic
from turncheck.formats.grader import (
    GRADER_KEYS,
    Grader,
    GraderTable,
    instruction_problems,
)
from turncheck.formats.grader import VALUE_SHAPES as GRADER_SHAPES
from turncheck.formats.nesting import toml_structure_problem
from turncheck.formats.references import (
    Reference,
    ReferenceProblem,
    is_reference,
    read_text_reference,
)
from turncheck.text.suggest import did_you_mean

MIN_SCORE = -3
MAX_SCORE = 3

Layout = Literal["list", "keyed"]
TomlPath = tuple[str | int, ...]
Position = tuple[int, int]

NonEmptyStr = Annotated[StrictStr, Field(min_length=1)]
Score = Annotated[StrictInt, Field(ge=MIN_SCORE, le=MAX_SCORE)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SampleFunction(_Strict):
    name: NonEmptyStr
    arguments: StrictStr = "{}"


class SampleToolCall(_Strict):
    """A function call of an assistant message, in OpenAI's format."""

    id: StrictStr = ""
    type: Literal["function"] = "function"
    function: SampleFunction

    @property
    def name(self) -> str:
        return self.function.name

    @property
    def arguments(self) -> str:
        return self.function.arguments


def _is_none(value: object) -> bool:
    return value is None


class Message(_Strict):
    """An OpenAI chat message: any role; an assistant's may hold `tool_calls` (its
    `content` may then be left out) and a `tool` message its `tool_call_id`."""

    # Unset tool fields are left out of a dump: a plain message is `{role, content}`.
    role: NonEmptyStr
    content: NonEmptyStr | None = Field(default=None, exclude_if=_is_none)
    tool_calls: list[SampleToolCall] | None = Field(default=None, exclude_if=_is_none)
    tool_call_id: StrictStr | None = Field(default=None, exclude_if=_is_none)

    @model_validator(mode="after")
    def _says_something(self) -> Message:
        if self.content is None and not self.tool_calls:
            raise ValueError(MISSING_CONTENT)
        return self


MISSING_CONTENT = 'a message needs "content" (or, from an assistant, "tool_calls")'


class Expected(_Strict):
    score: Score
    reason: StrictStr | None = None


class Sample(_Strict):
    id: NonEmptyStr
    messages: list[Message] = Field(min_length=1)
    expected: Expected
    tags: list[StrictStr] = Field(default_factory=list)
    description: StrictStr | None = None
    line: int = Field(ge=1, description="1-based line of the sample's header in its file")


class SampleFile(BaseModel):
    path: str
    layout: Layout = "list"
    samples: list[Sample] = Field(default_factory=list)
    diagnostics: list[Diagnostic] = Field(default_factory=list)
    grader: Grader | None = None
    """The validated `[grader]`; None when the file has none or it is invalid."""
    grader_declared: bool = False
    """The file has a `[grader]` table (valid or not)."""
    references: list[Reference] = Field(default_factory=list, exclude=True)
    """Files the grader's text comes from (`criteria = {file = "…"}`), root-relative."""
    skipped: int = 0
    """Invalid samples, reported in `diagnostics` and left out of `samples`."""
    location: Path | None = Field(default=None, exclude=True)
    """Where the file really is, when that differs from `path` (a base-commit copy)."""

    @property
    def source(self) -> Path:
        return self.location or Path(self.path)

    @property
    def has_errors(self) -> bool:
        return any(d.is_error for d in self.diagnostics)


class _ListEntry(_Strict):
    id: NonEmptyStr | None = None
    messages: list[Message] = Field(min_length=1)
    expected: Expected
    tags: list[StrictStr] = Field(default_factory=list)
    description: StrictStr | None = None

    def to_sample(self, default_id: str, line: int) -> Sample:
        return Sample(
            id=self.id or default_id, messages=self.messages, expected=self.expected,
            tags=self.tags, description=self.description, line=line,
        )


class _KeyedEntry(_Strict):
    score: Score
    reason: StrictStr | None = None
    messages: list[Message] = Field(min_length=1)
    tags: list[StrictStr] = Field(default_factory=list)
    description: StrictStr | None = None

    def to_sample(self, sample_id: str, line: int) -> Sample:
        expected = Expected(score=self.score, reason=self.reason)
        return Sample(
            id=sample_id, messages=self.messages, expected=expected,
            tags=self.tags, description=self.description, line=line,
        )


TOP_LEVEL_KEYS = ("samples", "grader")
GRADER_FILE_KEYS = ("criteria", "prompt")
_ENTRY_MODELS: dict[Layout, type[_ListEntry] | type[_KeyedEntry]] = {
    "list": _ListEntry,
    "keyed": _KeyedEntry,
}
_LAYOUT_HINTS: dict[tuple[Layout, str], str] = {
    ("list", "score"): " (in the list layout write expected = { score = N, reason = \"...\" })",
    ("list", "reason"): " (in the list layout write expected = { score = N, reason = \"...\" })",
    ("keyed", "expected"): " (in the keyed layout write score = N and reason = \"...\" directly)",
    ("keyed", "id"): " (in the keyed layout the id is the table name: [samples.<id>])",
}
_VALUE_SHAPES = {
    "id": "a non-empty string",
    "tags": "an array of strings",
    "description": "a string",
    "reason": "a string",
    "messages": 'an array of tables with "role" and "content"',
}
_SCORE_RULE = f"an integer from {MIN_SCORE} to {MAX_SCORE}"
OLDER_LAYOUT_ROLES = {"userMessage": "user", "assistantResponse": "assistant"}
"""Bolt Foundry's older sample keys, each one message of the conversation, in order."""
OLDER_LAYOUT_ADVICE = (
    "Bolt Foundry's older sample layout (userMessage / assistantResponse): each is read as "
    "a user message and an assistant message. To migrate, replace the two keys with "
    '[[samples.<id>.messages]] tables: role = "user", content = <userMessage>, then '
    'role = "assistant", content = <assistantResponse>'
)


def load_samples(path: Path, display: str | None = None, root: Path | None = None) -> SampleFile:
    """Read and validate a sample file; `display` is the name used in diagnostics, `root`
    the directory it must stay inside."""
    file = str(path) if display is None else display
    try:
        raw = read_bytes_bounded(path, root=root)
    except OSError as exc:
        return _failed(file, read_diagnostic(file, exc))
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return _failed(file, _encoding_diagnostic(file, raw, exc))
    loaded = parse_samples(text, file, path.parent, root)
    loaded.location = path
    return loaded


def parse_samples(text: str, file: str, directory: Path | None = None,
                  root: Path | None = None) -> SampleFile:
    """Validate sample-file text; problems are returned as diagnostics, never raised."""
    text = text.removeprefix("\ufeff")
    problem = toml_structure_problem(text)
    if problem is not None:
        return _failed(file, error(file, problem.line, problem.column, "toml-structure",
                                   problem.message))
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return _failed(file, _syntax_diagnostic(file, text, str(exc)))
    except ValueError as exc:  # tomllib lets int()'s digit limit escape
        return _failed(file, error(file, 1, 1, "toml-syntax", f"invalid TOML: {_clip(str(exc))}"))
    except RecursionError:
        return _failed(file, error(file, 1, 1, "toml-syntax", "invalid TOML: nested too deeply"))
    return _Checker(file, data, _Locator(text), directory or Path(file).parent, root).check()


def _failed(file: str, diagnostic: Diagnostic) -> SampleFile:
    return SampleFile(path=file, diagnostics=[diagnostic])


def _encoding_diagnostic(file: str, raw: bytes, exc: UnicodeDecodeError) -> Diagnostic:
    before = raw[: exc.start]
    line_start = before.rfind(b"\n") + 1
    column = len(before[line_start:].decode("utf-8", "replace")) + 1
    bad_byte = raw[exc.start]
    return error(
        file, before.count(b"\n") + 1, column, "read-error",
        f"not UTF-8 text: invalid byte 0x{bad_byte:02x}",
    )


_TOML_POSITION = re.compile(r"(?P<reason>.*?)\s*\(at line (?P<line>\d+), column (?P<column>\d+)\)")
_AT_END = "(at end of document)"
_CLEARER_TOML_REASONS = {"Illegal character '\\n'": "a line ends inside a string (missing quote?)"}
_LIST_HEADER = re.compile(r"\s*(\[\[\s*samples\s*\]\]|samples\s*=)")
_KEYED_HEADER = re.compile(r"\s*\[\s*samples\s*\.")


def _syntax_diagnostic(file: str, text: str, problem: str) -> Diagnostic:
    found = _TOML_POSITION.fullmatch(problem)
    if found:
        reason, line, column = found["reason"], int(found["line"]), int(found["column"])
    else:
        reason = problem.removesuffix(_AT_END).strip()
        line = text.count("\n") + 1
        column = len(text) - text.rfind("\n")
    switch_column = _layout_switch_column(text, line)
    if switch_column:
        return error(
            file, line, switch_column, "mixed-layout",
            "a file must use either the list layout ([[samples]]) "
            "or the keyed layout ([samples.<id>]), not both",
        )
    reason = _CLEARER_TOML_REASONS.get(reason, reason)
    reason = _printable(reason[:1].lower() + reason[1:])
    return error(file, line, column, "toml-syntax", f"invalid TOML: {reason}")


def _layout_switch_column(text: str, line: int) -> int | None:
    """Where `line` starts `samples` in one layout after the other was used, if it does."""
    lines = text.split("\n")
    if not 1 <= line <= len(lines):
        return None
    current, before = lines[line - 1], lines[: line - 1]
    if _LIST_HEADER.match(current):
        switched = any(_KEYED_HEADER.match(earlier) for earlier in before)
    elif _KEYED_HEADER.match(current):
        switched = any(_LIST_HEADER.match(earlier) for earlier in before)
    else:
        switched = False
    return len(current) - len(current.lstrip()) + 1 if switched else None


class _Checker:
    def __init__(self, file: str, data: dict[str, object], where: _Locator,
                 directory: Path, root: Path | None) -> None:
        self.file = file
        self.data = data
        self.where = where
        self.directory = directory
        self.root = root
        self.diagnostics: list[Diagnostic] = []
        self.references: list[Reference] = []
        self.older_layout: list[TomlPath] = []
        """The samples written in Bolt Foundry's older layout."""

    def check(self) -> SampleFile:
        grader = self._grader()
        self._check_top_level_keys()
        layout, entries = self._entries()
        samples: list[Sample] = []
        first_line_of: dict[str, int] = {}
        for key, raw in entries:
            sample = self._sample(layout, key, raw)
            if sample and self._is_new_id(sample, key, first_line_of):
                samples.append(sample)
        self._warn_older_layout()
        if entries and not samples:
            count = len(entries)
            which = "the only sample has" if count == 1 else f"all {count} samples have"
            self._report((), "no-valid-samples", f"no valid sample: {which} errors")
        return SampleFile(
            path=self.file, layout=layout, samples=samples,
            diagnostics=self.diagnostics, grader=grader, skipped=len(entries) - len(samples),
            grader_declared="grader" in self.data, references=self.references,
        )

    def _report(self, path: TomlPath, code: str, message: str) -> None:
        line, column = self.where.locate(path)
        self.diagnostics.append(error(self.file, line, column, code, message))

    def _grader(self) -> Grader | None:
        raw = self.data.get("grader")
        if raw is None:
            return None
        if not isinstance(raw, dict):
            message = f'"grader" must be a table, got {_show(raw)}'
            self._report(("grader",), "invalid-grader", message)
            return None
        raw = self._resolve_grader_files(raw)
        if raw is None:
            return None
        templated = _untemplated(raw)
        for path, code, message in templated:
            self._report(path, code, message)
        if templated:
            return None
        try:
            table = GraderTable.model_validate(raw)
        except ValidationError as exc:
            # A union (a number: float or int) fails once per member: report the key once.
            one_per_key = {tuple(p["loc"][:1]): p for p in exc.errors(include_url=False)}
            for problem in one_per_key.values():
                self._report_grader_problem(problem)
            return None
        problems = instruction_problems(table)
        for path, code, message in problems:
            self._report(path, code, message)
        line = self.where.locate(("grader",))[0]
        return None if problems else Grader(**table.model_dump(), line=line)

    def _resolve_grader_files(self, raw: dict[str, object]) -> dict[str, object] | None:
        """`criteria`/`prompt` given as `{file = "…"}` replaced by the file's text."""
        resolved = dict(raw)
        for key in GRADER_FILE_KEYS:
            if not is_reference(raw.get(key)):
                continue
            try:
                resolved[key], reference = read_text_reference(raw[key], self.directory,
                                                                 self.root)
            except ReferenceProblem as problem:
                self._report(("grader", key), "invalid-reference", str(problem))
                return None
            self.references.append(reference)
        return resolved

    def _report_grader_problem(self, problem: ErrorDetails) -> None:
        key = str(problem["loc"][0]) if problem["loc"] else ""
        path: TomlPath = ("grader", key) if key else ("grader",)
        if problem["type"] == "extra_forbidden":
            hint = _suggestion(key, GRADER_KEYS)
            self._report(path, "unknown-key", f"unknown key {_show(key)} in [grader]{hint}")
        elif problem["type"] == "missing":
            self._report(("grader",), "invalid-grader", f'[grader] has no "{key}"')
        else:
            shape = GRADER_SHAPES.get(key, "valid")
            message = f'[grader] "{key}" must be {shape}, got {_show(problem["input"])}'
            self._report(path, "invalid-grader", message)

    def _warn(self, path: TomlPath, code: str, message: str) -> None:
        line, column = self.where.locate(path)
        self.diagnostics.append(warning(self.file, line, column, code, message))

    def _check_top_level_keys(self) -> None:
        for key, value in self.data.items():
            if key in TOP_LEVEL_KEYS:
                continue
            if _is_table(value) and not difflib.get_close_matches(key, TOP_LEVEL_KEYS, n=1):
                message = (f"table [{_toml_key(key)}] is ignored: only [grader] and the "
                           "samples change grading")
                self._warn((key,), "ignored-table", message)
                continue
            message = f"unknown top-level key {_show(key)}{_suggestion(key, TOP_LEVEL_KEYS)}"
            self._report((key,), "unknown-key", message)

    def _entries(self) -> tuple[Layout, list[tuple[str | int, object]]]:
        samples = self.data.get("samples")
        if samples is None:
            self._report((), "no-samples", "no samples: add [[samples]] or [samples.<id>] tables")
            return "list", []
        if isinstance(samples, list):
            layout: Layout = "list"
            entries: list[tuple[str | int, object]] = list(enumerate(samples))
        elif isinstance(samples, dict):
            layout, entries = "keyed", list(samples.items())
        else:
            self._report(
                ("samples",), "invalid-samples",
                '"samples" must be an array of tables ([[samples]]) '
                f"or a table of samples ([samples.<id>]), got {_show(samples)}",
            )
            return "list", []
        if not entries:
            self._report(("samples",), "no-samples", '"samples" is empty')
        return layout, entries

    def _sample(self, layout: Layout, key: str | int, raw: object) -> Sample | None:
        path: TomlPath = ("samples", key)
        label = _label(key, raw)
        if not isinstance(raw, dict):
            self._report(path, "invalid-sample", f"{label} must be a table, got {_show(raw)}")
            return None
        if key == "":
            self._report(path, "invalid-sample", 'a sample id must not be empty: [samples.""]')
            return None
        if _is_older_layout(raw):
            converted = self._converted(path, label, raw)
            if converted is None:
                return None
            raw = converted
        try:
            entry = _ENTRY_MODELS[layout].model_validate(raw)
        except ValidationError as exc:
            for problem in exc.errors(include_url=False):
                self._report_problem(layout, path, label, problem)
            return None
        return entry.to_sample(_default_id(key), self.where.locate(path)[0])

    def _converted(self, path: TomlPath, label: str,
                   raw: dict[str, object]) -> dict[str, object] | None:
        """An older-layout sample with its two keys as `messages`; None (reported) when
        one is missing or not a non-empty string."""
        self.older_layout.append(path)
        messages = []
        for key, role in OLDER_LAYOUT_ROLES.items():
            value = raw.get(key)
            if not isinstance(value, str) or not value:
                got = "nothing" if value is None else _show(value)
                self._report(path + ((key,) if key in raw else ()), "invalid-sample",
                             f'{label}: "{key}" must be a non-empty string (the older '
                             f"layout needs both userMessage and assistantResponse), got {got}")
                return None
            messages.append({"role": role, "content": value})
        rest = {k: v for k, v in raw.items() if k not in OLDER_LAYOUT_ROLES}
        return {**rest, "messages": messages}

    def _warn_older_layout(self) -> None:
        if not self.older_layout:
            return
        count = len(self.older_layout)
        which = "1 sample uses" if count == 1 else f"{count} samples use"
        self._warn(self.older_layout[0], "older-layout", f"{which} {OLDER_LAYOUT_ADVICE}")

    def _report_problem(
        self, layout: Layout, sample_path: TomlPath, label: str, problem: ErrorDetails
    ) -> None:
        loc = tuple(problem["loc"])
        path = sample_path + loc
        if self._is_keyed_table_in_list(layout, path, problem):
            self._report(
                path, "mixed-layout",
                f"[samples.{loc[0]}] after [[samples]]: a file must use either the list "
                "layout ([[samples]]) or the keyed layout ([samples.<id>]), not both",
            )
            return
        code, message = _describe(layout, loc, problem)
        if problem["type"] == "extra_forbidden" and path in self.where.table_headers:
            message += (f" ([samples.{_toml_key(str(loc[-1]))}] after [[samples]] is a "
                        "sub-table of that sample)")
        self._report(path, code, f"{label}: {message}")

    def _is_keyed_table_in_list(
        self, layout: Layout, path: TomlPath, problem: ErrorDetails
    ) -> bool:
        """TOML puts a `[samples.<id>]` after `[[samples]]` inside the last list sample.

        Only a table that looks like a keyed sample (`score` or `messages`) counts: a
        sub-table such as `[samples.input]` is an unknown key of the list sample.
        """
        is_sample_key = len(path) == 3 and problem["type"] == "extra_forbidden"
        if not (layout == "list" and is_sample_key and path in self.where.table_headers):
            return False
        table = problem["input"]
        return isinstance(table, dict) and ("score" in table or "messages" in table)

    def _is_new_id(self, sample: Sample, key: str | int, first_line_of: dict[str, int]) -> bool:
        if sample.id not in first_line_of:
            first_line_of[sample.id] = sample.line
            return True
        first_line = first_line_of[sample.id]
        message = f"sample {_show(sample.id)}: duplicate id (first used at line {first_line})"
        self._report(("samples", key, "id"), "duplicate-sample-id", message)
        return False


def _is_older_layout(raw: dict[str, object]) -> bool:
    return "messages" not in raw and any(key in raw for key in OLDER_LAYOUT_ROLES)


def _untemplated(grader: dict[str, object]) -> list[tuple[TomlPath, str, str]]:
    """vibecheck templates are not rendered in [grader]: they would be sent literally."""
    return [(("grader", key), "template-not-allowed",
             f'[grader] "{key}" takes no {{{{var()}}}} or {{{{secret()}}}} templates '
             "(they are not rendered in sample files)")
            for key, value in grader.items()
            if key != "prompt" and isinstance(value, str) and templates.has_template(value)]


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else _show(key)


def _is_table(value: object) -> bool:
    """A TOML table (`[name]`) or array of tables (`[[name]]`)."""
    if isinstance(value, list):
        return bool(value) and all(isinstance(item, dict) for item in value)
    return isinstance(value, dict)


def _default_id(key: str | int) -> str:
    return f"samples[{key}]" if isinstance(key, int) else key


def _label(key: str | int, raw: object) -> str:
    sample_id = raw.get("id") if isinstance(raw, dict) and isinstance(key, int) else key
    if isinstance(sample_id, str) and sample_id:
        return f"sample {_show(sample_id)}"
    return f"sample {_default_id(key)}"


def _describe(layout: Layout, loc: TomlPath, problem: ErrorDetails) -> tuple[str, str]:
    kind, value = problem["type"], problem["input"]
    if kind == "extra_forbidden":
        return "unknown-key", _unknown_key(layout, loc)
    if loc[:1] == ("messages",):
        return _messages_problem(loc, kind, value)
    if loc[-1:] == ("score",) or loc == ("expected",):
        return _score_problem(layout, loc, kind, value)
    field = next((part for part in reversed(loc) if isinstance(part, str)), "sample")
    shape = _VALUE_SHAPES.get(field, "valid")
    return "invalid-sample", f'"{field}" must be {shape}, got {_show(value)}'


def _unknown_key(layout: Layout, loc: TomlPath) -> str:
    key = str(loc[-1])
    if loc[:1] == ("messages",) and len(loc) == 3:
        allowed: tuple[str, ...] = tuple(Message.model_fields)
        return f"message {_ordinal(loc)} has an unknown key {_show(key)}{_suggestion(key, allowed)}"
    if loc[:1] == ("expected",) and len(loc) == 2:
        allowed = tuple(Expected.model_fields)
        return f'unknown key {_show(key)} in "expected"{_suggestion(key, allowed)}'
    hint = _LAYOUT_HINTS.get((layout, key)) or _suggestion(key, _ENTRY_MODELS[layout].model_fields)
    return f"unknown key {_show(key)}{hint}"


def _messages_problem(loc: TomlPath, kind: str, value: object) -> tuple[str, str]:
    if len(loc) == 1:
        if kind == "missing":
            return "empty-messages", 'has no "messages"'
        if kind == "too_short":
            return "empty-messages", '"messages" is empty'
        shape = _VALUE_SHAPES["messages"]
        return "invalid-sample", f'"messages" must be {shape}, got {_show(value)}'
    message = f"message {_ordinal(loc)}"
    if len(loc) == 2 and kind == "value_error":
        return "invalid-message", f'{message} has no "content"'
    if len(loc) == 2:
        shape = 'a table with "role" and "content"'
        return "invalid-message", f"{message} must be {shape}, got {_show(value)}"
    field = loc[2]
    if kind == "missing":
        return "invalid-message", f'{message} has no "{field}"'
    if kind == "string_too_short":
        return "invalid-message", f'{message} has an empty "{field}"'
    return "invalid-message", f'{message}: "{field}" must be a string, got {_show(value)}'


def _score_problem(layout: Layout, loc: TomlPath, kind: str, value: object) -> tuple[str, str]:
    if kind == "missing":
        if layout == "keyed":
            return "missing-score", f"has no score (add score = N, where N is {_SCORE_RULE})"
        add = 'expected = { score = N, reason = "..." }'
        return "missing-score", f"has no expected score (add {add}, where N is {_SCORE_RULE})"
    if loc == ("expected",):
        return "invalid-sample", (
            f'"expected" must be a table like {{ score = 3, reason = "..." }}, got {_show(value)}'
        )
    out_of_range = kind in ("greater_than_equal", "less_than_equal")
    code = "score-out-of-range" if out_of_range else "invalid-score"
    return code, f"expected score must be {_SCORE_RULE}, got {_show(value)}"


def _ordinal(loc: TomlPath) -> int:
    index = loc[1]
    return index + 1 if isinstance(index, int) else 0


def _suggestion(key: str, allowed: Iterable[str]) -> str:
    names = list(allowed)
    return did_you_mean(key, names, f" (allowed: {', '.join(names)})", _show)


def _show(value: object) -> str:
    """A short, printable, TOML-like rendering of a value for a message."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, str):
        text = json.dumps(_clip(value, 60), ensure_ascii=False)
    elif isinstance(value, int) and value.bit_length() > 128:
        text = "a huge integer"
    elif isinstance(value, list):
        text = "an array"
    elif isinstance(value, dict):
        text = "a table"
    else:
        text = _clip(str(value))
    return _printable(text)


def _printable(text: str) -> str:
    """`text` with lone surrogates escaped, so that it can be encoded and printed."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- locating keys in the text -------------------------------------------------------------
#
# tomllib returns no positions, so a small tokenizer walks the (already valid) TOML text and
# records where each table header, key and inline-array element starts.

_PUNCTUATION = "[]{}=,."
_BARE_STOP = set(_PUNCTUATION) | set(" \t\r\n#\"'")


@dataclass(frozen=True)
class _Token:
    kind: str  # a punctuation character, "str", "bare" or "nl"
    text: str
    line: int
    column: int


def _tokens(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    line, line_start, i = 1, 0, 0
    while i < len(text):
        char = text[i]
        column = i - line_start + 1
        if char == "\n":
            tokens.append(_Token("nl", char, line, column))
            end = i + 1
        elif char in " \t\r":
            end = i + 1
        elif char == "#":
            end = text.find("\n", i)
            end = len(text) if end < 0 else end
        elif char in "\"'":
            end = _string_end(text, i)
            tokens.append(_Token("str", text[i:end], line, column))
        elif char in _PUNCTUATION:
            end = i + 1
            tokens.append(_Token(char, char, line, column))
        else:
            end = i + 1
            while end < len(text) and text[end] not in _BARE_STOP:
                end += 1
            tokens.append(_Token("bare", text[i:end], line, column))
        newlines = text.count("\n", i, end)
        if newlines:
            line += newlines
            line_start = text.rfind("\n", i, end) + 1
        i = end
    return tokens


def _string_end(text: str, start: int) -> int:
    quote = text[start]
    delimiter = quote * 3 if text.startswith(quote * 3, start) else quote
    i = start + len(delimiter)
    while i < len(text):
        if quote == '"' and text[i] == "\\":
            i += 2
        elif text.startswith(delimiter, i):
            end = i + len(delimiter)
            # A multi-line string may end with one or two quotes of its own: """a"""".
            while len(delimiter) == 3 and end < len(text) and text[end] == quote and end - i < 5:
                end += 1
            return end
        else:
            i += 1
    return len(text)


def _key_text(token: _Token) -> str:
    if token.kind == "bare":
        return token.text
    try:
        return str(tomllib.loads(f"k = {token.text}")["k"])
    except tomllib.TOMLDecodeError:
        return token.text


class _Locator:
    """Positions of headers, keys and inline-array elements, by their path in the data."""

    def __init__(self, text: str) -> None:
        self.positions: dict[TomlPath, Position] = {}
        self.table_headers: set[TomlPath] = set()
        self._tokens = _tokens(text)
        self._next = 0
        self._array_lengths: dict[TomlPath, int] = {}
        self._walk()

    def locate(self, path: TomlPath) -> Position:
        """Where `path` is, or its closest located ancestor; (1, 1) if none is."""
        for length in range(len(path), 0, -1):
            prefix = path[:length]
            found = self.positions.get(prefix)
            if found is None and length <= 2:
                found = self._first_inside(prefix)
            if found:
                return found
        return (1, 1)

    def _first_inside(self, prefix: TomlPath) -> Position | None:
        inside = [pos for path, pos in self.positions.items() if path[: len(prefix)] == prefix]
        return min(inside, default=None)

    def _peek(self) -> _Token | None:
        return self._tokens[self._next] if self._next < len(self._tokens) else None

    def _take(self) -> _Token | None:
        token = self._peek()
        self._next += 1
        return token

    def _walk(self) -> None:
        table: TomlPath = ()
        while (token := self._skip_newlines()) is not None:
            if token.kind == "[":
                table = self._header()
            elif token.kind in ("bare", "str"):
                self._key_value(table)
            self._skip_past_newline()

    def _skip_past_newline(self) -> None:
        while (token := self._take()) is not None and token.kind != "nl":
            pass

    def _header(self) -> TomlPath:
        opening = self._take()
        assert opening is not None
        second = self._peek()
        is_array = second is not None and second.kind == "[" and second.column == opening.column + 1
        if is_array:
            self._next += 1
        keys = self._dotted_key()
        if not keys:
            return ()
        if is_array:
            array = (*self._resolve(keys[:-1]), keys[-1])
            index = self._array_lengths.get(array, 0)
            self._array_lengths[array] = index + 1
            path: TomlPath = (*array, index)
        else:
            path = self._resolve(keys)
            self.table_headers.add(path)
        self.positions.setdefault(path, (opening.line, opening.column))
        return path

    def _resolve(self, keys: list[str]) -> TomlPath:
        """Follow arrays of tables to their last element, as TOML does for headers."""
        path: TomlPath = ()
        for key in keys:
            path = (*path, key)
            if path in self._array_lengths:
                path = (*path, self._array_lengths[path] - 1)
        return path

    def _dotted_key(self) -> list[str]:
        keys: list[str] = []
        while (token := self._peek()) is not None and token.kind in ("bare", "str"):
            keys.append(_key_text(token))
            self._next += 1
            following = self._peek()
            if following is None or following.kind != ".":
                break
            self._next += 1
        return keys

    def _key_value(self, table: TomlPath) -> None:
        first = self._peek()
        keys = self._dotted_key()
        equals = self._peek()
        if first is None or not keys or equals is None or equals.kind != "=":
            return
        self._next += 1
        path = (*table, *keys)
        self.positions.setdefault(path, (first.line, first.column))
        self._value(path)

    def _value(self, path: TomlPath) -> None:
        token = self._peek()
        if token is not None and token.kind == "[":
            self._next += 1
            self._inline_array(path)
        elif token is not None and token.kind == "{":
            self._next += 1
            self._inline_table(path)
        else:
            while (token := self._peek()) is not None and token.kind not in (",", "]", "}", "nl"):
                self._next += 1

    def _inline_array(self, path: TomlPath) -> None:
        index = 0
        while (token := self._skip_newlines()) is not None and token.kind != "]":
            start = self._next
            self.positions.setdefault((*path, index), (token.line, token.column))
            self._value((*path, index))
            after = self._skip_newlines()
            if after is not None and after.kind == ",":
                self._next += 1
            self._next = max(self._next, start + 1)
            index += 1
        self._next += 1

    def _inline_table(self, path: TomlPath) -> None:
        while (token := self._skip_newlines()) is not None and token.kind != "}":
            start = self._next
            if token.kind in ("bare", "str"):
                self._key_value(path)
            self._next = max(self._next, start + 1)
        self._next += 1

    def _skip_newlines(self) -> _Token | None:
        while (token := self._peek()) is not None and token.kind == "nl":
            self._next += 1
        return token


# Public names for other TOML readers (the project configuration).
TomlLocator = _Locator
toml_syntax_position = _TOML_POSITION
