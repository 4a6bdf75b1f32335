"""``samsa console-producer``: send stdin lines as records, like Kafka's ``kafka-console-producer.sh``.

Each line is one record (``\\n`` or ``\\r\\n`` stripped). Reader properties (``--property``) as Kafka's line
reader: ``parse.key`` with ``key.separator`` (default tab), ``parse.headers`` with ``headers.delimiter`` (tab),
``headers.separator`` (``,``) and ``headers.key.separator`` (``:``), ``null.marker`` and ``ignore.error``.
Keyed records go to the partition Kafka's default partitioner picks (murmur2), unkeyed ones stick to one random
partition per request. Producer properties: ``acks``, ``compression.type``, ``max.block.ms``,
``request.timeout.ms``, ``batch.size`` and ``max.request.size``, in Kafka's units: a batch holds records up to
``batch.size`` bytes (``--batch-size``, 16384), a record alone in its batch may reach ``max.request.size``
(1048576, under the broker's default ``message.max.bytes``) and a larger one fails as Kafka's
RecordTooLargeException.

The topic's metadata is awaited at most ``max.block.ms`` (``--max-block-ms``, 60000) or ``request.timeout.ms``,
whichever is shorter; an illegal topic name fails at once. A failed send is logged on stderr per record, as Kafka's
producer logs it, and, unlike Kafka's tool, makes the exit code 1 once stdin is read (a topic that never appears
ends the tool at once). A line the reader cannot parse stops the tool with exit 1 after the earlier lines were sent.
"""

from __future__ import annotations

import asyncio
import random
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import BinaryIO

import click

from samsa.client import (
    BrokerError,
    ClientSecurity,
    KafkaClient,
    KafkaError,
    SecurityConfigError,
    TopicPartition,
)
from samsa.client.partitioner import partition_for_key
from samsa.client.records import ProducerRecord, build_batch, compression_type
from samsa.records import RECORD_BATCH_OVERHEAD
from samsa.storage.topic import InvalidTopicError, validate_topic

from .topics import error_text, log_line

ACKS = {"all": -1, "-1": -1, "0": 0, "1": 1}
BATCH_SIZE = 16384
MAX_REQUEST_SIZE = 1048576
BATCH_OVERHEAD = RECORD_BATCH_OVERHEAD  # a v2 batch's header
RECORD_OVERHEAD = 21  # the most a v2 record's length, attributes, deltas and counts take


class LineError(Exception):
    """A line the reader cannot parse (Kafka's KafkaException from its line reader)."""


def parse_properties(items: Sequence[str], option: str = "--property") -> dict[str, str]:
    """``k=v`` items as a dict (split at the first ``=``); an item without ``=`` is a click error naming
    ``option``."""
    result: dict[str, str] = {}
    for item in items:
        key, found, value = item.partition("=")
        if not found or not key.strip():
            raise click.ClickException(f"Invalid {option} '{item}': expected key=value")
        result[key.strip()] = value
    return result


def record_size(record: ProducerRecord) -> int:
    """An upper bound of the record's size in an uncompressed v2 batch (Kafka's estimate, in bytes)."""
    headers = sum(len(name.encode()) + len(value or b"") + 10 for name, value in record.headers)
    return RECORD_OVERHEAD + len(record.key or b"") + len(record.value or b"") + headers


def split_batches(records: Sequence[ProducerRecord], batch_size: int) -> list[list[ProducerRecord]]:
    """``records`` in order, in batches of at most ``batch_size`` bytes (a larger record alone in its own)."""
    batches: list[list[ProducerRecord]] = []
    current: list[ProducerRecord] = []
    size = BATCH_OVERHEAD
    for record in records:
        grown = size + record_size(record)
        if current and grown > batch_size:
            batches.append(current)
            current, grown = [], BATCH_OVERHEAD + record_size(record)
        current.append(record)
        size = grown
    if current:
        batches.append(current)
    return batches


def check_topic_name(topic: str) -> None:
    """Kafka's rules for a topic name (``validate_topic``); MetadataError as Kafka's tool says it if it breaks one."""
    try:
        validate_topic(topic)
    except InvalidTopicError as exc:
        raise MetadataError(f"{exc} (INVALID_TOPIC_EXCEPTION)") from None


