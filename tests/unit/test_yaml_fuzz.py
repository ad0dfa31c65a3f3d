"""Properties: the suite loader never raises, whatever bytes it is fed; positions are right."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from turncheck.formats.suite_loader import parse_suite
from turncheck.formats.yamlsource import load_yaml

EXAMPLE = (Path(__file__).parents[2] / "examples" / "math" / "arithmetic.eval.yaml").read_text()
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


def _paths(data: object, prefix: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    if isinstance(data, dict):
        for key, value in data.items():
            yield (*prefix, key)
            yield from _paths(value, (*prefix, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield (*prefix, index)
            yield from _paths(value, (*prefix, index))


plain_key = st.from_regex(r"[a-z][a-z_]{0,6}", fullmatch=True)
plain_leaf = st.integers(0, 999) | st.from_regex(r"[a-z][a-z ]{0,8}[a-z]", fullmatch=True)
block_tree = st.recursive(
    st.dictionaries(plain_key, plain_leaf, min_size=1, max_size=3),
    lambda children: st.dictionaries(
        plain_key, children | plain_leaf | st.lists(children | plain_leaf, min_size=1, max_size=3),
        min_size=1, max_size=3,
    ),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(block_tree, st.booleans())
def test_positions_point_at_each_key_and_value(tree: dict[str, object], flow: bool) -> None:
    """Positions are looked up in the node tree on demand; each one names the right text."""
    text = yaml.safe_dump(tree, default_flow_style=flow, sort_keys=False, width=10_000)
    loaded = load_yaml(text, "tree.yaml")
    assert loaded.data == tree and not loaded.diagnostics
    lines = text.splitlines()
    for path in _paths(tree):
        key_pos, value_pos = loaded.positions.key(path), loaded.positions.value(path)
        value: object = tree
        for part in path:
            value = value[part]  # type: ignore[index]
        at_value = lines[value_pos.line - 1][value_pos.column - 1 :]
        if isinstance(value, int | str):
            assert at_value.lstrip("'").startswith(str(value)), (path, value_pos)
        if isinstance(path[-1], str):
            at_key = lines[key_pos.line - 1][key_pos.column - 1 :]
            assert at_key.replace("'", "").startswith(f"{path[-1]}:"), (path, key_pos)
        else:
            assert key_pos == value_pos  # a list item has no key: its value stands for it
        missing = (*path, "no_such_key")
        assert loaded.positions.value(missing) == value_pos  # the nearest present value


def test_duplicate_key_positions_are_the_first_ones() -> None:
    loaded = load_yaml("a: 1\nb:\n  c: x\na: 2\n", "dup.yaml")
    assert loaded.data == {"a": 1, "b": {"c": "x"}}
    assert [(d.line, d.code) for d in loaded.diagnostics] == [(4, "duplicate-key")]
    assert "first defined at line 1" in loaded.diagnostics[0].message
    assert (loaded.positions.key(("a",)), loaded.positions.value(("a",))) == ((1, 1), (1, 4))
    assert loaded.positions.value(("b", "c")) == (3, 6)
    assert loaded.positions.key(("b", "c", "d")) == (3, 6)
    assert load_yaml("", "empty.yaml").positions.value(("x",)) == (1, 1)
