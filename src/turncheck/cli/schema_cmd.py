"""`turncheck schema`: print the JSON Schema of suite files."""

from __future__ import annotations

import argparse
import json
from typing import Any

from turncheck.formats.protocol_schema import protocol_defs
from turncheck.formats.references import TEXT_KEYS, TEXT_KEYS_UNDER
from turncheck.formats.suite import Suite

SCHEMA_ID = "https://raw.githubusercontent.com/turncheck/turncheck/main/schema/suite.schema.json"


FILE_REFERENCE: dict[str, Any] = {
    "type": "object",
    "properties": {"file": {"type": "string", "minLength": 1,
                            "description": "Path relative to this file, inside the repository."}},
    "required": ["file"],
    "additionalProperties": False,
    "description": "Take the value from a file in the repository.",
}
_FIELDS_OF = {"SemanticSpec": TEXT_KEYS_UNDER["semantic"],
              "Metadata": {"messages", "vars", "tools"}, "Eval": {"tools"},
              "ProtocolMetadata": {"messages", "vars", "tools"}}


def _allow_file_references(defs: dict[str, Any]) -> None:
    """Let every field that takes `{file: …}` (see `formats/references.py`) say so."""
    for name, schema in defs.items():
        fields = TEXT_KEYS | _FIELDS_OF.get(name, set())
        for key, prop in schema.get("properties", {}).items():
            if key in fields:
                schema["properties"][key] = {"anyOf": [prop, {"$ref": "#/$defs/FileReference"}]}


def suite_schema() -> dict[str, object]:
    """Eval suites (`evals`) or protocol suites (`cases` + `turns`; docs/protocols.md)."""
    evals = Suite.model_json_schema(by_alias=True)
    defs = {**evals.pop("$defs"), "EvalSuite": evals, **protocol_defs()}
    _allow_file_references(defs)
    defs["FileReference"] = FILE_REFERENCE
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
