"""The controller: one broker, elected through ZooKeeper, that decides leaders and ISRs and tells every broker.

As Kafka's ZooKeeper-mode controller does:

- **Election.** Every broker watches ``/controller``; when it is empty a broker tries to create it and bump
  ``/controller_epoch`` in one transaction (:meth:`ZkClient.try_become_controller`). The winner's writes are fenced on
  the epoch znode's version, so a controller that lost its session cannot overwrite its successor's decisions.
- **Failover.** The new controller loads live brokers, assignments and partition states, sends UpdateMetadata to every
  broker, then elects a leader for each partition without a live one and sends LeaderAndIsr to the live replicas.
- **Brokers coming and going** (``/brokers/ids`` children): a dead broker's partitions get a new leader from the live
  ISR (a clean election, unless unclean election is allowed and no ISR member is alive), the dead broker leaves
  every ISR (never the last member: with no live ISR member the partition is offline, leader -1), and each change
  bumps the leader epoch. A new or
  restarted broker gets the full metadata and LeaderAndIsr for its replicas; offline partitions whose ISR member came
  back are elected again.
- **New topics** (``/brokers/topics`` children): each partition's leader is its first live replica in assignment
  order, its ISR the live replicas; the state znodes are created, then LeaderAndIsr and UpdateMetadata sent.
- **Elections beyond failover** live in :mod:`samsa.cluster.elections`: controlled shutdown (a shutting-down
  broker may neither lead nor join an ISR, though it stays registered), ElectLeaders, the automatic leader
  rebalance, and unclean election of an offline partition when ``unclean.leader.election.enable`` allows it.
- **Log dir events** (``/log_dir_event_notification`` children, written by a broker whose leader append found its
  disk full): the broker's leaderships move to in-sync followers and it leaves those ISRs, as Kafka's controller
  does for a failed log dir; Samsa's broker stays their follower (not offline) and rejoins the ISR by catching up
  once it has space again.
- **AlterPartition** from leaders: an ISR change is accepted when the leader epoch and the partition epoch (the state
  znode's version) match the controller's; it is written with the partition epoch as the expected version.
- **Reassignments** (AlterPartitionReassignments, and the legacy ``/admin/reassign_partitions``) and **topic
  deletions** (``/admin/delete_topics``) are kept in their own modules, :mod:`.reassignment` and
  :mod:`.topic_deletion`, which work on this controller's state from its events; both live in ZooKeeper, so a new
  controller carries them on. They and :mod:`.elections` see the controller through its public surface,
  :class:`.controller_context.ControllerContext` (state, ZooKeeper, events, requests to brokers), never its
  private members, and do not import this module.

Concurrency: one event queue drained by one task on the broker's event loop (Kafka's controller-event thread).
ZooKeeper calls block, so they run in worker threads; kazoo runs watch callbacks on its own thread and they only
put events on the queue (``call_soon_threadsafe``). Requests to brokers go through one ordered channel per broker
that reconnects and retries until that broker leaves the cluster.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import uuid
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, TypeVar

from kazoo.exceptions import BadVersionError
from kazoo.retry import KazooRetry

from samsa.client.connection import BrokerConnection
from samsa.client.errors import KafkaError
from samsa.client.security import ClientSecurity
from samsa.protocol import ApiKey, ErrorCode
from samsa.protocol.messages.allocate_producer_ids import (
    AllocateProducerIdsRequest,
    AllocateProducerIdsResponse,
)
from samsa.protocol.messages.alter_partition import (
    AlterPartitionRequest,
    AlterPartitionResponse,
    AlterPartitionResponsePartitionData,
    AlterPartitionResponseTopicData,
)
from samsa.protocol.messages.leader_and_isr import (
    LeaderAndIsrLiveLeader,
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LeaderAndIsrTopicState,
)
from samsa.protocol.messages.stop_replica import (
    StopReplicaPartitionState,
    StopReplicaRequest,
    StopReplicaTopicState,
)
from samsa.protocol.messages.update_metadata import (
    UpdateMetadataBroker,
    UpdateMetadataEndpoint,
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
    UpdateMetadataTopicState,
)
from samsa.topic_partition import TopicPartition

from .controller_context import OnAnswer, PartitionEntry
from .elections import Elections
from .metadata_cache import LEADER_DELETED, NO_LEADER
from .reassignment import Reassignments
from .topic_deletion import TopicDeletions
from .zk_client import ControllerEpoch, ControllerMovedError, ZkClient, is_session_interruption
from .znodes import BrokerRegistration, PartitionState, TopicAssignment

__all__ = ["Controller", "topic_uuid"]

log = logging.getLogger(__name__)

SECURITY_PROTOCOLS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}
CHANNEL_RETRY_BACKOFF_S = 0.1
# How long UpdateMetadata waits for the new leaders to answer their LeaderAndIsr (``send_update_metadata``).
LEADER_ANSWER_WAIT_S = 5.0
WRITE_BATCH = 500  # partition states per ZooKeeper transaction
# The oldest versions the controller sends: partition states grouped by topic, with topic ids (Kafka 2.8+).
MIN_LEADER_AND_ISR_VERSION = 5
MIN_UPDATE_METADATA_VERSION = 7
MIN_STOP_REPLICA_VERSION = 3

_T = TypeVar("_T")
_Queued = tuple[Callable[[int], Any], int, OnAnswer, Sequence["asyncio.Future[None]"]]


def topic_uuid(topic_id: str | None) -> uuid.UUID:
    """A topic id as ZooKeeper holds it (Kafka's URL-safe base64 of 16 bytes, unpadded) as a UUID; zero if none."""
    if not topic_id:
        return uuid.UUID(int=0)
    return uuid.UUID(bytes=base64.urlsafe_b64decode(topic_id + "=" * (-len(topic_id) % 4)))


def _at_least(message: Any, minimum: int) -> Callable[[int], Any]:
    """A request builder for :class:`BrokerChannel`: ``message`` as it is, for any version from ``minimum`` on."""

    def build(version: int) -> Any:
        if version < minimum:
            raise ValueError(
                f"{type(message).__name__} needs version {minimum} or later, the broker has {version}"
            )
        return message

    return build


class BrokerChannel:
    """Requests from the controller to one broker, sent in order; each is retried (reconnecting) until it is
    answered or the channel is closed because the broker left. Event-loop thread only."""

    def __init__(
        self,
        registration: BrokerRegistration,
        listener: str,
        client_id: str,
        security: ClientSecurity | None = None,
    ) -> None:
        self.registration = registration
        self._security = security  # the inter-broker listener's TLS and SASL (None: PLAINTEXT)
        endpoint = next(
            (e for e in registration.endpoints if e.listener == listener), registration.endpoints[0]
        )
        self.host, self.port = endpoint.host, endpoint.port
        self._client_id = client_id
        self._queue: asyncio.Queue[_Queued | None] = asyncio.Queue()
        self._closed = False
        self._connection: BrokerConnection | None = None
        self._task = asyncio.get_running_loop().create_task(
            self._run(), name=f"controller-channel-{self.host}"
        )

    def send(
        self,
        build: Callable[[int], Any],
        api_key: int,
        on_answer: OnAnswer = None,
        after: Sequence[asyncio.Future[None]] = (),
    ) -> None:
        """Queue a request; ``build(version)`` makes it for the version the broker and we share; ``on_answer``
        gets the response. It is sent once each of ``after`` is done (at most ``LEADER_ANSWER_WAIT_S``)."""
        self._queue.put_nowait((build, api_key, on_answer, after))

    async def _run(self) -> None:
        try:
            await self._send_queued()
        finally:
            if self._connection is not None:
                await self._connection.close()

    async def _send_queued(self) -> None:
        while not self._closed:
            item = await self._queue.get()
            if item is None:
                return
            build, api_key, on_answer, after = item
            if after:
                await asyncio.wait(after, timeout=LEADER_ANSWER_WAIT_S)
            while not self._closed:
                try:
                    if self._connection is None or self._connection.closed:
                        self._connection = BrokerConnection(
                            self.host,
                            self.port,
                            client_id=self._client_id,
                            request_timeout_ms=30_000,
                            security=self._security,
                        )
                        await self._connection.open()
                    connection = self._connection
                    try:
                        version = connection.pick_version(api_key)
                        message = build(version)
                    except (KafkaError, ValueError) as exc:  # not served there: retrying cannot help
                        log.error("controller request to %s:%d dropped: %s", self.host, self.port, exc)
                        break
                    response = await connection.request(message, api_key, version)
                    if on_answer is not None:
                        on_answer(response)
                    break
                except KafkaError as exc:
                    log.debug("controller request to %s:%d failed (%s), retrying", self.host, self.port, exc)
                    if self._connection is not None:
                        await self._connection.close()
                    self._connection = None
                    await asyncio.sleep(CHANNEL_RETRY_BACKOFF_S)

    async def close(self) -> None:
        """Stop sending (queued requests are dropped, as Kafka's controller does when a broker leaves). Besides
        the cancellation, a flag and a wake-up end the task: Python 3.11's ``wait_for`` can swallow a
        cancellation that meets a reply."""
        self._closed = True
        self._queue.put_nowait(None)
        self._task.cancel()
        await stop_task(self._task)


async def stop_task(task: asyncio.Task[Any], timeout_s: float = 5.0) -> None:
    """Wait for a cancelled task to end, at most ``timeout_s`` (it is left behind, logged, if it does not)."""
    done, _ = await asyncio.wait([task], timeout=timeout_s)
    if not done:
        log.warning("task %s did not stop within %.0f s", task.get_name(), timeout_s)
    elif not task.cancelled() and task.exception() is not None:
        log.warning("task %s ended with %r", task.get_name(), task.exception())


class Controller:
    """This broker's controller module: takes part in the election and, while elected, runs the cluster (module
    doc). Event-loop thread only; ``start`` and ``stop`` from the broker."""

    def __init__(
        self, zk: ZkClient, broker_id: int, listener: str, security: ClientSecurity | None = None
    ) -> None:
        self.zk = zk
        self.broker_id = broker_id
        self.listener = listener
        self.security = security  # how its channels reach the brokers' inter-broker listener
        self.fence: ControllerEpoch | None = None
        self.live: dict[int, tuple[BrokerRegistration, int]] = {}
        self.topics: dict[str, TopicAssignment] = {}
        self.partitions: dict[TopicPartition, PartitionEntry] = {}
        self._channels: dict[int, BrokerChannel] = {}
        self._leader_answers: list[asyncio.Future[None]] = []  # LeaderAndIsr to new leaders not yet answered
        # the same futures per broker, until answered: given up on when that broker leaves (``_forget_leaders``)
        self._awaited_leaders: dict[int, set[asyncio.Future[None]]] = {}
        self._events: asyncio.Queue[Callable[[], Any]] = asyncio.Queue()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self.elections = Elections(self)
        self.deletions = TopicDeletions(self, self._topic_deleted)
        self.reassignments = Reassignments(self, self.deletions.is_deleting)

    @property
    def is_active(self) -> bool:
        return self.fence is not None

    @property
    def epoch(self) -> int:
        return self.fence.epoch if self.fence is not None else -1

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._task = self._loop.create_task(self._run(), name="samsa-controller")
        self.put_event(self._elect)

    async def stop(self) -> None:
        """Resign (the ephemeral ``/controller`` goes with the ZooKeeper session the broker closes after)."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        await self._resign()

    def session_lost(self) -> None:
        """The ZooKeeper session expired: ``/controller`` is gone with it, another broker may be elected now."""

        async def lost() -> None:
            if self.is_active:
                log.info("controller %d lost its ZooKeeper session: resigning", self.broker_id)
                await self._resign()

        lost.__name__ = "session_lost"
        self.put_event(lost)

    def session_renewed(self) -> None:
        """A new session after an expiry: watches are re-set and this broker stands for election again."""
        self.put_event(self._elect)

    async def _topic_deleted(self, topic: str) -> None:
        """A topic's deletion completed: its moves leave the legacy reassignment znode."""
        await self.reassignments.topic_deleted(topic)

    # --- the event queue -------------------------------------------------------------------------------------

    def put_event(self, event: Callable[[], Any]) -> None:
        self._events.put_nowait(event)

    async def run_event(self, name: str, work: Callable[[], Awaitable[_T]]) -> _T:
        """Run ``work`` as one event named ``name``, behind those queued before it, and return its result (or
        raise its error). The event does not fail for a caller that stopped waiting."""
        done: asyncio.Future[_T] = asyncio.get_running_loop().create_future()

        async def event() -> None:
            try:
                result = await work()
            except BaseException as exc:
                if not done.done():
                    done.set_exception(exc)
                raise
            if not done.done():
                done.set_result(result)

        event.__name__ = name
        self.put_event(event)
        return await done

    def watch(self, event: Callable[[], Any]) -> Callable[[object], None]:
        """A kazoo watch (run on kazoo's thread) that queues ``event`` on the event loop."""
        loop = self._loop
        assert loop is not None

        def fire(_: object) -> None:
            if not loop.is_closed():
                loop.call_soon_threadsafe(self.put_event, event)

        return fire

    async def _run(self) -> None:
        while True:
            event = await self._events.get()
            try:
                await event()
            except ControllerMovedError as exc:
                log.info("controller epoch %d fenced off (%s): resigning", self.epoch, exc)
                await self._resign()
                self.put_event(self._elect)
            except Exception as exc:
                if not is_session_interruption(exc):
                    log.exception("controller event %s failed", getattr(event, "__name__", event))
                    continue
                # an expiry: ``session_lost`` resigns and ``session_renewed`` runs the election again; a connection
                # lost past ``zk_call``'s deadline: the next event (or watch) does the work again
                log.info(
                    "controller event %s stopped: the ZooKeeper session of broker %d was away (%s)",
                    getattr(event, "__name__", event),
                    self.broker_id,
                    type(exc).__name__,
                )

    async def zk_call(self, call: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        # A lost connection (ZooKeeper restarting, a brief network cut) is retried until the session is back,
        # for up to 30 s; an expired session is not: the controller resigns (``session_lost``).
        retry = KazooRetry(max_tries=-1, delay=0.1, max_delay=1.0, deadline=30.0, ignore_expire=False)
        return await asyncio.to_thread(retry, call, *args, **kwargs)

    # --- election and failover -------------------------------------------------------------------------------

    async def _elect(self) -> None:
        current = await self.zk_call(self.zk.controller, watch=self.watch(self._elect))
        if current is not None:
            if current != self.broker_id and self.is_active:
                log.info("broker %d is controller now: broker %d resigns", current, self.broker_id)
                await self._resign()
            return
        fence = await self.zk_call(self.zk.try_become_controller, self.broker_id)
        if fence is None:
            return  # another broker won; the watch set above brings its id
        self.fence = fence
        log.info("broker %d is the controller (epoch %d)", self.broker_id, fence.epoch)
        await self._failover()

    async def _failover(self) -> None:
        self.live = await self.zk_call(self.zk.live_brokers, watch=self.watch(self._brokers_changed))
        self._open_channels()
        await self._load_topics(await self.zk_call(self.zk.topics, watch=self.watch(self._topics_changed)))
        self.send_update_metadata(self.live, self.partitions)
        gone = (
            {
                r
                for e in self.partitions.values()
                if e.state is not None
                for r in (*e.state.isr, e.state.leader)
            }
            - set(self.live)
            - {NO_LEADER}
        )
        changed = await self._on_brokers_failed(gone) if gone else {}
        changed.update(await self.elect_offline(self.partitions))
        self.send_leader_and_isr(self.partitions, is_new=False)
        self.send_update_metadata(self.live, changed)
        await self._deletions_changed()
        await self._log_dir_events_changed()
        await self.reassignments.zk_requested()  # the legacy znode's moves first, as Kafka resumes them
        await self.reassignments.check()
        self.elections.became_active()

    async def _resign(self) -> None:
        self.fence = None
        self.elections.resigned()
        self.deletions.clear()
        self.reassignments.resigned()
        self.topics.clear()
        self.partitions.clear()
        channels, self._channels = self._channels, {}
        self._forget_leaders(list(self._awaited_leaders))
        for channel in channels.values():
            await channel.close()

    async def _load_topics(self, names: Iterable[str]) -> list[TopicPartition]:
        """Read assignments and states of topics not yet known; returns their partitions."""
        added: list[TopicPartition] = []
        for topic in names:
            if topic in self.topics:
                continue
            assignment = await self.zk_call(
                self.zk.topic_assignment, topic, self.watch(self._assignment_event(topic))
            )
            if assignment is None:
                continue
            self.topics[topic] = assignment
            for partition, replicas in sorted(assignment.partitions.items()):
                tp = TopicPartition(topic, partition)
                found = await self.zk_call(self.zk.partition_state, topic, partition)
                entry = PartitionEntry(replicas)
                if found is not None:
                    entry.state, entry.partition_epoch = found
                self.partitions[tp] = entry
                added.append(tp)
        return added

    # --- events while active ---------------------------------------------------------------------------------

    async def _brokers_changed(self) -> None:
        now = await self.zk_call(self.zk.live_brokers, watch=self.watch(self._brokers_changed))
        if not self.is_active:
            self.live = now
            return
        before, self.live = self.live, now
        bounced = {b for b in now if b in before and now[b][1] != before[b][1]}  # a new session, same id
        dead = {b for b in before if b not in now} | bounced
        born = {b for b in now if b not in before} | bounced
        self._forget_leaders(dead)
        for broker_id in dead:
            channel = self._channels.pop(broker_id, None)
            if channel is not None:
                await channel.close()
        self._open_channels()
        if dead:
            log.info("controller: brokers %s left", sorted(dead))
        if born:
            log.info("controller: brokers %s joined", sorted(born))
        # A bounced broker failed, then started (Kafka's order): its leaderships and ISR places go first, decided
        # without it, so it comes back as a follower that must catch up (its log may have lost what it had not
        # flushed). It leads again at once only where no other ISR member is alive.
        self.live = {b: registration for b, registration in now.items() if b not in bounced}
        try:
            changed = await self._on_brokers_failed(dead) if dead else {}
        finally:
            self.live = now
        changed.update(await self.elect_offline(self.partitions))
        if born:
            self.send_update_metadata({b: now[b] for b in born}, self.partitions)
            theirs = {tp: p for tp, p in self.partitions.items() if set(p.replicas) & born}
            self.send_leader_and_isr(theirs, is_new=False, only=born)
        self.send_leader_and_isr(changed, is_new=False)
        self.send_update_metadata(self.live, changed)
        if born:
            self.deletions.brokers_started(born)
            await self.reassignments.check()

    async def _topics_changed(self) -> None:
        names = await self.zk_call(self.zk.topics, watch=self.watch(self._topics_changed))
        if not self.is_active:
            return
        added = await self._load_topics(names)
        if not added:
            return
        new = {tp: self.partitions[tp] for tp in added}
        changed = await self.elect_offline(new)
        self.send_leader_and_isr(changed, is_new=True)
        self.send_update_metadata(self.live, changed)

    def _assignment_event(self, topic: str) -> Callable[[], Any]:
        async def assignment_changed() -> None:
            await self._assignment_changed(topic)

        return assignment_changed

    async def _assignment_changed(self, topic: str) -> None:
        """Partitions added to a topic (CreatePartitions): elected and announced like a new topic's."""
        watch = self.watch(self._assignment_event(topic))
        assignment = await self.zk_call(self.zk.topic_assignment, topic, watch)
        if not self.is_active or assignment is None or topic not in self.topics:
            return
        self.topics[topic] = assignment
        new: dict[TopicPartition, PartitionEntry] = {}
        for partition, replicas in sorted(assignment.partitions.items()):
            tp = TopicPartition(topic, partition)
            if tp not in self.partitions:
                new[tp] = self.partitions[tp] = PartitionEntry(replicas)
        if new:
            changed = await self.elect_offline(new)
            self.send_leader_and_isr(changed, is_new=True)
            self.send_update_metadata(self.live, changed)

    async def _log_dir_events_changed(self) -> None:
        """Log dir events (``/log_dir_event_notification``): the brokers they name give up their leaderships to
        in-sync followers (``Elections.log_dir_failed``); the events are deleted once read, by the active
        controller only (a watch set before it resigned leaves them to its successor)."""
        if not self.is_active:
            return
        brokers = await self.zk_call(
            self.zk.take_log_dir_events, watch=self.watch(self._log_dir_events_changed)
        )
        if brokers:
            await self.elections.log_dir_failed(set(brokers))

    async def _deletions_changed(self) -> None:
        """Topics asked to be deleted (``/admin/delete_topics``): see :mod:`.topic_deletion`."""
        names = await self.zk_call(self.zk.topics_to_delete, watch=self.watch(self._deletions_changed))
        if self.is_active:
            await self.deletions.requested(names)

    async def _on_brokers_failed(self, dead: set[int]) -> dict[TopicPartition, PartitionEntry]:
        """Move leadership off dead brokers and take them out of ISRs (each change bumps the leader epoch)."""
        changes: dict[TopicPartition, tuple[PartitionEntry, PartitionState]] = {}
        for tp, entry in self.partitions.items():
            state = entry.state
            if state is None or not (dead & (set(state.isr) | {state.leader})):
                continue
            live_isr = tuple(r for r in state.isr if r in self.live)
            eligible_isr = tuple(r for r in live_isr if self.elections.eligible(r))  # not shutting down
            if state.leader in self.live:
                leader, isr = state.leader, live_isr
            elif eligible_isr:
                leader = next(r for r in entry.replicas if r in eligible_isr)
                isr = eligible_isr
            else:  # no live ISR member: offline; the last ISR member is never removed
                leader, isr = NO_LEADER, state.isr if len(state.isr) <= 1 else (state.isr[0],)
            changes[tp] = (entry, PartitionState(leader, state.leader_epoch + 1, isr, self.epoch))
        await self.write_states(changes)
        return {tp: entry for tp, (entry, _) in changes.items()}

    async def elect_offline(
        self, partitions: dict[TopicPartition, PartitionEntry]
    ) -> dict[TopicPartition, PartitionEntry]:
        """Elect a leader for each partition that has none alive: a new partition from its live replicas, an
        offline one from its live ISR (clean election)."""
        changes: dict[TopicPartition, tuple[PartitionEntry, PartitionState]] = {}
        for tp, entry in partitions.items():
            state = entry.state
            live_replicas = tuple(r for r in entry.replicas if self.elections.eligible(r))
            if state is None:
                if not live_replicas:
                    continue  # stays new until a replica's broker is up
                new = PartitionState(live_replicas[0], 0, live_replicas, self.epoch)
            elif state.leader in self.live:
                continue
            else:
                live_isr = tuple(r for r in state.isr if self.elections.eligible(r))
                if live_isr:
                    leader = next(r for r in entry.replicas if r in live_isr)
                    new = PartitionState(leader, state.leader_epoch + 1, live_isr, self.epoch)
                else:  # offline until an ISR member returns, unless unclean election is on
                    unclean = await self.elections.elect_unclean(tp, entry)
                    if unclean is None:
                        continue
                    new = unclean
            changes[tp] = (entry, new)
        await self.write_states(changes)
        return {tp: entry for tp, (entry, _) in changes.items()}

    async def write_state(self, tp: TopicPartition, entry: PartitionEntry, state: PartitionState) -> None:
        assert self.fence is not None
        expected = entry.partition_epoch if entry.state is not None else None
        try:
            version = await self.zk_call(
                self.zk.write_partition_state, self.fence, tp.topic, tp.partition, state, expected
            )
        except BadVersionError:  # changed under us (an earlier controller's late write): re-read, then retry
            found = await self.zk_call(self.zk.partition_state, tp.topic, tp.partition)
            if found is None:
                raise
            entry.state, entry.partition_epoch = found
            version = await self.zk_call(
                self.zk.write_partition_state,
                self.fence,
                tp.topic,
                tp.partition,
                state,
                entry.partition_epoch,
            )
        entry.state, entry.partition_epoch = state, version

    async def write_states(
        self, changes: dict[TopicPartition, tuple[PartitionEntry, PartitionState]]
    ) -> None:
        """Write many partitions' new states in transactions of ``WRITE_BATCH`` (one ZooKeeper round trip each, as
        Kafka's controller writes a batch of leader-and-ISR changes at once), each keeping its state in its entry;
        a chunk in which a partition moved on under the controller is written one by one (``write_state``), and so
        is a partition's first state (its znode is created)."""
        assert self.fence is not None
        items = sorted(changes.items())
        firsts = [(tp, change) for tp, change in items if change[0].state is None]
        items = [(tp, change) for tp, change in items if change[0].state is not None]
        for tp, (entry, new) in firsts:
            await self.write_state(tp, entry, new)
        for start in range(0, len(items), WRITE_BATCH):
            chunk = items[start : start + WRITE_BATCH]
            updates = [(tp.topic, tp.partition, new, entry.partition_epoch) for tp, (entry, new) in chunk]
            versions = await self.zk_call(self.zk.write_partition_states, self.fence, updates)
            if versions is None:
                for tp, (entry, new) in chunk:
                    await self.write_state(tp, entry, new)
                continue
            for (_, (entry, new)), version in zip(chunk, versions, strict=True):
                entry.state, entry.partition_epoch = new, version

    # --- AlterPartition --------------------------------------------------------------------------------------

    async def alter_partition(self, request: AlterPartitionRequest) -> AlterPartitionResponse:
        """A leader's ISR change, queued behind the controller's other events (Kafka's AlterPartition)."""
        done: asyncio.Future[AlterPartitionResponse] = asyncio.get_running_loop().create_future()

        async def event() -> None:
            try:
                done.set_result(await self._alter_partition(request))
            except BaseException:
                # the controller lost ZooKeeper or was fenced mid-change: the leader asks the next controller
                done.set_result(AlterPartitionResponse(error_code=ErrorCode.NOT_CONTROLLER))
                raise

        event.__name__ = "alter_partition"
        self.put_event(event)
        return await done

    async def allocate_producer_ids(self, request: AllocateProducerIdsRequest) -> AllocateProducerIdsResponse:
        """A block of producer ids for a broker that asks the controller for them (KIP-730: Kafka's brokers do from
        ``inter.broker.protocol.version`` 3.0, where Samsa's take theirs from ZooKeeper themselves), taken from
        ``/latest_producer_id_block`` as Kafka's ZooKeeper-mode controller takes it, so both kinds share one
        sequence. Queued behind the controller's other events, as in Kafka."""
        done: asyncio.Future[AllocateProducerIdsResponse] = asyncio.get_running_loop().create_future()

        async def event() -> None:
            try:
                done.set_result(await self._allocate_producer_ids(request))
            except BaseException:
                done.set_result(AllocateProducerIdsResponse(error_code=ErrorCode.NOT_CONTROLLER))
                raise

        event.__name__ = "allocate_producer_ids"
        self.put_event(event)
        return await done

    async def _allocate_producer_ids(
        self, request: AllocateProducerIdsRequest
    ) -> AllocateProducerIdsResponse:
        if not self.is_active:
            return AllocateProducerIdsResponse(error_code=ErrorCode.NOT_CONTROLLER)
        known = self.live.get(request.broker_id)
        if known is None or request.broker_epoch != known[1]:
            return AllocateProducerIdsResponse(error_code=ErrorCode.STALE_BROKER_EPOCH)
        block = await self.zk_call(self.zk.allocate_producer_ids, request.broker_id)
        return AllocateProducerIdsResponse(
            error_code=ErrorCode.NONE,
            producer_id_start=block.block_start,
            producer_id_len=block.block_end - block.block_start + 1,
        )

    async def _alter_partition(self, request: AlterPartitionRequest) -> AlterPartitionResponse:
        if not self.is_active:
            return AlterPartitionResponse(error_code=ErrorCode.NOT_CONTROLLER)
        known = self.live.get(request.broker_id)
        if known is None or (request.broker_epoch != -1 and request.broker_epoch != known[1]):
            return AlterPartitionResponse(error_code=ErrorCode.STALE_BROKER_EPOCH)
        # Each change is checked, then the accepted ones are written together (Kafka's controller writes an
        # AlterPartition's changes in one batch), then each partition is answered with its state.
        checked: list[list[tuple[TopicPartition, ErrorCode]]] = []  # each topic's partitions, as asked
        writes: dict[TopicPartition, tuple[PartitionEntry, PartitionState]] = {}
        for topic in request.topics:
            name = topic.topic_name or self._topic_by_id(topic.topic_id)
            verdicts = []
            for data in topic.partitions:
                tp = TopicPartition(name, data.partition_index)
                new_isr = tuple(data.new_isr or [s.broker_id for s in data.new_isr_with_epochs])
                error, new = self._check_isr_change(
                    tp, request.broker_id, data.leader_epoch, data.partition_epoch, new_isr
                )
                if new is not None:
                    writes[tp] = (self.partitions[tp], new)
                verdicts.append((tp, error))
            checked.append(verdicts)
        await self.write_states(writes)
        changed = {tp: entry for tp, (entry, _) in writes.items()}
        topics = [
            AlterPartitionResponseTopicData(  # named as the request named it: by name (v0-1) or id (v2+)
                topic_name=topic.topic_name,
                topic_id=topic.topic_id,
                partitions=[self._isr_answer(tp, error) for tp, error in verdicts],
            )
            for topic, verdicts in zip(request.topics, checked, strict=True)
        ]
        self.send_update_metadata(self.live, changed)
        await self.reassignments.check(changed)
        return AlterPartitionResponse(topics=topics)

    def _check_isr_change(
        self,
        tp: TopicPartition,
        leader: int,
        leader_epoch: int,
        partition_epoch: int,
        new_isr: tuple[int, ...],
    ) -> tuple[ErrorCode, PartitionState | None]:
        """A leader's ISR change judged against the partition's state: its answer's error, and the state to write
        when it is accepted and changes something."""
        entry = self.partitions.get(tp)
        if entry is None or entry.state is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
        state = entry.state
        if state.leader != leader or leader_epoch != state.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH, None
        if sorted(new_isr) == sorted(state.isr):
            # already so (a retry whose first answer was lost with a controller or a connection): success, with
            # the current partition epoch, whatever epoch the leader sent (Kafka's idempotent check)
            return ErrorCode.NONE, None
        if partition_epoch != entry.partition_epoch:
            return ErrorCode.INVALID_UPDATE_VERSION, None
        eligible = self.elections.eligible
        if (
            any(r not in entry.replicas or not (r == leader or eligible(r)) for r in new_isr)
            or leader not in new_isr
        ):
            return ErrorCode.INELIGIBLE_REPLICA, None
        return ErrorCode.NONE, PartitionState(state.leader, state.leader_epoch, new_isr, self.epoch)

    def _isr_answer(self, tp: TopicPartition, error: ErrorCode) -> AlterPartitionResponsePartitionData:
        """A partition's AlterPartition answer: the error, with the partition's state as it stands."""
        entry = self.partitions.get(tp)
        if entry is None or entry.state is None:
            return AlterPartitionResponsePartitionData(tp.partition, error)
        current = entry.state
        return AlterPartitionResponsePartitionData(
            partition_index=tp.partition,
            error_code=error,
            leader_id=current.leader,
            leader_epoch=current.leader_epoch,
            isr=list(current.isr),
            partition_epoch=entry.partition_epoch,
        )

    def _topic_by_id(self, topic_id: uuid.UUID) -> str:
        return next((t for t, a in self.topics.items() if topic_uuid(a.topic_id) == topic_id), "")

    # --- requests to brokers ---------------------------------------------------------------------------------

    def _open_channels(self) -> None:
        for broker_id, (registration, _) in self.live.items():
            if broker_id not in self._channels:
                self._channels[broker_id] = BrokerChannel(
                    registration, self.listener, f"controller-{self.broker_id}", self.security
                )

    def _send(
        self,
        broker_id: int,
        build: Callable[[int], Any],
        api_key: int,
        on_answer: OnAnswer = None,
        after: Sequence[asyncio.Future[None]] = (),
    ) -> None:
        channel = self._channels.get(broker_id)
        if channel is not None:
            channel.send(build, api_key, on_answer, after)

    def _leader_answer(self, broker_id: int) -> OnAnswer:
        """The ``on_answer`` of a LeaderAndIsr naming ``broker_id`` leader: it marks done a future the next
        UpdateMetadata waits for (``send_update_metadata``)."""
        answered: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        awaited = self._awaited_leaders.setdefault(broker_id, set())
        awaited.add(answered)
        answered.add_done_callback(awaited.discard)

        def on_answer(_: Any) -> None:
            if not answered.done():
                answered.set_result(None)

        self._leader_answers.append(answered)
        return on_answer

    def _forget_leaders(self, broker_ids: Iterable[int]) -> None:
        """Stop waiting for the LeaderAndIsr answers of brokers that left: their channels drop what was queued,
        and the UpdateMetadata held for them (all brokers' next metadata) would otherwise wait out
        ``LEADER_ANSWER_WAIT_S``. Seen in the nemesis: a leader paused past its session held every broker's
        metadata 5 s, and clients were told COORDINATOR_NOT_AVAILABLE for a group whose coordinator served."""
        for broker_id in broker_ids:
            for answered in list(self._awaited_leaders.pop(broker_id, ())):
                if not answered.done():
                    answered.set_result(None)

    def awaiting_leaders(self) -> set[int]:
        """Brokers named leader by a LeaderAndIsr they have not answered yet (the next UpdateMetadata waits)."""
        return {broker_id for broker_id, awaited in self._awaited_leaders.items() if awaited}

    def send_leader_and_isr(
        self, partitions: dict[TopicPartition, PartitionEntry], *, is_new: bool, only: set[int] | None = None
    ) -> None:
        """LeaderAndIsr to each live replica of each partition (``only``: to those brokers)."""
        per_broker: dict[int, dict[str, list[LeaderAndIsrPartitionState]]] = {}
        leaders: dict[int, set[int]] = {}
        for tp, entry in sorted(partitions.items()):
            state = entry.state
            if state is None or state.leader == LEADER_DELETED:
                continue
            wire = LeaderAndIsrPartitionState(
                partition_index=tp.partition,
                controller_epoch=state.controller_epoch,
                leader=state.leader,
                leader_epoch=state.leader_epoch,
                isr=list(state.isr),
                partition_epoch=entry.partition_epoch,
                replicas=list(entry.replicas),
                is_new=is_new,
            )
            for replica in entry.replicas:
                if replica in self.live and (only is None or replica in only):
                    per_broker.setdefault(replica, {}).setdefault(tp.topic, []).append(wire)
                    if state.leader in self.live:
                        leaders.setdefault(replica, set()).add(state.leader)
        for broker_id, topics in per_broker.items():
            request = LeaderAndIsrRequest(
                controller_id=self.broker_id,
                controller_epoch=self.epoch,
                broker_epoch=self.live[broker_id][1],
                topic_states=[
                    LeaderAndIsrTopicState(
                        topic_name=t, topic_id=topic_uuid(self.topics[t].topic_id), partition_states=s
                    )
                    for t, s in topics.items()
                ],
                live_leaders=[self._live_leader(b) for b in sorted(leaders.get(broker_id, ()))],
            )
            leads = any(p.leader == broker_id for states in topics.values() for p in states)
            on_answer = self._leader_answer(broker_id) if leads else None
            self._send(
                broker_id, _at_least(request, MIN_LEADER_AND_ISR_VERSION), ApiKey.LEADER_AND_ISR, on_answer
            )

    def _live_leader(self, broker_id: int) -> LeaderAndIsrLiveLeader:
        channel_host, channel_port = self._address(broker_id)
        return LeaderAndIsrLiveLeader(broker_id=broker_id, host_name=channel_host, port=channel_port)

    def _address(self, broker_id: int) -> tuple[str, int]:
        registration = self.live[broker_id][0]
        endpoint = next(
            (e for e in registration.endpoints if e.listener == self.listener), registration.endpoints[0]
        )
        return endpoint.host, endpoint.port

    def send_stop_replica(
        self,
        partitions: dict[TopicPartition, PartitionEntry],
        *,
        to: set[int] | None = None,
        delete: bool = True,
        leader_epoch: int | None = None,
        on_answer: OnAnswer = None,
    ) -> None:
        """StopReplica to every live replica of ``partitions`` (``to``: to those brokers); with ``delete`` they
        delete their logs, without it their fetchers only stop."""
        per_broker: dict[int, dict[str, list[StopReplicaPartitionState]]] = {}
        for tp, entry in sorted(partitions.items()):
            epoch = entry.state.leader_epoch if entry.state is not None else -1
            wire = StopReplicaPartitionState(
                partition_index=tp.partition,
                leader_epoch=epoch if leader_epoch is None else leader_epoch,
                delete_partition=delete,
            )
            for replica in sorted(to) if to is not None else entry.replicas:
                if replica in self.live:
                    per_broker.setdefault(replica, {}).setdefault(tp.topic, []).append(wire)
        for broker_id, topics in per_broker.items():
            request = StopReplicaRequest(
                controller_id=self.broker_id,
                controller_epoch=self.epoch,
                broker_epoch=self.live[broker_id][1],
                topic_states=[
                    StopReplicaTopicState(topic_name=t, partition_states=s) for t, s in topics.items()
                ],
            )
            self._send(
                broker_id, _at_least(request, MIN_STOP_REPLICA_VERSION), ApiKey.STOP_REPLICA, on_answer
            )

    def send_update_metadata(
        self, to: dict[int, tuple[BrokerRegistration, int]], partitions: dict[TopicPartition, PartitionEntry]
    ) -> None:
        """UpdateMetadata with every live broker and the given partitions' states to each broker in ``to``.

        Sent once the LeaderAndIsr requests queued before it to new leaders are answered (``LEADER_ANSWER_WAIT_S``
        at most): no broker names a leader to clients before that leader leads. Kafka's controller does not wait,
        and a client that learns of a leader first sends it a produce refused with NOT_LEADER_OR_FOLLOWER, then,
        on the same connection, the next one once it leads: OUT_OF_ORDER_SEQUENCE_NUMBER for a gap the broker
        made. librdkafka answers that by bumping its producer epoch and numbering every unacknowledged message
        anew, and writes a second time those of them that the log already had (found by the nemesis suite: one
        record in two partitions written twice after a preferred election)."""
        after = tuple(a for a in self._leader_answers if not a.done())
        self._leader_answers.clear()
        if not to:
            return
        by_topic: dict[str, list[UpdateMetadataPartitionState]] = {}
        for tp, entry in sorted(partitions.items()):
            state = entry.state
            if state is None:
                continue
            by_topic.setdefault(tp.topic, []).append(
                UpdateMetadataPartitionState(
                    partition_index=tp.partition,
                    controller_epoch=state.controller_epoch,
                    leader=state.leader,
                    leader_epoch=state.leader_epoch,
                    isr=list(state.isr),
                    zk_version=entry.partition_epoch,
                    replicas=list(entry.replicas),
                    offline_replicas=[r for r in entry.replicas if r not in self.live],
                )
            )
        topic_states = [
            UpdateMetadataTopicState(
                topic_name=t, topic_id=topic_uuid(self.topics[t].topic_id), partition_states=s
            )
            for t, s in by_topic.items()
        ]
        brokers = self._live_brokers_wire()
        for broker_id, (_, broker_epoch) in to.items():
            request = UpdateMetadataRequest(
                controller_id=self.broker_id,
                controller_epoch=self.epoch,
                broker_epoch=broker_epoch,
                topic_states=topic_states,
                live_brokers=brokers,
            )
            self._send(
                broker_id,
                _at_least(request, MIN_UPDATE_METADATA_VERSION),
                ApiKey.UPDATE_METADATA,
                after=after,
            )

    def _live_brokers_wire(self) -> list[UpdateMetadataBroker]:
        """Every live broker with its endpoints, as UpdateMetadata lists them."""
        return [
            UpdateMetadataBroker(
                id=broker_id,
                endpoints=[
                    UpdateMetadataEndpoint(
                        port=e.port,
                        host=e.host,
                        listener=e.listener,
                        security_protocol=SECURITY_PROTOCOLS.get(e.security_protocol, 0),
                    )
                    for e in registration.endpoints
                ],
                rack=registration.rack,
            )
            for broker_id, (registration, _) in sorted(self.live.items())
        ]
