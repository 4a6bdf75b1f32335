"""Kafka's ZooKeeper operations over kazoo: registration, cluster id, topics, controller election, producer-id blocks.

What each znode holds is in :mod:`samsa.cluster.znodes`; this module is how brokers and the controller read and write
them, with Kafka's rules:

- a broker registers with an ephemeral ``/brokers/ids/<id>``; the znode's czxid is its broker epoch, new at every
  registration; a node left by this broker's previous session is replaced, one held by another session is refused;
- ``/cluster/id`` is created by the first broker and adopted by the others;
- a topic's config znode is written before its assignment, so a broker that sees the topic sees its config;
- the controller is elected by creating the ephemeral ``/controller`` and bumping ``/controller_epoch`` in one
  transaction; every later controller write is checked against the epoch znode's version (fencing a stale
  controller) and partition states are written on their own version (the partition epoch);
- producer ids come in blocks of 1000 taken with a compare-and-set on ``/latest_producer_id_block``;
- ``/admin/reassign_partitions`` is written by a legacy tool and only shrunk (or deleted) by the controller, each
  write a compare-and-set on its version, fenced on the controller epoch.

Concurrency: calls block on ZooKeeper round trips; kazoo runs watch callbacks on its own thread. The caller (the
broker's metadata store) runs these calls off its event loop and hands watch events back to it.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from kazoo.client import KazooClient
from kazoo.exceptions import (
    BadVersionError,
    ConnectionLoss,
    NodeExistsError,
    NoNodeError,
    SessionExpiredError,
)
from kazoo.protocol.states import KazooState, ZnodeStat
from kazoo.retry import KazooRetry, RetryFailedError

from samsa.topic_partition import TopicPartition

from . import znodes
from .znodes import (
    BrokerRegistration,
    ClusterIdZNode,
    ConfigChangeNotification,
    ControllerRegistration,
    PartitionState,
    ProducerIdBlock,
    ReassignPartitions,
    TopicAssignment,
    TopicConfig,
    ZNodeFormatError,
)

__all__ = [
    "CONNECT_ATTEMPT_S",
    "BrokerAlreadyRegisteredError",
    "ControllerEpoch",
    "ControllerMovedError",
    "ReconnectLogFilter",
    "TopicZnodeExistsError",
    "ZkClient",
    "ZkError",
    "ZkSessionInterruptedError",
    "attempts_per_host",
    "is_session_interruption",
    "reconnect_policy",
]

log = logging.getLogger(__name__)


class ZkError(RuntimeError):
    """A ZooKeeper operation Kafka's rules refuse (the reason in the message)."""


class BrokerAlreadyRegisteredError(ZkError):
    """Another live session holds ``/brokers/ids/<id>``: two brokers were given one ``broker.id``, or this broker's
    earlier process, whose session has not expired yet. ``epoch``: that registration's broker epoch."""

    def __init__(self, message: str, epoch: int) -> None:
        super().__init__(message)
        self.epoch = epoch


class ZkSessionInterruptedError(ZkError):
    """The connection to ZooKeeper was lost, or this client's session expired, during the call. The client
    reconnects by itself (with a new session after an expiry); the call is safe to repeat."""


def is_session_interruption(exc: BaseException) -> bool:
    """Whether ``exc`` says the ZooKeeper session was away (connection lost, session expired, a retry of a lost
    connection that ran out of time), not that the operation is wrong: the task that met it logs one line and
    runs again with the session (a new one after an expiry, whose watches are set again at re-registration)."""
    return isinstance(exc, (ZkSessionInterruptedError, ConnectionLoss, SessionExpiredError, RetryFailedError))


# How kazoo reconnects after a lost connection: every 0.1 s at first, doubling up to 1 s (+-20% jitter so brokers
# do not reconnect in step), forever. Kafka's ZooKeeper client tries again about every second; kazoo's default
# backs off to an hour (a minute in its docs), so a ZooKeeper restarted after 20 s was found 22-41 s later,
# past a 6 s session timeout: every session expired although ZooKeeper restores them for a client that comes
# back within its timeout.
RECONNECT_DELAY_S = 0.1
RECONNECT_MAX_DELAY_S = 1.0
RECONNECT_JITTER = 0.2

