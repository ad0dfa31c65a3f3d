"""Runner I/O: command escaping, outputs, step summary, and untrusted text in the log."""

from __future__ import annotations

import io
import re
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.logs import commands_in_log
from turncheck.github.workflow import (
    STEP_SUMMARY_LIMIT_BYTES,
    STEP_SUMMARY_TRUNCATION_NOTE,
    StopCommands,
    add_mask,
    annotation_command,
    append_step_summary,
    escape_data,
    escape_property,
    group,
    print_untrusted,
    write_outputs,
)


def parse_output_file(text: str) -> dict[str, str]:
    """Read `$GITHUB_OUTPUT` the way the runner does on Linux (lines split on `\\n`)."""
    lines = iter(text.split("\n"))
    outputs: dict[str, str] = {}
    for line in lines:
        if not line:
            continue
        equals, heredoc = line.find("="), line.find("<<")
        if heredoc >= 0 and (equals < 0 or heredoc < equals):
            name, delimiter = line[:heredoc], line[heredoc + 2 :]
            outputs[name] = "\n".join(read_until(lines, delimiter))
        else:
            name, _, value = line.partition("=")
            outputs[name] = value
    return outputs


def read_until(lines: Iterator[str], delimiter: str) -> list[str]:
    collected: list[str] = []
    for line in lines:
        if line == delimiter:
            return collected
        collected.append(line)
    raise AssertionError(f"delimiter {delimiter!r} not found")


# --- escaping and commands -------------------------------------------------------------


def test_escape_data() -> None:
    assert escape_data("100%\r\n::error::x, y: z") == "100%25%0D%0A::error::x, y: z"


def test_escape_property() -> None:
    assert escape_property("a:b,c%\r\n") == "a%3Ab%2Cc%25%0D%0A"


def test_annotation_command_with_all_properties() -> None:
    command = annotation_command(
        "error", "bad\nthing 100%", file="evals/a,b.yaml", line=3, col=7, title="turn 2: failed"
    )
    assert command == (
        "::error file=evals/a%2Cb.yaml,line=3,col=7,title=turn 2%3A failed::bad%0Athing 100%25"
    )


def test_annotation_command_only_given_properties() -> None:
    assert annotation_command("notice", "hi") == "::notice::hi"
    assert annotation_command("warning", "w", line=1) == "::warning line=1::w"


def test_annotation_message_cannot_start_a_second_command() -> None:
    command = annotation_command("error", "x\n::add-mask::y")
    assert command == "::error::x%0A::add-mask::y"


def test_add_mask_one_line_per_nonblank_line() -> None:
    assert add_mask("sk-1\n\n  sk-2 \r\n50%\nsk-1") == [
        "::add-mask::sk-1",
        "::add-mask::sk-2",
        "::add-mask::50%25",
    ]
    assert add_mask("") == []


# --- stop-commands ---------------------------------------------------------------------


def test_stop_commands_wraps_and_token_is_random() -> None:
    stream = io.StringIO()
    with StopCommands(stream) as first:
        stream.write("untrusted\n")
    with StopCommands(stream) as second:
        pass
    assert first.token != second.token
    assert re.fullmatch(r"[0-9a-f]{32}", first.token)
    assert stream.getvalue().split("\n")[:3] == [
        f"::stop-commands::{first.token}",
        "untrusted",
        f"::{first.token}::",
    ]


def test_stop_commands_resumes_after_an_exception() -> None:
    stream = io.StringIO()
    with pytest.raises(RuntimeError), StopCommands(stream) as stopped:
        raise RuntimeError("boom")
    assert stream.getvalue().endswith(f"::{stopped.token}::\n")


def test_print_untrusted_hostile_line_sits_between_stop_and_resume() -> None:
    stream = io.StringIO()
    print_untrusted("model said:\n::error::pwned\n::add-mask::x", stream)
    lines = stream.getvalue().split("\n")
    token = lines[0].removeprefix("::stop-commands::")
    assert lines == [
        f"::stop-commands::{token}",
        "model said:",
        "::error::pwned",
        "::add-mask::x",
        f"::{token}::",
        "",
    ]
    assert commands_in_log(stream.getvalue()) == []


def test_print_untrusted_cannot_guess_the_resume_line() -> None:
    stream = io.StringIO()
    print_untrusted("::stop-commands::guess\n::guess::\n::error::pwned\n", stream)
    print_untrusted("::error::again", stream)
    assert commands_in_log(stream.getvalue()) == []


