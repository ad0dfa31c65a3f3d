"""JSON Schema of protocol suite files, for editors (yaml-language-server).

The models in `protocol.py` are the runtime form; the file form (a scorer is
`{list_f1: {...}, weight: 0.25}`, cases may be `{file: ...}`) is described here by
hand. It is checked against every example by the tests. Templates, expressions and
references are beyond a JSON Schema: `turncheck validate` checks those.
"""

from __future__ import annotations

from typing import Any

from turncheck.formats.protocol import AGGREGATE_LABELS, IDENTIFIER, ProtocolMetadata

Schema = dict[str, Any]

_STRING: Schema = {"type": "string", "minLength": 1}
_FRACTION: Schema = {"type": "number", "minimum": 0, "maximum": 1}
_IDENTIFIER: Schema = {"type": "string", "pattern": IDENTIFIER}
_EXPRESSION: Schema = {"type": "string", "description": "A Jinja expression over the case and "
                       "the earlier turns."}
_REFERENCE: Schema = {"type": "string", "pattern": r"^[A-Za-z_]\w*\.[A-Za-z_]\w*$",
                      "description": "TURN.SCORER"}


def _closed(properties: Schema, required: list[str] | None = None, **extra: Any) -> Schema:
    schema: Schema = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = required
    return {**schema, **extra}


def _scorer(kind: str, spec: Schema) -> Schema:
    return _closed({"id": _IDENTIFIER, "label": _STRING,
                    "weight": {"type": "number", "minimum": 0}, kind: spec}, [kind])


SCORER_SPECS: dict[str, Schema] = {
    "list_f1": _closed({
        "expected": {"anyOf": [_EXPRESSION, {"type": "array"}, {"type": "object"}],
                     "description": "Expected names or hierarchy, or an expression for them."},
        "threshold": _FRACTION,
        "aliases": {"type": "object", "additionalProperties": {"type": "string"}},
    }, ["expected"]),
    "order": _closed({
        "pairs": {"anyOf": [_EXPRESSION, {"type": "array", "items": {
            "type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 2}}]},
        "missing": {"enum": ["fail", "skip"]},
        "threshold": _FRACTION,
    }, ["pairs"]),
    "judge_scale": _closed({
        "rubric": _STRING,
        "scale": {"anyOf": [
            {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2},
            _closed({"min": {"type": "integer"}, "max": {"type": "integer"}}, ["min", "max"]),
        ], "description": "[lowest, highest] rating, or {min, max} (default [1, 5])."},
    }, ["rubric"]),
    "self_assessment": _closed({"actual": {"anyOf": [_EXPRESSION, _FRACTION]},
                                "pattern": _STRING}, ["actual"]),
    "match": {"type": "string"},
    "not_match": {"type": "string"},
    "min_tokens": {"type": "integer", "minimum": 0},
    "max_tokens": {"type": "integer", "minimum": 0},
    "semantic": {"$ref": "#/$defs/SemanticSpec"},
    "llm_judge": {"$ref": "#/$defs/JudgeSpec"},
}


def protocol_defs() -> dict[str, Schema]:
    """`$defs` for protocol suites; `SemanticSpec` and `JudgeSpec` come from the eval suite."""
    metadata = ProtocolMetadata.model_json_schema()
    metadata["title"] = "ProtocolMetadata"
    case = _closed({"id": _STRING, "vars": {"type": "object"}, "ground_truth": {"type": "object"}},
                   ["id"])
    variant = _closed({"id": _IDENTIFIER, "when": _EXPRESSION, "prompt": _STRING},
                      ["id", "prompt"])
    turn = _closed(
        {
            "id": _IDENTIFIER,
            "prompt": _STRING,
            "variants": {"type": "array", "items": {"$ref": "#/$defs/ProtocolVariant"},
                         "minItems": 1},
            "scorers": {"type": "array", "items": {"$ref": "#/$defs/ProtocolScorer"}},
            "extract": {"type": "object", "additionalProperties": _STRING},
        },
        ["id"],
        oneOf=[{"required": ["prompt"]}, {"required": ["variants"]}],
    )
    cases: Schema = {"anyOf": [
        {"type": "array", "items": {"$ref": "#/$defs/ProtocolCase"}, "minItems": 1},
        _closed({"file": {"type": "string", "pattern": r"\.(ya?ml|json)$"}}, ["file"]),
    ]}
    aggregates = _closed({
        "final_f1": _REFERENCE,
        "self_assessment": _REFERENCE,
        "self_correction": _closed({"before": _REFERENCE, "after": _REFERENCE},
                                   ["before", "after"]),
        "labels": _closed({key: _STRING for key in AGGREGATE_LABELS}),
    })
    suite = _closed(
        {"metadata": {"$ref": "#/$defs/ProtocolMetadata"}, "cases": cases,
         "turns": {"type": "array", "items": {"$ref": "#/$defs/ProtocolTurn"}, "minItems": 1},
         "aggregates": aggregates},
        ["metadata", "cases", "turns"],
        title="turncheck protocol suite",
        description="Scripted turns with variants and weighted scorers, run for every case.",
    )
    return {
        "ProtocolMetadata": metadata,
        "ProtocolCase": case,
        "ProtocolVariant": variant,
        "ProtocolScorer": {"oneOf": [_scorer(k, s) for k, s in SCORER_SPECS.items()]},
        "ProtocolTurn": turn,
        "ProtocolSuite": suite,
    }
