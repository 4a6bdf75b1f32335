"""``samsa console-consumer``: print records of a topic, like Kafka's ``kafka-console-consumer.sh``.

Without a group it assigns itself every partition of the topic (or ``--partition``) and starts at the latest
offset, the earliest with ``--from-beginning``, or ``--offset``. Each record is printed as Kafka's
DefaultMessageFormatter prints it, with the ``--property`` settings ``print.timestamp``, ``print.partition``,
``print.offset``, ``print.headers``, ``print.key``, ``print.value``, ``key.separator``, ``line.separator``,
``headers.separator`` and ``null.literal``; for example with timestamps and keys::

    CreateTime:1700000000000<TAB>key<TAB>value

On exit it prints ``Processed a total of <n> messages`` on stderr; ``--timeout-ms`` without a record ends it
with an error line first (exit 0, as Kafka's tool). A topic that does not exist is created by a broker with
``auto.create.topics.enable`` (unless ``--consumer-property allow.auto.create.topics=false``); otherwise a WARN line
names it and the tool waits for it (until ``--timeout-ms``).
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import BinaryIO, NoReturn

import click

from samsa.client import (
    BrokerError,
    ClientSecurity,
    KafkaClient,
    KafkaError,
    SecurityConfigError,
    TopicPartition,
)
from samsa.client.records import ConsumerRecord, iter_consumer_records, next_fetch_offset
from samsa.protocol import ErrorCode

from .command_config import CommandConfigError, read_command_config
from .console_producer import parse_properties
from .topics import log_line

TIMESTAMP_NAMES = {0: "CreateTime", 1: "LogAppendTime"}
CLIENT_ID = "console-consumer"


@dataclass(frozen=True)
class MessageFormatter:
    """Kafka's DefaultMessageFormatter: the fields asked for, joined by ``key_separator``."""

    print_timestamp: bool = False
    print_partition: bool = False
    print_offset: bool = False
    print_headers: bool = False
    print_key: bool = False
    print_value: bool = True
    key_separator: bytes = b"\t"
    line_separator: bytes = b"\n"
    headers_separator: bytes = b","
    null_literal: bytes = b"null"

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> MessageFormatter:
        def flag(name: str, default: bool) -> bool:
            return props[name].strip().lower() == "true" if name in props else default

        def text(name: str, default: bytes) -> bytes:
            return props[name].encode() if name in props else default

        return cls(
            print_timestamp=flag("print.timestamp", False),
            print_partition=flag("print.partition", False),
            print_offset=flag("print.offset", False),
            print_headers=flag("print.headers", False),
            print_key=flag("print.key", False),
            print_value=flag("print.value", True),
            key_separator=text("key.separator", b"\t"),
            line_separator=text("line.separator", b"\n"),
            headers_separator=text("headers.separator", b","),
            null_literal=text("null.literal", b"null"),
        )

    def format(self, record: ConsumerRecord) -> bytes:
        fields: list[bytes] = []
        if self.print_timestamp:
            name = TIMESTAMP_NAMES.get(record.timestamp_type)
            fields.append(f"{name}:{record.timestamp}".encode() if name else b"NO_TIMESTAMP")
        if self.print_partition:
            fields.append(b"Partition:%d" % record.partition)
        if self.print_offset:
            fields.append(b"Offset:%d" % record.offset)
        if self.print_headers:
            if record.headers:
                fields.append(
                    self.headers_separator.join(
                        name.encode() + b":" + self._bytes(value) for name, value in record.headers
                    )
                )
            else:
                fields.append(b"NO_HEADERS")
        if self.print_key:
            fields.append(self._bytes(record.key))
        if self.print_value:
            fields.append(self._bytes(record.value))
        if not fields:
            return b""
        line = self.key_separator.join(fields)
        return line + self.line_separator

    def _bytes(self, value: bytes | None) -> bytes:
        return self.null_literal if value is None else value


