"""One picture of a Kafka-protocol cluster, gathered with a few batched protocol calls.

``gather(client, known_brokers)`` asks, concurrently where the answers do not depend on each other:

    call                     to                         gives
    Metadata (all topics)    any broker                 brokers, controller, partitions (leader, replicas, ISR)
    ListOffsets x2           each leader, its partitions log start offset (-2) and log end offset (-1)
    DescribeLogDirs          each live broker           size of each replica
    ListGroups               each live broker           the groups it coordinates
    DescribeGroups           each coordinator, batched  state, members, assignment
    OffsetFetch              each coordinator, batched  committed offsets (lag = log end offset - committed)

So a 1,000-partition cluster of three brokers costs about fifteen requests, whatever the partition and group
counts (a broker older than OffsetFetch v8, Kafka 3.0, takes one OffsetFetch per group). Every call has its own
deadline (``CALL_TIMEOUT_S``) and its own failure: a broker that is down, a partition without a leader or a group
whose coordinator is moving leave an ``error`` string in the part they concern, and the rest of the picture is
still drawn. Only a cluster with no reachable broker at all gives an empty picture with an error.

A broker is "down" when the console has seen it before (or it is named as a replica) and the metadata no longer
lists it: Kafka's metadata lists live brokers only.

Concurrency contract: coroutines for the event loop that owns ``client``; the returned ``ClusterState`` is plain
data (lists, dicts, ints, strings), ready for ``json.dumps``, and never mutated after it is returned.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from samsa.client import BrokerError, KafkaClient, KafkaError, TopicPartition
from samsa.client.groups import decode_assignment
from samsa.protocol import ApiKey

__all__ = ["CALL_TIMEOUT_S", "EARLIEST", "LATEST", "ClusterState", "gather"]

CALL_TIMEOUT_S = 3.0
LATEST = -1
ONE_GROUP_OFFSET_FETCH = 7  # the last version with one group per request (Kafka 2.5 to 4.x answer it)
BATCHED_OFFSET_FETCH = 8  # the first with a list of groups
EARLIEST = -2
T = TypeVar("T")
Json = dict[str, Any]


@dataclass(slots=True)
class ClusterState:
    """What the console shows, as JSON-ready parts (module doc)."""

    time_ms: int
    error: str | None = None
    cluster_id: str | None = None
    controller: int = -1
    brokers: list[Json] = field(default_factory=list)
    topics: dict[str, Json] = field(default_factory=dict)  # name -> {"partitions": [...], ...}
    groups: list[Json] = field(default_factory=list)
    log_dirs: dict[int, list[str]] = field(default_factory=dict)  # broker -> its log dir paths

    def end_offsets(self) -> dict[TopicPartition, int]:
        """The known log end offsets of the topics that are not internal."""
        return {
            TopicPartition(name, p["partition"]): p["log_end_offset"]
            for name, topic in self.topics.items()
            if not topic["internal"]
            for p in topic["partitions"]
            if p["log_end_offset"] is not None
        }

    def committed(self) -> dict[tuple[str, TopicPartition], int]:
        """The committed offsets of every group, by (group, partition)."""
        return {
            (g["group_id"], TopicPartition(o["topic"], o["partition"])): o["committed"]
            for g in self.groups
            for o in g["offsets"]
            if o["committed"] is not None
        }


async def _bounded(call: Awaitable[T]) -> T:
    try:
        return await asyncio.wait_for(call, CALL_TIMEOUT_S)
    except asyncio.TimeoutError:
        raise KafkaError(f"no answer within {CALL_TIMEOUT_S:g} s") from None


def _why(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if isinstance(exc, KafkaError) else f"{type(exc).__name__}: {text}"


async def gather(client: KafkaClient, known_brokers: Iterable[int] = ()) -> ClusterState:
    """The cluster as ``client`` sees it now (module doc); never raises for a broker's or the cluster's fault."""
    state = ClusterState(time_ms=int(time.time() * 1000))
    try:
        cluster = await _bounded(client.metadata(None))
    except (KafkaError, OSError) as exc:
        state.error = f"no broker answered Metadata: {_why(exc)}"
        state.brokers = [_broker_row(b, None, up=False) for b in sorted(set(known_brokers))]
        return state
    state.cluster_id = cluster.cluster_id
    state.controller = cluster.controller_id
    state.topics = {
        name: _topic_row(topic, set(cluster.brokers)) for name, topic in sorted(cluster.topics.items())
    }
    live = sorted(cluster.brokers)
    offsets_and_sizes = asyncio.gather(_offsets(client, state), _sizes(client, state, live))
    groups = _groups(client, live)
    _, state.groups = await asyncio.gather(offsets_and_sizes, groups)
    _lag(state)
    everyone = set(known_brokers) | set(live) | _replica_ids(state)
    state.brokers = [
        _broker_row(b, cluster.brokers.get(b), up=b in cluster.brokers) for b in sorted(everyone)
    ]
    _count_leaders(state)
    return state


# --------------------------------------------------------------------------------------------- metadata


def _topic_row(topic: Any, live: set[int]) -> Json:
    partitions = [_partition_row(p, live) for _, p in sorted(topic.partitions.items())]
    return {
        "name": topic.name,
        "internal": topic.internal,
        "error": None if topic.error_code == 0 else _code_name(topic.error_code),
        "partitions": partitions,
    }


def _partition_row(p: Any, live: set[int]) -> Json:
    offline = p.leader < 0 or p.leader not in live
    return {
        "partition": p.partition,
        "leader": p.leader,
        "leader_epoch": p.leader_epoch,
        "replicas": list(p.replicas),
        "isr": list(p.isr),
        "offline_replicas": sorted(set(p.offline_replicas) | {r for r in p.replicas if r not in live}),
        "under_replicated": len(p.isr) < len(p.replicas),
        "offline": offline,
        "error": None if p.error_code == 0 else _code_name(p.error_code),
        "log_start_offset": None,
        "log_end_offset": None,
        "size": None,
        "offsets_error": None,
    }


def _broker_row(node_id: int, address: tuple[str, int, str | None] | None, *, up: bool) -> Json:
    host, port, rack = address if address is not None else (None, None, None)
    return {"id": node_id, "host": host, "port": port, "rack": rack, "up": up, "leaders": 0, "replicas": 0}


def _replica_ids(state: ClusterState) -> set[int]:
    return {r for t in state.topics.values() for p in t["partitions"] for r in p["replicas"]}


def _count_leaders(state: ClusterState) -> None:
    rows = {b["id"]: b for b in state.brokers}
    for topic in state.topics.values():
        for p in topic["partitions"]:
            if p["leader"] in rows and not p["offline"]:
                rows[p["leader"]]["leaders"] += 1
            for r in p["replicas"]:
                if r in rows:
                    rows[r]["replicas"] += 1


def _code_name(code: int) -> str:
    return BrokerError.from_code(code).name


# --------------------------------------------------------------------------------------------- offsets


def _by_leader(state: ClusterState) -> dict[int, list[Json]]:
    grouped: dict[int, list[Json]] = defaultdict(list)
    for name, topic in state.topics.items():
        for p in topic["partitions"]:
            if p["offline"]:
                p["offsets_error"] = "no leader"
            else:
                grouped[p["leader"]].append({"topic": name, "row": p})
    return grouped


async def _offsets(client: KafkaClient, state: ClusterState) -> None:
    """Log start and end offsets of every partition with a leader: two ListOffsets per leader."""
    grouped = _by_leader(state)
    leaders = sorted(grouped)
    calls = [_list_offsets(client, leader, grouped[leader], which) for leader in leaders for which in (0, 1)]
    answers = await asyncio.gather(*calls, return_exceptions=True)
    for index, answer in enumerate(answers):
        leader, which = leaders[index // 2], index % 2
        key = "log_start_offset" if which == 0 else "log_end_offset"
        rows = {(e["topic"], e["row"]["partition"]): e["row"] for e in grouped[leader]}
        if isinstance(answer, BaseException):
            for row in rows.values():
                row["offsets_error"] = f"broker {leader}: {_why(answer)}"
            continue
        for tp_key, (error_code, offset) in answer.items():
            row = rows.get(tp_key)
            if row is None:
                continue
            if error_code:
                row["offsets_error"] = _code_name(error_code)
            else:
                row[key] = offset


async def _list_offsets(
    client: KafkaClient, leader: int, entries: list[Json], which: int
) -> dict[tuple[str, int], tuple[int, int]]:
    from samsa.protocol.messages import list_offsets as lo

    timestamp = EARLIEST if which == 0 else LATEST
    by_topic: dict[str, list[Any]] = defaultdict(list)
    for e in entries:
        by_topic[e["topic"]].append(
            lo.ListOffsetsPartition(
                partition_index=e["row"]["partition"],
                current_leader_epoch=-1,
                timestamp=timestamp,
                max_num_offsets=1,
            )
        )
    request = lo.ListOffsetsRequest(
        replica_id=-1,
        isolation_level=0,
        topics=[lo.ListOffsetsTopic(name=t, partitions=ps) for t, ps in by_topic.items()],
        timeout_ms=int(CALL_TIMEOUT_S * 1000),
    )
    response = await _bounded(client.send(request, api_key=ApiKey.LIST_OFFSETS, node_id=leader))
    out: dict[tuple[str, int], tuple[int, int]] = {}
    for topic in response.topics:
        for p in topic.partitions:
            if p.offset is None or p.offset < 0:  # ListOffsets v0 answers in old_style_offsets
                offsets = getattr(p, "old_style_offsets", None) or [-1]
                out[(topic.name, p.partition_index)] = (p.error_code, offsets[0])
            else:
                out[(topic.name, p.partition_index)] = (p.error_code, p.offset)
    return out


async def _sizes(client: KafkaClient, state: ClusterState, live: list[int]) -> None:
    """Replica sizes from DescribeLogDirs on each live broker; a partition shows its leader's replica size."""
    answers = await asyncio.gather(
        *(_bounded(client.describe_log_dirs(None, node_ids=[b])) for b in live), return_exceptions=True
    )
    sizes: dict[tuple[str, int], dict[int, int]] = defaultdict(dict)
    for broker, answer in zip(live, answers, strict=True):
        if isinstance(answer, BaseException):
            continue
        for log_dir in answer.get(broker, []):
            state.log_dirs.setdefault(broker, []).append(log_dir.path)
            for tp, replica in log_dir.partitions.items():
                if not replica.is_future:
                    sizes[(tp.topic, tp.partition)][broker] = replica.size
    for name, topic in state.topics.items():
        for p in topic["partitions"]:
            by_broker = sizes.get((name, p["partition"]), {})
            p["replica_sizes"] = {str(b): s for b, s in sorted(by_broker.items())}
            p["size"] = by_broker.get(p["leader"], max(by_broker.values(), default=None))


