"""The dashboard's activity charts in a real browser, reached from `/` after
logging in: five charts with their summaries in words, the figures in a
table opened from the keyboard, fitting a phone. The server's minutes are
written beforehand (a real server records one a minute)."""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from quire.app import Quire
from quire.config import load_settings
from quire.system.activity import ACTIVITY
from tests.chromium import screenshot
from tests.serving import quire_server
from tests.studio.browsing import (
    NARROW,
    Studio,
    assert_clean,
    browser,
    login,
    make_users,
    new_context,
    open_page,
)

__all__ = ["browser", "new_context"]


@pytest.fixture(scope="module")
def studio(tmp_path_factory: pytest.TempPathFactory, browser: Any) -> Iterator[Studio]:
    data = tmp_path_factory.mktemp("activity") / "data"
    make_users(data, {"ann": "admin"})
    quire = Quire(load_settings(data))
    try:
        last = int(time.time() // 60) - 1
        rows = quire.store.collection(ACTIVITY)
        with quire.store.transaction():
            for minute in range(last - 59, last + 1):
                if minute % 17 == 3:
                    continue  # a minute no server recorded (a restart): a gap
                wave = 1 + math.sin(minute / 6)
                rows.insert({"_id": f"{minute:012d}|web-1:100", "at": minute * 60, "instance": "web-1:100",
                             "requests": round(400 * wave), "errors": 3 if minute % 11 == 0 else 0,
                             "latency_ms": round(4 + 3 * wave, 2), "p95_ms": round(12 + 9 * wave, 2),
                             "delivered": minute % 5, "undelivered": 1 if minute % 23 == 0 else 0,
                             "jobs_waiting": minute % 7, "jobs_failed": 1 if minute > last - 20 else 0,
                             "gauges": {"quire_search_queue_rows": max(0, 40 - (last - minute) * 3)}})
    finally:
        quire.close()
    with quire_server(data, env={"QUIRE_SERVER_QUIET": "true"}) as (base, key, _log):
        yield Studio(base, key, {"ann": "admin"})


@pytest.mark.parametrize("viewport", [{"width": 1280, "height": 800}, NARROW], ids=["wide", "phone"])
def test_the_last_hours_activity_is_on_the_dashboard(studio: Studio, new_context: Callable[..., Any],
                                                     viewport: dict[str, int]) -> None:
    from playwright.sync_api import expect

    page = open_page(new_context(viewport))
    login(page, studio)
    panel = page.get_by_role("region", name="Activity, last hour")
    expect(panel).to_be_visible()
    charts = panel.get_by_role("img")
    expect(charts).to_have_count(5)
    expect(charts.first).to_have_attribute("aria-label", re.compile(r"^Requests: [\d,]+ requests"))
    assert panel.locator("svg rect.main").count() >= 50 and panel.locator("svg polyline.main").count() >= 2
    summary = panel.get_by_text("The figures, minute by minute")
    summary.focus()
    page.keyboard.press("Enter")
    table = panel.get_by_role("table")
    expect(table).to_be_visible()
    assert table.get_by_role("row").count() >= 56  # the minutes recorded, and the header
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= viewport["width"], f"the page is {width} px wide on a {viewport['width']} px screen"
    page.keyboard.press("Enter")  # closed again
    screenshot(page, "studio-activity.png" if viewport["width"] > 400 else "studio-activity-phone.png",
               full_page=False)
    assert_clean(page)
