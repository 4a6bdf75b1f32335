"""A Samsa broker inside your own process, for applications and their tests.

Async code::

    async with samsa.Broker() as broker:            # temp log dir, a free port on 127.0.0.1
        broker.create_topic("events", partitions=3)
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers)

Sync code (the broker's event loop runs in a daemon thread)::

    with samsa.Broker() as broker:
        Producer({"bootstrap.servers": broker.bootstrap_servers})

Security is Kafka's broker configuration, passed as ``config``: a SASL_SSL listener beside a PLAINTEXT one, say::

    Broker(config={
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
        "listener.name.sasl_ssl.plain.sasl.jaas.config":
            'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-pw";',
        "ssl.keystore.type": "PEM", "ssl.keystore.location": "broker.pem",
    })

``bootstrap_servers`` is the first listener's address, ``listener_bootstrap("SASL_SSL")`` another's.

One class, two context managers: ``async with`` runs the broker on the caller's event loop (``await
broker.start()`` / ``await broker.stop()`` by hand), ``with`` runs it on its own loop in a daemon thread
(``broker.start_in_thread()`` / ``broker.stop_thread()`` by hand). Either way the stop is clean: logs are flushed,
checkpoints and ``.kafka_cleanshutdown`` are written, and a temporary log dir (when ``log_dir`` was None) is removed.
A threaded broker that is never stopped dies with the interpreter, without that clean stop.

Test controls, callable from any thread while the broker runs:

- ``create_topic(name, partitions=1, config=None)``
- ``advance_log_start_offset(topic, partition, offset)``: what DeleteRecords does; returns the new start offset.
- ``inject_error(api, error_code, count=1)``: the next ``count`` requests of ``api`` (a name such as ``"Produce"``
  or ``"list_offsets"``, or an API key) are answered with ``error_code`` (an int or an ``ErrorCode`` name) and
  have no other effect: the API's response is built from the request (its topics and partitions) with every
  ``error_code`` field set. ``count=None`` keeps injecting until ``clear_injections()``. Produce requests with
  acks=0 get no response, so they are never answered with an injected error.
- ``inject_delay(api, seconds, count=1)``: the next ``count`` requests of ``api`` wait ``seconds`` first.
- ``clear_injections()``; ``injections.pending()`` lists what is not used up yet.
- ``clock``: pass ``clock=ManualClock(start_ms)`` (``samsa.clock``) and the broker's wall clock, hence LogAppendTime
  timestamps (topic config ``message.timestamp.type=LogAppendTime``), segment rolling and retention, moves only when
  the test calls ``clock.advance(ms)``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import shutil
import tempfile
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from samsa.broker.broker import KafkaServer
from samsa.broker.config import KafkaConfig
from samsa.broker.error_response import error_response
from samsa.clock import SYSTEM_CLOCK, Clock
from samsa.protocol import ApiKey, ErrorCode, RequestHeader
from samsa.protocol.messages._registry import APIS
from samsa.storage.topic import TopicPartition

if TYPE_CHECKING:
    from samsa.storage import Log  # loaded with the broker's first log (start-up time)

__all__ = ["Broker", "BrokerControlError", "error_response"]

T = TypeVar("T")

EMBEDDED_DEFAULTS: dict[str, str] = {
    "node.id": "1",
    "num.partitions": "1",
    "offsets.topic.num.partitions": "1",
    "offsets.topic.replication.factor": "1",
    "group.initial.rebalance.delay.ms": "0",
}
"""Broker settings for one small in-process broker; ``config`` overrides them."""

THREAD_START_TIMEOUT_S = 30.0


class BrokerControlError(RuntimeError):
    """A control call the broker refused; carries the Kafka error code."""

    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(f"{error.name}: {message}")
        self.error = error


class Broker:
    """An in-process broker (module doc). Controls may be called from any thread; the rest from the owner's."""

    def __init__(
        self,
        log_dir: str | Path | None = None,
        *,
        port: int = 0,
        host: str = "127.0.0.1",
        config: Mapping[str, str] | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.host = host
        self.clock: Clock = clock if clock is not None else SYSTEM_CLOCK
        self._requested_log_dir = Path(log_dir) if log_dir is not None else None
        self._requested_port = port
        self._overrides = dict(config or {})
        self._temp_dir: Path | None = None
        self._log_dir: Path | None = None
        self._core: KafkaServer | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread_id: int | None = None
        self._thread: threading.Thread | None = None
        self._stop_requested: asyncio.Event | None = None
        self._stop_flag = threading.Event()
        self.injections = Injections()

    # --- running on the caller's loop ------------------------------------------------------------------------

    async def start(self) -> Broker:
        if self._core is not None:
            raise RuntimeError("the broker is already running")
        self._log_dir = self._requested_log_dir
        if self._log_dir is None:
            self._temp_dir = self._log_dir = Path(tempfile.mkdtemp(prefix="samsa-"))
        props = {
            **EMBEDDED_DEFAULTS,
            "listeners": f"PLAINTEXT://{self.host}:{self._requested_port}",
            "log.dirs": str(self._log_dir),
            **self._overrides,
        }
        try:
            core = KafkaServer(KafkaConfig.from_properties(props), self.clock)
        except Exception:
            self._remove_temp_dir()
            raise
        core.dispatcher.interceptor = self.injections.intercept
        core.dispatcher.interceptor_idle = self.injections.idle
        try:
            await core.start()
        except BaseException:
            await core.stop()
            self._remove_temp_dir()
            raise
        self._core = core
        self._loop = asyncio.get_running_loop()
        self._loop_thread_id = threading.get_ident()
        return self

    async def stop(self) -> None:
        core, self._core = self._core, None
        if core is not None:
            await core.stop()
        self._loop = None
        self._loop_thread_id = None
        self._remove_temp_dir()

    async def __aenter__(self) -> Broker:
        return await self.start()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    # --- running on a loop of its own, in a daemon thread ----------------------------------------------------

    def start_in_thread(self, timeout: float = THREAD_START_TIMEOUT_S) -> Broker:
        """Start on a new event loop in a daemon thread; return once the broker listens."""
        if self._thread is not None or self._core is not None:
            raise RuntimeError("the broker is already running")
        ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._stop_flag.clear()
        thread = threading.Thread(target=self._thread_main, args=(ready,), name="samsa-broker", daemon=True)
        thread.start()
        try:
            ready.result(timeout)
        except BaseException:
            self._request_stop()
            thread.join(timeout)
            raise
        self._thread = thread
        return self

    def stop_thread(self, timeout: float = THREAD_START_TIMEOUT_S) -> None:
        """Stop the broker started by ``start_in_thread`` and wait for its thread to end."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        loop = self._loop
        self._request_stop()
        thread.join(timeout)
        if thread.is_alive():
            raise RuntimeError(f"the broker thread did not stop within {timeout} s; {_pending(loop)}")

    def __enter__(self) -> Broker:
        return self.start_in_thread()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop_thread()

    def _thread_main(self, ready: concurrent.futures.Future[None]) -> None:
        asyncio.run(self._serve_until_stopped(ready))

    async def _serve_until_stopped(self, ready: concurrent.futures.Future[None]) -> None:
        self._stop_requested = asyncio.Event()
        try:
            await self.start()
        except BaseException as exc:
            ready.set_exception(exc)
            return
        ready.set_result(None)
        try:
            if not self._stop_flag.is_set():  # a stop asked for while starting (start_in_thread timed out)
                await self._stop_requested.wait()
        finally:
            await self.stop()

    def _request_stop(self) -> None:
        self._stop_flag.set()
        loop, event = self._loop, self._stop_requested
        if loop is not None and event is not None and not loop.is_closed():
            loop.call_soon_threadsafe(event.set)

    # --- what clients and tests need ----------------------------------------------------------------------------

    @property
    def core(self) -> KafkaServer:
        """The running ``samsa.broker.broker.KafkaServer`` (event-loop thread only)."""
        if self._core is None:
            raise RuntimeError("the broker is not running")
        return self._core

    @property
    def port(self) -> int:
        return self.core.bound_addresses[0][2]

    @property
    def bootstrap_servers(self) -> str:
        host, port = self.core.advertised()
        if host in ("", "0.0.0.0", "::"):
            host = "127.0.0.1"
        return f"{host}:{port}"

    def listener_bootstrap(self, listener: str) -> str:
        """``host:port`` of the listener named ``listener`` (as ``listeners`` names it: ``SASL_SSL``...)."""
        for name, host, port in self.core.bound_addresses:
            if name == listener:
                return f"{'127.0.0.1' if host in ('', '0.0.0.0', '::') else host}:{port}"
        raise KeyError(
            f"no listener {listener!r}; the broker has {[a[0] for a in self.core.bound_addresses]}"
        )

    @property
    def log_dir(self) -> Path:
        if self._log_dir is None:
            raise RuntimeError("the broker has not been started")
        return self._log_dir

    def create_topic(self, name: str, partitions: int = 1, config: Mapping[str, str] | None = None) -> None:
        from samsa.broker.topic_admin import create_topic as _create_topic
        from samsa.new_topic import NewTopic  # start-up time: first use

        topic = NewTopic(name, partitions, 1, dict(config or {}))
        result = self._call(
            lambda: _create_topic(self.core.config, self.core.log_manager, self.core.replica_manager, topic)
        )
        if not result.ok:
            raise BrokerControlError(result.error, result.message or f"cannot create topic {name!r}")

    def advance_log_start_offset(self, topic: str, partition: int, offset: int) -> int:
        """Move a partition's log start offset forward, as DeleteRecords does; return the new start offset."""
        tp = TopicPartition(topic, partition)
        error, low = self._call(lambda: self.core.replica_manager.delete_records(tp, offset))
        if error is not ErrorCode.NONE:
            raise BrokerControlError(error, f"cannot advance the log start offset of {tp} to {offset}")
        return low

    def log_start_offset(self, topic: str, partition: int) -> int:
        return self._call(lambda: self._partition_log(topic, partition).log_start_offset)

    def high_watermark(self, topic: str, partition: int) -> int:
        return self._call(lambda: self._partition_log(topic, partition).high_watermark)

    def inject_error(self, api: str | int, error_code: int | str, count: int | None = 1) -> None:
        self.injections.add(
            Injection(api_key(api), error=error_code_of(error_code), remaining=_check_count(count))
        )

    def inject_delay(self, api: str | int, seconds: float, count: int | None = 1) -> None:
        if seconds < 0:
            raise ValueError(f"a delay cannot be negative ({seconds} s)")
        self.injections.add(Injection(api_key(api), delay_s=seconds, remaining=_check_count(count)))

    def clear_injections(self) -> None:
        self.injections.clear()

    def _partition_log(self, topic: str, partition: int) -> Log:
        tp = TopicPartition(topic, partition)
        found = self.core.replica_manager.partition(tp)
        if found is None:
            raise BrokerControlError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{tp} is not hosted here")
        return found.log

    def _call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the broker's event loop thread (directly when already on it) and return its result."""
        loop = self._loop
        if loop is None:
            raise RuntimeError("the broker is not running")
        if threading.get_ident() == self._loop_thread_id:
            return fn()
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            try:
                future.set_result(fn())
            except BaseException as exc:
                future.set_exception(exc)

        loop.call_soon_threadsafe(run)
        return future.result(THREAD_START_TIMEOUT_S)

    def _remove_temp_dir(self) -> None:
        if self._temp_dir is not None:
            shutil.rmtree(self._temp_dir, ignore_errors=True)
            self._temp_dir = None


# --- injections -------------------------------------------------------------------------------------------------


@dataclasses.dataclass(slots=True)
class Injection:
    """An error or a delay for the next ``remaining`` requests of one API (None: until cleared)."""

    api_key: int
    error: ErrorCode | None = None
    delay_s: float = 0.0
    remaining: int | None = 1


class Injections:
    """Pending injections, oldest first. Thread-safe: tests add from their thread, the loop consumes."""

    def __init__(self) -> None:
        self._pending: list[Injection] = []
        self._lock = threading.Lock()

    def add(self, injection: Injection) -> None:
        with self._lock:
            self._pending.append(injection)

    def clear(self) -> None:
        with self._lock:
            self._pending.clear()

    def idle(self) -> bool:
        """Whether no injection is pending (then ``intercept`` would let every request through): the
        dispatcher's fast Produce path asks, so an embedded broker serves produce as ``samsa serve`` does."""
        return not self._pending

    def pending(self) -> list[Injection]:
        """The injections not used up yet, oldest first (copies)."""
        with self._lock:
            return [dataclasses.replace(injection) for injection in self._pending]

    def take(self, key: int, *, error: bool) -> Injection | None:
        """Consume one use of the oldest matching error (``error``) or delay injection."""
        with self._lock:
            for injection in self._pending:
                if injection.api_key == key and (injection.error is not None) == error:
                    if injection.remaining is not None:
                        injection.remaining -= 1
                        if injection.remaining <= 0:
                            self._pending.remove(injection)
                    return injection
        return None

    async def intercept(self, header: RequestHeader, request: Any) -> Any:
        """The dispatcher's hook: wait out a delay, then answer with an injected error or let the handler run."""
        key = header.request_api_key
        delay = self.take(key, error=False)
        if delay is not None:
            await asyncio.sleep(delay.delay_s)
        if key == ApiKey.PRODUCE and getattr(request, "acks", 1) == 0:
            return None
        injected = self.take(key, error=True)
        if injected is None or injected.error is None:
            return None
        return error_response(key, request, injected.error)


def _pending(loop: asyncio.AbstractEventLoop | None) -> str:
    """What a stuck broker loop is still running (its tasks and where each waits), for the error message."""
    if loop is None or loop.is_closed():
        return "its event loop is gone"
    tasks = asyncio.all_tasks(loop)
    where = []
    for task in tasks:
        frames = task.get_stack()
        place = f"{frames[-1].f_code.co_filename}:{frames[-1].f_lineno}" if frames else "?"
        where.append(f"{task.get_name()} at {place}")
    return f"pending tasks: {', '.join(sorted(where)) or 'none'}"


def _check_count(count: int | None) -> int | None:
    if count is not None and count < 1:
        raise ValueError(f"count must be at least 1, or None for every request ({count})")
    return count


def error_code_of(value: int | str) -> ErrorCode:
    """An ``ErrorCode`` from its number or its name (``"NOT_LEADER_OR_FOLLOWER"``)."""
    if isinstance(value, str):
        return ErrorCode[value.upper()]
    for code in ErrorCode:
        if code == value:
            return code
    raise ValueError(f"unknown error code {value}")


def api_key(api: str | int) -> int:
    """An API key from its number or its name in any common spelling: ``"ListOffsets"``, ``"list_offsets"``."""
    if isinstance(api, int):
        if api not in APIS:
            raise ValueError(f"unknown API key {api}")
        return api
    wanted = api.replace("_", "").replace("-", "").lower()
    for key, entry in APIS.items():
        if entry[0].lower() == wanted:
            return key
    raise ValueError(f"unknown API {api!r}")