# How long one connection attempt waits for ZooKeeper's answer to its ConnectRequest. Kazoo (like ZooKeeper's
# Java client) waits the session timeout divided by the number of hosts: 6 s with one host and a 6 s session. A
# restarted ZooKeeper binds its port, and the kernel completes connections, before the server reads them; a
# connection made in that window went unanswered for the whole 6 s, and the session expired meanwhile although the
# server was serving again within a second. Kazoo takes no connect timeout of its own, so each host is listed
# several times (``attempts_per_host``): an attempt gives up after about this long and the next finds the server.
CONNECT_ATTEMPT_S = 1.0


def attempts_per_host(session_timeout_s: float, hosts: int) -> int:
    """How many times each host is listed so one connection attempt waits about ``CONNECT_ATTEMPT_S``."""
    return max(1, round(session_timeout_s / max(hosts, 1) / CONNECT_ATTEMPT_S))


class ReconnectLogFilter(logging.Filter):
    """Kazoo logs two lines per connection attempt; with each host listed several times that is a dozen lines a
    second while ZooKeeper is away. This lets one line of each kind through per ``interval_s`` (the others are
    counted in the next one let through)."""

    def __init__(self, interval_s: float = 1.0, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self._interval_s = interval_s
        self._clock = clock
        self._last: dict[str, float] = {}
        self._dropped: dict[str, int] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith(("Connecting to", "Connection dropped", "Connection time-out")):
            return True
        key = str(record.msg)
        now = self._clock()
        if now - self._last.get(key, -self._interval_s) < self._interval_s:
            self._dropped[key] = self._dropped.get(key, 0) + 1
            return False
        self._last[key] = now
        dropped = self._dropped.pop(key, 0)
        if dropped:
            record.msg = f"{record.msg} (and {dropped} like it since the last)"
        return True


_RECONNECT_LOG_FILTER = ReconnectLogFilter()


def reconnect_policy() -> KazooRetry:
    """The bounded backoff kazoo reconnects with (see ``RECONNECT_MAX_DELAY_S``)."""
    return KazooRetry(
        max_tries=-1,
        delay=RECONNECT_DELAY_S,
        backoff=2,
        max_delay=RECONNECT_MAX_DELAY_S,
        max_jitter=RECONNECT_JITTER,
        sleep_func=time.sleep,  # kazoo requires its threading handler's sleep
    )


class TopicZnodeExistsError(ZkError):
    """``/brokers/topics/<topic>`` already exists (Kafka: TOPIC_ALREADY_EXISTS)."""


class ControllerMovedError(ZkError):
    """A controller write fenced off: ``/controller_epoch`` moved on, another broker is controller now."""


@dataclass(frozen=True, slots=True)
class ControllerEpoch:
    """The epoch this broker won the controller election with, and the epoch znode's version to fence writes on."""

    epoch: int
    zk_version: int


class ZkClient:
    """Kafka's ZooKeeper data for one broker, over a kazoo session to ``connect`` (``host:port[,...][/chroot]``)."""

    def __init__(
        self, connect: str, *, session_timeout_ms: int = 18000, now_ms: Callable[[], int] | None = None
    ):
        self.connect = connect
        self.kazoo = KazooClient(
            hosts=connect, timeout=session_timeout_ms / 1000, connection_retry=reconnect_policy()
        )
        hosts = list(self.kazoo.hosts)
        self.kazoo.hosts = hosts * attempts_per_host(session_timeout_ms / 1000, len(hosts))
        if _RECONNECT_LOG_FILTER not in self.kazoo.logger.filters:
            self.kazoo.logger.addFilter(_RECONNECT_LOG_FILTER)
        self._now_ms = now_ms or (lambda: int(time.time() * 1000))

    def start(self, timeout_s: float = 15.0) -> None:
        """Connect (creating a chroot path when one is given) and make the persistent paths Kafka expects."""
        hosts, slash, chroot = self.connect.partition("/")
        if slash and chroot:  # as Kafka does: make the chroot with a session outside it first
            outside = KazooClient(hosts=hosts)
            outside.start(timeout=timeout_s)
            try:
                outside.ensure_path("/" + chroot)
            finally:
                outside.stop()
                outside.close()
        self.kazoo.start(timeout=timeout_s)
        for path in znodes.PERSISTENT_PATHS:
            self.kazoo.ensure_path(path)
        try:
            self.kazoo.create(znodes.PRODUCER_ID_BLOCK, b"")
        except NodeExistsError:
            pass

    def on_session_change(self, callback: Callable[[str], None]) -> None:
        """Call ``callback`` (on kazoo's thread) with "lost" when the session expires, "suspended" when the
        connection drops, "connected" when one is (re)established."""

        def listener(state: str) -> None:  # a true return value would unregister it
            callback({KazooState.LOST: "lost", KazooState.SUSPENDED: "suspended"}.get(state, "connected"))

        self.kazoo.add_listener(listener)

    @property
    def connected(self) -> bool:
        """Whether the session is connected now (calls made while it is not wait for a reconnection)."""
        return bool(self.kazoo.connected)

    def close(self) -> None:
        """End the session: this broker's ephemeral znodes vanish at once (a clean stop is seen immediately)."""
        self.kazoo.stop()
        self.kazoo.close()

    # --- cluster id and brokers ------------------------------------------------------------------------------

    def get_or_create_cluster_id(self, proposed: str) -> str:
        """The cluster's id: ``proposed`` when this broker is the first, else the one already stored."""
        self.kazoo.ensure_path("/cluster")
        try:
            self.kazoo.create(znodes.CLUSTER_ID, ClusterIdZNode(proposed).to_json())
            return proposed
        except NodeExistsError:
            data, _ = self.kazoo.get(znodes.CLUSTER_ID)
            return ClusterIdZNode.from_json(data).cluster_id

    def register_broker(self, registration: BrokerRegistration) -> int:
        """Create ``/brokers/ids/<id>`` for this session; the broker epoch (the znode's czxid) is returned."""
        path = znodes.broker_path(registration.broker_id)
        data = BrokerRegistration(
            registration.broker_id,
            registration.endpoints,
            registration.rack,
            self._now_ms(),
            registration.features,
        ).to_json()
        try:
            return self._register_broker(path, data, registration.broker_id)
        except (ConnectionLoss, SessionExpiredError) as exc:
            raise ZkSessionInterruptedError(
                f"ZooKeeper session interrupted while registering {path} ({type(exc).__name__})"
            ) from exc

    def _register_broker(self, path: str, data: bytes, broker_id: int) -> int:
        session_id = self.kazoo.client_id[0] if self.kazoo.client_id else None
        for _ in range(3):
            try:
                self.kazoo.create(path, data, ephemeral=True)
            except NodeExistsError:
                stat = self.kazoo.exists(path)
                if stat is None:
                    continue  # gone meanwhile: try again
                if stat.ephemeralOwner != session_id:
                    raise BrokerAlreadyRegisteredError(
                        f"broker.id {broker_id} is registered by another live broker "
                        f"(session 0x{stat.ephemeralOwner:x}): every broker needs its own broker.id",
                        int(stat.czxid),
                    ) from None
                self.kazoo.set(path, data)
            stat = self.kazoo.exists(path)
            if stat is not None:
                return int(stat.czxid)
        raise ZkError(f"could not register {path}")

    def live_brokers(
        self, watch: Callable[..., object] | None = None
    ) -> dict[int, tuple[BrokerRegistration, int]]:
        """Each registered broker with its epoch; ``watch`` fires once when the set of brokers changes."""
        out: dict[int, tuple[BrokerRegistration, int]] = {}
        for child in self.kazoo.get_children(znodes.BROKER_IDS, watch=watch):
            broker_id = int(child)
            try:
                data, stat = self.kazoo.get(znodes.broker_path(broker_id))
            except NoNodeError:
                continue  # its session ended between the two reads
            out[broker_id] = (BrokerRegistration.from_json(broker_id, data), int(stat.czxid))
        return out

    # --- topics ---------------------------------------------------------------------------------------------

    def create_topic(self, topic: str, assignment: TopicAssignment, config: Mapping[str, str]) -> None:
        """Write the topic's config, then its assignment; TopicZnodeExistsError when the topic is there already."""
        if self.kazoo.exists(znodes.topic_path(topic)) is not None:
            raise TopicZnodeExistsError(f"topic '{topic}' already exists")
        config_data = TopicConfig(dict(config)).to_json()
        try:
            self.kazoo.create(znodes.topic_config_path(topic), config_data)
        except NodeExistsError:
            self.kazoo.set(znodes.topic_config_path(topic), config_data)  # left by a creation cut short
        try:
            self.kazoo.create(znodes.topic_path(topic), assignment.to_json())
        except NodeExistsError:
            raise TopicZnodeExistsError(f"topic '{topic}' already exists") from None

    def topics(self, watch: Callable[..., object] | None = None) -> list[str]:
        return sorted(self.kazoo.get_children(znodes.BROKER_TOPICS, watch=watch))

    def topic_assignment(
        self, topic: str, watch: Callable[..., object] | None = None
    ) -> TopicAssignment | None:
        """The topic's replicas per partition (None: no such topic); ``watch`` fires when they change."""
        try:
            data, _ = self.kazoo.get(znodes.topic_path(topic), watch=watch)
        except NoNodeError:
            return None
        return TopicAssignment.from_json(topic, data)

    def set_topic_assignment(self, topic: str, assignment: TopicAssignment) -> None:
        """Replace a topic's assignment (CreatePartitions adds partitions this way)."""
        self.kazoo.set(znodes.topic_path(topic), assignment.to_json())

    def write_topic_assignment(self, fence: ControllerEpoch, topic: str, assignment: TopicAssignment) -> None:
        """The controller's write of a topic's replicas (a reassignment's steps), fenced on the controller epoch."""
        transaction = self.kazoo.transaction()
        transaction.check(znodes.CONTROLLER_EPOCH, fence.zk_version)
        transaction.set_data(znodes.topic_path(topic), assignment.to_json())
        results = transaction.commit()
        if isinstance(results[0], BadVersionError | NoNodeError):
            raise ControllerMovedError(f"controller epoch {fence.epoch} is stale: {topic} not reassigned")
        if isinstance(results[1], Exception):
            raise results[1]

    def topic_config(self, topic: str) -> dict[str, str]:
        try:
            data, _ = self.kazoo.get(znodes.topic_config_path(topic))
        except NoNodeError:
            return {}
        return TopicConfig.from_json(topic, data).config

    def set_topic_config(self, topic: str, config: Mapping[str, str]) -> None:
        """Replace the topic's overrides and tell every broker (a ``/config/changes`` notification)."""
        data = TopicConfig(dict(config)).to_json()
        try:
            self.kazoo.set(znodes.topic_config_path(topic), data)
        except NoNodeError:
            self.kazoo.create(znodes.topic_config_path(topic), data, makepath=True)
        notification = ConfigChangeNotification(f"topics/{topic}").to_json()
        self.kazoo.create(f"{znodes.CONFIG_CHANGES}/config_change_", notification, sequence=True)

    def broker_config(self, broker: str) -> dict[str, str]:
        """A broker's dynamic configs (``/config/brokers/<id>``, or ``<default>`` for every broker)."""
        try:
            data, _ = self.kazoo.get(f"{znodes.CONFIG_BROKERS}/{broker}")
        except NoNodeError:
            return {}
        return TopicConfig.from_json(broker, data).config

    def set_broker_config(self, broker: str, config: Mapping[str, str]) -> None:
        """Replace a broker's dynamic configs and tell the brokers (a ``brokers/<id>`` notification)."""
        path, data = f"{znodes.CONFIG_BROKERS}/{broker}", TopicConfig(dict(config)).to_json()
        try:
            self.kazoo.set(path, data)
        except NoNodeError:
            self.kazoo.create(path, data, makepath=True)
        notification = ConfigChangeNotification(f"brokers/{broker}").to_json()
        self.kazoo.create(f"{znodes.CONFIG_CHANGES}/config_change_", notification, sequence=True)

    def quota_configs(self) -> dict[str, dict[str, str]]:
        """Every client quota entity's configs, by entity path under ``/config`` (``users/<user>``,
        ``users/<user>/clients/<client-id>``, ``clients/<client-id>``; names sanitized, ``<default>`` for the
        default), as Kafka keeps them."""
        found: dict[str, dict[str, str]] = {}

        def read(path: str) -> None:
            try:
                data, _ = self.kazoo.get(f"/config/{path}")
            except NoNodeError:
                return
            if data:
                config = TopicConfig.from_json(path, data).config
                if config:
                    found[path] = config

        for kind in ("users", "clients"):
            for name in self._children(f"/config/{kind}"):
                read(f"{kind}/{name}")
                if kind == "users":
                    for client in self._children(f"/config/users/{name}/clients"):
                        read(f"users/{name}/clients/{client}")
        return found

    def set_entity_config(self, path: str, config: Mapping[str, str]) -> None:
        """Replace the configs of the entity at ``/config/<path>`` and tell every broker (a notification naming
        ``path``)."""
        full, data = f"/config/{path}", TopicConfig(dict(config)).to_json()
        try:
            self.kazoo.set(full, data)
        except NoNodeError:
            self.kazoo.create(full, data, makepath=True)
        notification = ConfigChangeNotification(path).to_json()
        self.kazoo.create(f"{znodes.CONFIG_CHANGES}/config_change_", notification, sequence=True)

    def _children(self, path: str) -> list[str]:
        try:
            return sorted(self.kazoo.get_children(path))
        except NoNodeError:
            return []

    def config_changes(self, watch: Callable[..., object] | None = None) -> list[str]:
        """The change notifications' names (``config_change_<10-digit seq>``), oldest first."""
        return sorted(self.kazoo.get_children(znodes.CONFIG_CHANGES, watch=watch))

    def config_change(self, name: str) -> str | None:
        """The entity path (``topics/<topic>``) a notification names; None when it was purged meanwhile."""
        try:
            data, _ = self.kazoo.get(f"{znodes.CONFIG_CHANGES}/{name}")
        except NoNodeError:
            return None
        return ConfigChangeNotification.from_json(data).entity_path

    def notify_log_dir_event(self, broker_id: int) -> None:
        """``/log_dir_event_notification/log_dir_event_<seq>``: tells the controller a log dir of ``broker_id``
        failed (its disk is full): it moves the broker's leaderships to in-sync followers."""
        notification = znodes.LogDirEventNotification(broker_id).to_json()
        self.kazoo.create(f"{znodes.LOG_DIR_EVENTS}/log_dir_event_", notification, sequence=True)

    def take_log_dir_events(self, watch: Callable[..., object] | None = None) -> list[int]:
        """The brokers named by pending log dir events, oldest first, each event deleted once read (as Kafka's
        controller does); ``watch`` fires when a new one is written. An unreadable event is deleted unread."""
        brokers: list[int] = []
        for name in sorted(self.kazoo.get_children(znodes.LOG_DIR_EVENTS, watch=watch)):
            path = f"{znodes.LOG_DIR_EVENTS}/{name}"
            try:
                data, _ = self.kazoo.get(path)
                brokers.append(znodes.LogDirEventNotification.from_json(data).broker)
            except NoNodeError:
                continue
            except (znodes.ZNodeFormatError, TypeError, ValueError) as exc:
                log.warning("ignoring the log dir event %s, which cannot be read: %s", path, exc)
            with contextlib.suppress(NoNodeError):
                self.kazoo.delete(path)
        return brokers

    def mark_topic_for_deletion(self, topic: str) -> None:
        """``/admin/delete_topics/<topic>``: asks the controller to delete the topic (idempotent)."""
        try:
            self.kazoo.create(f"{znodes.ADMIN_DELETE_TOPICS}/{topic}", b"")
        except NodeExistsError:
            pass

    def topics_to_delete(self, watch: Callable[..., object] | None = None) -> list[str]:
        return sorted(self.kazoo.get_children(znodes.ADMIN_DELETE_TOPICS, watch=watch))

    def delete_topic_znodes(self, fence: ControllerEpoch, topic: str) -> None:
        """The controller's last step of a deletion: the topic's znodes, then its deletion request."""
        self._check_controller(fence)
        self.kazoo.delete(znodes.topic_path(topic), recursive=True)
        self.kazoo.delete(znodes.topic_config_path(topic), recursive=True)
        self.kazoo.delete(f"{znodes.ADMIN_DELETE_TOPICS}/{topic}", recursive=True)

    def reassign_partitions(self, watch: Callable[..., object] | None = None) -> ReassignPartitions | None:
        """The moves a legacy tool asked for in ``/admin/reassign_partitions`` (None: no such znode); ``watch``
        fires once when the znode is created, changed or deleted. ZNodeFormatError when it is not their JSON."""
        if self.kazoo.exists(znodes.ADMIN_REASSIGN_PARTITIONS, watch=watch) is None:
            return None
        try:
            data, _ = self.kazoo.get(znodes.ADMIN_REASSIGN_PARTITIONS)
        except NoNodeError:
            return None
        return ReassignPartitions.from_json(data)

    def remove_reassignments(
        self, fence: ControllerEpoch, partitions: Collection[TopicPartition] | None
    ) -> None:
        """The controller's removal of finished or refused moves from ``/admin/reassign_partitions`` (None: all,
        as for a znode that is not their JSON); the znode goes with its last move. Fenced on the controller epoch;
        a tool's write in between is re-read (compare-and-set on the znode's version)."""
        path = znodes.ADMIN_REASSIGN_PARTITIONS
        while True:
            try:
                data, stat = self.kazoo.get(path)
            except NoNodeError:
                return
            try:
                found = ReassignPartitions.from_json(data).partitions
            except ZNodeFormatError:
                found = {}
            left = {} if partitions is None else {tp: r for tp, r in found.items() if tp not in partitions}
            transaction = self.kazoo.transaction()
            transaction.check(znodes.CONTROLLER_EPOCH, fence.zk_version)
            if left:
                transaction.set_data(path, ReassignPartitions(left).to_json(), version=stat.version)
            else:
                transaction.delete(path, version=stat.version)
            results = transaction.commit()
            if isinstance(results[0], BadVersionError | NoNodeError):
                raise ControllerMovedError(f"controller epoch {fence.epoch} is stale: {path} not written")
            if isinstance(results[1], BadVersionError | NoNodeError):
                continue  # changed (or deleted) meanwhile: read it again
            if isinstance(results[1], Exception):
                raise results[1]
            return

    def _check_controller(self, fence: ControllerEpoch) -> None:
        stat = self.kazoo.exists(znodes.CONTROLLER_EPOCH)
        if stat is None or stat.version != fence.zk_version:
            raise ControllerMovedError(f"controller epoch {fence.epoch} is stale")

    def partition_state(self, topic: str, partition: int) -> tuple[PartitionState, int] | None:
        """The partition's state and its partition epoch (the znode version), or None before the controller's first
        election for it."""
        try:
            data, stat = self.kazoo.get(znodes.partition_state_path(topic, partition))
        except NoNodeError:
            return None
        return PartitionState.from_json(topic, partition, data), int(stat.version)

    # --- controller -----------------------------------------------------------------------------------------

    def controller(self, watch: Callable[..., object] | None = None) -> int | None:
        """The controller's broker id, or None while there is none; ``watch`` fires when that changes."""
        stat = self.kazoo.exists(znodes.CONTROLLER, watch=watch)
        if stat is None:
            return None
        try:
            data, _ = self.kazoo.get(znodes.CONTROLLER)
        except NoNodeError:
            return None
        return ControllerRegistration.from_json(data).broker_id

    def try_become_controller(self, broker_id: int) -> ControllerEpoch | None:
        """Kafka's election: create ``/controller`` and bump ``/controller_epoch`` in one transaction.

        Returns the new epoch when this broker won, None when another broker is controller.
        """
        epoch, version = self._controller_epoch()
        registration = ControllerRegistration(broker_id, self._now_ms()).to_json()
        transaction = self.kazoo.transaction()
        transaction.create(znodes.CONTROLLER, registration, ephemeral=True)
        transaction.set_data(znodes.CONTROLLER_EPOCH, str(epoch + 1).encode(), version=version)
        results = transaction.commit()
        if not any(isinstance(result, Exception) for result in results):
            stat = results[1]
            assert isinstance(stat, ZnodeStat)
            return ControllerEpoch(epoch + 1, int(stat.version))
        # An earlier attempt of ours may have landed before a lost connection: it counts if both znodes say so.
        if self.controller() == broker_id:
            now_epoch, now_version = self._controller_epoch()
            if now_epoch == epoch + 1:
                return ControllerEpoch(now_epoch, now_version)
        return None

    def _controller_epoch(self) -> tuple[int, int]:
        try:
            self.kazoo.create(znodes.CONTROLLER_EPOCH, b"0")
        except NodeExistsError:
            pass
        data, stat = self.kazoo.get(znodes.CONTROLLER_EPOCH)
        return int(data.decode()), int(stat.version)

    def write_partition_state(
        self,
        fence: ControllerEpoch,
        topic: str,
        partition: int,
        state: PartitionState,
        partition_epoch: int | None,
    ) -> int:
        """The controller's write of a partition's state, fenced on the controller epoch and the partition epoch
        (None: create it). Returns the new partition epoch; ControllerMovedError when fenced off, BadVersionError
        (kazoo's) when the partition moved on and must be re-read."""
        path = znodes.partition_state_path(topic, partition)
        transaction = self.kazoo.transaction()
        transaction.check(znodes.CONTROLLER_EPOCH, fence.zk_version)
        if partition_epoch is None:
            self.kazoo.ensure_path(path.rsplit("/", 1)[0])
            transaction.create(path, state.to_json())
        else:
            transaction.set_data(path, state.to_json(), version=partition_epoch)
        results = transaction.commit()
        # A failed transaction reports the failing operation's error and RolledBackError for the others.
        if isinstance(results[0], BadVersionError | NoNodeError):
            raise ControllerMovedError(f"controller epoch {fence.epoch} is stale: {path} not written")
        if isinstance(results[1], BadVersionError | NodeExistsError):
            raise BadVersionError(path)
        if isinstance(results[1], Exception):
            raise results[1]
        return 0 if partition_epoch is None else int(results[1].version)

    def write_partition_states(
        self, fence: ControllerEpoch, updates: Sequence[tuple[str, int, PartitionState, int]]
    ) -> list[int] | None:
        """Many existing partitions' states in one transaction, each fenced on its partition epoch and all on the
        controller epoch. Returns the new partition epochs in order; None when a partition moved on (nothing is
        written: the caller writes them one by one); ControllerMovedError when fenced off."""
        if not updates:
            return []
        transaction = self.kazoo.transaction()
        transaction.check(znodes.CONTROLLER_EPOCH, fence.zk_version)
        for topic, partition, state, partition_epoch in updates:
            transaction.set_data(
                znodes.partition_state_path(topic, partition), state.to_json(), version=partition_epoch
            )
        results = transaction.commit()
        if isinstance(results[0], BadVersionError | NoNodeError):
            raise ControllerMovedError(
                f"controller epoch {fence.epoch} is stale: {len(updates)} states not written"
            )
        if any(isinstance(result, Exception) for result in results):
            return None
        return [int(result.version) for result in results[1:]]

    # --- producer ids ---------------------------------------------------------------------------------------

    def allocate_producer_ids(self, broker_id: int) -> ProducerIdBlock:
        """The next free block of 1000 producer ids, unique across the cluster (compare-and-set, retried)."""
        while True:
            data, stat = self.kazoo.get(znodes.PRODUCER_ID_BLOCK)
            block = ProducerIdBlock.after(ProducerIdBlock.from_json(data), broker_id)
            try:
                self.kazoo.set(znodes.PRODUCER_ID_BLOCK, block.to_json(), version=stat.version)
                return block
            except BadVersionError:
                continue  # another broker took a block meanwhile
