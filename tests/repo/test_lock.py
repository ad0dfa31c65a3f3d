"""requirements.lock: what the action image installs, with hashes (issue 21 item 2).

pyproject.toml keeps ranges (turncheck is also a library and a CLI); the lock pins
one version of every runtime dependency, hashed, for the Dockerfile; `.ci/run`
tests that locked world and the newest one the README's install resolves."""

from __future__ import annotations

import os
import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "requirements.lock"
PIN = re.compile(r"^([A-Za-z0-9._-]+)==([^\s;\\]+)")


def locked() -> dict[str, Version]:
    pins: dict[str, Version] = {}
    for line in LOCK.read_text().splitlines():
        found = PIN.match(line)
        if found:
            pins[canonicalize_name(found[1])] = Version(found[2])
    return pins


def runtime_requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [Requirement(text) for text in project["dependencies"]]


def test_the_lock_pins_every_runtime_dependency_within_its_range() -> None:
    pins = locked()
    for requirement in runtime_requirements():
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement.name} is not in requirements.lock"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"requirements.lock pins {name}=={pins[name]}, outside pyproject's {requirement}")


def test_every_locked_package_carries_hashes() -> None:
    blocks = re.split(r"\n(?=[A-Za-z0-9])", LOCK.read_text().strip())
    pinned = [block for block in blocks if PIN.match(block)]
    assert len(pinned) == len(locked()) > 10
    for block in pinned:
        assert "--hash=sha256:" in block, f"no hash for {block.splitlines()[0]}"


def test_the_image_installs_the_lock_with_hashes_before_turncheck() -> None:
    runs = [line for line in (ROOT / "Dockerfile").read_text().splitlines()
            if "pip install" in line]
    assert len(runs) == 2, runs
    assert "--require-hashes" in runs[0] and "requirements.lock" in runs[0]
    assert "--no-deps" in runs[1], "installing turncheck itself must not resolve anything"


@pytest.mark.skipif(os.environ.get("TURNCHECK_LOCKED") != "1",
                    reason="only in .ci/run's locked world (TURNCHECK_LOCKED=1)")
def test_the_locked_world_runs_exactly_the_locked_versions() -> None:
    moved = {name: (str(version), metadata.version(name))
             for name, version in locked().items()
             if Version(metadata.version(name)) != version}
    assert not moved, f"installed versions differ from requirements.lock: {moved}"
