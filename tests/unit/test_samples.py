"""Sample files (docs/samples.md): both layouts, per-sample validation, positions, robustness."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.expectations import assert_diagnostics
from turncheck.formats.sample_loader import load_samples, parse_samples
from turncheck.formats.samples import Expected, Message, SampleFile

FIXTURES = Path(__file__).parents[1] / "fixtures"
INVALID = FIXTURES / "invalid"
VALID = FIXTURES / "samples"
EXAMPLES = Path(__file__).parents[2] / "examples" / "support"
NOT_UTF8 = INVALID / "sample-not-utf8.samples.toml"
DECLARED_FIXTURES = sorted(p for p in INVALID.glob("*.samples.toml") if p != NOT_UTF8)
FILE_LEVEL_CODES = {
    "toml-syntax",
    "mixed-layout",
    "invalid-samples",
    "no-samples",
    "no-valid-samples",
}

GOOD_LIST_SAMPLE = """
[[samples]]
id = "{id}"
messages = [{{ role = "user", content = "Hi" }}, {{ role = "assistant", content = "Hello" }}]
expected = {{ score = {score} }}
"""


def codes(loaded: SampleFile) -> list[str]:
    return [d.code for d in loaded.diagnostics]


def only_diagnostic(text: str) -> tuple[str, int, int, str]:
    [problem] = parse_samples(text, "x.samples.toml").diagnostics
    return problem.code, problem.line, problem.column, problem.message


# --- every rule has a fixture declaring its exact diagnostics (# expect: LINE:COL ...) -------


@pytest.mark.parametrize("fixture", DECLARED_FIXTURES, ids=lambda p: p.name)
def test_invalid_sample_fixture_reports_its_diagnostics(fixture: Path) -> None:
    loaded = load_samples(fixture, fixture.name)
    assert_diagnostics(fixture, loaded.diagnostics)
    assert all(d.file == fixture.name for d in loaded.diagnostics)


@pytest.mark.parametrize("fixture", DECLARED_FIXTURES, ids=lambda p: p.name)
def test_the_good_sample_next_to_a_bad_one_survives(fixture: Path) -> None:
    loaded = load_samples(fixture, fixture.name)
    if "greeting" in fixture.read_text() and FILE_LEVEL_CODES.isdisjoint(codes(loaded)):
        assert loaded.samples[0].id == "greeting"


def test_fixtures_cover_every_diagnostic_code() -> None:
    covered = {d.code for f in DECLARED_FIXTURES for d in load_samples(f).diagnostics}
    covered |= set(codes(load_samples(NOT_UTF8)))
    assert covered == {
        "toml-syntax",
        "mixed-layout",
        "invalid-samples",
        "no-samples",
        "no-valid-samples",
        "invalid-sample",
        "empty-messages",
        "invalid-message",
        "missing-score",
        "invalid-score",
        "score-out-of-range",
        "unknown-key",
        "duplicate-sample-id",
        "invalid-grader",
        "grader-template",
        "read-error",
    }


def test_non_utf8_file_points_at_the_bad_byte() -> None:
    loaded = load_samples(NOT_UTF8, "bad.samples.toml")
    [problem] = loaded.diagnostics
    assert (problem.code, problem.line, problem.column) == ("read-error", 2, 10)
    assert problem.message == "not UTF-8 text: invalid byte 0xe9"
    assert loaded.samples == []


def test_missing_file_is_a_read_error(tmp_path: Path) -> None:
    loaded = load_samples(tmp_path / "gone.samples.toml")
    [problem] = loaded.diagnostics
    assert (problem.code, problem.line, problem.column) == ("read-error", 1, 1)
    assert problem.file == str(tmp_path / "gone.samples.toml")
    assert "cannot read" in problem.message


def test_directory_is_a_read_error(tmp_path: Path) -> None:
    assert codes(load_samples(tmp_path, "dir")) == ["read-error"]


# --- valid files -----------------------------------------------------------------------------


def test_list_layout() -> None:
    loaded = load_samples(VALID / "list-layout.samples.toml")
    assert (loaded.layout, loaded.diagnostics, loaded.grader) == ("list", [], None)
    math_sample, markdown = loaded.samples
    assert (math_sample.id, math_sample.line, math_sample.tags) == ("correct-math", 2, ["math"])
    assert math_sample.messages[0] == Message(role="system", content="You are a maths tutor.")
    assert math_sample.expected == Expected(score=3, reason="Correct")
    assert (markdown.id, markdown.line, markdown.expected.score) == ("markdown-answer", 12, 2)
    assert markdown.description == "Content lines that look like TOML headers"
    assert [m.role for m in markdown.messages] == ["user", "assistant"]
    assert markdown.messages[1].content == "[1] 2\n[2] 3\n"


def test_keyed_layout() -> None:
    loaded = load_samples(VALID / "keyed-layout.samples.toml")
    assert (loaded.layout, loaded.diagnostics) == ("keyed", [])
    happy, quoted = loaded.samples
    assert (happy.id, happy.line, happy.description) == ("happy-path", 2, "Said hello world")
    assert happy.expected == Expected(score=3, reason=None)
    assert [m.content for m in happy.messages] == ["hi", "hello world"]
    assert (quoted.id, quoted.line, quoted.tags) == ("needs quotes", 14, ["edge"])
    assert quoted.expected == Expected(score=-1, reason="Ignores the question")


def test_ids_default_to_the_sample_index() -> None:
    loaded = load_samples(VALID / "minimal-list.samples.toml")
    assert loaded.diagnostics == []
    assert [(s.id, s.line, s.tags) for s in loaded.samples] == [
        ("samples[0]", 2, []),
        ("samples[1]", 9, []),
    ]


def test_inline_samples_array_gets_each_elements_line() -> None:
    loaded = load_samples(VALID / "inline-samples.samples.toml")
    assert loaded.diagnostics == []
    assert [(s.id, s.line) for s in loaded.samples] == [("short", 2), ("long", 3)]


def test_grader_table_is_validated_and_kept() -> None:
    loaded = load_samples(VALID / "with-grader.samples.toml")
    assert loaded.diagnostics == []
    grader = loaded.grader
    assert grader is not None
    assert (grader.model, grader.temperature, grader.kind, grader.line) == (
        "gpt-4o-mini", 0, "criteria", 1
    )
    assert (grader.criteria, grader.min_agreement) == ("The assistant greets the user.", 80)
    assert [s.id for s in loaded.samples] == ["happy-path"]


@pytest.mark.parametrize(
    ("name", "layout"), [("greeting.samples.toml", "list"), ("tone.samples.toml", "keyed")]
)
def test_examples_load_without_diagnostics(name: str, layout: str) -> None:
    loaded = load_samples(EXAMPLES / name)
    assert loaded.diagnostics == []
    assert loaded.layout == layout
    assert 4 <= len(loaded.samples) <= 6
    roles = [m.role for s in loaded.samples for m in s.messages]
    assert "system" in roles
    assert any(sum(m.role == "user" for m in s.messages) >= 2 for s in loaded.samples)


# --- per-sample validation -------------------------------------------------------------------


def test_one_bad_sample_among_good_ones_keeps_and_counts_the_good_ones() -> None:
    text = "".join(
        GOOD_LIST_SAMPLE.format(id=sample_id, score=score)
        for sample_id, score in [("a", 3), ("b", 9), ("c", -3), ("d", 0)]
    )
    loaded = parse_samples(text, "mixed.samples.toml")
    assert [s.id for s in loaded.samples] == ["a", "c", "d"]
    assert len(loaded.samples) == 3
    [problem] = loaded.diagnostics
    assert (problem.code, problem.line, problem.column) == ("score-out-of-range", 10, 14)
    assert problem.message == 'sample "b": expected score must be an integer from -3 to 3, got 9'


@pytest.mark.parametrize(
    ("score", "code", "shown"),
    [
        ("4", "score-out-of-range", "got 4"),
        ("-4", "score-out-of-range", "got -4"),
        ("true", "invalid-score", "got true"),
        ('"3"', "invalid-score", 'got "3"'),
        ("3.0", "invalid-score", "got 3.0"),
        ("nan", "invalid-score", "got nan"),
        ("[3]", "invalid-score", "got an array"),
        ("0x" + "f" * 400, "score-out-of-range", "got a huge integer"),
    ],
)
def test_score_must_be_an_integer_from_minus_3_to_3(score: str, code: str, shown: str) -> None:
    text = f'[samples.s]\nscore = {score}\n[[samples.s.messages]]\nrole = "u"\ncontent = "c"\n'
    loaded = parse_samples(text, "x")
    assert codes(loaded) == [code, "no-valid-samples"]
    problem = loaded.diagnostics[0]
    assert (problem.line, problem.column) == (2, 1)
    assert problem.message == f'sample "s": expected score must be an integer from -3 to 3, {shown}'


@pytest.mark.parametrize("score", [-3, 0, 3])
def test_boundary_scores_are_valid(score: int) -> None:
    loaded = parse_samples(GOOD_LIST_SAMPLE.format(id="a", score=score), "x")
    assert [s.expected.score for s in loaded.samples] == [score]


def test_system_and_any_role_in_any_order_are_accepted() -> None:
    text = """[samples.free]
