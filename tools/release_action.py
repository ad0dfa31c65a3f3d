#!/usr/bin/env python3
"""Rewrite action.yml so the action runs a prebuilt image instead of building the Dockerfile.

    python3 tools/release_action.py action.yml docker://ghcr.io/OWNER/turncheck:v1.2.3

The release workflow (.github/workflows/release.yml) runs this on the tagged commit,
commits the result and moves the major-version tag (v1) to that commit. Standard
library only: it runs on the runner's system Python.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

_IMAGE_LINE = re.compile(r"^(?P<indent>\s+)image:\s*['\"]?Dockerfile['\"]?\s*$", re.MULTILINE)
_IMAGE = re.compile(r"docker://[a-z0-9][a-z0-9._/-]*:[A-Za-z0-9._-]+")


def pin_image(action_yml: str, image: str) -> str:
    """`action_yml` with its `image: Dockerfile` replaced by `image: <image>`."""
    if not _IMAGE.fullmatch(image):
        raise ValueError(f"expected docker://REGISTRY/NAME:TAG in lower case, got {image!r}")
    found = _IMAGE_LINE.findall(action_yml)
    if len(found) != 1:
        raise ValueError("action.yml must have exactly one `image: Dockerfile` line")
    return _IMAGE_LINE.sub(lambda m: f"{m['indent']}image: {image}", action_yml)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    path, image = Path(argv[0]), argv[1]
    try:
        path.write_text(pin_image(path.read_text(encoding="utf-8"), image), encoding="utf-8")
    except (OSError, ValueError) as exc:
        print(f"release_action: {exc}", file=sys.stderr)
        return 1
    print(f"{path}: runs {image}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
