"""A cluster on this machine: a ZooKeeper server and N ``samsa serve`` processes on loopback, each with its own
log dir, as ``samsa cluster up`` starts it and the cluster tests use it.

Layout under the cluster's directory::

    cluster.json            what is running: ZooKeeper's address and pid, each broker's id, port and pid
    zookeeper/              ZooKeeper's data, zoo.cfg and output (when this cluster started its own)
    broker-<id>/            the broker's server.properties, log dir (data/) and output (broker.out)

Brokers run in their own sessions (``start_new_session``), so they outlive the command that started them; ``down``
stops them with SIGTERM (a clean stop), then ZooKeeper. Tests may ``kill`` (SIGKILL), ``pause`` (SIGSTOP) and
``resume`` brokers, ``start_broker`` one again on the same log dir and port, and ``add_broker`` a new one;
``restart_broker`` stops a broker if it runs and starts it again.

A secured cluster (``samsa cluster up --security``, ``local_security``) names its brokers' one listener
(``listener``, SASL_SSL) and keeps the Kafka client properties its own checks connect with (``client_config``).

A broker someone started by hand on its ``broker-<id>/server.properties`` (after a crash, say) is found by that
path on a ``samsa serve`` command line in ``/proc/<pid>/cmdline`` (relative paths resolved against the process's
working directory), so ``down`` and ``restart_broker`` stop it too (Linux).

Not thread-safe: one owner at a time (the state file is not locked).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from samsa.client import ClientSecurity, KafkaClient, KafkaError

from .zk_client import ZkClient
from .zookeeper import ZooKeeperError, ZooKeeperServer, free_port

__all__ = ["BrokerProcess", "ClusterError", "LocalCluster"]

STATE_FILE = "cluster.json"
BROKER_START_TIMEOUT_S = 60.0


class ClusterError(RuntimeError):
    """The local cluster could not be started, found or stopped (the reason in the message)."""


@dataclass(slots=True)
class BrokerProcess:
    broker_id: int
    port: int
    pid: int = 0

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"


@dataclass(slots=True)
class _State:
    zookeeper: str
    zookeeper_pid: int = 0  # 0: a ZooKeeper this cluster did not start
    brokers: list[BrokerProcess] = field(default_factory=list)
    broker_config: dict[str, str] = field(default_factory=dict)  # the overrides every broker gets
    listener: str = "PLAINTEXT"  # each broker's one listener: <listener>://127.0.0.1:<port>
    client_config: dict[str, str] = field(default_factory=dict)  # Kafka client properties to reach it


class LocalCluster:
    """``brokers`` Samsa brokers (ids 1..N) over ZooKeeper, in ``directory`` (module doc)."""

    def __init__(
        self,
        directory: Path | str,
        *,
        zookeeper: str | None = None,
        broker_config: Mapping[str, str] | None = None,
        session_timeout_ms: int = 6000,
        listener: str = "PLAINTEXT",
        client_config: Mapping[str, str] | None = None,
    ) -> None:
        self.directory = Path(directory)
        self.broker_config = dict(broker_config or {})
        self.session_timeout_ms = session_timeout_ms
        self._zookeeper_server: ZooKeeperServer | None = None
        self._state = _State(
            zookeeper or "",
            broker_config=self.broker_config,
            listener=listener,
            client_config=dict(client_config or {}),
        )
        self._processes: dict[int, subprocess.Popen[bytes]] = {}

    # --- state ----------------------------------------------------------------------------------------------

    @classmethod
    def find(cls, directory: Path | str) -> LocalCluster:
        """The cluster ``samsa cluster up`` left in ``directory``."""
        path = Path(directory) / STATE_FILE
        try:
            raw = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise ClusterError(f"no cluster in {directory} ({exc})") from None
        cluster = cls(directory, zookeeper=raw["zookeeper"], broker_config=raw.get("broker_config") or {})
        cluster._state = _State(
            raw["zookeeper"],
            raw["zookeeper_pid"],
            [BrokerProcess(**b) for b in raw["brokers"]],
            cluster.broker_config,
            raw.get("listener") or "PLAINTEXT",
            raw.get("client_config") or {},
        )
        return cluster

    def _save(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        (self.directory / STATE_FILE).write_text(json.dumps(asdict(self._state), indent=2) + "\n")

    @property
    def started_zookeeper(self) -> bool:
        """Whether this cluster started its ZooKeeper (and ``down`` stops it)."""
        return bool(self._state.zookeeper_pid)

    @property
    def zookeeper_connect(self) -> str:
        return self._state.zookeeper

    @property
    def brokers(self) -> list[BrokerProcess]:
        return list(self._state.brokers)

    @property
    def client_config(self) -> dict[str, str]:
        """The Kafka client properties that reach this cluster's listener (empty: PLAINTEXT)."""
        return dict(self._state.client_config)

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(b.address for b in self._state.brokers)

    def broker(self, broker_id: int) -> BrokerProcess:
        for broker in self._state.brokers:
            if broker.broker_id == broker_id:
                return broker
        raise ClusterError(f"no broker {broker_id} in this cluster")

    # --- start and stop -------------------------------------------------------------------------------------

    def up(self, brokers: int, *, base_port: int = 0) -> LocalCluster:
        """Start ZooKeeper (unless one was given) and ``brokers`` brokers; returns when all are registered."""
        if brokers < 1:
            raise ClusterError("a cluster needs at least one broker")
        self.directory.mkdir(parents=True, exist_ok=True)
        if not self._state.zookeeper:
            self._zookeeper_server = ZooKeeperServer(self.directory / "zookeeper")
            try:
                self._zookeeper_server.start()
            except ZooKeeperError as exc:
                raise ClusterError(str(exc)) from None
        # from here on whatever was started is stopped again if ``up`` does not finish (Ctrl-C included): the
        # processes run in sessions of their own, and without the state file ``down`` could not find them
        try:
            if self._zookeeper_server is not None:
                self._state.zookeeper = self._zookeeper_server.connect_string
                self._state.zookeeper_pid = self._zookeeper_server.pid or 0
            for broker_id in range(1, brokers + 1):
                port = base_port + broker_id - 1 if base_port else free_port()
                self._state.brokers.append(BrokerProcess(broker_id, port))
            self._save()
            for broker in self._state.brokers:
                self.start_broker(broker.broker_id, wait=False)
            self.wait_registered([b.broker_id for b in self._state.brokers])
            self.wait_controller_known([b.broker_id for b in self._state.brokers])
        except BaseException:
            self.down()
            raise
        return self

    def add_broker(self, *, port: int = 0) -> int:
        """Start one more broker (the next id), as an operator grows a cluster; returns its id once registered."""
        broker_id = max((b.broker_id for b in self._state.brokers), default=0) + 1
        self._state.brokers.append(BrokerProcess(broker_id, port or free_port()))
        self._save()
        self.start_broker(broker_id)
        self.wait_controller_known([broker_id])
        return broker_id

    def properties(self, broker_id: int) -> dict[str, str]:
        broker = self.broker(broker_id)
        replication = str(min(3, len(self._state.brokers)))
        return {
            "node.id": str(broker_id),
            "listeners": f"{self._state.listener}://127.0.0.1:{broker.port}",
            "log.dirs": str(self.directory / f"broker-{broker_id}" / "data"),
            "zookeeper.connect": self._state.zookeeper,
            "zookeeper.session.timeout.ms": str(self.session_timeout_ms),
            "offsets.topic.replication.factor": replication,
            "group.initial.rebalance.delay.ms": "0",
            **self.broker_config,
        }

    def start_broker(self, broker_id: int, *, wait: bool = True) -> None:
        """Start (or restart, on its log dir and port) one broker's ``samsa serve`` process."""
        broker = self.broker(broker_id)
        home = self.directory / f"broker-{broker_id}"
        home.mkdir(parents=True, exist_ok=True)
        props = home / "server.properties"
        props.write_text("".join(f"{key}={value}\n" for key, value in self.properties(broker_id).items()))
        with open(home / "broker.out", "ab") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", "samsa.cli", "serve", str(props)],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self._processes[broker_id] = process
        broker.pid = process.pid
        self._save()
        if wait:
            self.wait_registered([broker_id])

    def wait_registered(self, broker_ids: list[int], timeout: float = BROKER_START_TIMEOUT_S) -> None:
        """Until each broker accepts connections and is registered in ZooKeeper."""
        deadline = time.monotonic() + timeout
        zk = ZkClient(self._state.zookeeper)
        zk.start()
        try:
            for broker_id in broker_ids:
                broker = self.broker(broker_id)
                while not (accepts_connections(broker.port) and broker_id in zk.live_brokers()):
                    process = self._processes.get(broker_id)
                    if process is not None and process.poll() is not None:
                        raise ClusterError(f"broker {broker_id} exited at start: {self.output(broker_id)}")
                    if time.monotonic() > deadline:
                        raise ClusterError(f"broker {broker_id} did not start within {timeout:.0f} s")
                    time.sleep(0.05)
        finally:
            zk.close()

    def wait_controller_known(self, broker_ids: list[int], timeout: float = BROKER_START_TIMEOUT_S) -> None:
        """Until each broker's metadata names a controller, that is until it has had the controller's
        UpdateMetadata: an admin client that asks it first then finds the controller at once."""
        deadline = time.monotonic() + timeout
        for broker_id in broker_ids:
            address = self.broker(broker_id).address
            security = ClientSecurity.from_properties(self._state.client_config)
            while not asyncio.run(_knows_controller(address, security)):
                if time.monotonic() > deadline:
                    raise ClusterError(f"broker {broker_id} knew no controller within {timeout:.0f} s")
                time.sleep(0.05)

    def output(self, broker_id: int, limit: int = 3000) -> str:
        try:
            return (self.directory / f"broker-{broker_id}" / "broker.out").read_text(errors="replace")[
                -limit:
            ]
        except OSError:
            return "(no output)"

    def signal(self, broker_id: int, signum: int) -> None:
        pid = self.broker(broker_id).pid
        if pid:
            _signal(pid, signum)

    def running_pid(self, broker_id: int) -> int:
        """The pid of the process serving this broker: the one this cluster started, else one started by hand on
        its ``server.properties`` (module doc); 0 when none runs."""
        pid = self.broker(broker_id).pid
        if pid and _alive(pid):
            return pid
        return _serving(self.directory / f"broker-{broker_id}" / "server.properties")

    def restart_broker(self, broker_id: int) -> int:
        """Stop the broker if it runs (SIGTERM, a clean stop), then start it on its log dir and port; returns once
        it is registered and knows the controller. The pid stopped, 0 when none ran."""
        pid = self.running_pid(broker_id)
        if pid:
            self.broker(broker_id).pid = pid
            self.stop_broker(broker_id)
        self.start_broker(broker_id)
        self.wait_controller_known([broker_id])
        return pid

    def kill(self, broker_id: int) -> None:
        """SIGKILL: the broker's ZooKeeper session ends only when it times out."""
        self.signal(broker_id, signal.SIGKILL)
        self._reap(broker_id, 10.0)

    def pause(self, broker_id: int) -> None:
        self.signal(broker_id, signal.SIGSTOP)

    def resume(self, broker_id: int) -> None:
        self.signal(broker_id, signal.SIGCONT)

    def stop_broker(self, broker_id: int, timeout: float = 30.0) -> int | None:
        """SIGTERM (a clean stop) and wait; the exit code when this process started it."""
        self.signal(broker_id, signal.SIGCONT)
        self.signal(broker_id, signal.SIGTERM)
        return self._reap(broker_id, timeout)

    def _reap(self, broker_id: int, timeout: float) -> int | None:
        process = self._processes.pop(broker_id, None)
        pid = self.broker(broker_id).pid
        self.broker(broker_id).pid = 0
        self._save()
        if process is not None:
            try:
                return process.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                return process.wait(timeout)
        deadline = time.monotonic() + timeout
        while pid and _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if pid and _alive(pid):
            _signal(pid, signal.SIGKILL)
        return None

    def down(self) -> int:
        """Stop every broker (SIGTERM), those started by hand on their ``server.properties`` too, then the
        ZooKeeper this cluster started; the number of brokers that were running."""
        running = 0
        for broker in self._state.brokers:
            pid = self.running_pid(broker.broker_id)
            if pid:
                running += 1
                broker.pid = pid
                self.stop_broker(broker.broker_id)
        if self._zookeeper_server is not None:
            self._zookeeper_server.stop()
        elif self._state.zookeeper_pid and _alive(self._state.zookeeper_pid):
            os.killpg(self._state.zookeeper_pid, signal.SIGTERM)
            deadline = time.monotonic() + 10
            while _alive(self._state.zookeeper_pid) and time.monotonic() < deadline:
                time.sleep(0.05)
        self._state.zookeeper_pid = 0
        (self.directory / STATE_FILE).unlink(missing_ok=True)
        return running