# --------------------------------------------------------------------------------------------- groups


async def _groups(client: KafkaClient, live: list[int]) -> list[Json]:
    """Every group, from the broker that lists it: ListGroups answers with the groups a broker coordinates, so
    no FindCoordinator is needed; then one DescribeGroups and one OffsetFetch per coordinator."""
    from samsa.protocol.messages.list_groups import ListGroupsRequest

    answers = await asyncio.gather(
        *(_bounded(client.send(ListGroupsRequest(), api_key=ApiKey.LIST_GROUPS, node_id=b)) for b in live),
        return_exceptions=True,
    )
    listed: dict[str, Json] = {}
    for broker, answer in zip(live, answers, strict=True):
        if isinstance(answer, BaseException) or answer.error_code:
            continue
        for g in answer.groups:
            listed[g.group_id] = {
                "group_id": g.group_id,
                "protocol_type": g.protocol_type,
                "coordinator": broker,
                "state": g.group_state,
                "protocol": "",
                "members": [],
                "offsets": [],
                "lag": None,
                "error": None,
            }
    by_coordinator: dict[int, list[Json]] = defaultdict(list)
    for row in listed.values():
        by_coordinator[row["coordinator"]].append(row)
    await asyncio.gather(*(_describe(client, b, rows) for b, rows in by_coordinator.items()))
    return [listed[g] for g in sorted(listed)]


