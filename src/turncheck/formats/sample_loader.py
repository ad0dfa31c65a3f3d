"""Reading a sample file (TOML) and validating it into a `formats.samples.SampleFile`.

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
import re
import tomllib
from pathlib import Path

from pydantic import ValidationError
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
from turncheck.formats.sample_problems import clip, describe, printable, show, suggestion, toml_key
from turncheck.formats.samples import ENTRY_MODELS, Layout, Sample, SampleFile
from turncheck.formats.toml_positions import TOML_ERROR_POSITION, TomlLocator, TomlPath

TOP_LEVEL_KEYS = ("samples", "grader")
GRADER_FILE_KEYS = ("criteria", "prompt")
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
        return _failed(file, error(file, 1, 1, "toml-syntax", f"invalid TOML: {clip(str(exc))}"))
    except RecursionError:
        return _failed(file, error(file, 1, 1, "toml-syntax", "invalid TOML: nested too deeply"))
    return _Checker(file, data, TomlLocator(text), directory or Path(file).parent, root).check()


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


_AT_END = "(at end of document)"
_CLEARER_TOML_REASONS = {"Illegal character '\\n'": "a line ends inside a string (missing quote?)"}
_LIST_HEADER = re.compile(r"\s*(\[\[\s*samples\s*\]\]|samples\s*=)")
_KEYED_HEADER = re.compile(r"\s*\[\s*samples\s*\.")


def _syntax_diagnostic(file: str, text: str, problem: str) -> Diagnostic:
    found = TOML_ERROR_POSITION.fullmatch(problem)
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
    reason = printable(reason[:1].lower() + reason[1:])
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
    def __init__(self, file: str, data: dict[str, object], where: TomlLocator,
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
            message = f'"grader" must be a table, got {show(raw)}'
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
            hint = suggestion(key, GRADER_KEYS)
            self._report(path, "unknown-key", f"unknown key {show(key)} in [grader]{hint}")
        elif problem["type"] == "missing":
            self._report(("grader",), "invalid-grader", f'[grader] has no "{key}"')
        else:
            shape = GRADER_SHAPES.get(key, "valid")
            message = f'[grader] "{key}" must be {shape}, got {show(problem["input"])}'
            self._report(path, "invalid-grader", message)

    def _warn(self, path: TomlPath, code: str, message: str) -> None:
        line, column = self.where.locate(path)
        self.diagnostics.append(warning(self.file, line, column, code, message))

    def _check_top_level_keys(self) -> None:
        for key, value in self.data.items():
            if key in TOP_LEVEL_KEYS:
                continue
            if _is_table(value) and not difflib.get_close_matches(key, TOP_LEVEL_KEYS, n=1):
                message = (f"table [{toml_key(key)}] is ignored: only [grader] and the "
                           "samples change grading")
                self._warn((key,), "ignored-table", message)
                continue
            message = f"unknown top-level key {show(key)}{suggestion(key, TOP_LEVEL_KEYS)}"
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
                f"or a table of samples ([samples.<id>]), got {show(samples)}",
            )
            return "list", []
        if not entries:
            self._report(("samples",), "no-samples", '"samples" is empty')
        return layout, entries

    def _sample(self, layout: Layout, key: str | int, raw: object) -> Sample | None:
        path: TomlPath = ("samples", key)
        label = _label(key, raw)
        if not isinstance(raw, dict):
            self._report(path, "invalid-sample", f"{label} must be a table, got {show(raw)}")
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
            entry = ENTRY_MODELS[layout].model_validate(raw)
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
                got = "nothing" if value is None else show(value)
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
        code, message = describe(layout, loc, problem)
        if problem["type"] == "extra_forbidden" and path in self.where.table_headers:
            message += (f" ([samples.{toml_key(str(loc[-1]))}] after [[samples]] is a "
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
        message = f"sample {show(sample.id)}: duplicate id (first used at line {first_line})"
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
        return f"sample {show(sample_id)}"
    return f"sample {_default_id(key)}"
