"""Find vibecheck-style suites that turncheck's globs would miss.

vibecheck keeps suites as any YAML file with top-level `metadata` and `evals`
(e.g. `examples/*.yaml`); turncheck's default globs look for `*.eval.yaml` and
`evals.yaml`. `turncheck init` uses this to add globs that find them.
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

import yaml

from turncheck.formats.discovery import CASSETTE_SUFFIX, SKIPPED_DIRECTORIES, Globs
from turncheck.formats.files import read_text_bounded
from turncheck.formats.yamlsource import too_deep

MAX_BYTES = 1024 * 1024
YAML_SUFFIXES = (".yaml", ".yml")
_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def looks_like_vibecheck_suite(path: Path) -> bool:
    """A YAML file whose top level is a mapping with `metadata` and `evals`."""
    try:
        text = read_text_bounded(path, limit=MAX_BYTES)
        if "metadata" not in text or "evals" not in text:  # most YAML files: no parsing
            return False
        if too_deep(text) is not None:  # PyYAML's composer recurses (and crashes) per level
            return False
        node = yaml.compose(text, Loader=_LOADER)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return False
    if not isinstance(node, yaml.MappingNode):
        return False
    keys = {key.value for key, _ in node.value if isinstance(key, yaml.ScalarNode)}
    return {"metadata", "evals"} <= keys


def _yaml_files(root: Path) -> list[str]:
    found = []
    for directory, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames
                             if d not in SKIPPED_DIRECTORIES and not d.startswith("."))
        for name in sorted(filenames):
            if name.endswith(YAML_SUFFIXES) and not name.endswith(CASSETTE_SUFFIX):
                found.append(Path(directory, name).relative_to(root).as_posix())
    return found


def missed_suites(root: Path, globs: Globs | None = None) -> list[str]:
    """vibecheck-style suites under `root` (relative paths) that `globs` do not find;
    a file the exclude globs leave out was left out on purpose, not missed."""
    globs = globs or Globs()
    return [relative for relative in _yaml_files(root)
            if globs.kind_of(relative) is None and not globs.excluded(relative)
            and looks_like_vibecheck_suite(root / relative)]


def globs_for(root: Path, suites: list[str]) -> list[str]:
    """Globs that find `suites`: `dir/*.yaml` when every YAML file there is one, else
    the files by name (so a cases file or other YAML beside them stays out)."""
    by_directory: dict[str, list[str]] = defaultdict(list)
    for suite in suites:
        by_directory[suite.rpartition("/")[0]].append(suite)
    all_yaml = _yaml_files(root)
    patterns: list[str] = []
    for directory, members in sorted(by_directory.items()):
        siblings = [f for f in all_yaml if f.rpartition("/")[0] == directory]
        if sorted(siblings) != sorted(members):
            patterns.extend(sorted(members))
            continue
        prefix = f"{directory}/" if directory else ""
        patterns.extend(f"{prefix}*{suffix}" for suffix in YAML_SUFFIXES
                        if any(m.endswith(suffix) for m in members))
    return patterns
