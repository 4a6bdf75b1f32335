"""KafkaClient: an asyncio client for any Kafka-protocol broker, over :mod:`samsa.protocol`.

One connection per broker, opened on first use and negotiated with ApiVersions. Metadata is cached and refreshed
when a broker answers NOT_LEADER_OR_FOLLOWER / UNKNOWN_TOPIC_OR_PARTITION / LEADER_NOT_AVAILABLE; requests for
partitions are routed to their leaders, admin requests to the controller. Event-loop thread only (see
:class:`~samsa.client.SyncClient` for other threads).
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from samsa.protocol import ErrorCode

from .connection import BrokerConnection
from .errors import BrokerError, KafkaError
from .security import ClientSecurity
from .types import (
    ClusterMetadata,
    ConfigEntry,
    ConfigSynonym,
    FetchedPartition,
    LogDir,
    LogDirPartition,
    NewTopic,
    PartitionMetadata,
    TopicMetadata,
    TopicPartition,
)

PartitionCall = Callable[[int, list[TopicPartition]], Awaitable[dict[TopicPartition, Any]]]
ROUTING_ERRORS = frozenset(
    {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.NOT_CONTROLLER,
    }
)
TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4


def parse_bootstrap(servers: str | Sequence[str]) -> list[tuple[str, int]]:
    """``"h1:9092,h2:9092"`` or a list of ``"host:port"`` as (host, port) pairs."""
    items = servers.split(",") if isinstance(servers, str) else list(servers)
    result = []
    for item in items:
        item = item.strip()
        if not item:
            continue
        host, sep, port = item.rpartition(":")
        if not sep or not port.isdigit():
            raise KafkaError(f"bootstrap server {item!r} is not host:port")
        if not 0 < int(port) <= 65535:
            raise KafkaError(f"bootstrap server {item!r}: port {port} is not in 1-65535")
        result.append((host.strip("[]"), int(port)))
    if not result:
        raise KafkaError("no bootstrap servers given")
    return result


class KafkaClient:
    """An asyncio Kafka client: generic ``send`` plus metadata, offsets, fetch, produce and admin calls.

    Event-loop thread only; all calls must run on the loop that made the first one.
    """

    def __init__(
        self,
        bootstrap_servers: str | Sequence[str],
        *,
        client_id: str = "samsa",
        request_timeout_ms: int = 30000,
        isolation_level: int = 0,
        security: ClientSecurity | None = None,
    ) -> None:
        self.bootstrap = parse_bootstrap(bootstrap_servers)
        self.security = security  # TLS and SASL of every connection (``security``); None: PLAINTEXT
        self.client_id = client_id
        self.request_timeout_ms = request_timeout_ms
        self.isolation_level = (
            isolation_level  # ListOffsets' default: 0 read_uncommitted (HW), 1 read_committed
        )
        self._connections: dict[int, BrokerConnection] = {}  # node id -> connection
        self._bootstrap_connection: BrokerConnection | None = None
        self._locks: dict[object, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._cluster: ClusterMetadata | None = None

    async def __aenter__(self) -> KafkaClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        connections = list(self._connections.values())
        if self._bootstrap_connection is not None:
            connections.append(self._bootstrap_connection)
        self._connections.clear()
        self._bootstrap_connection = None
        for connection in connections:
            await connection.close()

    # ------------------------------------------------------------------------------------------ connections

    def _new_connection(self, host: str, port: int) -> BrokerConnection:
        return BrokerConnection(
            host,
            port,
            client_id=self.client_id,
            request_timeout_ms=self.request_timeout_ms,
            security=self.security,
        )

    async def _any_connection(self) -> BrokerConnection:
        for connection in self._connections.values():
            if not connection.closed:
                return connection
        async with self._locks["bootstrap"]:
            if self._bootstrap_connection is not None and not self._bootstrap_connection.closed:
                return self._bootstrap_connection
            errors = []
            for host, port in self.bootstrap:
                connection = self._new_connection(host, port)
                try:
                    await connection.open()
                except KafkaError as exc:
                    await connection.close()
                    errors.append(str(exc))
                    continue
                self._bootstrap_connection = connection
                return connection
            raise KafkaError("; ".join(errors))

    async def connection(self, node_id: int) -> BrokerConnection:
        """The open connection to broker ``node_id`` (from the cached metadata), opening it if needed."""
        existing = self._connections.get(node_id)
        if existing is not None and not existing.closed:
            return existing
        async with self._locks[node_id]:
            existing = self._connections.get(node_id)
            if existing is not None and not existing.closed:
                return existing
            cluster = self._cluster
            if cluster is None or node_id not in cluster.brokers:
                cluster = await self.metadata([])
            if node_id not in cluster.brokers:
                raise KafkaError(f"broker {node_id} is not in the cluster metadata")
            host, port, _ = cluster.brokers[node_id]
            connection = self._new_connection(host, port)
            try:
                await connection.open()
            except KafkaError:
                await connection.close()
                raise
            self._connections[node_id] = connection
            return connection

    async def send(
        self,
        request: Any,
        *,
        api_key: int,
        node_id: int | None = None,
        version: int | None = None,
        timeout_ms: int | None = None,
    ) -> Any:
        """Send any generated request message and return its decoded response.

        The version is the highest both sides support unless given; ``node_id`` None means any broker.
        ``timeout_ms`` overrides the client's request timeout for this request (a JoinGroup may wait for a
        whole rebalance).
        """
        if node_id is None:
            connection = await self._any_connection()
        else:
            connection = await self.connection(node_id)
        return await connection.request(request, api_key, version, timeout_ms=timeout_ms)

    # ------------------------------------------------------------------------------------------ metadata

    async def metadata(
        self, topics: Sequence[str] | None = None, *, allow_auto_topic_creation: bool = False
    ) -> ClusterMetadata:
        """Cluster metadata for ``topics`` (None: every topic; empty: brokers only). Refreshes the cache.

        ``allow_auto_topic_creation`` lets a broker configured for it create the named topics, as producers do.
        """
        from samsa.protocol.messages import metadata as md

        connection = await self._any_connection()
        version = connection.pick_version(md.MetadataRequest.API_KEY)
        wanted: list[md.MetadataRequestTopic] | None
        if topics is None:
            wanted = None if version >= 1 else []
        else:
            wanted = [md.MetadataRequestTopic(name=name) for name in topics]
            if version == 0 and not wanted:
                raise KafkaError("Metadata v0 cannot ask for no topics")
        request = md.MetadataRequest(topics=wanted, allow_auto_topic_creation=allow_auto_topic_creation)
        response = await connection.request(request, md.MetadataRequest.API_KEY, version)
        cluster = ClusterMetadata(
            cluster_id=response.cluster_id,
            controller_id=response.controller_id,
            brokers={b.node_id: (b.host, b.port, b.rack) for b in response.brokers},
            topics={
                t.name: TopicMetadata(
                    name=t.name,
                    error_code=t.error_code,
                    partitions={
                        p.partition_index: PartitionMetadata(
                            partition=p.partition_index,
                            leader=p.leader_id,
                            leader_epoch=p.leader_epoch,
                            replicas=tuple(p.replica_nodes),
                            isr=tuple(p.isr_nodes),
                            error_code=p.error_code,
                            offline_replicas=tuple(p.offline_replicas or ()),
                        )
                        for p in t.partitions
                    },
                    internal=t.is_internal,
                    topic_id=t.topic_id if version >= 10 else None,
                )
                for t in response.topics
                if t.name is not None
            },
        )
        self._merge_cluster(cluster, replace_topics=topics is None)
        return cluster

    def _merge_cluster(self, cluster: ClusterMetadata, *, replace_topics: bool) -> None:
        topics = {} if replace_topics or self._cluster is None else dict(self._cluster.topics)
        topics.update(cluster.topics)
        self._cluster = ClusterMetadata(cluster.cluster_id, cluster.controller_id, cluster.brokers, topics)

    async def _leaders(
        self, tps: Sequence[TopicPartition], *, refresh: bool = False
    ) -> dict[int, list[TopicPartition]]:
        """Group ``tps`` by leader; partitions without a known leader are under key -1."""
        cluster = self._cluster
        missing = cluster is None or any(
            tp.topic not in cluster.topics or tp.partition not in cluster.topics[tp.topic].partitions
            for tp in tps
        )
        if refresh or missing:
            cluster = await self.metadata(sorted({tp.topic for tp in tps}))
        assert self._cluster is not None
        cluster = self._cluster
        grouped: dict[int, list[TopicPartition]] = defaultdict(list)
        for tp in tps:
            topic = cluster.topics.get(tp.topic)
            partition = None if topic is None else topic.partitions.get(tp.partition)
            grouped[-1 if partition is None else partition.leader].append(tp)
        return grouped

    async def _controller(self) -> int:
        cluster = self._cluster if self._cluster is not None else await self.metadata([])
        if cluster.controller_id < 0 or cluster.controller_id not in cluster.brokers:
            cluster = await self.metadata([])
        return (
            cluster.controller_id if cluster.controller_id in cluster.brokers else next(iter(cluster.brokers))
        )

    async def _per_leader(
        self,
        tps: Sequence[TopicPartition],
        call: PartitionCall,
    ) -> dict[TopicPartition, Any]:
        """Run ``call(node_id, tps) -> {tp: (error_code, value)}`` per leader, retrying routing errors once."""
        results: dict[TopicPartition, Any] = {}
        todo = list(tps)
        for attempt in range(2):
            grouped = await self._leaders(todo, refresh=attempt > 0)
            parts = [(leader, group) for leader, group in grouped.items() if leader >= 0]
            answers = await asyncio.gather(*(call(leader, group) for leader, group in parts))
            retry: list[TopicPartition] = []
            for tp in grouped.get(-1, []):
                results[tp] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if attempt else None, None)
                retry.append(tp)
            for answer in answers:
                for tp, (error_code, value) in answer.items():
                    results[tp] = (error_code, value)
                    if error_code in ROUTING_ERRORS:
                        retry.append(tp)
            if not retry:
                break
            todo = retry
        for tp, (error_code, _) in list(results.items()):
            if error_code is None:
                results[tp] = (int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), None)
        return results

    # ------------------------------------------------------------------------------------------ data

    async def list_offsets(
        self, timestamps: Mapping[TopicPartition, int], *, isolation_level: int | None = None
    ) -> dict[TopicPartition, tuple[int, int]]:
        """(offset, timestamp) per partition: -1 latest (the LSO for ``isolation_level`` 1), -2 earliest, -3 max
        timestamp, else by time. ``isolation_level``: the client's when None.

        Raises BrokerError for the first partition that failed.
        """
        from samsa.protocol.messages import list_offsets as lo

        async def call(node_id: int, tps: list[TopicPartition]) -> dict[TopicPartition, Any]:
            connection = await self.connection(node_id)
            version = connection.pick_version(lo.ListOffsetsRequest.API_KEY)
            by_topic: dict[str, list[lo.ListOffsetsPartition]] = defaultdict(list)
            for tp in tps:
                by_topic[tp.topic].append(
                    lo.ListOffsetsPartition(
                        partition_index=tp.partition,
                        current_leader_epoch=-1,
                        timestamp=timestamps[tp],
                        max_num_offsets=1,
                    )
                )
            request = lo.ListOffsetsRequest(
                replica_id=-1,
                isolation_level=self.isolation_level if isolation_level is None else isolation_level,
                topics=[lo.ListOffsetsTopic(name=t, partitions=ps) for t, ps in by_topic.items()],
                timeout_ms=self.request_timeout_ms,
            )
            response = await connection.request(request, lo.ListOffsetsRequest.API_KEY, version)
            out: dict[TopicPartition, Any] = {}
            for topic in response.topics:
                for p in topic.partitions:
                    if version == 0:
                        offset = p.old_style_offsets[0] if p.old_style_offsets else -1
                        value = (offset, -1)
                    else:
                        value = (p.offset, p.timestamp)
                    out[TopicPartition(topic.name, p.partition_index)] = (p.error_code, value)
            return out

        return _values_or_raise(await self._per_leader(list(timestamps), call), "ListOffsets")

    async def fetch(
        self,
        positions: Mapping[TopicPartition, int],
        *,
        max_wait_ms: int = 500,
        min_bytes: int = 1,
        max_bytes: int = 52428800,
        partition_max_bytes: int = 1048576,
        isolation_level: int | None = None,
    ) -> dict[TopicPartition, FetchedPartition]:
        """Fetch from each partition's leader at ``positions``; errors are per partition (``error_code``).
        ``isolation_level``: the client's when None (1, read_committed: up to the LSO, with the aborted
        transactions of what was read)."""
        from samsa.protocol.messages import fetch as fe

        level = self.isolation_level if isolation_level is None else isolation_level
        limits = _FetchLimits(max_wait_ms, min_bytes, max_bytes, partition_max_bytes, level)

        async def call(node_id: int, tps: list[TopicPartition]) -> dict[TopicPartition, Any]:
            connection = await self.connection(node_id)
            request = _fetch_request([(tp, positions[tp]) for tp in tps], limits)
            response = await connection.request(request, fe.FetchRequest.API_KEY)
            if response.error_code:
                return {tp: (response.error_code, _empty_fetch(response.error_code)) for tp in tps}
            return {
                TopicPartition(topic.topic, p.partition_index): (p.error_code, _fetched(p))
                for topic in response.responses
                for p in topic.partitions
            }

        results = await self._per_leader(list(positions), call)
        return {
            tp: value if value is not None else _empty_fetch(error_code)
            for tp, (error_code, value) in results.items()
        }

    async def produce(
        self,
        tp: TopicPartition,
        batch: bytes,
        *,
        acks: int = -1,
        timeout_ms: int = 30000,
        transactional_id: str | None = None,
    ) -> tuple[int, int]:
        """Append ``batch`` (encoded record batches) to ``tp``; (base_offset, log_append_time).

        With acks=0 nothing is awaited and (-1, -1) is returned. Raises BrokerError. ``transactional_id``: the
        batch's producer writes in a transaction (``samsa.client.transactions``).
        """
        from samsa.protocol.messages import produce as pr

        async def call(node_id: int, tps: list[TopicPartition]) -> dict[TopicPartition, Any]:
            connection = await self.connection(node_id)
            request = pr.ProduceRequest(
                transactional_id=transactional_id,
                acks=acks,
                timeout_ms=timeout_ms,
                topic_data=[
                    pr.TopicProduceData(
                        name=tp.topic,
                        partition_data=[pr.PartitionProduceData(index=tp.partition, records=batch)],
                    )
                ],
            )
            response = await connection.request(request, pr.ProduceRequest.API_KEY)
            if response is None:
                return {tp: (0, (-1, -1, None))}
            out: dict[TopicPartition, Any] = {}
            for topic in response.responses:
                for p in topic.partition_responses:
                    value = (p.base_offset, p.log_append_time_ms, p.error_message)
                    out[TopicPartition(topic.name, p.index)] = (p.error_code, value)
            return out

        results = await self._per_leader([tp], call)
        error_code, value = results.get(tp, (int(ErrorCode.UNKNOWN_SERVER_ERROR), None))
        if error_code:
            message = value[2] if value is not None else None
            raise BrokerError.from_code(error_code, message or f"Produce to {tp.topic}-{tp.partition}")
        return value[0], value[1]

    # ------------------------------------------------------------------------------------------ admin

    async def create_topics(
        self, topics: Sequence[NewTopic], *, timeout_ms: int = 30000, validate_only: bool = False
    ) -> dict[str, BrokerError | None]:
        """Create ``topics`` on the controller; per topic None or the error."""
        from samsa.protocol.messages import create_topics as ct

        request = ct.CreateTopicsRequest(
            topics=[
                ct.CreatableTopic(
                    name=t.name,
                    num_partitions=t.num_partitions,
                    replication_factor=t.replication_factor,
                    assignments=[
                        ct.CreatableReplicaAssignment(partition_index=p, broker_ids=list(ids))
                        for p, ids in (t.assignments or {}).items()
                    ],
                    configs=[ct.CreatableTopicConfig(name=k, value=v) for k, v in t.configs.items()],
                )
                for t in topics
            ],
            timeout_ms=timeout_ms,
            validate_only=validate_only,
        )
        response = await self._admin(request, ct.CreateTopicsRequest.API_KEY)
        return {t.name: _error_or_none(t.error_code, t.error_message) for t in response.topics}

    async def delete_topics(
        self, names: Sequence[str], *, timeout_ms: int = 30000
    ) -> dict[str, BrokerError | None]:
        """Delete topics by name; per topic None or the error."""
        from samsa.protocol.messages import delete_topics as dt

        connection_version = (await self._controller_connection()).pick_version(
            dt.DeleteTopicsRequest.API_KEY
        )
        if connection_version >= 6:
            request = dt.DeleteTopicsRequest(
                topics=[dt.DeleteTopicState(name=n) for n in names], timeout_ms=timeout_ms
            )
        else:
            request = dt.DeleteTopicsRequest(topic_names=list(names), timeout_ms=timeout_ms)
        response = await self._admin(request, dt.DeleteTopicsRequest.API_KEY)
        return {r.name: _error_or_none(r.error_code, r.error_message) for r in response.responses}

    async def create_partitions(
        self,
        counts: Mapping[str, int],
        *,
        assignments: Mapping[str, Sequence[Sequence[int]]] | None = None,
        timeout_ms: int = 30000,
        validate_only: bool = False,
    ) -> dict[str, BrokerError | None]:
        """Raise each topic's partition count to ``counts[topic]``, the new partitions on the brokers
        ``assignments[topic]`` names (a broker list per new partition; a topic not there: placed by the broker);
        per topic None or the error."""
        from samsa.protocol.messages import create_partitions as cp

        placed = assignments or {}

        def assignment(name: str) -> list[cp.CreatePartitionsAssignment] | None:
            if name not in placed:
                return None
            return [cp.CreatePartitionsAssignment(list(replicas)) for replicas in placed[name]]

        request = cp.CreatePartitionsRequest(
            topics=[
                cp.CreatePartitionsTopic(name=n, count=c, assignments=assignment(n))
                for n, c in counts.items()
            ],
            timeout_ms=timeout_ms,
            validate_only=validate_only,
        )
        response = await self._admin(request, cp.CreatePartitionsRequest.API_KEY)
        return {r.name: _error_or_none(r.error_code, r.error_message) for r in response.results}

    async def describe_configs(
        self,
        names: Sequence[str],
        *,
        resource_type: int = TOPIC_RESOURCE,
        keys: Sequence[str] | None = None,
        node_id: int | None = None,
        include_synonyms: bool = False,
    ) -> dict[str, dict[str, ConfigEntry]]:
        """The configs of topics (or brokers, ``resource_type=4``) by name; raises BrokerError."""
        from samsa.protocol.messages import describe_configs as dc

        request = dc.DescribeConfigsRequest(
            resources=[
                dc.DescribeConfigsResource(
                    resource_type=resource_type,
                    resource_name=n,
                    configuration_keys=None if keys is None else list(keys),
                )
                for n in names
            ],
            include_synonyms=include_synonyms,
            include_documentation=False,
        )
        if node_id is None and resource_type == BROKER_RESOURCE and names and names[0].isdigit():
            node_id = int(names[0])
        response = await self.send(request, api_key=dc.DescribeConfigsRequest.API_KEY, node_id=node_id)
        result: dict[str, dict[str, ConfigEntry]] = {}
        for r in response.results:
            if r.error_code:
                raise BrokerError.from_code(r.error_code, r.error_message or r.resource_name)
            result[r.resource_name] = {
                c.name: ConfigEntry(
                    name=c.name,
                    value=c.value,
                    read_only=c.read_only,
                    source=c.config_source,
                    is_sensitive=c.is_sensitive,
                    is_default=c.is_default or c.config_source in (4, 5),
                    synonyms=tuple(ConfigSynonym(s.name, s.value, s.source) for s in c.synonyms or ()),
                )
                for c in r.configs
            }
        return result

    async def incremental_alter_configs(
        self,
        changes: Mapping[str, Mapping[str, str | None]],
        *,
        resource_type: int = TOPIC_RESOURCE,
        validate_only: bool = False,
    ) -> dict[str, BrokerError | None]:
        """Set (value) or delete (None) config keys per resource; per resource None or the error."""
        from samsa.protocol.messages import incremental_alter_configs as iac

        request = iac.IncrementalAlterConfigsRequest(
            resources=[
                iac.AlterConfigsResource(
                    resource_type=resource_type,
                    resource_name=name,
                    configs=[
                        iac.AlterableConfig(name=k, config_operation=0 if v is not None else 1, value=v)
                        for k, v in configs.items()
                    ],
                )
                for name, configs in changes.items()
            ],
            validate_only=validate_only,
        )
        response = await self.send(request, api_key=iac.IncrementalAlterConfigsRequest.API_KEY)
        return {r.resource_name: _error_or_none(r.error_code, r.error_message) for r in response.responses}

    async def describe_client_quotas(
        self, components: Sequence[tuple[str, int, str | None]], *, strict: bool = False
    ) -> list[tuple[tuple[tuple[str, str | None], ...], dict[str, float]]]:
        """The client quotas whose entities match every (entity type, match type, name) component (match type
        0: that name, 1: the default, 2: any name): (entity as (type, name or None for the default) pairs, quota
        values). Raises BrokerError."""
        from samsa.protocol.messages import describe_client_quotas as dcq

        request = dcq.DescribeClientQuotasRequest(
            components=[dcq.ComponentData(kind, match, name) for kind, match, name in components],
            strict=strict,
        )
        response = await self.send(request, api_key=dcq.DescribeClientQuotasRequest.API_KEY)
        error = _error_or_none(response.error_code, response.error_message)
        if error is not None:
            raise error
        return [
            (
                tuple((e.entity_type, e.entity_name) for e in entry.entity),
                {v.key: v.value for v in entry.values},
            )
            for entry in response.entries or []
        ]

    async def alter_client_quotas(
        self,
        entity: Sequence[tuple[str, str | None]],
        changes: Mapping[str, float | None],
        *,
        validate_only: bool = False,
    ) -> None:
        """Set (a value) or remove (None) quotas of one entity ((type, name or None for the default) pairs).
        Raises BrokerError."""
        from samsa.protocol.messages import alter_client_quotas as acq

        request = acq.AlterClientQuotasRequest(
            entries=[
                acq.AlterClientQuotasRequestEntryData(
                    entity=[acq.AlterClientQuotasRequestEntityData(kind, name) for kind, name in entity],
                    ops=[acq.OpData(key, value or 0.0, value is None) for key, value in changes.items()],
                )
            ],
            validate_only=validate_only,
        )
        response = await self.send(request, api_key=acq.AlterClientQuotasRequest.API_KEY)
        for entry in response.entries:
            error = _error_or_none(entry.error_code, entry.error_message)
            if error is not None:
                raise error

    async def describe_user_scram_credentials(
        self, users: Sequence[str] = ()
    ) -> list[tuple[str, BrokerError | None, list[tuple[int, int]]]]:
        """Users' SCRAM credentials (no users: every user with one): per user (name, its error or None, [(mechanism
        type, iterations)]). Raises BrokerError for a whole-request error."""
        from samsa.protocol.messages import describe_user_scram_credentials as dus

        request = dus.DescribeUserScramCredentialsRequest(
            users=[dus.UserName(name) for name in users] or None
        )
        response = await self.send(request, api_key=dus.DescribeUserScramCredentialsRequest.API_KEY)
        error = _error_or_none(response.error_code, response.error_message)
        if error is not None:
            raise error
        return [
            (
                result.user,
                _error_or_none(result.error_code, result.error_message),
                [(info.mechanism, info.iterations) for info in result.credential_infos],
            )
            for result in response.results
        ]

    async def alter_user_scram_credentials(
        self,
        upsertions: Sequence[tuple[str, int, int, bytes, bytes]],
        deletions: Sequence[tuple[str, int]] = (),
    ) -> dict[str, BrokerError | None]:
        """Upsert (user, mechanism type, iterations, salt, salted password) and delete (user, mechanism type) SCRAM
        credentials; per user None or the error."""
        from samsa.protocol.messages import alter_user_scram_credentials as aus

        request = aus.AlterUserScramCredentialsRequest(
            deletions=[aus.ScramCredentialDeletion(user, mechanism) for user, mechanism in deletions],
            upsertions=[aus.ScramCredentialUpsertion(*upsertion) for upsertion in upsertions],
        )
        response = await self.send(request, api_key=aus.AlterUserScramCredentialsRequest.API_KEY)
        return {r.user: _error_or_none(r.error_code, r.error_message) for r in response.results}

    async def alter_configs(
        self,
        configs: Mapping[str, Mapping[str, str]],
        *,
        resource_type: int = TOPIC_RESOURCE,
        validate_only: bool = False,
    ) -> dict[str, BrokerError | None]:
        """AlterConfigs, the older request: each resource's dynamic configs become exactly ``configs[name]`` (keys
        left out go back to their defaults); per resource None or the error."""
        from samsa.protocol.messages import alter_configs as ac

        request = ac.AlterConfigsRequest(
            resources=[
                ac.AlterConfigsResource(
                    resource_type=resource_type,
                    resource_name=name,
                    configs=[ac.AlterableConfig(name=k, value=v) for k, v in values.items()],
                )
                for name, values in configs.items()
            ],
            validate_only=validate_only,
        )
        response = await self.send(request, api_key=ac.AlterConfigsRequest.API_KEY)
        return {r.resource_name: _error_or_none(r.error_code, r.error_message) for r in response.responses}

    async def supports(self, api_key: int) -> bool:
        """Whether a broker (any one) serves ``api_key`` in a version this client speaks."""
        connection = await self._any_connection()
        try:
            connection.pick_version(api_key)
        except KafkaError:
            return False
        return True

    async def describe_log_dirs(
        self, topics: Mapping[str, Sequence[int]] | None = None, *, node_ids: Sequence[int] | None = None
    ) -> dict[int, list[LogDir]]:
        """The log directories of each broker (all, or ``node_ids``), with the partitions of ``topics``."""
        from samsa.protocol.messages import describe_log_dirs as dld

        if node_ids is None:
            node_ids = sorted((await self.metadata([])).brokers)
        request = dld.DescribeLogDirsRequest(
            topics=None
            if topics is None
            else [dld.DescribableLogDirTopic(topic=t, partitions=list(ps)) for t, ps in topics.items()]
        )
        responses = await asyncio.gather(
            *(self.send(request, api_key=dld.DescribeLogDirsRequest.API_KEY, node_id=n) for n in node_ids)
        )
        result: dict[int, list[LogDir]] = {}
        for node_id, response in zip(node_ids, responses, strict=True):
            if response.error_code:
                raise BrokerError.from_code(response.error_code, f"DescribeLogDirs on broker {node_id}")
            result[node_id] = [
                LogDir(
                    path=r.log_dir,
                    error_code=r.error_code,
                    partitions={
                        TopicPartition(t.name, p.partition_index): LogDirPartition(
                            p.partition_size, p.offset_lag, p.is_future_key
                        )
                        for t in r.topics
                        for p in t.partitions
                    },
                    total_bytes=r.total_bytes,
                    usable_bytes=r.usable_bytes,
                )
                for r in response.results
            ]
        return result

    async def delete_records(
        self, offsets: Mapping[TopicPartition, int], *, timeout_ms: int = 30000
    ) -> dict[TopicPartition, int]:
        """Advance each partition's log start offset to ``offsets[tp]`` (-1: the high watermark).

        Returns the new low watermarks; raises BrokerError for the first partition that failed.
        """
        from samsa.protocol.messages import delete_records as dr

        async def call(node_id: int, tps: list[TopicPartition]) -> dict[TopicPartition, Any]:
            by_topic: dict[str, list[dr.DeleteRecordsPartition]] = defaultdict(list)
            for tp in tps:
                by_topic[tp.topic].append(
                    dr.DeleteRecordsPartition(partition_index=tp.partition, offset=offsets[tp])
                )
            request = dr.DeleteRecordsRequest(
                topics=[dr.DeleteRecordsTopic(name=t, partitions=ps) for t, ps in by_topic.items()],
                timeout_ms=timeout_ms,
            )
            response = await self.send(request, api_key=dr.DeleteRecordsRequest.API_KEY, node_id=node_id)
            return {
                TopicPartition(t.name, p.partition_index): (p.error_code, p.low_watermark)
                for t in response.topics
                for p in t.partitions
            }

        return _values_or_raise(await self._per_leader(list(offsets), call), "DeleteRecords")

    async def elect_leaders(
        self, election_type: int, partitions: Sequence[TopicPartition] | None, *, timeout_ms: int = 30000
    ) -> dict[TopicPartition, int]:
        """ElectLeaders on the controller (``election_type`` 0 preferred, 1 unclean; ``partitions`` None: all).

        Returns each partition's error code (0: elected); with None, partitions that needed no election are left
        out.
        """
        from samsa.protocol.messages import elect_leaders as el

        by_topic: dict[str, list[int]] = defaultdict(list)
        for tp in partitions or ():
            by_topic[tp.topic].append(tp.partition)
        request = el.ElectLeadersRequest(
            election_type=election_type,
            topic_partitions=None
            if partitions is None
            else [el.TopicPartitions(topic=t, partitions=ps) for t, ps in by_topic.items()],
            timeout_ms=timeout_ms,
        )
        answer: dict[TopicPartition, int] = {}
        for attempt in range(2):  # once more to a fresh controller on NOT_CONTROLLER
            response = await self.send(
                request,
                api_key=el.ElectLeadersRequest.API_KEY,
                node_id=await self._controller(),
                timeout_ms=timeout_ms + self.request_timeout_ms,
            )
            if response.error_code:
                raise BrokerError.from_code(response.error_code, "ElectLeaders")
            answer = {
                TopicPartition(r.topic, p.partition_id): p.error_code
                for r in response.replica_election_results
                for p in r.partition_result
            }
            if attempt or ErrorCode.NOT_CONTROLLER not in answer.values():
                break
            await self.metadata([])
        return answer

    async def alter_partition_reassignments(
        self, targets: Mapping[TopicPartition, Sequence[int] | None], *, timeout_ms: int = 30000
    ) -> dict[TopicPartition, BrokerError | None]:
        """Move each partition's replicas to ``targets[tp]`` (None: cancel its move); per partition None or the
        error. Raises BrokerError when the controller refuses the whole request."""
        from samsa.protocol.messages import alter_partition_reassignments as apr

        by_topic: dict[str, list[apr.ReassignablePartition]] = defaultdict(list)
        for tp, replicas in targets.items():
            by_topic[tp.topic].append(
                apr.ReassignablePartition(tp.partition, None if replicas is None else list(replicas))
            )
        request = apr.AlterPartitionReassignmentsRequest(
            timeout_ms=timeout_ms,
            topics=[apr.ReassignableTopic(t, ps) for t, ps in by_topic.items()],
        )
        response = await self._controller_request(request, apr.AlterPartitionReassignmentsRequest.API_KEY)
        return {
            TopicPartition(t.name, p.partition_index): _error_or_none(p.error_code, p.error_message)
            for t in response.responses
            for p in t.partitions
        }

    async def list_partition_reassignments(
        self, partitions: Sequence[TopicPartition] | None = None, *, timeout_ms: int = 30000
    ) -> dict[TopicPartition, tuple[list[int], list[int], list[int]]]:
        """The partitions being moved (of ``partitions``, or all): (replicas, adding, removing) each."""
        from samsa.protocol.messages import list_partition_reassignments as lpr

        topics = None
        if partitions is not None:
            grouped: dict[str, list[int]] = defaultdict(list)
            for tp in partitions:
                grouped[tp.topic].append(tp.partition)
            topics = [lpr.ListPartitionReassignmentsTopics(t, ps) for t, ps in grouped.items()]
        request = lpr.ListPartitionReassignmentsRequest(timeout_ms=timeout_ms, topics=topics)
        response = await self._controller_request(request, lpr.ListPartitionReassignmentsRequest.API_KEY)
        return {
            TopicPartition(t.name, p.partition_index): (
                list(p.replicas),
                list(p.adding_replicas),
                list(p.removing_replicas),
            )
            for t in response.topics
            for p in t.partitions
        }

    async def _controller_request(self, request: Any, api_key: int) -> Any:
        """A request only the controller serves, whose error is the response's own: once more to a fresh
        controller on NOT_CONTROLLER; BrokerError for any other error."""
        response = await self.send(request, api_key=api_key, node_id=await self._controller())
        if response.error_code == ErrorCode.NOT_CONTROLLER:
            await self.metadata([])
            response = await self.send(request, api_key=api_key, node_id=await self._controller())
        if response.error_code:
            raise BrokerError.from_code(response.error_code, response.error_message)
        return response

    async def _controller_connection(self) -> BrokerConnection:
        return await self.connection(await self._controller())

    async def _admin(self, request: Any, api_key: int) -> Any:
        """Send an admin request to the controller, once more to a fresh controller on NOT_CONTROLLER."""
        response = await self.send(request, api_key=api_key, node_id=await self._controller())
        codes = [getattr(item, "error_code", 0) for item in _first_list(response)]
        if ErrorCode.NOT_CONTROLLER in codes:
            await self.metadata([])
            response = await self.send(request, api_key=api_key, node_id=await self._controller())
        return response


def _first_list(response: Any) -> list[Any]:
    for name in ("topics", "responses", "results"):
        value = getattr(response, name, None)
        if isinstance(value, list):
            return value
    return []


def _error_or_none(error_code: int, message: str | None) -> BrokerError | None:
    return BrokerError.from_code(error_code, message) if error_code else None


@dataclass(frozen=True, slots=True)
class _FetchLimits:
    """How long a Fetch may wait, how much it may return, and what it may read (``fetch``'s arguments)."""

    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    partition_max_bytes: int
    isolation_level: int


def _fetch_request(partitions: list[tuple[TopicPartition, int]], limits: _FetchLimits) -> Any:
    """A sessionless FetchRequest from a consumer for ``partitions`` (each with its fetch offset)."""
    from samsa.protocol.messages import fetch as fe

    by_topic: dict[str, list[fe.FetchPartition]] = defaultdict(list)
    for tp, offset in partitions:
        by_topic[tp.topic].append(
            fe.FetchPartition(
                partition=tp.partition,
                current_leader_epoch=-1,
                fetch_offset=offset,
                last_fetched_epoch=-1,
                log_start_offset=-1,
                partition_max_bytes=limits.partition_max_bytes,
            )
        )
    return fe.FetchRequest(
        replica_id=-1,
        max_wait_ms=limits.max_wait_ms,
        min_bytes=limits.min_bytes,
        max_bytes=limits.max_bytes,
        isolation_level=limits.isolation_level,
        session_id=0,
        session_epoch=-1,
        topics=[fe.FetchTopic(topic=t, partitions=ps) for t, ps in by_topic.items()],
        rack_id="",
    )


def _fetched(p: Any) -> FetchedPartition:
    """One partition of a Fetch response (``fetch.PartitionData``), its records copied out of the response."""
    return FetchedPartition(
        error_code=p.error_code,
        high_watermark=p.high_watermark,
        last_stable_offset=p.last_stable_offset,
        log_start_offset=p.log_start_offset,
        records=bytes(p.records) if p.records is not None else b"",
        aborted_transactions=tuple((a.producer_id, a.first_offset) for a in (p.aborted_transactions or ())),
    )


def _empty_fetch(error_code: int) -> FetchedPartition:
    return FetchedPartition(error_code, -1, -1, -1, b"")


def _values_or_raise(results: dict[TopicPartition, Any], api: str) -> dict[TopicPartition, Any]:
    """Each partition's value from ``results`` (partition -> (error code, value)), or the first error raised as
    a BrokerError naming ``api`` and the partition."""
    answer = {}
    for tp, (error_code, value) in results.items():
        if error_code:
            raise BrokerError.from_code(error_code, f"{api} for {tp.topic}-{tp.partition}")
        answer[tp] = value
    return answer
