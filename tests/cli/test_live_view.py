"""The demo's live table fits its width by dropping columns, is printed whole when not on a terminal, marks
partial windows; the status line counts each progress report once and never ends on an idle batch's 0 rows/s."""

from __future__ import annotations

import io
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from rich.console import Console

from samsa.cli.live_view import (
    COLUMNS,
    DROPPED_FIRST,
    RunStatus,
    fitted_table,
    live_view,
    natural_width,
    window_table,
)

START = datetime(2026, 11, 18, 11, 6, tzinfo=timezone.utc)
PATHS = ["/api/items/{id}", "/static/style.css", "/search?q=lamp"]


def windows(n: int = 5) -> list[dict[str, Any]]:
    return [
        {
            "window_start": START + timedelta(minutes=i),
            "requests": 1200 + i,
            "status_4xx": 80 + i,
            "status_5xx": 50,
            "error_rate": (130 + i) / (1200 + i),
            "bytes_p95": 21_000 + 10 * i,
            "distinct_clients": 40 + i,
            "top_paths": PATHS,
        }
        for i in range(n)
    ]


def render(console: Console, renderable: Any) -> list[str]:
    console.print(renderable)
    assert isinstance(console.file, io.StringIO)
    return console.file.getvalue().splitlines()


def terminal(width: int) -> Console:
    return Console(file=io.StringIO(), width=width, force_terminal=True, color_system=None)


def header_of(lines: list[str]) -> list[str]:
    header = next(line for line in lines if "window" in line and "requests" in line)
    return [cell.strip() for cell in header.strip("┃│ ").split("┃") if cell.strip()]


def test_a_wide_terminal_shows_every_column() -> None:
    console = terminal(160)
    lines = render(console, fitted_table(console, windows()))
    assert header_of(lines) == list(COLUMNS)
    assert max(map(len, lines)) <= 160


@pytest.mark.parametrize(("width", "dropped"), [(80, 1), (60, 2), (40, 4), (30, 5)])
def test_a_narrow_terminal_drops_the_least_telling_columns_first(width: int, dropped: int) -> None:
    console = terminal(width)
    lines = render(console, fitted_table(console, windows()))
    kept = [name for name in COLUMNS if name not in DROPPED_FIRST[:dropped]]
    assert header_of(lines) == kept
    assert max(map(len, lines)) <= width
    assert "11:10" in "\n".join(lines)  # the rows are still all there
    one_more = [name for name in COLUMNS if name not in DROPPED_FIRST[: dropped - 1]]
    assert natural_width(console, window_table(windows(), one_more)) > width  # no column dropped needlessly


def test_not_a_terminal_prints_the_whole_table_and_status_however_long() -> None:
    console = Console(file=io.StringIO(), force_terminal=False, color_system=None)
    assert not console.is_terminal and console.width == 80
    status = "produced 24,000 lines   Spark read 24,000 lines   windows 20   " + "x" * 60
    lines = render(console, live_view(console, windows(), status, None))
    assert header_of(lines) == list(COLUMNS)
    assert " ".join(PATHS) in "\n".join(lines)  # the widest cell, uncut
    assert status in lines
    assert max(map(len, lines)) > 80


def test_partial_windows_are_starred_and_explained() -> None:
    console = terminal(160)
    traffic_start = int((START + timedelta(seconds=40)).timestamp() * 1000)
    text = "\n".join(render(console, fitted_table(console, windows(), traffic_start)))
    assert "11:06*" in text and "11:07*" not in text
    assert "* partial window" in text
    assert "2026-11-18" in text
    plain = "\n".join(render(terminal(160), fitted_table(terminal(160), windows(), None)))
    assert "*" not in plain


def progress(batch: int, rows: int, rate: float) -> dict[str, Any]:
    return {
        "batchId": batch,
        "timestamp": f"2026-11-23T21:00:{batch:02d}.000Z",
        "numInputRows": rows,
        "processedRowsPerSecond": rate,
    }


def test_status_counts_each_report_once_and_keeps_the_last_real_rate() -> None:
    run = RunStatus(duration=60, producing=True)
    reports = [progress(0, 1000, 500.0), progress(1, 2000, 4000.0)]
    run.observe(reports)
    run.observe(reports)  # recentProgress repeats what was already seen
    run.observe([*reports, progress(2, 0, 0.0)])  # an idle batch once the traffic stops
    assert run.lines_read == 3000
    line = run.line(produced=3500, windows=4)
    assert "Spark read 3,000 lines (4,000 rows/s in its last batch)" in line
    assert "traffic" in line and "/ 60 s" in line
    run.end_traffic()
    assert "catching up, 500 lines to go" in run.line(produced=3500, windows=4)
    final = run.line(produced=3500, windows=5, done=True)
    assert final.startswith("done after ") and "windows 5" in final
    assert " 0 rows/s" not in final