score = 1
messages = [
  { role = "assistant", content = "I speak first" },
  { role = "system", content = "Late system message" },
  { role = "tool", content = "{}" },
]
"""
    loaded = parse_samples(text, "x")
    assert loaded.diagnostics == []
    assert [m.role for m in loaded.samples[0].messages] == ["assistant", "system", "tool"]


def test_explicit_id_colliding_with_a_default_id_is_a_duplicate() -> None:
    text = GOOD_LIST_SAMPLE.format(id="x", score=1).replace('id = "x"\n', "") + (
        GOOD_LIST_SAMPLE.format(id="samples[0]", score=1)
    )
    code, line, column, message = only_diagnostic(text)
    assert (code, line, column) == ("duplicate-sample-id", 7, 1)
    assert message == 'sample "samples[0]": duplicate id (first used at line 2)'


def test_empty_keyed_id_is_invalid() -> None:
    text = '[samples.""]\nscore = 1\nmessages = [{ role = "u", content = "c" }]\n'
    assert codes(parse_samples(text, "x")) == ["invalid-sample", "no-valid-samples"]


def test_keyed_sample_that_is_not_a_table() -> None:
    loaded = parse_samples("[samples]\nfirst = 3\n", "x")
    assert codes(loaded) == ["invalid-sample", "no-valid-samples"]
    assert loaded.diagnostics[0].message == 'sample "first" must be a table, got 3'
    assert (loaded.diagnostics[0].line, loaded.diagnostics[0].column) == (2, 1)


def test_list_layout_score_outside_expected_gets_a_hint() -> None:
    text = '[[samples]]\nscore = 2\nmessages = [{ role = "u", content = "c" }]\n'
    loaded = parse_samples(text, "x")
    unknown = next(d for d in loaded.diagnostics if d.code == "unknown-key")
    assert (unknown.line, unknown.column) == (2, 1)
    assert "expected = { score = N" in unknown.message


def test_inline_samples_array_then_keyed_table_is_mixed_layout() -> None:
    code, line, column, _ = only_diagnostic("samples = []\n\n  [samples.a]\nscore = 1\n")
    assert (code, line, column) == ("mixed-layout", 3, 3)


# --- TOML syntax and hostile input -----------------------------------------------------------


def test_syntax_error_at_end_of_document_points_past_the_last_character() -> None:
    assert only_diagnostic('[[samples]]\nid = "abc') == (
        "toml-syntax",
        2,
        10,
        "invalid TOML: unterminated string",
    )


def test_byte_order_mark_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "bom.samples.toml"
    path.write_bytes(b"\xef\xbb\xbf" + GOOD_LIST_SAMPLE.format(id="a", score=1).encode())
    assert [s.id for s in load_samples(path).samples] == ["a"]


@pytest.mark.parametrize(
    "text",
    ["x = " + "9" * 5000, "\x00", "\ud800 = 1"],
    ids=["huge-integer", "nul", "surrogate"],
)
def test_hostile_input_is_a_syntax_diagnostic(text: str) -> None:
    assert codes(parse_samples(text, "x")) == ["toml-syntax"]


@pytest.mark.parametrize("text", ["x = " + "[" * 5000, "samples = " + "{a=" * 3000],
                         ids=["deep-array", "deep-table"])
def test_deep_input_is_a_structure_diagnostic(text: str) -> None:
    assert codes(parse_samples(text, "x")) == ["toml-structure"]


def test_unprintable_values_in_messages_are_escaped() -> None:
    text = '[[samples]]\nid = "\ud800"\nmessages = []\nexpected = { score = 1 }\n'
    loaded = parse_samples(text, "x")
    assert loaded.diagnostics[0].message.startswith('sample "\\ud800"')


# --- properties --------------------------------------------------------------------------------

SEED_TEXTS = [p.read_text(encoding="utf-8") for p in sorted(VALID.glob("*.toml"))]
QUICK = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def assert_well_formed(loaded: SampleFile, text: str) -> None:
    assert isinstance(loaded, SampleFile)
    if not loaded.diagnostics:
        assert loaded.samples
    last_line = text.count("\n") + 1
    for problem in loaded.diagnostics:
        assert 1 <= problem.line <= last_line
        assert problem.column >= 1


@QUICK
@given(st.text(max_size=400))
def test_random_text_never_raises(text: str) -> None:
    assert_well_formed(parse_samples(text, "random.samples.toml"), text)


@st.composite
def mutated_seed(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(SEED_TEXTS))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        piece = draw(st.one_of(st.sampled_from(list("[]{}=\"'#.,\n\\ 0-")), st.text(max_size=4)))
        action = draw(st.sampled_from(["insert", "delete", "replace"]))
        end = at if action == "insert" else at + draw(st.integers(1, 8))
        text = text[:at] + ("" if action == "delete" else piece) + text[end:]
    return text


@QUICK
@given(mutated_seed())
def test_mutated_valid_files_never_raise(text: str) -> None:
    assert_well_formed(parse_samples(text, "mutated.samples.toml"), text)


def toml_value(value: object) -> str:
    """Serialize a value as an inline TOML value (test-only; tomllib cannot write)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else repr(value)
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    if isinstance(value, dict):
        pairs = ", ".join(f"{toml_string(k)} = {toml_value(v)}" for k, v in value.items())
        return "{ " + pairs + " }"
    return str(value)