async def _knows_controller(address: str, security: ClientSecurity) -> bool:
    try:
        async with KafkaClient(
            address, client_id="samsa-cluster", request_timeout_ms=5000, security=security
        ) as client:
            return (await client.metadata([])).controller_id >= 0
    except KafkaError:
        return False


def accepts_connections(port: int) -> bool:
    """Whether something listens on ``port`` of 127.0.0.1 (a broker's listener is up)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def _signal(pid: int, signum: int) -> None:
    """Signal a broker: its whole process group when it leads one (as the brokers this module starts do), else
    the process alone (a broker started by hand shares its shell's group)."""
    try:
        if os.getpgid(pid) == pid:
            os.killpg(pid, signum)
        else:
            os.kill(pid, signum)
    except ProcessLookupError:
        pass


def _serving(properties: Path) -> int:
    """The pid of a live ``samsa serve`` process whose properties file is ``properties``; 0 for none."""
    target = properties.resolve()
    proc = Path("/proc")
    if not proc.is_dir():
        return 0
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            args = [a.decode(errors="replace") for a in (entry / "cmdline").read_bytes().split(b"\0") if a]
            if "serve" not in args:
                continue
            cwd = Path(os.readlink(entry / "cwd"))
        except OSError:
            continue
        after = args[args.index("serve") + 1 :]
        paths = [
            a
            for i, a in enumerate(after)
            if not a.startswith("-") and (i == 0 or after[i - 1] != "--override")
        ]
        if any((cwd / path).resolve() == target for path in paths) and _alive(int(entry.name)):
            return int(entry.name)
    return 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie counts as gone: reaped here if it is a child of ours; another's (an orphan waits for a reaper that
    # may be slow, or absent in a container) is told by its state
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done == 0
    except ChildProcessError:
        pass
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True
