"""A standalone ZooKeeper server as a child process: what `samsa cluster up` and the cluster tests coordinate through.

ZooKeeper itself is the Debian ``zookeeper`` package (a real server; ``make system-deps`` installs it) run with the
JDK Spark already needs. The server listens on 127.0.0.1 only, keeps its snapshots and transaction log in the given
directory, and has its admin web server off. It is ready when it answers the ``srvr`` four-letter word
with its version (``ruok`` answers ``imok`` before it serves requests).

Not thread-safe: one owner starts and stops it.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from types import TracebackType

__all__ = ["ZOOKEEPER_JAR", "ZooKeeperError", "ZooKeeperServer", "free_port"]

ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
ZOOKEEPER_CONF = Path("/etc/zookeeper/conf")  # log4j settings of the Debian package
MAIN_CLASS = "org.apache.zookeeper.server.ZooKeeperServerMain"


class ZooKeeperError(RuntimeError):
    """ZooKeeper could not be found, started or reached (the reason in the message)."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` right now (a later bind may still lose a race to another process)."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


class ZooKeeperServer:
    """One ZooKeeper server on ``127.0.0.1:port`` with its data in ``data_dir`` (port 0: a free one).

    ZooKeeper expires sessions in buckets of one tick, so a dead broker is noticed up to a tick after its session
    timeout: the tick is 500 ms (ZooKeeper's own default is 2 s, which made failover take up to 2 s longer). The
    timeouts granted are set apart from the tick, 1 s to 60 s, so Kafka's ``zookeeper.session.timeout.ms`` of
    6000 or 18000 is granted as asked.
    """

    def __init__(
        self, data_dir: Path | str, port: int = 0, *, tick_time_ms: int = 500, heap_mb: int = 128
    ) -> None:
        self.data_dir = Path(data_dir)
        self.port = port or free_port()
        self.tick_time_ms = tick_time_ms
        self.heap_mb = heap_mb
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def connect_string(self) -> str:
        """What ``zookeeper.connect`` takes."""
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def command(self) -> list[str]:
        java = shutil.which("java")
        if java is None:
            raise ZooKeeperError(
                "no java on PATH: install a JDK (make system-deps installs openjdk-17-jre-headless)"
            )
        if not ZOOKEEPER_JAR.is_file():
            raise ZooKeeperError(
                f"{ZOOKEEPER_JAR} is missing: install Debian's zookeeper package (make system-deps)"
            )
        classpath = f"{ZOOKEEPER_CONF}:{ZOOKEEPER_JAR}"
        return [
            java,
            f"-Xmx{self.heap_mb}m",
            "-XX:+UseSerialGC",
            "-cp",
            classpath,
            MAIN_CLASS,
            str(self._config()),
        ]

    def _config(self) -> Path:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        path = self.data_dir / "zoo.cfg"
        path.write_text(
            f"tickTime={self.tick_time_ms}\n"
            f"dataDir={self.data_dir.resolve()}\n"
            f"clientPort={self.port}\n"
            "clientPortAddress=127.0.0.1\n"
            "minSessionTimeout=1000\n"
            "maxSessionTimeout=60000\n"
            "maxClientCnxns=0\n"
            "admin.enableServer=false\n"
            "4lw.commands.whitelist=ruok,srvr,stat\n"
        )
        return path

    def start(self, timeout: float = 30.0) -> ZooKeeperServer:
        """Spawn the server and wait until it answers; ZooKeeperError (with its output) when it does not in time."""
        if self._process is not None:
            raise ZooKeeperError(f"ZooKeeper on {self.connect_string} is already started")
        command = self.command()  # writes zoo.cfg, creating data_dir
        with open(self.data_dir / "zookeeper.out", "ab") as log:
            self._process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        try:
            while not self.is_ok():
                if self._process.poll() is not None:
                    output = self._output()
                    self._process = None
                    raise ZooKeeperError(f"ZooKeeper on {self.connect_string} exited at start: {output}")
                if time.monotonic() > deadline:
                    raise ZooKeeperError(
                        f"ZooKeeper on {self.connect_string} did not answer within {timeout:.0f} s"
                    )
                time.sleep(0.05)
        except BaseException:
            # in a session of its own, Ctrl-C does not reach it: stopped here, never orphaned
            self.stop()
            raise
        return self

    def is_ok(self) -> bool:
        """Whether the server serves requests now."""
        return self.four_letter_word("srvr").startswith("Zookeeper version")

    def four_letter_word(self, word: str, timeout: float = 1.0) -> str:
        """ZooKeeper's answer to a whitelisted four-letter word, or "" when it cannot be reached."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as conn:
                conn.sendall(word.encode())
                chunks = []
                while chunk := conn.recv(4096):
                    chunks.append(chunk)
                return b"".join(chunks).decode(errors="replace")
        except OSError:
            return ""

    def _output(self, limit: int = 2000) -> str:
        try:
            return (self.data_dir / "zookeeper.out").read_text(errors="replace")[-limit:].strip()
        except OSError:
            return "(no output)"

    def pause(self) -> None:
        """Stop the server's process (SIGSTOP) without ending it: clients see it hang, sessions age."""
        self._signal(signal.SIGSTOP)

    def resume(self) -> None:
        self._signal(signal.SIGCONT)

    def _signal(self, signum: int) -> None:
        if self._process is not None and self._process.poll() is None:
            os.killpg(self._process.pid, signum)

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, then SIGKILL after ``timeout``; the data directory stays for a later start."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        os.killpg(process.pid, signal.SIGCONT)  # a paused JVM cannot act on SIGTERM
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout)

    def __enter__(self) -> ZooKeeperServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