class MetadataError(Exception):
    """The topic's partitions could not be found: the tool stops (Kafka's TimeoutException or the broker's error)."""


@dataclass(frozen=True)
class LineReader:
    """Kafka's line reader settings; ``read`` turns one line into a record."""

    parse_key: bool = False
    key_separator: bytes = b"\t"
    parse_headers: bool = False
    headers_delimiter: bytes = b"\t"
    headers_separator: bytes = b","
    headers_key_separator: bytes = b":"
    null_marker: bytes | None = None
    ignore_error: bool = False

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> LineReader:
        def flag(name: str) -> bool:
            return props.get(name, "false").strip().lower() == "true"

        def sep(name: str, default: bytes) -> bytes:
            return props[name].encode() if name in props else default

        return cls(
            parse_key=flag("parse.key"),
            key_separator=sep("key.separator", b"\t"),
            parse_headers=flag("parse.headers"),
            headers_delimiter=sep("headers.delimiter", b"\t"),
            headers_separator=sep("headers.separator", b","),
            headers_key_separator=sep("headers.key.separator", b":"),
            null_marker=props["null.marker"].encode() if props.get("null.marker") else None,
            ignore_error=flag("ignore.error"),
        )

    def _nullable(self, value: bytes) -> bytes | None:
        return None if self.null_marker is not None and value == self.null_marker else value

    def read(self, line: bytes, number: int) -> ProducerRecord:
        headers: tuple[tuple[str, bytes | None], ...] = ()
        rest = line
        if self.parse_headers:
            head, found, after = rest.partition(self.headers_delimiter)
            if not found:
                if not self.ignore_error:
                    raise LineError(f"No headers delimiter found on line number {number}: '{line.decode()}'")
                return ProducerRecord(None, line, (), int(time.time() * 1000))
            headers = self._headers(head, number)
            rest = after
        key: bytes | None = None
        if self.parse_key:
            k, found, value = rest.partition(self.key_separator)
            if not found:
                if not self.ignore_error:
                    raise LineError(f"No key separator found on line number {number}: '{line.decode()}'")
                return ProducerRecord(None, line, headers, int(time.time() * 1000))
            key, rest = self._nullable(k), value
        return ProducerRecord(key, self._nullable(rest), headers, int(time.time() * 1000))

    def _headers(self, text: bytes, number: int) -> tuple[tuple[str, bytes | None], ...]:
        if self.null_marker is not None and text == self.null_marker:
            return ()
        result = []
        for pair in text.split(self.headers_separator):
            name, found, value = pair.partition(self.headers_key_separator)
            if not found:
                raise LineError(
                    f"No header key separator found in pair '{pair.decode()}' on line number {number}"
                )
            result.append((name.decode(), self._nullable(value)))
        return tuple(result)


