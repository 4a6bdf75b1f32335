"""What ``samsa demo`` and ``samsa pipeline`` show while they run: the latest windows as a table, and a status line.

The table fits the width it is given: when all its columns do not fit, it drops the least telling first (top
paths, then clients, p95 bytes, 4xx, 5xx), down to window, requests and error rate. Output that is not a terminal
(a pipe, a file) has no width to fit, so the table is printed whole there. A window marked ``*`` is partial: the
traffic began inside it, so its counts cover less than a minute.

The status line counts what this run did: lines produced, lines the stats query has read (and, from its last
micro-batch that had input, its rows/s), windows written, and in which phase the run is (traffic, Spark catching
up, done).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from samsa.spark.pipeline.chart import partial_windows, window_start_ms, window_start_utc

SHOWN_WINDOWS = 12
Cell = Callable[[dict[str, Any]], str]
COLUMNS: dict[str, tuple[str, Cell]] = {  # name: (justify, cell)
    "window": ("left", lambda r: f"{window_start_utc(r):%H:%M}"),
    "requests": ("right", lambda r: f"{r['requests']:,}"),
    "4xx": ("right", lambda r: f"{r['status_4xx']:,}"),
    "5xx": ("right", lambda r: f"{r['status_5xx']:,}"),
    "err %": ("right", lambda r: f"{100 * r['error_rate']:.1f}"),
    "p95 bytes": ("right", lambda r: f"{r['bytes_p95']:,}"),
    "clients": ("right", lambda r: f"{r['distinct_clients']:,}"),
    "top paths": ("left", lambda r: " ".join(r["top_paths"])),
}
DROPPED_FIRST = ("top paths", "clients", "p95 bytes", "4xx", "5xx")


def window_table(
    windows: Sequence[dict[str, Any]], columns: Sequence[str], traffic_start_ms: int | None = None
) -> Any:
    """The last ``SHOWN_WINDOWS`` windows with ``columns`` (names of ``COLUMNS``, shown in that table's order)."""
    from rich.table import Table

    shown = sorted(windows, key=window_start_ms)[-SHOWN_WINDOWS:]
    partial = partial_windows(shown, traffic_start_ms)
    day = f", {_days(shown)}" if shown else ""
    caption = "* partial window: the traffic began inside it" if partial else None
    table = Table(title=f"access-stats: one-minute windows{day} (UTC)", caption=caption, expand=False)
    names = [name for name in COLUMNS if name in columns]
    for name in names:
        table.add_column(name, justify=COLUMNS[name][0], no_wrap=True, min_width=len(name))  # type: ignore[arg-type]
    for row in shown:
        cells = [COLUMNS[name][1](row) for name in names]
        if window_start_ms(row) in partial:
            cells[0] += "*"
        table.add_row(*cells)
    return table


def fitted_table(console: Any, windows: Sequence[dict[str, Any]], traffic_start_ms: int | None = None) -> Any:
    """``window_table`` with as many columns as fit ``console.width``; every column when it is not a terminal."""
    columns = list(COLUMNS)
    table = window_table(windows, columns, traffic_start_ms)
    if not console.is_terminal:
        return table
    for name in DROPPED_FIRST:
        if natural_width(console, table) <= console.width:
            break
        columns.remove(name)
        table = window_table(windows, columns, traffic_start_ms)
    return table


def natural_width(console: Any, renderable: Any) -> int:
    """The width ``renderable`` takes with no limit (``console.measure`` caps it at the console's width)."""
    from rich.measure import Measurement

    return Measurement.get(console, console.options.update_width(1 << 20), renderable).maximum


def live_view(
    console: Any, windows: Sequence[dict[str, Any]], status: str, traffic_start_ms: int | None
) -> Any:
    """The table and the status line; widens a console that is not a terminal so that neither is cut."""
    from rich.console import Group
    from rich.text import Text

    table = fitted_table(console, windows, traffic_start_ms)
    if not console.is_terminal:
        console.width = max(80, natural_width(console, table), len(status))
    return Group(table, Text(status, style="dim"))


def _days(rows: Sequence[dict[str, Any]]) -> str:
    first, last = window_start_utc(rows[0]), window_start_utc(rows[-1])
    return f"{first:%Y-%m-%d}" if first.date() == last.date() else f"{first:%Y-%m-%d} to {last:%Y-%m-%d}"


@dataclass
class RunStatus:
    """Counts for the status line, fed with the stats query's progress reports (``observe``)."""

    duration: float | None
    producing: bool
    began: float = field(default_factory=time.monotonic)
    traffic_ended: float | None = None
    lines_read: int = 0
    last_rows_per_s: float | None = None
    _seen: set[str] = field(default_factory=set)

    def observe(self, progress: Sequence[dict[str, Any]]) -> None:
        """Take the query's ``recentProgress``; each report is counted once."""
        for report in progress:
            key = f"{report.get('batchId')}@{report.get('timestamp')}"
            if key in self._seen:
                continue
            self._seen.add(key)
            rows = int(report.get("numInputRows") or 0)
            self.lines_read += rows
            if rows:
                self.last_rows_per_s = float(report.get("processedRowsPerSecond") or 0.0)

    def end_traffic(self) -> None:
        if self.traffic_ended is None:
            self.traffic_ended = time.monotonic()

    def line(self, produced: int | None, windows: int, *, done: bool = False) -> str:
        elapsed = time.monotonic() - self.began
        read = f"Spark read {self.lines_read:,} lines"
        if self.last_rows_per_s:
            read += f" ({self.last_rows_per_s:,.0f} rows/s in its last batch)"
        made = f"produced {produced:,} lines   " if produced is not None else ""
        counts = f"{made}{read}   windows {windows}"
        if done:
            return f"done after {elapsed:.0f} s: {counts}"
        if self.traffic_ended is not None:
            behind = f", {max(0, produced - self.lines_read):,} lines to go" if produced is not None else ""
            return f"{counts}   traffic stopped; Spark catching up{behind}   {elapsed:.0f} s"
        limit = f" / {self.duration:.0f}" if self.duration else ""
        phase = "traffic" if self.producing else "running"
        return f"{counts}   {phase} {elapsed:.0f}{limit} s   Ctrl-C stops"
