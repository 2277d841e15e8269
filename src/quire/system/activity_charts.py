"""The dashboard's charts of the last hour (system/activity.py's minutes),
drawn as small inline SVG on the server: no script, a summary in words for
screen readers, and the figures in a table beside each chart."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

WIDTH, HEIGHT = 300.0, 80.0
STEP = WIDTH / 60  # one minute


@dataclass
class Series:
    label: str
    css: str  # the chart's colour class: "main", "bad", "second"
    values: list[float | None]
    bars: bool


@dataclass
class Chart:
    title: str
    unit: str
    series: list[Series]
    summary: str
    top: float = 0.0
    shapes: list[dict[str, Any]] = field(default_factory=list)


def _number(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 or value == int(value) else f"{value:,.1f}"


def _count(value: float, one: str, many: str) -> str:
    return f"{_number(value)} {one if value == 1 else many}"


def _draw(chart: Chart) -> Chart:
    top = max([v for s in chart.series for v in s.values if v is not None] + [0.0])
    chart.top = top
    scale = (HEIGHT - 4) / top if top > 0 else 0.0
    for series in chart.series:
        if series.bars:
            for i, value in enumerate(series.values):
                if value:
                    h = max(value * scale, 1.0)
                    chart.shapes.append({"kind": "rect", "css": series.css, "x": round(i * STEP + 0.5, 2),
                                         "y": round(HEIGHT - h, 2), "w": round(STEP - 1, 2), "h": round(h, 2)})
        else:  # a line, broken where a minute has no figure
            run: list[str] = []
            for i, value in enumerate([*series.values, None]):
                if value is None:
                    if len(run) > 1:
                        chart.shapes.append({"kind": "line", "css": series.css, "points": " ".join(run)})
                    elif run:
                        x, y = run[0].split(",")
                        chart.shapes.append({"kind": "dot", "css": series.css, "x": x, "y": y})
                    run = []
                    continue
                run.append(f"{round(i * STEP + STEP / 2, 2)},{round(HEIGHT - 2 - value * scale, 2)}")
    return chart


def charts(hour: list[dict[str, Any]]) -> list[Chart]:
    """The five charts of `hour` (60 minutes, oldest first)."""
    def column(name: str) -> list[float | None]:
        return [m.get(name) for m in hour]

    requests, errors = column("requests"), column("errors")
    total = sum(v or 0 for v in requests)
    failed = sum(v or 0 for v in errors)
    latency, p95 = column("latency_ms"), column("p95_ms")
    timed = [v for v in latency if v is not None]
    delivered, undelivered = column("delivered"), column("undelivered")
    waiting, stuck = column("jobs_waiting"), column("jobs_failed")
    lag = column("search_lag")
    now_waiting = next((v for v in reversed(waiting) if v is not None), 0) or 0
    now_failed = next((v for v in reversed(stuck) if v is not None), 0) or 0
    now_lag = next((v for v in reversed(lag) if v is not None), 0) or 0
    worst = max([v for v in p95 if v is not None] + [0.0])
    return [_draw(c) for c in (
        Chart("Requests", "a minute", [Series("Requests", "main", requests, True),
                                       Series("Server errors (5xx)", "bad", errors, True)],
              f"{_count(total, 'request', 'requests')} in the last hour, {_number(failed)} of them server errors; "
              f"at most {_number(max([v or 0 for v in requests] + [0]))} in a minute."),
        Chart("Latency", "ms", [Series("Average", "main", latency, False), Series("95th percentile", "second", p95, False)],
              (f"Average {_number(sum(timed) / len(timed))} ms over the minutes with requests; "
               f"the slowest minute's 95th percentile {_number(worst)} ms.") if timed else "No requests timed."),
        Chart("Jobs", "jobs", [Series("Waiting", "main", waiting, False), Series("Failed", "bad", stuck, False)],
              f"{_count(now_waiting, 'job', 'jobs')} waiting and {_number(now_failed)} failed at the last minute."),
        Chart("Webhook deliveries", "a minute", [Series("Delivered", "main", delivered, True),
                                                 Series("Failed", "bad", undelivered, True)],
              f"{_number(sum(v or 0 for v in delivered))} delivered and "
              f"{_number(sum(v or 0 for v in undelivered))} failed in the last hour."),
        Chart("Search index lag", "writes waiting", [Series("Writes not yet indexed", "main", lag, False)],
              f"{_count(now_lag, 'write', 'writes')} waiting to be indexed at the last minute."),
    )]
