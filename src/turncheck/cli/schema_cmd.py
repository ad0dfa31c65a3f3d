"""`turncheck schema`: print the JSON Schema of suite files."""

from __future__ import annotations

import argparse
import json

from turncheck.formats.protocol_schema import protocol_defs
from turncheck.formats.suite import Suite

SCHEMA_ID = "https://raw.githubusercontent.com/turncheck/turncheck/main/schema/suite.schema.json"


def suite_schema() -> dict[str, object]:
    """Eval suites (`evals`) or protocol suites (`cases` + `turns`, SPEC §9)."""
    evals = Suite.model_json_schema(by_alias=True)
    defs = {**evals.pop("$defs"), "EvalSuite": evals, **protocol_defs()}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "turncheck suite",
        "description": "An eval suite (metadata + evals) or a protocol suite "
        "(metadata + cases + turns).",
        "anyOf": [{"$ref": "#/$defs/EvalSuite"}, {"$ref": "#/$defs/ProtocolSuite"}],
        "$defs": defs,
    }


def schema_text() -> str:
    return json.dumps(suite_schema(), indent=2) + "\n"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "schema",
        help="print the JSON Schema of suite files",
        description="Print the JSON Schema of suite files (also committed as "
        "schema/suite.schema.json for yaml-language-server).",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    print(schema_text(), end="")
    return 0
