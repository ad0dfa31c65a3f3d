"""Every document goes through one reader (`turncheck.report.files`): a protocol-only, a
calibration-only and a mixed run report are read and rendered by `compare`, `report` and
the action's bundle reader alike; documents name their kind, older kind-less ones still
load, and what is not a document is refused in one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from turncheck.cli.main import main
from turncheck.compare.comparison import compare_reports
from turncheck.github.bundle import bundle_from_json
from turncheck.github.job import ActionError, read_bundle
from turncheck.render.comment import CommentContext, comment_markdown
from turncheck.report.bundle import ReportBundle
from turncheck.report.comparison import Comparison
from turncheck.report.files import ReportError, read_report, write_report
from turncheck.report.run import Report

ROOT = Path(__file__).resolve().parents[2]
SHAPES = {
    "protocol-only": ["flow-gating"],
    "calibration-only": ["support/tone.samples.toml"],
    "mixed": ["flow-gating", "support", "math"],
}
SHOWN = {
    "protocol-only": ["t-cell-memory"],
    "calibration-only": ["support/tone.samples.toml"],
    "mixed": ["t-cell-memory", "support/tone.samples.toml", "arithmetic"],
}


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each shape's run report, replayed from the examples' cassettes."""
    folder = tmp_path_factory.mktemp("documents")
    examples = folder / "examples"
    shutil.copytree(ROOT / "examples", examples)
    made = {}
    for shape, paths in SHAPES.items():
        made[shape] = folder / f"{shape}.json"
        main(["run", *(str(examples / p) for p in paths), "--quiet", "--json",
              str(made[shape])])
    return made


def kinds_of(report: Report) -> set[str]:
    return {kind for kind, present in (("evals", report.suites), ("protocols", report.protocols),
                                       ("calibrations", report.calibrations)) if present}