async def _describe(client: KafkaClient, coordinator: int, rows: list[Json]) -> None:
    from samsa.protocol.messages.describe_groups import DescribeGroupsRequest

    request = DescribeGroupsRequest(groups=[row["group_id"] for row in rows])
    answered = await asyncio.gather(
        _bounded(client.send(request, api_key=ApiKey.DESCRIBE_GROUPS, node_id=coordinator)),
        _committed(client, coordinator, [row["group_id"] for row in rows]),
        return_exceptions=True,
    )
    described, committed = answered
    by_id = {row["group_id"]: row for row in rows}
    if isinstance(described, BaseException):
        for row in rows:
            row["error"] = f"DescribeGroups on broker {coordinator}: {_why(described)}"
    else:
        for group in described.groups:
            if group.group_id in by_id:
                _members(by_id[group.group_id], group)
    answers = [committed] * len(rows) if isinstance(committed, BaseException) else committed
    for row, offsets in zip(rows, answers, strict=True):
        if isinstance(offsets, BaseException):
            row["error"] = row["error"] or f"OffsetFetch on broker {coordinator}: {_why(offsets)}"
        else:
            row["offsets"] = offsets


async def _committed(
    client: KafkaClient, coordinator: int, group_ids: list[str]
) -> list[list[Json] | BaseException]:
    """The committed offsets of each group: one OffsetFetch for them all (v8+: a list of groups), or one per
    group from an older broker."""
    from samsa.protocol.messages.offset_fetch import OffsetFetchRequest, OffsetFetchRequestGroup

    connection = await _bounded(client.connection(coordinator))
    if connection.pick_version(ApiKey.OFFSET_FETCH) < BATCHED_OFFSET_FETCH:
        return await asyncio.gather(
            *(_committed_one(client, coordinator, g) for g in group_ids), return_exceptions=True
        )
    request = OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id=g, topics=None) for g in group_ids])
    response = await _bounded(
        client.send(request, api_key=ApiKey.OFFSET_FETCH, node_id=coordinator, version=BATCHED_OFFSET_FETCH)
    )
    answered = {g.group_id: g for g in response.groups}
    out: list[list[Json] | BaseException] = []
    for group_id in group_ids:
        group = answered.get(group_id)
        if group is None:
            out.append(KafkaError("the coordinator did not answer for the group"))
        elif group.error_code:
            out.append(BrokerError.from_code(group.error_code))
        else:
            out.append(_offset_rows(group.topics))
    return out


