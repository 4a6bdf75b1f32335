"""``samsa console-producer``: send stdin lines as records, like Kafka's ``kafka-console-producer.sh``.

Each line is one record (``\\n`` or ``\\r\\n`` stripped). Reader properties (``--property``) as Kafka's line
reader: ``parse.key`` with ``key.separator`` (default tab), ``parse.headers`` with ``headers.delimiter`` (tab),
``headers.separator`` (``,``) and ``headers.key.separator`` (``:``), ``null.marker`` and ``ignore.error``.
Keyed records go to the partition Kafka's default partitioner picks (murmur2), unkeyed ones stick to one random
partition per batch. Producer properties: ``acks``, ``compression.type``, ``max.block.ms``,
``request.timeout.ms``, ``batch.size`` (records per request here).

A failed send is logged on stderr per record, as Kafka's producer logs it, and does not change the exit code; a
line the reader cannot parse stops the tool with exit 1 after the earlier lines were sent.
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

from samsa.client import BrokerError, KafkaClient, KafkaError, TopicPartition
from samsa.client.partitioner import partition_for_key
from samsa.client.records import ProducerRecord, build_batch, compression_type

from .topics import log_line

CALLBACK_CLASS = "org.apache.kafka.clients.producer.internals.ErrorLoggingCallback"
ACKS = {"all": -1, "-1": -1, "0": 0, "1": 1}
MAX_CHUNK = 10000


class LineError(Exception):
    """A line the reader cannot parse (Kafka's KafkaException from its line reader)."""


def parse_properties(items: Sequence[str]) -> dict[str, str]:
    """``k=v`` items as a dict (split at the first ``=``)."""
    result: dict[str, str] = {}
    for item in items:
        key, _, value = item.partition("=")
        result[key.strip()] = value
    return result


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
    """Sends chunks of records to their partitions; logs failures per record as Kafka's producer does."""

    client: KafkaClient
    topic: str
    acks: int
    compression: str
    max_block_ms: int
    timeout_ms: int

    async def partition_count(self) -> int | None:
        deadline = time.monotonic() + self.max_block_ms / 1000
        while True:
            cluster = await self.client.metadata([self.topic], allow_auto_topic_creation=True)
            meta = cluster.topics.get(self.topic)
            if meta is not None and meta.error_code == 0 and meta.partitions:
                return len(meta.partitions)
            if time.monotonic() >= deadline:
                return None
            await asyncio.sleep(0.1)

    async def send(self, records: list[ProducerRecord]) -> None:
        count = await self.partition_count()
        if count is None:
            message = f"Topic {self.topic} not present in metadata after {self.max_block_ms} ms."
            for record in records:
                self.log_failure(record, "org.apache.kafka.common.errors.TimeoutException", message)
            return
        sticky = random.randrange(count)
        by_partition: dict[int, list[ProducerRecord]] = defaultdict(list)
        for record in records:
            p = sticky if record.key is None else partition_for_key(record.key, count)
            by_partition[p].append(record)
        await asyncio.gather(*(self.send_partition(p, rs) for p, rs in by_partition.items()))

    async def send_partition(self, partition: int, records: list[ProducerRecord]) -> None:
        try:
            await self.client.produce(
                TopicPartition(self.topic, partition),
                build_batch(records, self.compression),
                acks=self.acks,
                timeout_ms=self.timeout_ms,
            )
        except BrokerError as exc:
            for record in records:
                self.log_failure(
                    record, f"org.apache.kafka.common.errors.{exc.exception_name}", exc.message or exc.name
                )
        except KafkaError as exc:
            for record in records:
                self.log_failure(record, "org.apache.kafka.common.KafkaException", str(exc))

    def log_failure(self, record: ProducerRecord, exception: str, message: str) -> None:
        key = "null" if record.key is None else f"{len(record.key)} bytes"
        value = "null" if record.value is None else f"{len(record.value)} bytes"
        log_line(
            f"Error when sending message to topic {self.topic} with key: {key}, value: {value} with error: "
            f"({CALLBACK_CLASS})\n{exception}: {message}"
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


async def produce_lines(
    bootstrap: str, topic: str, reader: LineReader, props: Mapping[str, str], stream: BinaryIO, batch: int
) -> None:
    acks_text = props.get("acks", "-1").strip().lower()
    if acks_text not in ACKS:
        raise click.BadParameter(f"Invalid value {acks_text} for configuration acks", param_hint="acks")
    compression = props.get("compression.type", "none")
    compression_type(compression)  # fail early on a bad name
    timeout_ms = int(props.get("request.timeout.ms", "30000"))
    async with KafkaClient(bootstrap, client_id="console-producer", request_timeout_ms=timeout_ms) as client:
        sender = Sender(
            client, topic, ACKS[acks_text], compression, int(props.get("max.block.ms", "60000")), timeout_ms
        )
        queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        start_reader(stream, asyncio.get_running_loop(), queue)
        number = 0
        done = False
        while not done:
            lines = [await queue.get()]
            while len(lines) < batch and not queue.empty():
                lines.append(queue.get_nowait())
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
@click.option(
    "--batch-size", type=int, default=MAX_CHUNK, show_default=True, help="Most records per request."
)
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
    batch_size: int,
    sync: bool,
) -> None:
    """Read records from stdin, one per line, and send them to a topic (like kafka-console-producer.sh)."""
    props: dict[str, str] = {}
    if producer_config is not None:
        with open(producer_config, encoding="utf-8") as handle:
            lines = [ln.strip() for ln in handle if ln.strip() and not ln.lstrip().startswith(("#", "!"))]
        props.update(parse_properties(lines))
    props.update(parse_properties(producer_properties))
    if request_required_acks is not None:
        props["acks"] = request_required_acks
    if compression_codec is not None:
        props["compression.type"] = compression_codec
    if request_timeout_ms is not None:
        props["request.timeout.ms"] = str(request_timeout_ms)
    reader = LineReader.from_properties(parse_properties(properties))
    stream: BinaryIO = sys.stdin.buffer
    if stream.isatty():
        click.echo(">", nl=False)
    try:
        asyncio.run(produce_lines(bootstrap_server, topic, reader, props, stream, 1 if sync else batch_size))
    except LineError as exc:
        click.echo(f"org.apache.kafka.common.KafkaException: {exc}", err=True)
        sys.exit(1)
    except (KafkaError, ValueError) as exc:
        log_line(str(exc))
        sys.exit(1)
