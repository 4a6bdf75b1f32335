"""Web access-log lines (nginx ``combined`` format): a seeded generator, the parser's pattern, and the per-minute
aggregation computed in plain Python (the oracle the Spark job is checked against).

    $remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent"
    203.0.113.7 - - [22/Nov/2026:21:40:01 +0000] "GET /api/items?id=3 HTTP/1.1" 200 5123 "-" "Mozilla/5.0 (...)"

No Spark here: the generator and the oracle run anywhere.
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

LINE_PATTERN = r'^(\S+) \S+ (\S+) \[([^\]]+)\] "([A-Z]+) (\S+) (HTTP/[0-9.]+)" ([1-5][0-9][0-9]) ([0-9]+|-) "([^"]*)" "([^"]*)"$'
"""Groups: 1 client, 2 user, 3 time_local, 4 method, 5 path (with query), 6 protocol, 7 status, 8 bytes, 9 referer,
10 user agent."""

TIME_FORMAT = "%d/%b/%Y:%H:%M:%S %z"
SPARK_TIME_FORMAT = "dd/MMM/yyyy:HH:mm:ss Z"
WINDOW_MS = 60_000
TOP_PATHS = 3
START_MS = 1_795_000_000_000  # 2026-11-18 (a fixed start makes the generated input reproducible)

PATHS = [
    ("/", 30),
    ("/index.html", 10),
    ("/api/items", 25),
    ("/api/items/{id}", 20),
    ("/api/cart", 8),
    ("/api/checkout", 3),
    ("/login", 5),
    ("/static/app.js", 15),
    ("/static/style.css", 12),
    ("/images/{id}.png", 10),
    ("/search?q={word}", 6),
    ("/health", 4),
]
WORDS = ["shoes", "coat", "lamp", "chair", "desk", "pen", "mug"]
AGENTS = [
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_6) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0",
    "curl/8.5.0",
    "Googlebot/2.1 (+http://www.google.com/bot.html)",
]
STATUSES = [(200, 80), (304, 6), (301, 2), (404, 6), (403, 1), (500, 3), (502, 1), (503, 1)]
METHODS = [("GET", 85), ("POST", 12), ("PUT", 2), ("DELETE", 1)]
BAD_LINES = [
    "this is not an access log line",
    '203.0.113.9 - - [32/Foo/2026:99:99:99 +0000] "GET / HTTP/1.1" 200 12 "-" "x"',
    '203.0.113.9 - - [22/Nov/2026:10:00:00 +0000] "GARBLED" 200 12 "-" "x"',
    "",
]


def _pick(rng: random.Random, weighted: Sequence[tuple[object, int]]) -> object:
    items, weights = zip(*weighted, strict=True)
    return rng.choices(items, weights)[0]


def format_time(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime(TIME_FORMAT)


@dataclass(frozen=True, slots=True)
class GeneratedLine:
    """One line and the event time (ms) written in it; ``event_ms`` is None for a deliberately bad line."""

    line: str
    event_ms: int | None


class AccessLogGenerator:
    """Seeded nginx lines: ``clients`` distinct client addresses, a skewed path mix, a few errors and bad lines.

    Event time starts at ``start_ms`` and advances ``1000 / rate`` ms per line on average (with jitter, so lines
    arrive slightly out of order). Not thread-safe.
    """

    def __init__(
        self,
        seed: int = 7,
        *,
        start_ms: int = START_MS,
        rate: float = 200.0,
        clients: int = 500,
        bad_fraction: float = 0.005,
    ) -> None:
        self.rng = random.Random(seed)
        self.now_ms = float(start_ms)
        self.step_ms = 1000.0 / rate
        self.clients = [
            f"{self.rng.randint(1, 223)}.{self.rng.randint(0, 255)}.{self.rng.randint(0, 255)}.{self.rng.randint(1, 254)}"
            for _ in range(clients)
        ]
        self.bad_fraction = bad_fraction

    def next(self) -> GeneratedLine:
        rng = self.rng
        self.now_ms += rng.expovariate(1.0 / self.step_ms)
        if rng.random() < self.bad_fraction:
            return GeneratedLine(rng.choice(BAD_LINES), None)
        event_ms = int(self.now_ms) - rng.randint(0, 2000)  # up to 2 s late
        event_ms -= event_ms % 1000  # nginx logs whole seconds
        client = self.clients[min(int(rng.paretovariate(1.2)) - 1, len(self.clients) - 1)]
        path = str(_pick(rng, PATHS)).format(id=rng.randint(1, 500), word=rng.choice(WORDS))
        status = int(str(_pick(rng, STATUSES)))
        size = 0 if status == 304 else int(rng.lognormvariate(8.0, 1.2))
        user = "-" if rng.random() < 0.9 else f"user{rng.randint(1, 50)}"
        referer = (
            "-"
            if rng.random() < 0.6
            else f"https://shop.example.com{str(_pick(rng, PATHS[:4])).format(id=1)}"
        )
        line = (
            f'{client} - {user} [{format_time(event_ms)}] "{_pick(rng, METHODS)} {path} HTTP/1.1" {status} '
            f'{size if size or status != 304 else "-"} "{referer}" "{rng.choice(AGENTS)}"'
        )
        return GeneratedLine(line, event_ms)

    def take(self, n: int) -> list[GeneratedLine]:
        return [self.next() for _ in range(n)]


@dataclass(frozen=True, slots=True)
class ParsedLine:
    client: str
    event_ms: int
    path: str
    status: int
    bytes_sent: int


_LINE = re.compile(LINE_PATTERN)


def parse_line(line: str) -> ParsedLine | None:
    """The fields the job uses, or None when the line is not a combined-format line with a valid time."""
    match = _LINE.match(line)
    if match is None:
        return None
    try:
        when = datetime.strptime(match[3], TIME_FORMAT)
    except ValueError:
        return None
    path = match[5].split("?", 1)[0]
    size = 0 if match[8] == "-" else int(match[8])
    return ParsedLine(match[1], int(when.timestamp() * 1000), path, int(match[7]), size)


@dataclass(frozen=True, slots=True)
class WindowStats:
    """One minute of traffic, as the job writes it to ``access-stats`` and Parquet."""

    window_start_ms: int
    requests: int
    status_2xx: int
    status_3xx: int
    status_4xx: int
    status_5xx: int
    error_rate: float
    bytes_p95: int
    top_paths: tuple[str, ...]
    distinct_clients: int


def percentile_lower(values: list[int], fraction: float) -> int:
    """The smallest value with at least ``fraction`` of the values at or below it (Spark's percentile_approx for
    small inputs)."""
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


def aggregate(lines: list[ParsedLine]) -> dict[int, WindowStats]:
    """The job's aggregation, exactly, by window start (ms)."""
    windows: dict[int, list[ParsedLine]] = {}
    for line in lines:
        windows.setdefault(line.event_ms - line.event_ms % WINDOW_MS, []).append(line)
    out = {}
    for start, items in sorted(windows.items()):
        classes = Counter(item.status // 100 for item in items)
        paths = Counter(item.path for item in items)
        top = tuple(p for p, _ in sorted(paths.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_PATHS])
        n = len(items)
        out[start] = WindowStats(
            start,
            n,
            classes[2],
            classes[3],
            classes[4],
            classes[5],
            (classes[4] + classes[5]) / n,
            percentile_lower([item.bytes_sent for item in items], 0.95),
            top,
            len({item.client for item in items}),
        )
    return out


def closed_windows(
    stats: dict[int, WindowStats], max_event_ms: int, watermark_ms: int
) -> dict[int, WindowStats]:
    """The windows a job with this watermark delay has emitted once it has seen ``max_event_ms``."""
    watermark = max_event_ms - watermark_ms
    return {start: s for start, s in stats.items() if start + WINDOW_MS <= watermark}
