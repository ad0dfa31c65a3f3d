"""How long a 1,000-eval HTML report takes to open in headless Chromium (issue 25).

Builds base and head run reports of N evals (default 1,000) in 40 suites, each a
three-turn conversation of ~400-character answers with checks, 5 % of them regressed
and 5 % repeated (5 samples), renders `turncheck report`'s HTML and opens it from
file:// in Debian's headless Chromium (Selenium, /usr/bin/chromedriver): the time from
navigation start to the load event (the page's own script has run: every filter is
live) and to the first frame after it, best of 3. Target: under 2 s.
Exits 1 when the target is missed.

    python benchmarks/html_report.py [N] [--screenshot docs/img/report.png]
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from turncheck.compare.comparison import compare_reports
from turncheck.render.html_report import render_report
from turncheck.report.results import CheckResult, SampleResult, Status, TurnResult
from turncheck.report.run import EvalResult, PriceSource, Report, SuiteResult
from turncheck.report.spend import Usage

TARGET_SECONDS = 2.0
RUNS = 3
SUITES = 40
PROMPTS = ("How long is the refund window for an unopened item?",
           "That is not our policy. Check the first line of your instructions again.",
           "Now say it in one sentence a customer can forward to their bank.")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--disable-dev-shm-usage",
         "--window-size=1400,900")


def answer(index: int, number: int, right: bool) -> str:
    verdict = "within 30 days of delivery" if right else "within 14 days of purchase"
    return (f"Thanks for asking (ticket {index}). Refunds for unopened items are possible "
            f"{verdict}. Keep the receipt and the original packaging; the refund goes back "
            "to the card you paid with, usually within five working days. "
            f"Reply {number} of 3. " + "Anything else I can help you with today? " * 3)


def conversation(index: int, first_pass: int) -> list[TurnResult]:
    turns = []
    for number in range(1, min(first_pass, 3) + 1):
        passed = number == first_pass
        turns.append(TurnResult(
            turn=number, prompt=PROMPTS[number - 1], response=answer(index, number, passed),
            usage=Usage(input_tokens=350 * number, output_tokens=90), cost_usd=0.00011 * number,
            latency_ms=420.0, passed=passed, line=7 + number,
            checks=[CheckResult(type="match", passed=passed, detail='match "*30 days*"'),
                    CheckResult(type="max_tokens", passed=True, detail="at most 200 tokens")]))
    return turns


def eval_of(index: int, first_pass: int, repeated: bool) -> EvalResult:
    turns = conversation(index, first_pass)
    passed = first_pass <= 3
    usage = sum((t.usage for t in turns), Usage())
    samples = []
    if repeated:
        for s in range(5):
            fails = not passed or s in (1, 3)
            sample_turns = conversation(index, 4 if fails else first_pass)
            samples.append(SampleResult(
                index=s, seed=s, status=Status.FAIL if fails else Status.PASS,
                passed_on_turn=None if fails else first_pass, turns=sample_turns,
                usage=sum((t.usage for t in sample_turns), Usage()), cost_usd=0.0003))
    return EvalResult(
        name=f"refund window {index}", prompt=PROMPTS[0],
        status=Status.PASS if passed else Status.FAIL,
        passed_on_turn=first_pass if passed else None, error=None, usage=usage,
        cost_usd=0.00011 * len(turns), judge_usage=Usage(), judge_cost_usd=0.0, turns=turns,
        line=7, samples=samples)


def side(count: int, regressed: bool) -> Report:
    suites = []
    per_suite = count // SUITES
    for s in range(SUITES):
        evals = [eval_of(i, 3 if regressed and i % 20 == 7 else 1 + (i % 2),
                         repeated=i % 20 == 11)
                 for i in range(s * per_suite, (s + 1) * per_suite)]
        suites.append(SuiteResult(path=f"evals/support{s}.eval.yaml", name=f"support {s}",
                                  model="openai/gpt-4o-mini", provider="openai",
                                  cassette=None, evals=evals,
                                  cost_usd=sum(e.cost_usd or 0.0 for e in evals),
                                  judge_cost_usd=0.0))
    return Report(turncheck_version="bench", mode="replay", commit=("c" if regressed else "b") * 40,
                  price_source=PriceSource(library="genai-prices", version="bench",
                                           timestamp="2026-01-01T00:00:00Z"),
                  suites=suites, started_at="2026-01-01T00:00:00Z", duration_s=1.0)


def chromium():  # type: ignore[no-untyped-def]
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in FLAGS:
        options.add_argument(flag)
    return webdriver.Chrome(options=options, service=Service("/usr/bin/chromedriver"))


OPEN_TIME = """
const done = arguments[arguments.length - 1];
const t = performance.getEntriesByType("navigation")[0];
requestAnimationFrame(() => setTimeout(() => done([t.loadEventEnd, performance.now()]), 0));
"""


def descendants(root: int) -> list[int]:
    """Every process under `root` (Linux /proc): Chromium's browser, renderer, GPU …"""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = [], [root]
    while frontier:
        pid = frontier.pop()
        children = [child for child, parent in parents.items() if parent == pid]
        found += children
        frontier += children
    return found


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time of `pids` so far."""
    ticks = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def open_seconds(driver, page: Path) -> tuple[float, float, float]:  # type: ignore[no-untyped-def]
    """(navigation start → load event, → first frame after it, Chromium's CPU seconds
    meanwhile): the CPU figure does not grow with the machine's load as wall time does."""
    driver.get("about:blank")
    processes = descendants(driver.service.process.pid)
    before = cpu_seconds(processes)
    driver.get(page.as_uri())
    loaded_ms, painted_ms = driver.execute_async_script(OPEN_TIME)
    cpu = cpu_seconds(processes) - before
    rows = driver.execute_script("return document.querySelectorAll('details.row').length")
    assert rows >= 1, "the report shows no row"
    return loaded_ms / 1000, painted_ms / 1000, cpu


