"""The console: a poller that keeps the latest picture of the cluster, and the JSON and static routes over it.

Once a second (``POLL_INTERVAL_S``) the poller gathers a ``ClusterState`` (``cluster_state.gather``: a dozen
batched requests whatever the partition count) and feeds the rate chart. Page requests are answered from that
picture, so a page costs no protocol call, and N browsers cost the cluster what one does; only a topic's configs
(DescribeConfigs, cached ``CONFIG_TTL_S``) and a partition's segments (files, in a worker thread) are read on
demand.

Routes (all GET; JSON unless said):

    /                     the page (static/index.html), /console.js, /console.css
    /api/cluster          brokers, controller, counts, under-replicated and offline partitions, topic summaries,
                          group summaries, the chart's points
    /api/topic?name=T     T's partitions (leader, replicas, ISR, offsets, sizes) and configs
    /api/segments?topic=T&partition=P   the partition's segments on disk, or "not available"
    /api/groups           every group: state, members, assignment, committed offsets and lag per partition

Concurrency contract: everything runs on the console's one event loop; ``start_in_thread`` gives the loop a thread
of its own (tests, embedding) and ``stop_thread`` ends it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from samsa.client import KafkaClient, KafkaError
from samsa.storage.topic import InvalidTopicError, validate_topic

from . import cluster_state
from .cluster_state import ClusterState
from .http import ConsoleServer, Response
from .rates import Rates
from .segments import partition_segments

__all__ = ["CONFIG_TTL_S", "POLL_INTERVAL_S", "Console"]

log = logging.getLogger(__name__)

POLL_INTERVAL_S = 1.0
CONFIG_TTL_S = 1.0
FIRST_PICTURE_WAIT_S = 5.0
LISTED_PROBLEMS = 200
STATIC = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/console.js": ("console.js", "text/javascript; charset=utf-8"),
    "/console.css": ("console.css", "text/css; charset=utf-8"),
}
JSON_TYPE = "application/json"


def _json(status: int, value: Any) -> Response:
    return Response(status, json.dumps(value, separators=(",", ":")).encode(), JSON_TYPE)


class Console:
    """``samsa console``: serves the cluster behind ``bootstrap_servers`` at ``http://host:port/`` (module doc)."""

    def __init__(
        self,
        bootstrap_servers: str,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        log_dirs: Sequence[Path] = (),
        poll_interval_s: float = POLL_INTERVAL_S,
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.host = host
        self.port = port
        self.log_dirs = list(log_dirs)
        self.poll_interval_s = poll_interval_s
        self.state: ClusterState | None = None
        self.rates = Rates()
        self._known_brokers: set[int] = set()
        self._addresses: list[str] = []  # host:port of the brokers up in the last picture
        self._rotation = 0
        self._client: KafkaClient | None = None
        self._server: ConsoleServer | None = None
        self._poller: asyncio.Task[None] | None = None
        self._first_picture = asyncio.Event()
        self._configs: dict[str, tuple[float, tuple[list[dict[str, Any]], str | None]]] = {}
        self._static: dict[str, bytes] = {}
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None

    # ------------------------------------------------------------------------------------------ lifecycle

    async def start(self) -> str:
        """Start polling and serving; returns the console's URL."""
        self._first_picture = asyncio.Event()
        self._client = self._new_client(self.bootstrap_servers)
        self._server = ConsoleServer(self._routes())
        _, port = await self._server.start(self.host, self.port)
        self.port = port
        self._poller = asyncio.create_task(self._poll_forever(), name="console-poller")
        return self.url

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/"

    async def close(self) -> None:
        if self._poller is not None:
            self._poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._poller
        if self._server is not None:
            await self._server.close()
        if self._client is not None:
            await self._client.close()

    def start_in_thread(self, timeout: float = 10.0) -> Console:
        """Run the console on an event loop in a daemon thread; returns once it serves."""
        ready: concurrent.futures.Future[None] = concurrent.futures.Future()

        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            try:
                await self.start()
            except BaseException as exc:
                ready.set_exception(exc)
                return
            ready.set_result(None)
            try:
                await self._stop.wait()
            finally:
                await self.close()

        self._thread = threading.Thread(target=lambda: asyncio.run(main()), name="samsa-console", daemon=True)
        self._thread.start()
        ready.result(timeout)
        return self

    def stop_thread(self, timeout: float = 10.0) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(timeout)

    # ------------------------------------------------------------------------------------------ polling

    async def _poll_forever(self) -> None:
        assert self._client is not None
        while True:
            started = time.monotonic()
            await self.poll_once()
            elapsed = time.monotonic() - started
            await asyncio.sleep(max(0.05, self.poll_interval_s - elapsed))

    async def poll_once(self) -> ClusterState:
        assert self._client is not None
        try:
            state = await cluster_state.gather(self._client, self._known_brokers)
        except Exception as exc:  # a bug must not end the poller: the page shows the error instead
            log.exception("console: gathering the cluster's state failed")
            state = ClusterState(time_ms=int(time.time() * 1000), error=f"{type(exc).__name__}: {exc}")
        if state.cluster_id is None and state.error is not None:
            await self._next_bootstrap()
        else:
            self._addresses = [f"{b['host']}:{b['port']}" for b in state.brokers if b["up"] and b["host"]]
        self._known_brokers.update(b["id"] for b in state.brokers)
        self.state = state
        self.rates.observe(state)
        self._first_picture.set()
        return state

    def _new_client(self, bootstrap_servers: str) -> KafkaClient:
        return KafkaClient(
            bootstrap_servers,
            client_id="samsa-console",
            request_timeout_ms=int(cluster_state.CALL_TIMEOUT_S * 1000),
        )

    async def _next_bootstrap(self) -> None:
        """No broker answered Metadata: start again from the next address, so that a broker that hangs (its
        connection open, no answer) is left after one poll. The addresses are the brokers of the last picture,
        then ``bootstrap_servers``, turned by one each time."""
        candidates = list(
            dict.fromkeys(
                [*self._addresses, *(a.strip() for a in self.bootstrap_servers.split(",") if a.strip())]
            )
        )
        self._rotation = (self._rotation + 1) % len(candidates)
        old, self._client = (
            self._client,
            self._new_client(",".join(candidates[self._rotation :] + candidates[: self._rotation])),
        )
        self._configs.clear()
        if old is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(old.close(), cluster_state.CALL_TIMEOUT_S)

    async def _picture(self) -> ClusterState:
        if self.state is None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._first_picture.wait(), FIRST_PICTURE_WAIT_S)
        return self.state or ClusterState(
            time_ms=int(time.time() * 1000), error="no picture of the cluster yet"
        )

    # ------------------------------------------------------------------------------------------ routes

    def _routes(self) -> dict[str, Any]:
        routes: dict[str, Any] = {path: self._static_route(path) for path in STATIC}
        routes.update(
            {
                "/api/cluster": self._cluster,
                "/api/topic": self._topic,
                "/api/segments": self._segments,
                "/api/groups": self._groups,
            }
        )
        return routes

    def _static_route(self, path: str) -> Any:
        name, content_type = STATIC[path]

        async def serve(query: Mapping[str, str]) -> Response:
            body = self._static.get(name)
            if body is None:
                body = self._static[name] = (
                    resources.files(__package__).joinpath("static").joinpath(name).read_bytes()
                )
            return Response(200, body, content_type)

        return serve

    async def _cluster(self, query: Mapping[str, str]) -> Response:
        state = await self._picture()
        return _json(200, _cluster_summary(state, self.rates))

    async def _topic(self, query: Mapping[str, str]) -> Response:
        state = await self._picture()
        name = query.get("name", "")
        topic = state.topics.get(name)
        if topic is None:
            return _json(
                404, {"error": f"no topic {name!r} in the cluster's metadata", "time_ms": state.time_ms}
            )
        configs, configs_error = await self._topic_configs(name)
        return _json(
            200,
            {
                **topic,
                "time_ms": state.time_ms,
                "in_rate": self.rates.topic_in.get(name),
                "configs": configs,
                "configs_error": configs_error,
                "brokers": {str(b["id"]): b["up"] for b in state.brokers},
            },
        )

    async def _topic_configs(self, name: str) -> tuple[list[dict[str, Any]], str | None]:
        cached = self._configs.get(name)
        if cached is not None and time.monotonic() - cached[0] < CONFIG_TTL_S:
            return cached[1]
        assert self._client is not None
        try:
            described = await asyncio.wait_for(
                self._client.describe_configs([name]), cluster_state.CALL_TIMEOUT_S
            )
            entries = described.get(name, {})
            result: tuple[list[dict[str, Any]], str | None] = (
                [
                    {
                        "name": e.name,
                        "value": None if e.is_sensitive else e.value,
                        "is_default": e.is_default,
                        "source": e.source,
                    }
                    for e in sorted(entries.values(), key=lambda e: e.name)
                ],
                None,
            )
        except (KafkaError, OSError, asyncio.TimeoutError) as exc:
            result = ([], f"DescribeConfigs failed: {exc or type(exc).__name__}")
        self._configs[name] = (time.monotonic(), result)
        return result

    async def _segments(self, query: Mapping[str, str]) -> Response:
        topic = query.get("topic", "")
        try:
            partition = int(query.get("partition", ""))
        except ValueError:
            return _json(400, {"error": "partition must be an integer"})
        try:
            validate_topic(topic)  # the name becomes a directory name: never "..", never a "/"
        except InvalidTopicError as exc:
            return _json(400, {"error": str(exc)})
        if partition < 0:
            return _json(400, {"error": "partition must not be negative"})
        dirs = self._segment_dirs(await self._picture())
        if not dirs:
            return _json(200, {"available": False, "reason": _NOT_AVAILABLE, "replicas": []})
        replicas = await asyncio.to_thread(partition_segments, dirs, topic, partition)
        if not replicas:
            reason = f"no directory {topic}-{partition} in " + ", ".join(str(p) for _, p in dirs)
            return _json(200, {"available": False, "reason": reason, "replicas": []})
        return _json(200, {"available": True, "reason": None, "replicas": replicas})

    def _segment_dirs(self, state: ClusterState) -> list[tuple[str, Path]]:
        """``--log-dirs``, else the brokers' log dirs (from DescribeLogDirs) that are on this machine."""
        if self.log_dirs:
            return [("log dir", path) for path in self.log_dirs]
        local = []
        for broker, paths in sorted(state.log_dirs.items()):
            for path in paths:
                if _node_id_of(Path(path)) == broker:
                    local.append((f"broker {broker}", Path(path)))
        return local

    async def _groups(self, query: Mapping[str, str]) -> Response:
        state = await self._picture()
        return _json(200, {"time_ms": state.time_ms, "error": state.error, "groups": state.groups})


