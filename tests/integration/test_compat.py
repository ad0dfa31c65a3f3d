"""Files as vibecheck and aibff users write them (tests/fixtures/compat), and the one
template rule: every field that may hold `{{var()}}`/`{{secret()}}` is rendered before
use, every other field rejects them in `validate`.

Most tests run the real CLI in a subprocess against the scripted model server.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from tests.support.engine_helpers import FAKE_KEY
from tests.support.expectations import assert_diagnostics, expectations
from tests.support.scripted_server import ScriptedServer
from turncheck.formats import templates
from turncheck.formats.sample_loader import load_samples
from turncheck.formats.suite_loader import load_suite

COMPAT = Path(__file__).parents[1] / "fixtures" / "compat"
VIBECHECK = COMPAT / "vibecheck"
AIBFF = COMPAT / "aibff"
CORPUS = sorted(p for p in COMPAT.rglob("*") if p.suffix in (".yaml", ".toml"))


def turncheck(*args: str | Path, cwd: Path,
              env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {"PATH": os.environ.get("PATH", ""), "HOME": str(cwd), **(env or {})}
    done = subprocess.run([sys.executable, "-m", "turncheck", *map(str, args)], cwd=cwd,
                          env=environment, capture_output=True, text=True, encoding="utf-8",
                          timeout=120, check=False)
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    return done


def copied(tmp_path: Path, source: Path) -> Path:
    target = tmp_path / source.name
    shutil.copyfile(source, target)
    return target


def chat_bodies(server: ScriptedServer) -> list[dict[str, object]]:
    return [r.json for r in server.requests if r.path.endswith("/chat/completions")]


# -- the corpus ------------------------------------------------------------------------------


def test_the_corpus_covers_both_tools() -> None:
    assert len([p for p in CORPUS if p.suffix == ".yaml"]) >= 8
    assert len([p for p in CORPUS if p.suffix == ".toml"]) >= 5


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_corpus_file_validates_exactly_as_declared(path: Path) -> None:
    """A file with `# expect:` lines gives exactly those diagnostics; any other, none."""
    loaded = load_samples(path) if path.suffix == ".toml" else load_suite(path)
    if expectations(path):
        assert_diagnostics(path, loaded.diagnostics)
    else:
        assert loaded.diagnostics == [], [d.compiler_style() for d in loaded.diagnostics]


@pytest.mark.parametrize("path", [p for p in CORPUS if p.suffix == ".yaml"
                                  and not any(e.severity == "error" for e in expectations(p))],
                         ids=lambda p: p.name)
def test_accepted_suites_also_pass_the_published_json_schema(path: Path) -> None:
    """Editors validate with schema/suite.schema.json: it accepts what turncheck accepts."""
    schema = json.loads((Path(__file__).parents[2] / "schema" / "suite.schema.json").read_text())
    jsonschema.validate(yaml.safe_load(path.read_text(encoding="utf-8")), schema)


def test_accepted_sample_files_keep_all_their_samples() -> None:
    counts = {p.name: len(load_samples(p).samples) for p in AIBFF.glob("*.toml")}
    assert counts["deck-with-meta.samples.toml"] == 3
    assert counts["keyed.samples.toml"] == 2
    assert counts["list-with-subtables.samples.toml"] == 2
    assert counts["input-subtable.samples.toml"] == 1  # the bad sample only is skipped


# -- templates: rendered where they may be, rejected elsewhere -------------------------------


def test_every_templated_field_is_used_in_the_corpus() -> None:
    """templated.yaml exercises each field the rule renders (keep it complete)."""
    text = (VIBECHECK / "templated.yaml").read_text(encoding="utf-8")
    for field in (*templates.METADATA_FIELDS, *templates.MESSAGE_FIELDS, *templates.EVAL_FIELDS):
        assert any(line.strip().removeprefix("- ").startswith(f"{field}:") and "{{" in line
                   for line in text.splitlines()), field


def test_a_templated_model_is_rendered_sent_and_named_in_the_report(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    scripted_server.add_rule('{"message": "", "stop": true, "reason": "goal_met"}',
                             when=lambda body: "turncheck-simulated-user" in str(body))
    scripted_server.add_rule('{"pass": true, "reason": "names Acme"}', contains="Names Acme")
    scripted_server.add_rule("Welcome to Acme Bikes!")
    suite = copied(tmp_path, VIBECHECK / "templated.yaml")
    done = turncheck("run", "--mode", "live", "--var", "model_name=gpt-4o-mini",
                     "--var", f"server={scripted_server.base_url}", "--var", "competitor=Zed",
                     "--json", tmp_path / "report.json", suite, cwd=tmp_path,
                     env={"OPENAI_API_KEY": FAKE_KEY})

    assert done.returncode == 0, done.stdout + done.stderr
    bodies = chat_bodies(scripted_server)
    assert bodies and all(body["model"] == "gpt-4o-mini" for body in bodies)
    embeddings = [r.json for r in scripted_server.requests if r.path.endswith("/embeddings")]
    assert embeddings and embeddings[0]["model"] == "text-embedding-3-small"
    sent = json.dumps([r.json for r in scripted_server.requests])
    assert "{{" not in sent and "Acme Bikes" in sent  # system prompt, prompt, criteria
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    [result] = report["suites"]
    assert (result["model"], result["provider"]) == ("gpt-4o-mini", "openai")
    assert result["evals"][0]["status"] == "pass"
    assert "gpt-4o-mini" in done.stdout


def test_without_the_var_run_names_the_missing_variable_and_its_line(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    suite = copied(tmp_path, VIBECHECK / "templated.yaml")
    done = turncheck("run", "--mode", "live", "--var", f"server={scripted_server.base_url}",
                     suite, cwd=tmp_path, env={"OPENAI_API_KEY": FAKE_KEY})

    assert done.returncode == 1
    assert "metadata.model (line 4)" in done.stdout
    assert "var 'model_name' is not set" in done.stdout
    assert chat_bodies(scripted_server) == []  # nothing is sent with a literal template


def test_a_missing_var_in_the_system_prompt_is_reported_with_its_line(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    suite = tmp_path / "system.yaml"
    suite.write_text(
        "metadata:\n  name: system\n  model: gpt-4o-mini\n"
        "  system_prompt: \"You work for {{var('company')}}.\"\n"
        "evals:\n  - prompt: Hi.\n    checks: [{match: '*'}]\n", encoding="utf-8")
    done = turncheck("run", "--mode", "live", "--provider", "openai", "--base-url",
                     scripted_server.base_url, suite, cwd=tmp_path,
                     env={"OPENAI_API_KEY": FAKE_KEY})
    assert done.returncode == 1
    assert "metadata.system_prompt (line 4): var 'company' is not set" in done.stdout
    assert chat_bodies(scripted_server) == []


def test_a_rendered_provider_or_url_meets_the_same_rules_as_a_literal_one(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    suite = copied(tmp_path, VIBECHECK / "templated.yaml")
    done = turncheck("run", "--mode", "live", "--var", "model_name=gpt-4o-mini",
                     "--var", "server=ftp://example.invalid", suite, cwd=tmp_path,
                     env={"OPENAI_API_KEY": FAKE_KEY})
    assert done.returncode == 1
    assert "metadata.base_url (line 8): the rendered value is invalid" in done.stdout
    assert chat_bodies(scripted_server) == []


def test_a_template_in_a_field_that_takes_none_is_a_validate_error(tmp_path: Path) -> None:
    suite = copied(tmp_path, VIBECHECK / "template-in-name.yaml")
    done = turncheck("validate", suite, cwd=tmp_path)
    assert done.returncode == 1
    assert f"{suite.name}:16:11: error: \"name\" takes no {{{{var()}}}}" in done.stdout
    assert f"{suite.name}:7:9: error:" in done.stdout


def test_a_secret_base_url_is_rendered_and_never_recorded(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    scripted_server.add_rule("hello")
    suite = tmp_path / "secret-url.yaml"
    suite.write_text(
        "metadata:\n  name: secret url\n  model: gpt-4o-mini\n  provider: openai\n"
        "  base_url: \"{{secret('TC_PRIVATE_URL')}}\"\n"
        "evals:\n  - prompt: Say hello.\n    checks: [{match: '*hello*'}]\n",
        encoding="utf-8")
    done = turncheck("record", "--json", tmp_path / "report.json", suite, cwd=tmp_path,
                     env={"OPENAI_API_KEY": FAKE_KEY, "TC_PRIVATE_URL": scripted_server.base_url})
    assert done.returncode == 0, done.stdout + done.stderr
    [request] = scripted_server.requests
    assert request.path.endswith("/chat/completions")
    cassette = tmp_path / "secret-url.cassette.yaml"
    written = cassette.read_text(encoding="utf-8") + (tmp_path / "report.json").read_text()
    host = scripted_server.base_url.removeprefix("http://")
    assert host not in written + done.stdout + done.stderr


# -- the re-record hint ----------------------------------------------------------------------


def test_the_record_hint_keeps_the_options_that_shaped_the_requests(tmp_path: Path) -> None:
    suite = copied(tmp_path, VIBECHECK / "basic.yaml")
    done = turncheck("run", "--provider", "openai", "--base-url", "http://127.0.0.1:9/v1",
                     "--var", "tone=very warm", suite, cwd=tmp_path)
    assert done.returncode == 1
    assert ("record it with: turncheck record --provider openai --base-url "
            "http://127.0.0.1:9/v1 --var 'tone=very warm' ") in done.stdout


# -- aibff sample files ----------------------------------------------------------------------


def test_an_aibff_deck_with_meta_and_contexts_validates_with_warnings_and_grades(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    samples = copied(tmp_path, AIBFF / "deck-with-meta.samples.toml")
    checked = turncheck("validate", samples, cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout
    assert "warning: table [meta] is ignored" in checked.stdout
    assert "warning: table [contexts] is ignored" in checked.stdout

    for needle, score in (("#1042", 3), ("#2077", -3), ("#3310", 0)):
        scripted_server.add_rule(json.dumps({"score": score, "reason": "r"}), contains=needle)
    done = turncheck("run", "--mode", "live", "--provider", "openai", "--base-url",
                     scripted_server.base_url, "--json", tmp_path / "report.json", samples,
                     cwd=tmp_path, env={"OPENAI_API_KEY": FAKE_KEY})
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    [graded] = report["calibrations"]
    assert [row["id"] for row in graded["samples"]] == ["tracking-link", "rude-brush-off",
                                                        "vague"]
    assert [row["score"] for row in graded["samples"]] == [3, -3, 0]
    assert len(chat_bodies(scripted_server)) == 3
    assert done.returncode == 0, done.stdout + done.stderr
