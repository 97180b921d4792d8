"""The browser tests run only where Chromium is installed; elsewhere one line says how to get it."""

from __future__ import annotations

import pytest

from speech_to_speech.testing.chromium import INSTALL_HINT, find_chromium

_NOT_RUN = pytest.StashKey[int]()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if find_chromium() is not None:
        return
    browser = [item for item in items if item.get_closest_marker("browser")]
    if browser:
        items[:] = [item for item in items if not item.get_closest_marker("browser")]
        config.hook.pytest_deselected(items=browser)
        config.stash[_NOT_RUN] = len(browser)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    count = config.stash.get(_NOT_RUN, 0)
    if count:
        terminalreporter.write_line(
            f"{count} browser test(s) not run: no Chromium found. Install it with `{INSTALL_HINT}` "
            "(or point S2S_CHROMIUM at a Chromium or Chrome binary).",
            yellow=True,
        )
