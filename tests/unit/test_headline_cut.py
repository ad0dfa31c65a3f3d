"""Issue 44, item 8: the comment's heading cuts a long detail after a whole word
("no verdict on the app…"), never inside one ("no verdict on the a…")."""

from __future__ import annotations

from tests.unit.test_compare import ev, one_suite
from turncheck.render.comment import comment_headline

REASON = ("the suite could not be checked: no verdict on the app because the simulated "
          "user's persona changed")


def test_a_long_reason_in_the_heading_is_cut_after_a_whole_word() -> None:
    title = comment_headline(one_suite([ev("a")], [ev("a")]), [REASON]).title
    detail = title.split("check failed: ")[1].split("…")[0]
    assert REASON.startswith(detail + " "), title
    assert detail.endswith("no verdict on the app")


def test_a_long_single_word_is_still_cut_to_fit() -> None:
    title = comment_headline(one_suite([ev("a")], [ev("a")]), ["x" * 200]).title
    assert "x" * 59 + "…" in title and "x" * 60 not in title
