"""What `turncheck validate` prints about the files it checked: the JSON object of
`--format json` and the closing summary line of the text format."""

from __future__ import annotations

from turncheck.diagnostics import Severity
from turncheck.formats.validation import ValidationResult
from turncheck.text.counts import counted


def validation_json(result: ValidationResult) -> dict[str, object]:
    return {
        "files": result.files,
        "errors": result.count(Severity.ERROR),
        "warnings": result.count(Severity.WARNING),
        "diagnostics": [d.model_dump(mode="json") for d in result.diagnostics],
    }


def validation_summary(result: ValidationResult) -> str:
    """`ok: 3 files checked, 0 errors, 1 warning` (`invalid:` when there are errors)."""
    errors, warnings = result.count(Severity.ERROR), result.count(Severity.WARNING)
    verdict = "ok" if not errors else "invalid"
    return (f"{verdict}: {counted(result.files, 'file')} checked, {counted(errors, 'error')}, "
            f"{counted(warnings, 'warning')}")
