"""`turncheck validate`: check suite and sample files, report every problem."""

from __future__ import annotations

import argparse
import json
import sys

from turncheck.cli.common import (
    UsageError,
    add_discovery_options,
    diagnostic_line,
    discover_from,
    untrusted_output,
    usage_error,
)
from turncheck.diagnostics import Diagnostic, Severity
from turncheck.formats.validation import ValidationResult, validate_files
from turncheck.github.workflow import annotation_command
from turncheck.render.validation_view import validation_json, validation_summary


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "validate",
        help="check suite (YAML) and sample (TOML) files",
        description="Check eval suites and sample files; print every problem as file:line:col.",
    )
    add_discovery_options(parser)
    parser.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text: compiler-style lines (default); json: one machine-readable object",
    )
    parser.add_argument(
        "--github",
        action="store_true",
        help="print GitHub Actions ::error/::warning workflow commands (annotations)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        found = discover_from(args)
    except UsageError as exc:
        return usage_error(str(exc))
    result = validate_files(found.files, args.max_depth)
    if args.format == "json":
        print(json.dumps(validation_json(result), indent=2))
    elif args.github:
        for diagnostic in result.diagnostics:
            print(github_command(diagnostic))
    else:
        print_text(result)
    return 1 if result.count(Severity.ERROR) else 0


def github_command(diagnostic: Diagnostic) -> str:
    return annotation_command(
        diagnostic.severity.value,
        diagnostic.message,
        file=diagnostic.file,
        line=diagnostic.line,
        col=diagnostic.column,
        title=f"turncheck: {diagnostic.code}",
    )


def print_text(result: ValidationResult) -> None:
    with untrusted_output(sys.stdout):
        for diagnostic in result.diagnostics:
            print(diagnostic_line(diagnostic))
    print(validation_summary(result), file=sys.stderr)
