"""Scorers on known responses: list_f1, name matching, extraction, order, self-assessment, judge."""

from __future__ import annotations

import pytest

from turncheck.engine.judge import JudgeAnswerError
from turncheck.engine.scorers.extract import extract
from turncheck.engine.scorers.judge_scale import parse_rating
from turncheck.engine.scorers.list_f1 import list_f1
from turncheck.engine.scorers.order import order_detail
from turncheck.engine.scorers.self_assessment import as_fraction, find_estimate
from turncheck.formats import hierarchy
from turncheck.formats.names import match_names, normalise, same, similarity

TRUTH = ["Time", "Singlets", "Live", "Lymphocytes", "CD3+ T cells", "CD4+ T cells",
         "CD8+ T cells", "B cells"]

RESPONSE = """Here is the hierarchy I would use:

1. **Singlets** (FSC-A vs FSC-H)
2. **Live cells**: viability dye negative
   - Lymphocytes
     - T cells (CD3+)
       - CD4+ T cells
       - CD8 positive T cells
     - Monocytes
     - NK cells (CD56+)
"""


def test_list_f1_on_a_known_response_is_exact() -> None:
    detail = list_f1(extract(RESPONSE).names, hierarchy.names(TRUTH))
    assert detail.extracted == ["Singlets", "Live cells", "Lymphocytes", "T cells (CD3+)",
                                "CD4+ T cells", "CD8 positive T cells", "Monocytes",
                                "NK cells (CD56+)"]
    # 6 of the 8 extracted names are right; 6 of the 8 expected names were found.
    assert detail.precision == 6 / 8
    assert detail.recall == 6 / 8
    assert detail.f1 == 2 * (6 / 8) * (6 / 8) / (6 / 8 + 6 / 8)
    assert detail.missing == ["Time", "B cells"]
    assert detail.hallucinated == ["Monocytes", "NK cells (CD56+)"]
    assert {(m.predicted, m.expected) for m in detail.matched} == {
        ("Singlets", "Singlets"), ("Live cells", "Live"), ("Lymphocytes", "Lymphocytes"),
        ("T cells (CD3+)", "CD3+ T cells"), ("CD4+ T cells", "CD4+ T cells"),
        ("CD8 positive T cells", "CD8+ T cells"),
    }


def test_list_f1_unequal_precision_and_recall() -> None:
    detail = list_f1(["Singlets", "Live", "Debris"], ["Time", "Singlets", "Live", "Lymphocytes",
                                                      "Monocytes"])
    assert (detail.precision, detail.recall) == (2 / 3, 2 / 5)
    assert detail.f1 == pytest.approx(2 * (2 / 3) * (2 / 5) / (2 / 3 + 2 / 5))
    assert detail.missing == ["Time", "Lymphocytes", "Monocytes"]
    assert detail.hallucinated == ["Debris"]


def test_list_f1_edges() -> None:
    assert list_f1([], []).f1 == 1.0
    nothing = list_f1([], ["Singlets"])
    assert (nothing.precision, nothing.recall, nothing.f1) == (0.0, 0.0, 0.0)
    extra = list_f1(["Singlets"], [])
    assert (extra.precision, extra.recall) == (0.0, 1.0)
    # Repeats of one name count once; matching is one-to-one.
    repeated = list_f1(["Singlets", "singlets", "Singlet"], ["Singlets", "Live"])
    assert (repeated.precision, repeated.recall) == (1.0, 0.5)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("CD3+ T cells", "T cells (CD3+)"),
        ("CD3+ T cells", "CD3 positive T-cells"),
        ("CD4-CD8- T cells", "CD4− CD8− T cells"),
        ("CD56bright NK cells", "NK cells, CD56 bright"),
        ("Singlets", "Singlet gate"),
        ("B cells (CD19+)", "CD19+ B cells"),
        ("HLA-DR+ monocytes", "**HLA-DR+ Monocytes**"),
    ],
)
def test_fuzzy_matching_equates_spellings_of_one_population(a: str, b: str) -> None:
    assert same(a, b), (normalise(a), normalise(b), similarity(a, b))


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("CD4+ T cells", "CD8+ T cells"),
        ("CD16+ NK cells", "CD56+ NK cells"),
        ("CD56dim NK cells", "CD56bright NK cells"),
        ("Naive B cells", "Memory B cells"),
        ("CD3+ T cells", "CD3- T cells"),
        ("Monocytes", "Lymphocytes"),
    ],
)
def test_fuzzy_matching_keeps_different_populations_apart(a: str, b: str) -> None:
    assert not same(a, b), (normalise(a), normalise(b), similarity(a, b))


def test_aliases_map_names_before_matching() -> None:
    assert match_names(["Viability"], ["Live"]) == []
    [match] = match_names(["Viability"], ["Live"], aliases={"viability": "Live"})
    assert (match.predicted, match.expected) == ("Viability", "Live")


