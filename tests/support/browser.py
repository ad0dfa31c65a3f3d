"""Headless Chromium from Debian's packages (`chromium`, `chromium-driver`), driven by
Selenium, for tests of the HTML report. No browser is ever downloaded.

Without the browser (or Selenium) the tests skip, unless TURNCHECK_REQUIRE_BROWSER=1
(set in .ci/run) makes them fail instead.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver
    from selenium.webdriver.remote.webelement import WebElement

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




def with_display_state(driver: WebDriver, elements: list[WebElement]) -> list[WebElement]:
    """`elements` whose `is_displayed()` answers, as of now, what Selenium's own
    `is_displayed` would: its isDisplayed atom, run over all of them in one script call.
    One round trip to chromedriver per row took seconds for a 300-row report (issue 21)."""
    from selenium.webdriver.remote import webelement

    if webelement.isDisplayed_js is None:
        webelement._load_js()
    shown = driver.execute_script(
        f"const isDisplayed = ({webelement.isDisplayed_js});"
        "return arguments[0].map(element => isDisplayed(element));", elements)
    state_class = _display_state_class()
    return [state_class(element, bool(state))
            for element, state in zip(elements, shown, strict=True)]


@cache
def _display_state_class() -> Any:
    from selenium.webdriver.remote.webelement import WebElement

    class DisplayState(WebElement):
        """A WebElement whose display state was read with the others'."""

        def __init__(self, element: WebElement, displayed: bool) -> None:
            super().__init__(element.parent, element.id)
            self.displayed = displayed

        def is_displayed(self) -> bool:
            return self.displayed

    return DisplayState
