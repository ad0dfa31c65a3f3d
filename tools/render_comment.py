"""Render a PR comment (Markdown) as GitHub shows it, to HTML or a PNG screenshot.

    python tools/render_comment.py tools/example-pr/comment.md \
        docs/img/comment.png [--css node_modules/github-markdown-css/github-markdown-light.css]

Markdown goes through cmark-gfm (GitHub's own CommonMark + GFM renderer, `cmarkgfm` on
PyPI) with GitHub's extensions, into a page styled with GitHub's Markdown CSS (npm
package `github-markdown-css`); Debian's headless Chromium takes the screenshot. Used to
make the README's picture from the comment of a pull request on the examples
(`tools/example_comment.py`) and to look at comments while changing them.
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
from pathlib import Path

import cmarkgfm
from cmarkgfm.cmark import Options

PAGE = """<!doctype html><html><head><meta charset="utf-8"><style>{css}
body {{ margin: 0; background: #fff; }}
.markdown-body {{ box-sizing: border-box; width: 880px; padding: 24px 32px; }}
</style></head><body><article class="markdown-body">{html}</article></body></html>"""


def to_html(markdown: str, css: str) -> str:
    # GitHub passes raw HTML through (then sanitises it); `<details>` must survive.
    body = cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)
    return PAGE.format(css=css, html=body)


def screenshot(html: str, png: Path, height: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "comment.html"
        page.write_text(html, encoding="utf-8")
        subprocess.run(
            ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", f"--user-data-dir={tmp}/profile", "--hide-scrollbars",
             f"--window-size=880,{height}", f"--screenshot={png.resolve()}", page.as_uri()],
            check=True, capture_output=True, timeout=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("markdown", type=Path)
    parser.add_argument("output", type=Path, help="a .png (screenshot) or .html file")
    parser.add_argument("--css", type=Path,
                        default=Path("node_modules/github-markdown-css/github-markdown-light.css"))
    parser.add_argument("--height", type=int, default=1400)
    args = parser.parse_args()
    css = args.css.read_text(encoding="utf-8") if args.css.exists() else ""
    html = to_html(args.markdown.read_text(encoding="utf-8"), css)
    if args.output.suffix == ".html":
        args.output.write_text(html, encoding="utf-8")
    else:
        screenshot(html, args.output, args.height)


if __name__ == "__main__":
    main()
