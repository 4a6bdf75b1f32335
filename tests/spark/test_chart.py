"""The demo chart: one panel per measure on a shared time axis with dates, each starting at zero; partial windows
(begun before the traffic) shaded in every panel and their bars hatched; the legend beside the data."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import pytest
from matplotlib.patches import Rectangle

from samsa.spark.pipeline.chart import PARTIAL_SHADE, chart_figure, partial_windows, write_chart

START = datetime(2026, 11, 18, 11, 6, tzinfo=timezone.utc)
PANELS = ["requests / minute", "error rate (%)", "p95 response bytes", "distinct clients (approx.)"]


def rows(n: int = 6) -> list[dict[str, Any]]:
    out = [
        {
            "window_start": START + timedelta(minutes=i),
            "requests": 1000 + 2 * i,
            "status_2xx": 900 + i,
            "status_3xx": 50,
            "status_4xx": 30 + i,
            "status_5xx": 20,
            "error_rate": (50 + i) / (1000 + 2 * i),
            "bytes_p95": 20_000 + 100 * i,
            "distinct_clients": 40 + i,
        }
        for i in range(n)
    ]
    return out[::-1]  # any order


def ms(when: datetime) -> int:
    return int(when.timestamp() * 1000)


@pytest.fixture
def figure() -> Any:
    fig = chart_figure(rows(), traffic_start_ms=ms(START + timedelta(seconds=40)))
    fig.canvas.draw()
    yield fig
    plt.close(fig)


def shaded(ax: Any) -> list[Rectangle]:
    return [
        p for p in ax.patches if isinstance(p, Rectangle) and p.get_facecolor()[:3] == _rgb(PARTIAL_SHADE)
    ]


def _rgb(colour: str) -> tuple[float, float, float]:
    from matplotlib.colors import to_rgb

    return to_rgb(colour)


def test_one_panel_per_measure_sharing_a_time_axis(figure: Any) -> None:
    axes = figure.axes
    assert [ax.get_ylabel() for ax in axes] == PANELS
    assert all(axes[0].get_shared_x_axes().joined(axes[0], ax) for ax in axes[1:])
    assert all(ax.get_ylim()[0] == 0 for ax in axes)  # no panel starts above zero
    assert len(axes[0].patches) - len(shaded(axes[0])) == 4 * 6  # a bar per status class per window


def test_the_time_axis_reads_as_dates_and_times(figure: Any) -> None:
    bottom = figure.axes[-1]
    ticks = [t.get_text() for t in bottom.get_xticklabels() if t.get_text()]
    assert "11:08" in ticks and len(ticks) >= 5
    assert "2026-Nov-18" in bottom.xaxis.get_major_formatter().get_offset()
    assert "2026-11-18 11:06 to 11:12 UTC" in figure._suptitle.get_text()


def test_a_partial_window_is_shaded_in_every_panel_and_hatched(figure: Any) -> None:
    for ax in figure.axes:
        (span,) = shaded(ax)
        assert span.get_x() == pytest.approx(_date_num(START))  # the first window, 11:06, is the partial one
    bars = [p for p in figure.axes[0].patches if p.get_hatch()]
    assert len(bars) == 4  # the 4 status classes of that one window
    legend = figure.axes[0].get_legend()
    assert any("partial" in t.get_text() for t in legend.get_texts())
    assert legend.get_bbox_to_anchor().x0 >= figure.axes[0].get_window_extent().x1  # beside the panel


def test_the_chart_is_written_as_a_png(tmp_path: Path) -> None:
    path = tmp_path / "windows.png"
    write_chart(rows(), path, traffic_start_ms=ms(START + timedelta(seconds=40)))
    data = path.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 10_000


def test_no_partial_mark_without_a_known_traffic_start() -> None:
    fig = chart_figure(rows())
    try:
        assert all(not shaded(ax) for ax in fig.axes)
        assert not any(p.get_hatch() for p in fig.axes[0].patches)
    finally:
        plt.close(fig)


def test_partial_windows_are_those_begun_before_the_traffic() -> None:
    starts = partial_windows(rows(), ms(START + timedelta(minutes=1, seconds=1)))
    assert starts == {ms(START), ms(START + timedelta(minutes=1))}
    assert partial_windows(rows(), ms(START)) == set()
    naive = [{"window_start": START.astimezone().replace(tzinfo=None)}]  # as Spark hands them over
    assert partial_windows(naive, ms(START) + 1) == {ms(START)}


def _date_num(when: datetime) -> float:
    import matplotlib.dates as mdates

    return float(mdates.date2num(when))