def test_group_escapes_title() -> None:
    stream = io.StringIO()
    with group("suite\n::error::x", stream):
        stream.write("inside\n")
    assert stream.getvalue() == "::group::suite%0A::error::x\ninside\n::endgroup::\n"


# --- outputs ---------------------------------------------------------------------------

TRICKY_VALUES = {
    "empty": "",
    "plain": "3",
    "multi": "line one\nline two",
    "trailing-newline": "x\n",
    "leading_newline": "\ny",
    "looks-like-heredoc": "a<<EOF\nb=c",
    "carriage": "a\r\nb\r",
    "lookalike": "ghadelimiter_00000000-0000-0000-0000-000000000000",
    "unicode": "coût → 1 €",
}


def test_write_outputs_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "output"
    path.write_text("existing=1\n", encoding="utf-8")
    write_outputs(path, TRICKY_VALUES)
    assert parse_output_file(path.read_bytes().decode("utf-8")) == {
        "existing": "1",
        **TRICKY_VALUES,
    }


def test_write_outputs_regenerates_a_delimiter_found_in_the_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    candidates = iter([uuid.UUID(int=1), uuid.UUID(int=2)])
    monkeypatch.setattr(uuid, "uuid4", lambda: next(candidates))
    first_candidate = f"ghadelimiter_{uuid.UUID(int=1)}"
    value = f"before\n{first_candidate}\nevil=1"
    path = tmp_path / "output"
    write_outputs(path, {"report": value})
    text = path.read_bytes().decode("utf-8")
    assert text.startswith(f"report<<ghadelimiter_{uuid.UUID(int=2)}\n")
    assert parse_output_file(text) == {"report": value}


@given(st.text(alphabet=st.characters(codec="utf-8")))
def test_write_outputs_property_round_trip(value: str) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory, "output")
        write_outputs(path, {"value": value})
        assert parse_output_file(path.read_bytes().decode("utf-8")) == {"value": value}


@pytest.mark.parametrize("name", ["", "1st", "a b", "a=b", "a<<b", "ünicode", "x\ny"])
def test_write_outputs_rejects_invalid_names(tmp_path: Path, name: str) -> None:
    path = tmp_path / "output"
    with pytest.raises(ValueError, match="invalid output name"):
        write_outputs(path, {"ok": "1", name: "x"})
    assert not path.exists()


# --- step summary ----------------------------------------------------------------------


def test_step_summary_small_report_is_appended_verbatim(tmp_path: Path) -> None:
    path = tmp_path / "summary.md"
    assert append_step_summary(path, "# one\n") is False
    assert append_step_summary(path, "## two @user\n") is False
    assert path.read_bytes().decode("utf-8") == "# one\n## two @user\n"


def test_step_summary_truncates_at_line_boundary(tmp_path: Path) -> None:
    path = tmp_path / "summary.md"
    markdown = "".join(f"| row {n} | ✓ |\n" for n in range(200_000))
    assert append_step_summary(path, markdown) is True
    data = path.read_bytes()
    assert len(data) <= STEP_SUMMARY_LIMIT_BYTES
    text = data.decode("utf-8")
    assert text.endswith(STEP_SUMMARY_TRUNCATION_NOTE)
    kept = text.removesuffix(STEP_SUMMARY_TRUNCATION_NOTE)
    assert kept.endswith("\n") and markdown.startswith(kept)


def test_step_summary_counts_what_the_step_already_wrote(tmp_path: Path) -> None:
    path = tmp_path / "summary.md"
    path.write_bytes(b"x" * (STEP_SUMMARY_LIMIT_BYTES - 1_000) + b"\n")
    assert append_step_summary(path, "line\n" * 1_000) is True
    assert path.stat().st_size <= STEP_SUMMARY_LIMIT_BYTES


def test_step_summary_one_long_line_is_cut_at_a_character_boundary(tmp_path: Path) -> None:
    path = tmp_path / "summary.md"
    assert append_step_summary(path, "€" * STEP_SUMMARY_LIMIT_BYTES) is True
    data = path.read_bytes()
    assert len(data) <= STEP_SUMMARY_LIMIT_BYTES
    assert data.decode("utf-8").endswith(STEP_SUMMARY_TRUNCATION_NOTE)


def test_step_summary_full_file_gets_nothing_more(tmp_path: Path) -> None:
    path = tmp_path / "summary.md"
    path.write_bytes(b"x" * STEP_SUMMARY_LIMIT_BYTES)
    assert append_step_summary(path, "more\n") is True
    assert path.stat().st_size == STEP_SUMMARY_LIMIT_BYTES
