"""Property: the suite loader never raises, whatever bytes it is fed."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from turncheck.formats.suite_loader import parse_suite

EXAMPLE = (Path(__file__).parents[1] / "examples" / "math" / "arithmetic.eval.yaml").read_text()
YAML_TOKENS = st.sampled_from([*":-[]{}#&*!|>'\"%@`,? \n\t", "prompt: ", "checks:", "  - or:"])


def mutate(text: str, edits: list[tuple[int, int, str]]) -> str:
    for position, length, replacement in edits:
        at = position % (len(text) + 1)
        text = text[:at] + replacement + text[at + length :]
    return text


edit = st.tuples(
    st.integers(0, 10_000),
    st.integers(0, 20),
    st.lists(YAML_TOKENS, max_size=3).map("".join) | st.text(max_size=5),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(edit, min_size=1, max_size=6))
def test_mutated_suite_never_raises(edits: list[tuple[int, int, str]]) -> None:
    loaded = parse_suite(mutate(EXAMPLE, edits), "fuzz.eval.yaml")
    for diagnostic in loaded.diagnostics:
        assert diagnostic.line >= 1 and diagnostic.column >= 1
    if loaded.suite is None:
        assert any(d.is_error for d in loaded.diagnostics)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_random_text_never_raises(text: str) -> None:
    loaded = parse_suite(text, "random.eval.yaml")
    assert loaded.suite is not None or loaded.diagnostics


json_leaf = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
json_tree = st.recursive(
    json_leaf,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "metadata",
                    "evals",
                    "prompt",
                    "checks",
                    "or",
                    "match",
                    "semantic",
                    "name",
                    "model",
                    "llm_judge",
                    "min_tokens",
                ]
            )
            | st.text(max_size=5),
            children,
            max_size=4,
        )
    ),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(json_tree)
def test_random_structures_never_raise(tree: object) -> None:
    import json

    loaded = parse_suite(json.dumps(tree), "tree.eval.yaml")
    assert loaded.suite is not None or loaded.diagnostics
