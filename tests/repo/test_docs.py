"""The README a newcomer reads and the docs/ site: short, linked, built strictly."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def mkdocs_build(project: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(site)], cwd=project, capture_output=True, text=True,
                          timeout=300, check=False)


def test_the_readme_is_short_and_every_docs_link_in_it_exists() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    targets = [t for t in LINK.findall(text) if not t.startswith("http")]
    assert "docs/img/comment.png" in targets  # the picture of the comment
    missing = [t for t in targets if t != "docs/img/comment.png" and not (ROOT / t).exists()]
    assert not missing
    for page in ("suites", "cli", "action", "security", "statistics", "budgets",
                 "benchmarks", "comparison", "configuration", "migrating-from-vibecheck"):
        assert f"(docs/{page}.md" in text, page
    assert "SPEC" not in text


def test_the_readme_quick_start_commands_are_the_real_ones() -> None:
    text = README.read_text(encoding="utf-8")
    assert "pip install -e '.[test]'" in text
    assert "turncheck run examples/" in text and "python -m pytest" in text


def test_every_docs_page_is_in_the_nav_and_no_page_cites_a_missing_spec() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())

    def pages(items: list[object]) -> list[str]:
        found: list[str] = []
        for item in items:
            value = next(iter(item.values())) if isinstance(item, dict) else item
            found += pages(value) if isinstance(value, list) else [str(value)]
        return found

    in_nav = set(pages(config["nav"]))
    on_disk = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")}
    assert on_disk == in_nav
    for page in on_disk:
        assert "SPEC" not in (ROOT / "docs" / page).read_text(encoding="utf-8"), page


def test_the_docs_build_strictly_and_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    built = mkdocs_build(ROOT, tmp_path / "site")
    assert built.returncode == 0, built.stderr

    copy = tmp_path / "copy"
    shutil.copytree(ROOT / "docs", copy / "docs")
    shutil.copy(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    cli = copy / "docs" / "cli.md"
    cli.write_text(cli.read_text() + "\nSee [the missing page](no-such-page.md).\n")
    broken = mkdocs_build(copy, tmp_path / "broken-site")
    assert broken.returncode != 0
    assert "no-such-page.md" in broken.stderr