_NOT_AVAILABLE = (
    "not available: segments are not part of the Kafka protocol; start the console with --log-dirs PATH "
    "(or on the brokers' machine) to read them"
)


def _node_id_of(log_dir: Path) -> int | None:
    """The node id in ``meta.properties`` (``node.id`` or ``broker.id``), None when not readable here."""
    try:
        text = (log_dir / "meta.properties").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key.strip() in ("node.id", "broker.id"):
            with contextlib.suppress(ValueError):
                return int(value.strip())
    return None


def _topic_summary(name: str, topic: dict[str, Any], rates: Rates) -> dict[str, Any]:
    partitions = topic["partitions"]
    sizes = [p["size"] for p in partitions if p["size"] is not None]
    counts = [
        p["log_end_offset"] - p["log_start_offset"]
        for p in partitions
        if p["log_end_offset"] is not None and p["log_start_offset"] is not None
    ]
    return {
        "name": name,
        "internal": topic["internal"],
        "error": topic["error"],
        "partitions": len(partitions),
        "replication_factor": max((len(p["replicas"]) for p in partitions), default=0),
        "under_replicated": sum(1 for p in partitions if p["under_replicated"]),
        "offline": sum(1 for p in partitions if p["offline"]),
        "size": sum(sizes) if sizes else None,
        "messages": sum(counts) if counts else None,
        "in_rate": rates.topic_in.get(name),
    }


def _problems(state: ClusterState, key: str) -> list[dict[str, Any]]:
    found = [
        {"topic": name, **{k: p[k] for k in ("partition", "leader", "replicas", "isr")}}
        for name, topic in state.topics.items()
        for p in topic["partitions"]
        if p[key]
    ]
    return found[:LISTED_PROBLEMS]


def _cluster_summary(state: ClusterState, rates: Rates) -> dict[str, Any]:
    partitions = [p for t in state.topics.values() for p in t["partitions"]]
    return {
        "time_ms": state.time_ms,
        "error": state.error,
        "cluster_id": state.cluster_id,
        "controller": state.controller,
        "brokers": state.brokers,
        "partition_count": len(partitions),
        "under_replicated_count": sum(1 for p in partitions if p["under_replicated"]),
        "offline_count": sum(1 for p in partitions if p["offline"]),
        "under_replicated": _problems(state, "under_replicated"),
        "offline": _problems(state, "offline"),
        "topics": [_topic_summary(name, topic, rates) for name, topic in state.topics.items()],
        "groups": [
            {k: g.get(k) for k in ("group_id", "state", "protocol_type", "lag", "error")}
            | {"members": len(g.get("members", []))}
            for g in state.groups
        ],
        "rates": list(rates.points),
    }
