"""`turncheck schema`: print the JSON Schema of suite files."""

from __future__ import annotations

import argparse
import json

from turncheck.formats.suite import Suite

SCHEMA_ID = "https://raw.githubusercontent.com/turncheck/turncheck/main/schema/suite.schema.json"


def suite_schema() -> dict[str, object]:
    schema = Suite.model_json_schema(by_alias=True)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **schema}


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
