"""``dispatch analyze --html``: the page's sort, clicked in a real headless Chromium.

Needs Debian's ``chromium`` (CI installs it) and the ``playwright`` package (a test tool);
skipped where either is missing (``apt-get install chromium`` to run it)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from dispatch.cli import main

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
if not os.path.exists(CHROMIUM):
    pytest.skip("chromium is not installed", allow_module_level=True)

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]
# Sizes visible in the source, and two sites of unknown size.
APP = """import numpy as np

A = np.ones((300, 300))
B = np.dot(A, A)
C = np.zeros(12)
np.sum(unknown)
D = np.ones((1000, 500))
np.mean(other)
E = np.arange(70)
"""


@pytest.fixture
def page(tmp_path, monkeypatch):
    monkeypatch.setenv("DISPATCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    Path("app.py").write_text(APP)
    assert main(["analyze", "app.py", "--html", "report.html"]) == 0
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            tab = browser.new_page()
            tab.goto((tmp_path / "report.html").as_uri())
            yield tab
        finally:
            browser.close()


def _index(tab, name: str) -> int:
    headers = tab.locator("table.sortable").first.locator("th").all_inner_texts()
    return [h.strip(" ▲▼") for h in headers].index(name)


def column(tab, name: str) -> list[str]:
    nth = _index(tab, name) + 1
    return tab.locator("table.sortable").first.locator(f"tbody tr td:nth-child({nth})").all_inner_texts()


def click(tab, name: str) -> None:
    tab.locator("table.sortable").first.locator("th").nth(_index(tab, name)).click()


def test_sorting_by_size_puts_numbers_in_order_and_unknowns_last(page):
    sizes = column(page, "n")
    assert sorted(sizes) == sorted(["90,000", "90,000", "12", "?", "500,000", "?", "70"])
    click(page, "n")
    asc = column(page, "n")
    assert asc == ["12", "70", "90,000", "90,000", "500,000", "?", "?"]
    click(page, "n")
    assert column(page, "n") == ["500,000", "90,000", "90,000", "70", "12", "?", "?"]


def test_sorting_by_a_text_column_is_alphabetical(page):
    click(page, "op")
    assert column(page, "op") == ["arange", "dot", "mean", "ones", "ones", "sum", "zeros"]