def screenshot(driver, page: Path, target: Path) -> None:  # type: ignore[no-untyped-def]
    driver.set_window_size(1400, 1000)
    driver.get(page.as_uri())
    # Rows come most severe first: the first one shown is the one to open.
    row = next(r for r in driver.find_elements("css selector", "#evals details.row")
               if r.is_displayed())
    row.find_element("css selector", "summary").click()
    driver.save_screenshot(str(target))


def main(argv: list[str]) -> int:
    shot = None
    if "--screenshot" in argv:
        at = argv.index("--screenshot")
        shot = Path(argv[at + 1])
        del argv[at:at + 2]
    count = int(argv[0]) if argv else 1_000
    base, head = side(count, regressed=False), side(count, regressed=True)
    start = time.perf_counter()
    html = render_report(head=head, base=base, comparison=compare_reports(base, head))
    render_s = time.perf_counter() - start
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{count} evals: HTML {len(html) / 1e6:.1f} MB, rendered in {render_s:.2f} s")
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "report.html"
        page.write_text(html, encoding="utf-8")
        driver = chromium()
        try:
            times = [open_seconds(driver, page) for _ in range(RUNS)]
            if shot is not None:
                screenshot(driver, page, shot)
                print(f"screenshot: {shot}")
        finally:
            driver.quit()
    loaded, painted = min(t[0] for t in times), min(t[1] for t in times)
    cpu = min(t[2] for t in times)
    print(f"open in headless Chromium (best of {RUNS}): load event {loaded:.2f} s, "
          f"first frame {painted:.2f} s (Chromium CPU {cpu:.2f} s); target "
          f"{TARGET_SECONDS:.1f} s (ratio {painted / TARGET_SECONDS:.2f})")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if painted >= TARGET_SECONDS:
        print("FAIL: the report opens slower than the target")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