def test_the_shapes_hold_what_they_are_named_for(reports: dict[str, Path]) -> None:
    found = {shape: kinds_of(read_report(path, expect=Report)) for shape, path in reports.items()}
    assert found == {"protocol-only": {"protocols"}, "calibration-only": {"calibrations"},
                     "mixed": {"evals", "protocols", "calibrations"}}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_compare_reads_and_prints_each_shape(reports: dict[str, Path], shape: str,
                                             tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "comparison.json"
    path = str(reports[shape])
    assert main(["compare", path, path, "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert all(name in printed for name in SHOWN[shape] if name != "arithmetic")
    assert isinstance(read_report(out), Comparison)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_report_renders_each_shape_and_its_comparison(reports: dict[str, Path], shape: str,
                                                      tmp_path: Path) -> None:
    comparison = tmp_path / "comparison.json"
    path = str(reports[shape])
    main(["compare", path, path, "--json", str(comparison)])
    # A comparison alone holds no calibration sample that did not flip.
    sources = ((path, None, SHOWN[shape]), (path, path, SHOWN[shape]),
               (str(comparison), None, [n for n in SHOWN[shape] if "samples" not in n]))
    for source, base, shown in sources:
        html = tmp_path / "report.html"
        assert main(["report", source, *(["--base", base] if base else []),
                     "--out", str(html)]) == 0
        text = html.read_text(encoding="utf-8")
        assert all(name in text for name in shown)


def bundle_of(report: Report) -> ReportBundle:
    return ReportBundle(repository="o/r", event="pull_request", pull_number=1, base_sha="b" * 40,
                        head_sha="a" * 40, head=report, base=report)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_action_reads_each_shape_in_its_bundle_and_renders_the_comment(
        reports: dict[str, Path], shape: str, tmp_path: Path) -> None:
    path = tmp_path / "turncheck-report.json"
    write_report(path, bundle_of(read_report(reports[shape], expect=Report)), indent=1)
    bundle = read_bundle(path, tmp_path)
    assert bundle_from_json(path.read_bytes()) == bundle
    comparison = compare_reports(bundle.base, bundle.head)
    body = comment_markdown(comparison, CommentContext(fail_reasons=[], head=bundle.head,
                                                     base=bundle.base))
    assert all(name in body for name in SHOWN[shape] if name != "t-cell-memory")
    html = tmp_path / "bundle.html"
    assert main(["report", str(path), "--out", str(html)]) == 0


def test_documents_name_their_kind_and_kindless_ones_load_as_before(
        reports: dict[str, Path], tmp_path: Path) -> None:
    run = json.loads(reports["mixed"].read_text(encoding="utf-8"))
    assert run["kind"] == "run"
    comparison = compare_reports(read_report(reports["mixed"], expect=Report),
                                 read_report(reports["mixed"], expect=Report))
    assert json.loads(comparison.model_dump_json())["kind"] == "comparison"
    for document, model in ((run, Report), (json.loads(comparison.model_dump_json()), Comparison)):
        del document["kind"]  # as written by turncheck before documents named their kind
        old = tmp_path / "old.json"
        old.write_text(json.dumps(document), encoding="utf-8")
        assert isinstance(read_report(old), model)


def test_every_reader_refuses_the_wrong_document_with_the_same_words(
        reports: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    comparison = tmp_path / "comparison.json"
    path = str(reports["calibration-only"])
    main(["compare", path, path, "--json", str(comparison)])
    capsys.readouterr()
    assert main(["compare", str(comparison), path]) == 2
    assert "is a turncheck comparison, not a run report" in capsys.readouterr().err
    with pytest.raises(ActionError, match="is a turncheck comparison, not an action report"):
        read_bundle(comparison, tmp_path)
    assert main(["report", str(comparison), "--base", path]) == 2
    assert "--base goes with a run report" in capsys.readouterr().err


@pytest.mark.parametrize(("text", "words"), [
    ('{"kind": "run", "schema_version": 99}', "run report schema version 99; this turncheck"),
    ('{"kind": "run", "schema_version": "999"}', "schema_version must be an integer, not a str"),
    ('{"kind": "run", "schema_version": true}', "schema_version must be an integer, not a bool"),
    ('{"kind": "run", "schema_version": 1.5}', "schema_version must be an integer, not a num"),
    ('{"kind": "nonsense"}', "unknown kind 'nonsense'"),
    ('{"a": ' + "[" * 5000 + "]" * 5000 + "}", "JSON nested deeper than 256 levels"),
    ("{not json", "is not a turncheck report"),
])
def test_what_is_no_readable_document_is_one_line_in_every_command(
        tmp_path: Path, text: str, words: str, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(text, encoding="utf-8")
    with pytest.raises(ReportError, match=words.replace("(", r"\(")):
        read_report(bad)
    for argv in (["report", str(bad)], ["compare", str(bad), str(bad)], ["merge", str(bad)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert str(bad) in err and "Traceback" not in err and len(err.splitlines()) == 1


def test_every_kind_of_case_exposes_one_row(reports: dict[str, Path]) -> None:
    report = read_report(reports["mixed"], expect=Report)
    rows = report.rows()
    assert {row.kind.value for row in rows} == {"eval", "case", "sample file"}
    by_kind = {kind: [row for row in rows if row.kind.value == kind]
               for kind in ("eval", "case", "sample file")}
    assert [row.id for row in by_kind["eval"]] == [e.name for s in report.suites for e in s.evals]
    assert sum(row.spend.tokens for row in by_kind["eval"]) == report.totals.usage.total
    protocol = report.protocols[0]
    assert sum(row.spend.judge_tokens for row in by_kind["case"]) == \
        protocol.judge_usage.total
    graded = [c for c in report.calibrations if c.graded]
    assert [(row.id, row.samples + (c.errors or 0)) for row, c in
            zip(by_kind["sample file"], graded, strict=True)] == [
        (c.path, len(c.samples)) for c in graded]
    assert all(row.file and row.verdict is None for row in rows)


@pytest.mark.parametrize("option", ["--json", "--html"])
def test_a_document_that_cannot_be_written_is_one_usage_error(
        tmp_path: Path, option: str, capsys: pytest.CaptureFixture[str]) -> None:
    """One writer: `run` refuses to write through a symlink as `compare` does (exit 2)."""
    target = tmp_path / "elsewhere"
    (tmp_path / "out").symlink_to(target)
    shutil.copytree(ROOT / "examples" / "math", tmp_path / "math")
    assert main(["run", str(tmp_path / "math"), "--quiet", option, str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"turncheck: error: cannot write {tmp_path / 'out'}" in err and not target.exists()


@pytest.mark.parametrize("version", ["999", True, 2.0])
def test_a_whole_report_whose_schema_version_is_no_integer_is_refused(
        reports: dict[str, Path], tmp_path: Path, version: object) -> None:
    """Issue 46, item 8: `"999"` or `true` would be read as a number and pass the refusal
    of documents from a newer turncheck."""
    document = json.loads(reports["mixed"].read_text())
    document["schema_version"] = version
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(ReportError, match="schema_version must be an integer"):
        read_report(forged)
    assert main(["report", str(forged)]) == 2