@dataclass
class ConsumeOptions:
    topic: str
    partition: int | None
    offset: str
    max_messages: int | None
    timeout_ms: int | None
    isolation_level: int
    auto_create: bool = True


class ConsoleConsumer:
    """Assigns the partitions, fetches in a loop and prints; counts what it printed."""

    def __init__(
        self, client: KafkaClient, options: ConsumeOptions, formatter: MessageFormatter, out: BinaryIO
    ):
        self.client = client
        self.options = options
        self.formatter = formatter
        self.out = out
        self.count = 0

    async def assign(self, deadline: float | None) -> list[TopicPartition]:
        """The partitions to read, once the topic exists: a broker with auto-creation on creates it (as for
        Kafka's consumer, ``allow.auto.create.topics``); a missing topic is reported once, then waited for."""
        topic = self.options.topic
        reported = False
        while True:
            cluster = await self.client.metadata([topic], allow_auto_topic_creation=self.options.auto_create)
            meta = cluster.topics.get(topic)
            if meta is not None and meta.error_code == 0 and meta.partitions:
                if self.options.partition is not None:
                    return [TopicPartition(topic, self.options.partition)]
                return [TopicPartition(topic, p) for p in sorted(meta.partitions)]
            if meta is not None and meta.error_code and not reported:
                reported = True
                log_line(
                    f"[Consumer clientId={CLIENT_ID}] Error while fetching metadata : "
                    f"{{{topic}={BrokerError.from_code(meta.error_code).name}}}",
                    level="WARN",
                )
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError
            await asyncio.sleep(0.2)

    async def reset(self, tps: Sequence[TopicPartition], spec: str) -> dict[TopicPartition, int]:
        if spec not in ("earliest", "latest"):
            return dict.fromkeys(tps, int(spec))
        timestamp = -2 if spec == "earliest" else -1
        answers = await self.client.list_offsets(
            dict.fromkeys(tps, timestamp), isolation_level=self.options.isolation_level
        )
        return {tp: offset for tp, (offset, _) in answers.items()}

    async def run(self) -> None:
        timeout = self.options.timeout_ms
        deadline = None if timeout is None else time.monotonic() + timeout / 1000
        tps = await self.assign(deadline)
        positions = await self.reset(tps, self.options.offset)
        reset_spec = "earliest" if self.options.offset == "earliest" else "latest"
        while not self.done():
            wait = 500 if deadline is None else max(0, min(500, int((deadline - time.monotonic()) * 1000)))
            fetched = await self.client.fetch(
                positions, max_wait_ms=wait, isolation_level=self.options.isolation_level
            )
            printed = False
            for tp, data in fetched.items():
                if data.error_code == ErrorCode.OFFSET_OUT_OF_RANGE:
                    positions.update(await self.reset([tp], reset_spec))
                    continue
                if data.error_code:
                    continue
                position = positions[tp]
                aborted = data.aborted_transactions if self.options.isolation_level else None
                records = iter_consumer_records(
                    data.records, tp.topic, tp.partition, start_offset=position, aborted_transactions=aborted
                )
                for record in records:
                    if self.done():
                        break
                    self.out.write(self.formatter.format(record))
                    self.count += 1
                    printed = True
                    positions[tp] = record.offset + 1
                else:
                    positions[tp] = next_fetch_offset(data.records, position)
            self.out.flush()
            if printed and timeout is not None:
                deadline = time.monotonic() + timeout / 1000
            if deadline is not None and time.monotonic() >= deadline and not self.done():
                raise TimeoutError

    def done(self) -> bool:
        return self.options.max_messages is not None and self.count >= self.options.max_messages


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--bootstrap-server", required=True, help="The server(s) to connect to: HOST1:PORT1,HOST2:PORT2."
)
@click.option("--topic", required=True, help="The topic to consume.")
@click.option("--partition", type=int, help="Consume only this partition.")
@click.option("--offset", help="With --partition: a non-negative offset, 'earliest' or 'latest' (default).")
@click.option("--from-beginning", is_flag=True, help="Start at the earliest offset instead of the latest.")
@click.option("--max-messages", type=int, help="Exit after this many records (a negative number: no limit).")
@click.option("--timeout-ms", type=int, help="Exit if no record arrives for this many ms (0 or more).")
@click.option("--property", "properties", multiple=True, help="A formatter property key=value (repeatable).")
@click.option(
    "--consumer-property", "consumer_properties", multiple=True, help="A consumer property key=value."
)
@click.option(
    "--consumer.config",
    "consumer_config",
    type=click.Path(exists=True, dir_okay=False),
    help="A consumer properties file (security.protocol, sasl.*, ssl.*, isolation.level); "
    "--consumer-property wins over it.",
)
@click.option(
    "--isolation-level",
    type=click.Choice(["read_uncommitted", "read_committed"]),
    default="read_uncommitted",
    show_default=True,
)
def console_consumer(
    bootstrap_server: str,
    topic: str,
    partition: int | None,
    offset: str | None,
    from_beginning: bool,
    max_messages: int | None,
    timeout_ms: int | None,
    properties: tuple[str, ...],
    consumer_properties: tuple[str, ...],
    consumer_config: str | None,
    isolation_level: str,
) -> None:
    """Print the records of a topic to stdout (like kafka-console-consumer.sh)."""
    if timeout_ms is not None and timeout_ms < 0:
        usage_error(
            f"The timeout must be 0 or more ms (leave --timeout-ms out to wait forever), not {timeout_ms}"
        )
    try:
        consumer_props = read_command_config(consumer_config) if consumer_config is not None else {}
        consumer_props.update(parse_properties(consumer_properties, "--consumer-property"))
        security = ClientSecurity.from_properties(consumer_props)
        security.ssl_context()
    except (CommandConfigError, SecurityConfigError) as exc:
        usage_error(str(exc))
    isolation = consumer_props.get("isolation.level", isolation_level)
    options = ConsumeOptions(
        topic,
        partition,
        _start(partition, offset, from_beginning),
        max_messages if max_messages is not None and max_messages >= 0 else None,  # Kafka's -1: no limit
        timeout_ms,
        1 if isolation == "read_committed" else 0,
        consumer_props.get("allow.auto.create.topics", "true").strip().lower() == "true",
    )
    formatter = MessageFormatter.from_properties(parse_properties(properties))
    try:
        asyncio.run(_consume(bootstrap_server, options, formatter, sys.stdout.buffer, security))
    except KeyboardInterrupt:
        pass
    except KafkaError as exc:
        log_line(str(exc))
        sys.exit(1)