def toml_string(text: str) -> str:
    return '"' + "".join(toml_char(char) for char in text) + '"'


def toml_char(char: str) -> str:
    if char in '"\\':
        return "\\" + char
    if char < " " or char == "\x7f":
        return f"\\u{ord(char):04x}"
    return char


SCALARS = st.one_of(
    st.text(max_size=8),
    st.integers(-(2**70), 2**70),
    st.integers(-5, 5),
    st.booleans(),
    st.floats(allow_nan=True),
    st.sampled_from(["user", "system", "assistant", ""]),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["role", "content", "score", "x"]), inner, max_size=3)
    ),
    max_leaves=8,
)
SAMPLE_KEYS = st.sampled_from(
    ["id", "messages", "expected", "tags", "description", "score", "reason", "extra"]
)
MESSAGES = st.lists(
    st.fixed_dictionaries({"role": st.sampled_from(["user", "system", ""]), "content": SCALARS}),
    max_size=3,
)
SAMPLE_TABLES = st.dictionaries(SAMPLE_KEYS, st.one_of(VALUES, MESSAGES), max_size=5)


@st.composite
def generated_document(draw: st.DrawFn) -> str:
    tables = draw(st.lists(SAMPLE_TABLES, max_size=4))
    layout = draw(st.sampled_from(["array-of-tables", "inline", "keyed"]))
    if layout == "inline":
        return f"samples = {toml_value(tables)}\n"
    blocks = []
    for index, table in enumerate(tables):
        header = "[[samples]]" if layout == "array-of-tables" else f'[samples."s{index}"]'
        body = "".join(f"{toml_string(k)} = {toml_value(v)}\n" for k, v in table.items())
        blocks.append(f"{header}\n{body}")
    return "\n".join(blocks)


@QUICK
@given(generated_document())
def test_generated_toml_values_never_raise(text: str) -> None:
    assert_well_formed(parse_samples(text, "generated.samples.toml"), text)


VALID_MESSAGES = st.lists(
    st.builds(Message, role=st.text(min_size=1, max_size=6), content=st.text(min_size=1)),
    min_size=1,
    max_size=3,
)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(VALID_MESSAGES, st.integers(-3, 3)), min_size=1, max_size=4))
def test_generated_valid_samples_load_exactly(samples: list[tuple[list[Message], int]]) -> None:
    text = "".join(
        f"[[samples]]\nmessages = {toml_value([m.model_dump() for m in messages])}\n"
        f"expected = {{ score = {score} }}\n"
        for messages, score in samples
    )
    loaded = parse_samples(text, "valid.samples.toml")
    assert loaded.diagnostics == []
    assert [(s.messages, s.expected.score) for s in loaded.samples] == samples
    assert [s.line for s in loaded.samples] == [3 * index + 1 for index in range(len(samples))]
