"""The demo's chart: one panel per measure of the one-minute windows, stacked on a shared time axis.

    requests / minute      bars per window, stacked by status class (2xx, 3xx, 4xx, 5xx)
    error rate (%)         4xx + 5xx over requests, from 0
    p95 response bytes     the 95th percentile of bytes sent, from 0
    distinct clients       approximate distinct client addresses

Windows are drawn where they lie in time (a bar spans its minute; a point sits at its middle), so a gap in the
output shows as a gap. A *partial* window, one that began before the traffic did, holds less than a minute of
requests: it is shaded in every panel and its bars hatched, so its low count does not read as a drop in traffic.
The x axis carries real dates and times (UTC, as the job's windows are).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

WINDOW = timedelta(minutes=1)
STATUS_COLOURS = (("2xx", "#4c9a2a"), ("3xx", "#3b75af"), ("4xx", "#ef8a17"), ("5xx", "#c0392b"))
PARTIAL_SHADE = "#d9d9d9"


def window_start_ms(row: dict[str, Any]) -> int:
    """A window's start in ms since the epoch. Spark hands timestamps to Python as naive datetimes in the local
    time zone, which ``timestamp()`` assumes; aware ones are exact."""
    start: datetime = row["window_start"]
    return int(start.timestamp() * 1000)


def window_start_utc(row: dict[str, Any]) -> datetime:
    return datetime.fromtimestamp(window_start_ms(row) / 1000, timezone.utc)


def partial_windows(rows: Iterable[dict[str, Any]], traffic_start_ms: int | None) -> set[int]:
    """Start (ms) of each window that began before the traffic did: it holds less than a minute of requests.
    Nothing is partial when the traffic's start is unknown."""
    if traffic_start_ms is None:
        return set()
    return {start for start in map(window_start_ms, rows) if start < traffic_start_ms}


def write_chart(rows: Sequence[dict[str, Any]], path: Path, *, traffic_start_ms: int | None = None) -> None:
    """The windows in ``rows`` (the job's columns) as a PNG at ``path``; see the module doc."""
    import matplotlib.pyplot as plt

    fig = chart_figure(rows, traffic_start_ms=traffic_start_ms)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def chart_figure(rows: Sequence[dict[str, Any]], *, traffic_start_ms: int | None = None) -> Any:
    """The chart as a matplotlib ``Figure`` (Agg backend); its axes are the panels, top to bottom."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.dates as mdates
    import matplotlib.pyplot as plt

    rows = sorted(rows, key=window_start_ms)
    starts = [window_start_utc(r) for r in rows]
    middles = [start + WINDOW / 2 for start in starts]
    partial = partial_windows(rows, traffic_start_ms)
    is_partial = [window_start_ms(r) in partial for r in rows]

    fig, axes = plt.subplots(4, 1, figsize=(11, 9.5), sharex=True, layout="constrained")
    requests, errors, p95, clients = axes
    _requests_panel(requests, rows, starts, is_partial)
    _line_panel(
        errors, middles, [100 * r["error_rate"] for r in rows], is_partial, "#c0392b", "error rate (%)"
    )
    _line_panel(p95, middles, [r["bytes_p95"] for r in rows], is_partial, "#7d3c98", "p95 response bytes")
    _line_panel(
        clients,
        middles,
        [r["distinct_clients"] for r in rows],
        is_partial,
        "#117a65",
        "distinct clients (approx.)",
    )
    for ax in axes:
        for start, flagged in zip(starts, is_partial, strict=True):
            if flagged:
                ax.axvspan(start, start + WINDOW, color=PARTIAL_SHADE, zorder=0, lw=0)
        ax.grid(axis="y", color="#e5e5e5", zorder=0)
        ax.spines[["top", "right"]].set_visible(False)
    if starts:
        clients.set_xlim(starts[0] - WINDOW / 2, starts[-1] + WINDOW * 1.5)
    locator = mdates.AutoDateLocator(minticks=5, maxticks=12)  # type: ignore[no-untyped-call]
    locator.intervald[mdates.MINUTELY] = [1, 2, 5, 10, 15, 30]
    clients.xaxis.set_major_locator(locator)
    clients.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))  # type: ignore[no-untyped-call]
    clients.set_xlabel("window start (UTC)")
    fig.suptitle(_title(starts), fontsize=13)
    _legend(requests, any(is_partial))
    return fig


def _requests_panel(
    ax: Any, rows: Sequence[dict[str, Any]], starts: list[datetime], partial: list[bool]
) -> None:
    below = [0] * len(rows)
    hatches = ["////" if flagged else "" for flagged in partial]
    for klass, colour in STATUS_COLOURS:
        heights = [r[f"status_{klass}"] for r in rows]
        bars = ax.bar(
            starts,
            heights,
            width=WINDOW * 0.85,
            align="edge",
            bottom=below,
            color=colour,
            label=klass,
            zorder=2,
        )
        for bar, hatch in zip(bars, hatches, strict=True):
            bar.set_hatch(hatch)
            bar.set_edgecolor("white" if hatch else colour)
        below = [a + b for a, b in zip(below, heights, strict=True)]
    ax.set_ylim(0, 1.1 * max(below, default=1))
    ax.set_ylabel("requests / minute")
    ax.yaxis.set_major_formatter("{x:,.0f}")


def _line_panel(
    ax: Any, middles: list[datetime], values: list[float], partial: list[bool], colour: str, label: str
) -> None:
    ax.plot(middles, values, color=colour, lw=1.8, zorder=2)
    full = [(m, v) for m, v, flagged in zip(middles, values, partial, strict=True) if not flagged]
    part = [(m, v) for m, v, flagged in zip(middles, values, partial, strict=True) if flagged]
    if full:
        ax.scatter(*zip(*full, strict=True), color=colour, s=22, zorder=3)
    if part:
        ax.scatter(*zip(*part, strict=True), facecolor="white", edgecolor=colour, s=26, zorder=3)
    ax.set_ylim(0, 1.15 * max(values, default=1) or 1)
    ax.set_ylabel(label)
    ax.yaxis.set_major_formatter("{x:,.0f}" if max(values, default=0) >= 100 else "{x:g}")


def _title(starts: list[datetime]) -> str:
    if not starts:
        return "access-log: one-minute windows (none yet)"
    first, last = starts[0], starts[-1] + WINDOW
    span = (
        f"{first:%Y-%m-%d %H:%M} to {last:%H:%M}"
        if first.date() == last.date()
        else f"{first:%Y-%m-%d %H:%M} to {last:%Y-%m-%d %H:%M}"
    )
    return f"access-log: {len(starts)} one-minute windows, {span} UTC"


def _legend(requests: Any, with_partial: bool) -> None:
    """Beside the top panel, never over the data."""
    from matplotlib.patches import Patch

    handles = [Patch(color=colour, label=klass) for klass, colour in STATUS_COLOURS]
    if with_partial:
        handles.append(
            Patch(
                facecolor=PARTIAL_SHADE,
                edgecolor="white",
                hatch="////",
                label="partial window\n(traffic began in it)",
            )
        )
    requests.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