async def _committed_one(client: KafkaClient, coordinator: int, group_id: str) -> list[Json]:
    from samsa.protocol.messages.offset_fetch import OffsetFetchRequest

    request = OffsetFetchRequest(group_id=group_id, topics=None)
    response = await _bounded(
        client.send(request, api_key=ApiKey.OFFSET_FETCH, node_id=coordinator, version=ONE_GROUP_OFFSET_FETCH)
    )
    if response.error_code:
        raise BrokerError.from_code(response.error_code)
    return _offset_rows(response.topics)


def _offset_rows(topics: Any) -> list[Json]:
    return [
        {"topic": topic.name, "partition": p.partition_index, "committed": p.committed_offset}
        for topic in sorted(topics, key=lambda t: t.name)
        for p in sorted(topic.partitions, key=lambda p: p.partition_index)
        if p.error_code == 0 and p.committed_offset >= 0
    ]


def _members(row: Json, group: Any) -> None:
    if group.error_code:
        row["error"] = _code_name(group.error_code)
        return
    row["state"] = group.group_state
    row["protocol"] = group.protocol_data
    consumer = group.protocol_type == "consumer"
    row["members"] = []
    for m in group.members:
        assignment = decode_assignment(bytes(m.member_assignment)) if consumer else ()
        row["members"].append(
            {
                "member_id": m.member_id,
                "client_id": m.client_id,
                "host": m.client_host,
                "assignment": [f"{tp.topic}-{tp.partition}" for tp in assignment],
                "assigned": [(tp.topic, tp.partition) for tp in assignment],
            }
        )


def _lag(state: ClusterState) -> None:
    """Lag per committed partition (log end offset - committed), and the group's total over known ends."""
    ends = {
        (name, p["partition"]): p["log_end_offset"]
        for name, topic in state.topics.items()
        for p in topic["partitions"]
    }
    for group in state.groups:
        owners = {a: m["client_id"] for m in group["members"] for a in m["assignment"]}
        committed = {f"{o['topic']}-{o['partition']}" for o in group["offsets"]}
        for m in group["members"]:  # assigned, nothing committed yet: shown with no lag, as Kafka's tool does
            for topic, partition in m.pop("assigned", []):
                if f"{topic}-{partition}" not in committed:
                    group["offsets"].append({"topic": topic, "partition": partition, "committed": None})
        group["offsets"].sort(key=lambda o: (o["topic"], o["partition"]))
        total: int | None = None
        for o in group["offsets"]:
            end = ends.get((o["topic"], o["partition"]))
            o["log_end_offset"] = end
            o["lag"] = None if end is None or o["committed"] is None else max(0, end - o["committed"])
            o["owner"] = owners.get(f"{o['topic']}-{o['partition']}")
            if o["lag"] is not None:
                total = (total or 0) + o["lag"]
        group["lag"] = total
