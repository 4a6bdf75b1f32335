"""A tiny recording TCP proxy between real Kafka clients and a ``samsa serve`` broker.

Start the broker with ``advertised.listeners`` pointing at the proxy's port, so that every connection a client
opens after bootstrap also goes through the proxy. Each connection is relayed byte for byte in both directions;
the bytes are split into Kafka frames on the side (``samsa.protocol.FrameSplitter``) and recorded in order as
``Captured(connection, direction, frame)``, the frame without its size prefix. Recording never changes what is
relayed.

Threads, not asyncio: the clients under test run in this process (their own threads or event loops) or as child
processes, and the proxy must not depend on any of their loops.
"""

from __future__ import annotations

import itertools
import selectors
import socket
import threading
from dataclasses import dataclass

from samsa.protocol import FrameSplitter

REQUEST = "request"
RESPONSE = "response"


@dataclass(frozen=True)
class Captured:
    connection: int
    direction: str  # REQUEST (client to broker) or RESPONSE
    frame: bytes  # without the 4-byte size prefix


class CaptureProxy:
    """Listens on ``listen_port`` (0: any free port) and relays every connection to ``upstream_port``, which may be
    set after construction (``upstream``), before ``start``: bind the proxy first, then start the broker that
    advertises it, so no other process can take the proxy's port in between."""

    def __init__(self, upstream_port: int = 0, listen_port: int = 0, host: str = "127.0.0.1") -> None:
        self.upstream = (host, upstream_port)
        self._listener = socket.create_server((host, listen_port))
        self.port: int = self._listener.getsockname()[1]
        self.captured: list[Captured] = []
        self.upstream_errors: list[str] = []  # connections closed because the upstream refused them
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._sockets: list[socket.socket] = []

    def start(self) -> CaptureProxy:
        thread = threading.Thread(target=self._accept_loop, name="capture-accept", daemon=True)
        thread.start()
        self._threads.append(thread)
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._listener.close()
        with self._lock:
            sockets = list(self._sockets)
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
        for thread in self._threads:
            thread.join(5)

    def __enter__(self) -> CaptureProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def snapshot(self) -> list[Captured]:
        with self._lock:
            return list(self.captured)

    def clear(self) -> None:
        with self._lock:
            self.captured.clear()

    # --- relaying ---------------------------------------------------------------------------------------------

    def _accept_loop(self) -> None:
        self._listener.settimeout(0.2)  # closing a socket does not wake a thread blocked in accept()
        while not self._stopping.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            client.settimeout(None)
            try:
                upstream = socket.create_connection(self.upstream, timeout=10)
            except OSError as exc:
                with self._lock:
                    self.upstream_errors.append(f"{self.upstream[0]}:{self.upstream[1]}: {exc}")
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                self._sockets += [client, upstream]
            thread = threading.Thread(
                target=self._relay,
                args=(next(self._ids), client, upstream),
                name="capture-relay",
                daemon=True,
            )
            thread.start()
            self._threads.append(thread)

    def _relay(self, connection: int, client: socket.socket, upstream: socket.socket) -> None:
        splitters = {client: FrameSplitter(), upstream: FrameSplitter()}
        peers = {client: upstream, upstream: client}
        directions = {client: REQUEST, upstream: RESPONSE}
        # a selector (epoll), not select(): select() refuses descriptors from 1024 up, which a test process that
        # has run a thousand tests reaches, and the relay then ended every connection at once
        watch = selectors.DefaultSelector()
        watch.register(client, selectors.EVENT_READ)
        watch.register(upstream, selectors.EVENT_READ)
        try:
            while not self._stopping.is_set():
                for key, _ in watch.select(0.2):
                    sock = key.fileobj
                    assert isinstance(sock, socket.socket)
                    data = sock.recv(65536)
                    if not data:
                        return
                    frames = splitters[sock].feed(data)  # record before relaying: a reply can't overtake
                    with self._lock:
                        self.captured.extend(Captured(connection, directions[sock], f) for f in frames)
                    peers[sock].sendall(data)
        except (OSError, ValueError):
            return
        finally:
            watch.close()
            for sock in (client, upstream):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                sock.close()
