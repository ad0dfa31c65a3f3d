"""The repository's workflow files and the release: actionlint-clean, Node 24 in CI, and
the release rewrite of action.yml to a prebuilt image."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.support.workflow_lint import lint

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
RELEASE_TOOL = ROOT / "tools" / "release_action.py"


def test_every_workflow_file_passes_actionlint() -> None:
    assert len(WORKFLOWS) >= 6
    done = lint(WORKFLOWS, ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


def test_actionlint_would_catch_a_broken_workflow(tmp_path: Path) -> None:
    broken = tmp_path / ".github" / "workflows" / "broken.yml"
    broken.parent.mkdir(parents=True)
    broken.write_text("on: pull_request\njobs:\n  a:\n    runs-on: ubuntu-latest\n"
                      "    steps:\n      - run: echo ${{ github.shaa }}\n")
    assert lint([broken], tmp_path).returncode != 0


def test_ci_runs_on_node_24() -> None:
    ci = yaml.safe_load((ROOT / ".github" / "workflows" / "ci.yml").read_text())
    steps = ci["jobs"]["test"]["steps"]
    node = [s for s in steps if str(s.get("uses", "")).startswith("actions/setup-node@")]
    assert node and str(node[0]["with"]["node-version"]) == "24"


def run_release_tool(action: Path, image: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(RELEASE_TOOL), str(action), image],
                          capture_output=True, text=True, timeout=60, check=False)


def test_the_release_pins_action_yml_to_the_prebuilt_image(tmp_path: Path) -> None:
    source = (ROOT / "action.yml").read_text()
    assert yaml.safe_load(source)["runs"] == {"using": "docker", "image": "Dockerfile"}
    released = tmp_path / "action.yml"
    released.write_text(source)
    image = "docker://ghcr.io/octo-org/turncheck:v1.2.3"
    done = run_release_tool(released, image)
    assert done.returncode == 0, done.stderr
    before, after = yaml.safe_load(source), yaml.safe_load(released.read_text())
    assert after["runs"] == {"using": "docker", "image": image}
    assert after["inputs"] == before["inputs"] and after["outputs"] == before["outputs"]
    # Released twice (a re-run of the job) is refused, not silently doubled.
    assert run_release_tool(released, image).returncode == 1


@pytest.mark.parametrize("image", ["ghcr.io/o/turncheck:v1", "docker://GHCR.io/O/t:v1",
                                   "docker://ghcr.io/o/turncheck"])
def test_the_release_tool_refuses_a_malformed_image(tmp_path: Path, image: str) -> None:
    released = tmp_path / "action.yml"
    released.write_text((ROOT / "action.yml").read_text())
    assert run_release_tool(released, image).returncode == 1
    assert "image: Dockerfile" in released.read_text()


def test_the_release_workflow_pushes_the_image_and_moves_the_major_tag() -> None:
    release = yaml.safe_load((ROOT / ".github" / "workflows" / "release.yml").read_text())
    assert release[True]["push"]["tags"] == ["v*"]  # PyYAML reads `on` as True
    assert release["permissions"] == {"contents": "write", "packages": "write"}
    script = "\n".join(s.get("run", "") for s in release["jobs"]["release"]["steps"])
    assert 'docker push "$IMAGE:$VERSION"' in script
    assert "tools/release_action.py action.yml" in script
    assert 'git push -f origin "refs/tags/$MAJOR"' in script