def _start(partition: int | None, offset: str | None, from_beginning: bool) -> str:
    """Where to start: "earliest", "latest" or an offset; the tool's usage errors for the ones it refuses."""
    if offset is not None and partition is None:
        usage_error("The partition is required when offset is specified.")
    if offset is not None and from_beginning:
        usage_error("Options from-beginning and offset cannot be specified together.")
    start = "earliest" if from_beginning else (offset or "latest")
    if start not in ("earliest", "latest") and not (start.isdigit()):
        usage_error(
            "The provided offset value is incorrect. Valid values are 'earliest', 'latest', or a non-negative long."
        )
    return start


async def _consume(
    bootstrap_server: str,
    options: ConsumeOptions,
    formatter: MessageFormatter,
    out: BinaryIO,
    security: ClientSecurity | None = None,
) -> int:
    """Consume until done or until ``--timeout-ms`` passes without a record (a normal end, as in Kafka's tool:
    only the count is printed); the records printed."""
    async with KafkaClient(bootstrap_server, client_id=CLIENT_ID, security=security) as client:
        consumer = ConsoleConsumer(client, options, formatter, out)
        try:
            await consumer.run()
        except TimeoutError:
            pass
        finally:
            out.flush()
            click.echo(f"Processed a total of {consumer.count} messages", err=True)
        return consumer.count


def usage_error(message: str) -> NoReturn:
    click.echo(message, err=True)
    sys.exit(1)
