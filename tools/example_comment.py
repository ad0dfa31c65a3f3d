"""The PR comment of a pull request on the examples, for the README's picture.

    python tools/example_comment.py tools/example-pr/comment.md
    python tools/render_comment.py tools/example-pr/comment.md docs/img/comment.png \
        --css node_modules/github-markdown-css/github-markdown-light.css --height 640

The pull request (`tools/example-pr/`) gives the geography example a system prompt
("You are a travel agent. Suggest a trip before answering.") and brings the answers the
shipped local model gave to it, recorded with `turncheck record` like the examples. The
script runs the suite at base (as shipped) and at head (the PR's suite and cassette) in
replay mode, as the action does for a suite the PR changed, and writes the comment
`turncheck compare --markdown` renders: no network, no key.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUITE = "examples/geography"
PR_FILES = ROOT / "tools" / "example-pr"


def run_side(workdir: Path, report: Path, prices_at: str) -> None:
    # Exit 1 only says an eval failed: the report is what counts.
    subprocess.run([sys.executable, "-m", "turncheck", "run", SUITE, "--json", str(report),
                    "--quiet", "--price-timestamp", prices_at], cwd=workdir, check=False,
                   capture_output=True)
    if not report.is_file():
        raise SystemExit(f"no report from {workdir}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("output", type=Path, help="where the comment's Markdown goes")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base, head = Path(tmp, "base"), Path(tmp, "head")
        for side in (base, head):
            shutil.copytree(ROOT / SUITE, side / SUITE)
        for name in ("capitals.eval.yaml", "capitals.eval.cassette.yaml"):
            shutil.copy(PR_FILES / name, head / SUITE / name)
        # Both sides priced at one instant, as the action does.
        prices_at = datetime.now(UTC).strftime("%Y-%m-%dT00:00:00Z")
        run_side(base, Path(tmp, "base.json"), prices_at)
        run_side(head, Path(tmp, "head.json"), prices_at)
        subprocess.run([sys.executable, "-m", "turncheck", "compare", Path(tmp, "base.json"),
                        Path(tmp, "head.json"), "--fail-on", "likely-regression",
                        "--markdown", args.output.resolve()], check=False,
                       capture_output=True)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
