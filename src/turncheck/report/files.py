"""The one reader and the one writer of turncheck's documents: run reports (`run --json`),
comparisons (`compare --json`) and the action's report (the bundle).

A document names itself by `kind`; one written by an older turncheck has no `kind` and
is recognised as it always was: the bundle by its own `kind`, a comparison by its
`has_base`, anything else as a run report. Every document is read as untrusted (a
fork's artifact, a file from a pull request): bounded in bytes before it is parsed,
bounded in depth by the JSON parser, validated against its model, and refused with
one line that says why.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Final, TypeVar, overload

from pydantic import BaseModel, ConfigDict, ValidationError

from turncheck.formats.files import (
    MAX_DATA_BYTES,
    read_bytes_bounded,
    refusal_reason,
    write_text_confined,
)
from turncheck.formats.nesting import json_structure_problem
from turncheck.gc_pause import gc_paused
from turncheck.report.bundle import (
    BUNDLE_KIND,
    BUNDLE_SCHEMA_VERSION,
    MAX_BUNDLE_BYTES,
    ReportBundle,
)
from turncheck.report.comparison import COMPARISON_KIND, COMPARISON_SCHEMA_VERSION, Comparison
from turncheck.report.run import RUN_KIND, SCHEMA_VERSION, Report

Document = Report | Comparison | ReportBundle
DocumentT = TypeVar("DocumentT", Report, Comparison, ReportBundle)


class ReportError(ValueError):
    """A document that cannot be read or written; the message says why, on one line."""


class ReportTooLarge(ReportError):
    """Larger than its kind allows: refused before it is parsed."""


class _Kind:
    def __init__(self, model: type[Document], name: str, version: int, max_bytes: int) -> None:
        self.model = model
        self.name = name
        """What the document is called in messages."""
        self.version = version
        self.max_bytes = max_bytes


_KINDS: Final = {
    RUN_KIND: _Kind(Report, "run report", SCHEMA_VERSION, MAX_DATA_BYTES),
    COMPARISON_KIND: _Kind(Comparison, "comparison", COMPARISON_SCHEMA_VERSION, MAX_DATA_BYTES),
    BUNDLE_KIND: _Kind(ReportBundle, "action report", BUNDLE_SCHEMA_VERSION, MAX_BUNDLE_BYTES),
}
_BY_MODEL: Final = {kind.model: kind for kind in _KINDS.values()}


class _Envelope(BaseModel):
    """What names a document, read before the whole of it is validated."""

    model_config = ConfigDict(extra="ignore")

    kind: str | None = None
    schema_version: Any = None
    has_base: Any = None


def _kind_of(envelope: _Envelope) -> str:
    if envelope.kind is not None:
        return envelope.kind
    # Written before documents named their kind.
    return COMPARISON_KIND if envelope.has_base is not None else RUN_KIND


MAX_DEPTH = 256
"""Nesting the readers of every JSON file accept (`providers/json_limits.py`); the JSON
parser itself stops a little earlier, without recursing."""


def _too_deep(data: bytes | str) -> str | None:
    """Why `data`, which did not parse, did not: nested deeper than `MAX_DEPTH`."""
    text = data if isinstance(data, str) else data.decode("utf-8", "replace")
    if json_structure_problem(text, max_nesting=MAX_DEPTH, max_items=sys.maxsize) is None:
        return None
    return f"JSON nested deeper than {MAX_DEPTH} levels"


def first_problem(exc: ValidationError) -> str:
    """`where: what` of the first validation error, and how many more there are."""
    errors = exc.errors()
    first = errors[0]
    where = ".".join(str(part) for part in first["loc"])
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where + ': ' if where else ''}{first['msg']}{more}"


@overload
def parse_report(data: bytes | str, source: str = ..., expect: None = None) -> Document: ...
@overload
def parse_report(data: bytes | str, source: str, expect: type[DocumentT]) -> DocumentT: ...
def parse_report(data: bytes | str, source: str = "report",
                 expect: type[DocumentT] | None = None) -> Document:
    """The document in `data` (read from `source`, named in messages); ReportError when
    it is no turncheck document, a newer one, or not of the `expect`ed kind."""
    wanted = None if expect is None else _BY_MODEL[expect]
    if len(data) > (wanted.max_bytes if wanted else MAX_DATA_BYTES):
        limit = wanted.max_bytes if wanted else MAX_DATA_BYTES
        raise ReportTooLarge(f"{source} is larger than {limit} bytes")
    what = wanted.name if wanted else "report"
    try:
        envelope = _Envelope.model_validate_json(data)
    except ValidationError as exc:
        raise ReportError(f"{source} is not a turncheck {what}: "
                          f"{_too_deep(data) or first_problem(exc)}") from None
    kind = _KINDS.get(_kind_of(envelope))
    if kind is None:
        raise ReportError(f"{source} is not a turncheck {what}: unknown kind "
                          f"{envelope.kind!r}")
    if wanted is not None and kind is not wanted:
        article = "an" if wanted.name[0] in "aeiou" else "a"
        raise ReportError(f"{source} is a turncheck {kind.name}, not {article} {wanted.name}")
    if len(data) > kind.max_bytes:
        raise ReportTooLarge(f"{source} is larger than {kind.max_bytes} bytes")
    version = envelope.schema_version
    if version is not None and (not isinstance(version, int) or isinstance(version, bool)):
        # "999" or true would be read as a number below and pass the newer-version check.
        raise ReportError(f"{source} is not a turncheck {kind.name}: schema_version must "
                          f"be an integer, not {_json_type(version)}")
    if version is not None and version > kind.version:
        raise ReportError(f"{source} has {kind.name} schema version {version}; this "
                          f"turncheck reads up to {kind.version}")
    try:
        return kind.model.model_validate_json(data)
    except ValidationError as exc:
        raise ReportError(f"{source} is not a turncheck {kind.name}: "
                          f"{first_problem(exc)}") from None


def _json_type(value: Any) -> str:
    names = {bool: "a boolean", str: "a string", float: "a number with a fraction",
             list: "a list", dict: "an object"}
    return names.get(type(value), type(value).__name__)


@overload
def read_report(path: Path, *, root: Path | None = None, expect: None = None) -> Document: ...
@overload
def read_report(path: Path, *, root: Path | None = None, expect: type[DocumentT]
                ) -> DocumentT: ...
def read_report(path: Path, *, root: Path | None = None,
                expect: type[DocumentT] | None = None) -> Document:
    """The document at `path` (inside `root`, by default its own folder): a run report,
    a comparison or the action's report, told apart by its `kind`."""
    try:
        data = read_bytes_bounded(path, root=root, limit=MAX_DATA_BYTES)
    except FileNotFoundError:
        raise ReportError(f"no such report: {path}") from None
    except OSError as exc:
        raise ReportError(f"cannot read report {path}: {refusal_reason(exc)}") from None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ReportError(f"cannot read report {path}: {exc}") from None
    return parse_report(data, str(path), expect)


def document_json(document: BaseModel, indent: int = 2) -> str:
    """The JSON text of `document` as turncheck writes it."""
    # Serialising allocates an object per value (the prompt table's wrap serialiser builds
    # the document as Python values first), and automatic collections re-scanned the
    # whole run meanwhile: a 3,000-eval report took 0.6-0.8 s instead of 0.2 s, which
    # SIGTERM during the write (always finished) had to wait for.
    with gc_paused():
        return document.model_dump_json(indent=indent) + "\n"


def write_report(path: Path, document: BaseModel, *, root: Path | None = None,
                 indent: int = 2) -> None:
    """`document` as JSON at `path` (confined to `root`, never through a symlink);
    ReportError when it cannot be written."""
    try:
        write_text_confined(path, document_json(document, indent), root=root)
    except OSError as exc:
        raise ReportError(f"cannot write {path}: {refusal_reason(exc)}") from None