@dataclass
class Sender:
    """Sends records to their partitions in batches bounded in bytes; logs failures per record as Kafka's
    producer does and counts them in ``failed``. Event-loop thread only."""

    client: KafkaClient
    topic: str
    acks: int
    compression: str
    max_block_ms: int
    timeout_ms: int
    batch_size: int = BATCH_SIZE
    max_request_size: int = MAX_REQUEST_SIZE
    failed: int = 0
    partitions: int | None = None

    async def partition_count(self) -> int:
        """The topic's partition count, awaited (once) at most ``max_block_ms``; MetadataError if it never
        appears or the broker refuses the topic (an invalid name) for good."""
        if self.partitions is not None:
            return self.partitions
        deadline = time.monotonic() + self.max_block_ms / 1000
        while True:
            cluster = await self.client.metadata([self.topic], allow_auto_topic_creation=True)
            meta = cluster.topics.get(self.topic)
            if meta is not None and meta.error_code == 0 and meta.partitions:
                self.partitions = len(meta.partitions)
                return self.partitions
            if meta is not None and meta.error_code:
                error = BrokerError.from_code(meta.error_code, f"Topic {self.topic}")
                if not error.retriable:
                    raise MetadataError(error_text(error))
            if time.monotonic() >= deadline:
                raise MetadataError(
                    f"Topic {self.topic} not present in metadata after {self.max_block_ms} ms."
                )
            await asyncio.sleep(min(0.1, max(0.0, deadline - time.monotonic())))

    async def send(self, records: list[ProducerRecord]) -> None:
        count = await self.partition_count()
        sticky = random.randrange(count)
        by_partition: dict[int, list[ProducerRecord]] = defaultdict(list)
        for record in records:
            size = BATCH_OVERHEAD + record_size(record)
            if size > self.max_request_size:
                self.log_failure(
                    record,
                    "MESSAGE_TOO_LARGE",
                    f"The message is {size} bytes when serialized which is larger than {self.max_request_size}, "
                    "which is the value of the max.request.size configuration.",
                )
                continue
            p = sticky if record.key is None else partition_for_key(record.key, count)
            by_partition[p].append(record)
        await asyncio.gather(*(self.send_partition(p, rs) for p, rs in by_partition.items()))

    async def send_partition(self, partition: int, records: list[ProducerRecord]) -> None:
        for batch in split_batches(records, self.batch_size):
            await self.send_batch(partition, batch)

    async def send_batch(self, partition: int, records: list[ProducerRecord]) -> None:
        try:
            await self.client.produce(
                TopicPartition(self.topic, partition),
                build_batch(records, self.compression),
                acks=self.acks,
                timeout_ms=self.timeout_ms,
            )
        except BrokerError as exc:
            for record in records:
                self.log_failure(record, exc.name, exc.message or exc.name)
        except KafkaError as exc:
            for record in records:
                self.log_failure(record, None, str(exc))

    def log_failure(self, record: ProducerRecord, error_name: str | None, message: str) -> None:
        self.failed += 1
        key = "null" if record.key is None else f"{len(record.key)} bytes"
        value = "null" if record.value is None else f"{len(record.value)} bytes"
        log_line(
            f"Error when sending message to topic {self.topic} with key: {key}, value: {value} with error: "
            + (f"{message} ({error_name})" if error_name else message)
        )


def start_reader(
    stream: BinaryIO, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[bytes | None]
) -> None:
    def pump() -> None:
        try:
            for line in stream:
                loop.call_soon_threadsafe(queue.put_nowait, line)
        finally:
            loop.call_soon_threadsafe(queue.put_nowait, None)

    threading.Thread(target=pump, name="console-producer-stdin", daemon=True).start()


def positive(props: Mapping[str, str], name: str, default: int, least: int = 1) -> int:
    """The integer property ``name`` (``default`` when unset); a click error below ``least`` or not a number."""
    text = props.get(name, str(default)).strip()
    try:
        value = int(text)
    except ValueError:
        raise click.ClickException(f"Invalid value {text} for configuration {name}: not a number") from None
    if value < least:
        raise click.ClickException(
            f"Invalid value {value} for configuration {name}: must be at least {least}"
        )
    return value


def make_sender(client: KafkaClient, topic: str, props: Mapping[str, str]) -> Sender:
    """A Sender set up from Kafka's producer properties; a click error for a bad value."""
    acks_text = props.get("acks", "-1").strip().lower()
    if acks_text not in ACKS:
        raise click.ClickException(f"Invalid value {acks_text} for configuration acks")
    compression = props.get("compression.type", "none")
    compression_type(compression)  # fail early on a bad name
    timeout_ms = positive(props, "request.timeout.ms", 30000, least=0)
    return Sender(
        client,
        topic,
        ACKS[acks_text],
        compression,
        min(positive(props, "max.block.ms", 60000, least=0), timeout_ms),
        timeout_ms,
        positive(props, "batch.size", BATCH_SIZE),
        positive(props, "max.request.size", MAX_REQUEST_SIZE),
    )


async def produce_lines(
    bootstrap: str, topic: str, reader: LineReader, props: Mapping[str, str], stream: BinaryIO, sync: bool
) -> int:
    """Send the lines of ``stream`` until its end; the number of records that failed."""
    timeout_ms = positive(props, "request.timeout.ms", 30000, least=0)
    check_topic_name(topic)
    security = ClientSecurity.from_properties(props)  # checked by the command before
    async with KafkaClient(
        bootstrap, client_id="console-producer", request_timeout_ms=timeout_ms, security=security
    ) as client:
        sender = make_sender(client, topic, props)
        queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        start_reader(stream, asyncio.get_running_loop(), queue)
        number = 0
        done = False
        while not done:
            lines = await next_lines(queue, 1 if sync else sender.max_request_size)
            records: list[ProducerRecord] = []
            failure: LineError | None = None
            for line in lines:
                if line is None:
                    done = True
                    break
                number += 1
                try:
                    records.append(reader.read(line.rstrip(b"\n").removesuffix(b"\r"), number))
                except LineError as exc:
                    failure = exc
                    break
            if records:
                await sender.send(records)
            if failure is not None:
                raise failure
        return sender.failed


