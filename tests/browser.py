"""Headless Chromium from Debian's packages (`chromium`, `chromium-driver`), driven by
Selenium, for tests of the HTML report. No browser is ever downloaded.

Without the browser (or Selenium) the tests skip, unless TURNCHECK_REQUIRE_BROWSER=1
(set in .ci/run) makes them fail instead.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import pytest

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--disable-dev-shm-usage",
         "--window-size=1400,1000")


def unavailable(reason: str) -> NoReturn:
    if os.environ.get("TURNCHECK_REQUIRE_BROWSER") == "1":
        pytest.fail(f"browser tests required but unavailable: {reason}")
    pytest.skip(reason)


def start_chromium() -> WebDriver:
    """A headless Chromium (the caller quits it); skips or fails when there is none."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        unavailable("selenium is not installed (the test extra has it)")
    if not CHROMIUM.exists() or not CHROMEDRIVER.exists():
        unavailable("no Debian chromium/chromium-driver "
                    "(apt-get install -y chromium chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in FLAGS:
        options.add_argument(flag)
    return webdriver.Chrome(options=options, service=Service(str(CHROMEDRIVER)))


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    driver = start_chromium()
    try:
        yield driver
    finally:
        driver.quit()