@pytest.mark.parametrize(
    ("text", "outline"),
    [
        ("- A\n  - B\n    * C\n  - D\n- E", "- A\n  - B\n    - C\n  - D\n- E"),
        ("1. A\n2. B\n   a. C\n3) D", "- A\n- B\n  - C\n- D"),
        ("• A\n\t• B", "- A\n  - B"),
        ("Singlets > Live > Lymphocytes", "- Singlets\n  - Live\n    - Lymphocytes"),
        ("- Live → CD3+ T cells -> CD4+ T cells", "- Live\n  - CD3+ T cells\n    - CD4+ T cells"),
        ('```json\n["A", "B"]\n```', "- A\n- B"),
        ('{"name": "A", "children": [{"name": "B", "children": ["C"]}]}', "- A\n  - B\n    - C"),
        ('Sure: {"Singlets": {"Live": ["Lymphocytes"]}}',
         "- Singlets\n  - Live\n    - Lymphocytes"),
        ("**Lymphocytes:**\n- T cells\n- B cells\n\nMonocytes:\n- Classical",
         "- Lymphocytes\n  - T cells\n  - B cells\n- Monocytes\n  - Classical"),
        ("I would gate on Time, Singlets, Live and Lymphocytes.",
         "- Time\n- Singlets\n- Live\n- Lymphocytes"),
        ("Here are the gates:\n- Gate 1: Time\n- Step 2. Singlets - remove doublets",
         "- Time\n- Singlets"),
    ],
)
def test_extraction_of_lists_and_hierarchies(text: str, outline: str) -> None:
    assert extract(text).outline == outline


def test_extraction_skips_prose() -> None:
    text = ("Flow cytometry is a technique used to analyse cells in a fluid.\n"
            "- It is very important to remove dead cells before any further analysis step\n"
            "- Singlets")
    assert extract(text).names == ["Singlets"]


def test_hierarchy_filters() -> None:
    truth = [{"Singlets": [{"Live": [{"Lymphocytes": ["CD3+ T cells", "B cells"]}]}]}]
    assert hierarchy.names(truth) == ["Singlets", "Live", "Lymphocytes", "CD3+ T cells",
                                      "B cells"]
    assert hierarchy.names(truth, 2) == ["Singlets", "Live"]
    assert hierarchy.names(hierarchy.subtree(truth, "lymphocyte")) == ["CD3+ T cells", "B cells"]
    assert hierarchy.precedence(truth)[:2] == [["Singlets", "Live"], ["Live", "Lymphocytes"]]
    assert hierarchy.intersect(["T cells (CD3+)", "NK"], ["CD3+ T cells"]) == ["T cells (CD3+)"]
    assert hierarchy.difference(["T cells (CD3+)", "NK"], ["CD3+ T cells"]) == ["NK"]
    assert hierarchy.outline({"name": "A", "children": [{"name": "B"}]}) == "- A\n  - B"
    with pytest.raises(hierarchy.HierarchyError, match="no population named"):
        hierarchy.subtree(truth, "Monocytes")
    with pytest.raises(hierarchy.HierarchyError):
        hierarchy.names([1.5, {"x": True}])


def test_order_pairs() -> None:
    items = extract("- Time\n- Live\n- Singlets\n  - Lymphocytes").names
    value, detail = order_detail(items, [["Singlets", "Live"], ["Time", "Lymphocytes"],
                                         ["Singlets", "Monocytes"]])
    assert [p.status for p in detail.pairs] == ["reversed", "ok", "missing"]
    assert (value, detail.satisfied, detail.counted) == (1 / 3, 1, 3)
    skipped, detail = order_detail(items, [["Singlets", "Live"], ["Time", "Lymphocytes"],
                                           ["Singlets", "Monocytes"]], missing="skip")
    assert (skipped, detail.counted) == (1 / 2, 2)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("My estimate: 62%", 0.62),
        ("I'd say my F1 is about 0.4.", 0.4),
        ("I got 5 out of 8 gates right, so about 60 percent.", 0.6),
        ("I think I matched 3/4 of the gates.", 0.75),
        ("Self-assessment score: 7", 0.07),
        ("No idea.", None),
    ],
)
def test_self_assessment_estimates(text: str, value: float | None) -> None:
    found = find_estimate(text)
    assert (found[0] if found else None) == (pytest.approx(value) if value is not None else None)


def test_self_assessment_custom_pattern_and_fractions() -> None:
    found = find_estimate("Gates right: 4. Overall: 80%", r"Gates right: (\d+)")
    assert found == (0.04, "4")
    assert as_fraction("150%") is None
    assert as_fraction("3/0") is None


def test_judge_scale_answers() -> None:
    assert parse_rating('{"score": 4, "reason": "good"}') == (4, "good")
    assert parse_rating('```json\n{"score": "5", "reason": "x"}\n```') == (5, "x")
    for bad in ("4", '{"score": 6, "reason": "x"}', '{"score": 3}', '{"score": true, '
                '"reason": "x"}', "[]"):
        with pytest.raises(JudgeAnswerError):
            parse_rating(bad)