async def next_lines(queue: asyncio.Queue[bytes | None], most_bytes: int) -> list[bytes | None]:
    """The next line, then those already read while they add up to at most ``most_bytes`` (one request)."""
    first = await queue.get()
    lines = [first]
    size = len(first or b"")
    while first is not None and not queue.empty() and size < most_bytes:
        line = queue.get_nowait()
        lines.append(line)
        if line is None:
            break
        size += len(line)
    return lines


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--bootstrap-server", required=True, help="The server(s) to connect to: HOST1:PORT1,HOST2:PORT2."
)
@click.option("--topic", required=True, help="The topic to produce to.")
@click.option(
    "--property", "properties", multiple=True, help="A line reader property key=value (repeatable)."
)
@click.option(
    "--producer-property", "producer_properties", multiple=True, help="A producer property key=value."
)
@click.option(
    "--producer.config", "producer_config", type=click.Path(exists=True, dir_okay=False), help="A file."
)
@click.option(
    "--compression-codec",
    is_flag=False,
    flag_value="gzip",
    default=None,
    help="none, gzip, snappy, lz4 or zstd; gzip if given without a value.",
)
@click.option("--request-required-acks", help="The acks of each request: all, -1, 0 or 1 (default all).")
@click.option("--request-timeout-ms", type=int, help="How long the broker may take to acknowledge.")
@click.option("--max-block-ms", type=int, help="How long to wait for the topic's metadata (default 60000).")
@click.option("--batch-size", type=int, help=f"Most bytes of records in a batch (default {BATCH_SIZE}).")
@click.option("--sync", is_flag=True, help="Send each line on its own and wait for it.")
def console_producer(
    bootstrap_server: str,
    topic: str,
    properties: tuple[str, ...],
    producer_properties: tuple[str, ...],
    producer_config: str | None,
    compression_codec: str | None,
    request_required_acks: str | None,
    request_timeout_ms: int | None,
    max_block_ms: int | None,
    batch_size: int | None,
    sync: bool,
) -> None:
    """Read records from stdin, one per line, and send them to a topic (like kafka-console-producer.sh)."""
    props: dict[str, str] = {}
    if producer_config is not None:
        with open(producer_config, encoding="utf-8") as handle:
            lines = [ln.strip() for ln in handle if ln.strip() and not ln.lstrip().startswith(("#", "!"))]
        props.update(parse_properties(lines, f"line in {producer_config}"))
    props.update(parse_properties(producer_properties, "--producer-property"))
    if request_required_acks is not None:
        props["acks"] = request_required_acks
    if compression_codec is not None:
        props["compression.type"] = compression_codec
    if request_timeout_ms is not None:
        props["request.timeout.ms"] = str(request_timeout_ms)
    if max_block_ms is not None:
        props["max.block.ms"] = str(max_block_ms)
    if batch_size is not None:
        props["batch.size"] = str(batch_size)
    try:
        ClientSecurity.from_properties(props).ssl_context()
    except SecurityConfigError as exc:
        raise click.UsageError(str(exc)) from None
    reader = LineReader.from_properties(parse_properties(properties))
    stream: BinaryIO = sys.stdin.buffer
    if stream.isatty():
        click.echo(">", nl=False)
    try:
        failed = asyncio.run(produce_lines(bootstrap_server, topic, reader, props, stream, sync))
    except LineError as exc:
        click.echo(str(exc), err=True)
        sys.exit(1)
    except MetadataError as exc:
        log_line(f"Error when sending messages to topic {topic}: {exc}")
        sys.exit(1)
    except (KafkaError, ValueError) as exc:
        log_line(str(exc))
        sys.exit(1)
    if failed:
        log_line(f"{failed} record(s) could not be sent to topic {topic}")
        sys.exit(1)
