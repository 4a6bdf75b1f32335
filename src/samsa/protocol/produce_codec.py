"""Hand-written Produce codec for the versions clients send (request v3-v11, response v3-v11): the broker's hot path.

The generated code (``messages/produce.py``) reads a Produce request through about 20 calls per partition (one per
field, array and tagged-field section) and writes the answer through as many after ``fit_to_version`` has walked
it; per request that is about a third of the broker's Python. This module does the same with one function each
way and the same values out: ``decode_produce_request`` returns the generated dataclasses (``ProduceRequest``
with each record set a zero-copy ``memoryview`` of the frame), ``encode_produce_response`` writes the bytes the
generated encoder writes for ``fit_to_version(response, version)``, and ``produce_answer_frame`` writes the whole
frame of the broker's fast path (the usual answer, one partition, as one ``struct`` pack). Tests hold all three to
the generated code (``tests/protocol/test_produce_codec.py``, hypothesis).

Anything off the common shape is left to the generated code, which then decides (and raises its own errors on a
malformed request): a request whose length prefixes run past the frame, a null where Kafka's schema has none, a
string that is not UTF-8 (``decode_produce_request`` returns None); an answer with record errors, a current
leader or node endpoints (``encode_produce_response`` returns False and writes nothing).

Field layout, big-endian (``[]`` an array, ``?`` nullable; flexible versions 9+ write lengths as unsigned varints
of N + 1, 0 for null, and end each struct with a tagged-field section, a varint count):

    request header v1 (v3-8) / v2 (v9+): api_key i16, api_version i16, correlation_id i32, client_id string? (i16
        length, always), v2: tagged fields
    request: transactional_id string?, acks i16, timeout_ms i32,
        [topic: name string, [partition: index i32, records bytes? (i32 length; compact in v9+)]]
    response: [topic: name string, [partition: index i32, error_code i16, base_offset i64, log_append_time_ms i64,
        v5+: log_start_offset i64, v8+: [record_errors] (empty here), error_message string?]], throttle_time_ms i32

Sans-IO and stateless apart from bounded caches of encoded topic names and answer layouts; callable from any
thread.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from .headers import RequestHeader
from .messages.produce import (
    PartitionProduceData,
    PartitionProduceResponse,
    ProduceRequest,
    ProduceResponse,
    TopicProduceData,
)
from .primitives import read_uvarint, skip_tagged_fields, write_uvarint

FAST_REQUEST_VERSIONS = (3, 11)
"""Produce request versions ``decode_produce_request`` reads (0-2 carry legacy message sets; the broker refuses them)."""
FAST_RESPONSE_VERSIONS = (3, 11)
_FLEXIBLE = 9
_LOG_START_OFFSET = 5
_ERROR_MESSAGE = 8
_TAGGED_ANSWER = 10  # current_leader and node_endpoints: tagged fields from v10

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_ACKS_TIMEOUT = struct.Struct(">hi")
_INDEX_SIZE = struct.Struct(">ii")
_ANSWER_V3 = struct.Struct(">ihqq")  # index, error_code, base_offset, log_append_time_ms
_ANSWER_V5 = struct.Struct(">ihqqq")  # ... log_start_offset

_MALFORMED = (IndexError, struct.error, UnicodeDecodeError, ValueError)


class _OffShape(Exception):
    """The frame is not of the shape this module reads; the generated decoder takes it."""


class RawProduce(NamedTuple):
    """A Produce request as read from its frame, before any dataclass is built: the broker's fast path serves
    it as it is (``samsa.broker.handlers.produce.answer_raw``); ``decode_produce_request`` wraps it."""

    client_id: str | None
    transactional_id: str | None
    acks: int
    timeout_ms: int
    topics: list[tuple[str, list[tuple[int, memoryview | None]]]]  # (name, [(index, records)])
    end: int  # where the body ends in the frame


_new_raw: Callable[[tuple[str | None, str | None, int, int, list[Any], int]], RawProduce] = functools.partial(
    tuple.__new__, RawProduce
)
"""A RawProduce from its six fields at once, without a named tuple's Python-level ``__new__`` (a third of the cost
on the request path, which makes one per Produce request)."""

Answer = tuple[int, int, int, int, int, "str | None"]
"""One partition's answer: index, error_code, base_offset, log_append_time_ms, log_start_offset, error_message."""


def read_produce_request(frame: memoryview, start: tuple[int, int, int]) -> RawProduce | None:
    """The fields of a Produce frame (without its size prefix) whose header starts with ``start`` (api key,
    version, correlation id, already unpacked); or None when the generated decoder must read it (module doc).
    Record sets are views of ``frame``."""
    version = start[1]
    if not FAST_REQUEST_VERSIONS[0] <= version <= FAST_REQUEST_VERSIONS[1]:
        return None
    try:
        client_id, pos = _nullable_string(frame, 8)
        if version >= _FLEXIBLE:
            pos = _tags(frame, pos)
            return _flexible_body(frame, pos, client_id)
        return _classic_body(frame, pos, client_id)
    except (_OffShape, *_MALFORMED):
        return None


def decode_produce_request(
    frame: memoryview, start: tuple[int, int, int]
) -> tuple[RequestHeader, ProduceRequest, int] | None:
    """``read_produce_request`` as the generated dataclasses: the header, the request and where the body ends."""
    raw = read_produce_request(frame, start)
    if raw is None:
        return None
    request = ProduceRequest(
        raw.transactional_id,
        raw.acks,
        raw.timeout_ms,
        [
            TopicProduceData(name, [PartitionProduceData(index, records) for index, records in partitions])
            for name, partitions in raw.topics
        ],
    )
    return RequestHeader(start[0], start[1], start[2], raw.client_id), request, raw.end


def _nullable_string(b: memoryview, p: int) -> tuple[str | None, int]:
    size = _I16.unpack_from(b, p)[0]
    p += 2
    if size < 0:
        return None, p
    end = p + size
    if end > len(b):
        raise _OffShape
    return str(b[p:end], "utf-8"), end


def _string(b: memoryview, p: int) -> tuple[str, int]:
    value, p = _nullable_string(b, p)
    if value is None:
        raise _OffShape
    return value, p


def _count(b: memoryview, p: int) -> tuple[int, int]:
    count = _I32.unpack_from(b, p)[0]
    p += 4
    if count < 0 or count > len(b) - p:
        raise _OffShape
    return count, p


def _classic_body(b: memoryview, p: int, client_id: str | None) -> RawProduce:
    transactional_id, p = _nullable_string(b, p)
    acks, timeout_ms = _ACKS_TIMEOUT.unpack_from(b, p)
    topics_count, p = _count(b, p + 6)
    topics: list[tuple[str, list[tuple[int, memoryview | None]]]] = []
    unpack = _INDEX_SIZE.unpack_from
    limit = len(b)
    for _ in range(topics_count):
        name, p = _string(b, p)
        count, p = _count(b, p)
        partitions: list[tuple[int, memoryview | None]] = []
        for _ in range(count):
            index, size = unpack(b, p)
            p += 8
            if size < 0:
                partitions.append((index, None))
                continue
            end = p + size
            if end > limit:
                raise _OffShape
            partitions.append((index, b[p:end]))
            p = end
        topics.append((name, partitions))
    return _new_raw((client_id, transactional_id, acks, timeout_ms, topics, p))


def _uvarint(b: memoryview, p: int) -> tuple[int, int]:
    value = b[p]
    if value < 0x80:
        return value, p + 1
    return read_uvarint(b, p)


def _tags(b: memoryview, p: int) -> int:
    """Past a tagged-field section (none of the request's tags carries anything this broker reads)."""
    if b[p] == 0:
        return p + 1
    return skip_tagged_fields(b, p)


def _compact_string(b: memoryview, p: int) -> tuple[str | None, int]:
    size, p = _uvarint(b, p)
    if size == 0:
        return None, p
    end = p + size - 1
    if end > len(b):
        raise _OffShape
    return str(b[p:end], "utf-8"), end


def _compact_count(b: memoryview, p: int) -> tuple[int, int]:
    count, p = _uvarint(b, p)
    count -= 1
    if count < 0 or count > len(b) - p:
        raise _OffShape
    return count, p


def _flexible_body(b: memoryview, p: int, client_id: str | None) -> RawProduce:
    if b[p] == 0:  # no transactional id: the common case, read in place
        transactional_id: str | None = None
        p += 1
    else:
        transactional_id, p = _compact_string(b, p)
    acks, timeout_ms = _ACKS_TIMEOUT.unpack_from(b, p)
    topics_count, p = _compact_count(b, p + 6)
    topics: list[tuple[str, list[tuple[int, memoryview | None]]]] = []
    unpack = _I32.unpack_from
    limit = len(b)
    for _ in range(topics_count):
        size = b[p]
        if 1 < size < 0x80:  # a name of up to 126 bytes: its length in one byte, read in place
            p += size
            if p > limit:
                raise _OffShape
            name = str(b[p - size + 1 : p], "utf-8")
        else:
            found, p = _compact_string(b, p)
            if found is None:
                raise _OffShape
            name = found
        count = b[p] - 1
        if 0 <= count < 0x7F:  # up to 126 partitions: the count in one byte
            p += 1
            if count > limit - p:
                raise _OffShape
        else:
            count, p = _compact_count(b, p)
        partitions: list[tuple[int, memoryview | None]] = []
        for _ in range(count):  # the hottest loop: _uvarint and _tags written out
            index = unpack(b, p)[0]
            p += 4
            size = b[p]
            if size < 0x80:
                p += 1
            else:
                size, p = read_uvarint(b, p)
            records: memoryview | None
            if size == 0:
                records = None
            else:
                end = p + size - 1
                if end > limit:
                    raise _OffShape
                records = b[p:end]
                p = end
            p = p + 1 if b[p] == 0 else skip_tagged_fields(b, p)
            partitions.append((index, records))
        p = p + 1 if b[p] == 0 else skip_tagged_fields(b, p)
        topics.append((name, partitions))
    return _new_raw((client_id, transactional_id, acks, timeout_ms, topics, _tags(b, p)))


# ---------------------------------------------------------------- the answer

_NAMES: dict[tuple[str, bool], bytes] = {}
_NAMES_LIMIT = 4096


def _encoded_name(name: str, compact: bool) -> bytes:
    """A topic name as the response writes it (length prefix included), cached: one per topic, not per answer."""
    key = (name, compact)
    encoded = _NAMES.get(key)
    if encoded is None:
        data = name.encode("utf-8")
        if len(data) > 0x7FFF:
            raise _OffShape
        prefix = bytearray()
        if compact:
            write_uvarint(prefix, len(data) + 1)
        else:
            prefix += _I16.pack(len(data))
        encoded = bytes(prefix) + data
        if len(_NAMES) >= _NAMES_LIMIT:
            _NAMES.clear()
        _NAMES[key] = encoded
    return encoded


def _write_message(out: bytearray, message: str | None, compact: bool) -> None:
    if message is None:
        out += b"\x00" if compact else b"\xff\xff"
        return
    data = message.encode("utf-8")
    if len(data) > 0x7FFF:
        raise _OffShape
    if compact:
        write_uvarint(out, len(data) + 1)
    else:
        out += _I16.pack(len(data))
    out += data


def encode_produce_response(out: bytearray, response: ProduceResponse, version: int) -> bool:
    """Append ``response``'s body at ``version`` to ``out`` as the generated encoder writes
    ``fit_to_version(response, version)``, and return True; or write nothing and return False when the generated
    code must encode it (module doc)."""
    if not FAST_RESPONSE_VERSIONS[0] <= version <= FAST_RESPONSE_VERSIONS[1]:
        return False
    if version >= _TAGGED_ANSWER and response.node_endpoints:
        return False
    try:
        answers = [(topic.name, _answers(topic.partition_responses, version)) for topic in response.responses]
    except (_OffShape, AttributeError):
        return False
    return write_produce_answers(out, answers, version, response.throttle_time_ms)


def _answers(partitions: list[PartitionProduceResponse], version: int) -> list[Answer]:
    """The answers as ``write_produce_answers`` takes them; _OffShape for a field it does not write that
    ``version`` carries (record errors from v8, a current leader from v10)."""
    out: list[Answer] = []
    for a in partitions:
        if version >= _ERROR_MESSAGE and a.record_errors:
            raise _OffShape
        leader = a.current_leader
        if version >= _TAGGED_ANSWER and (leader.leader_id != -1 or leader.leader_epoch != -1):
            raise _OffShape
        out.append(
            (a.index, a.error_code, a.base_offset, a.log_append_time_ms, a.log_start_offset, a.error_message)
        )
    return out


def produce_answer_frame(
    correlation_id: int, version: int, answers: Sequence[tuple[str, Sequence[Answer]]]
) -> bytes | bytearray | None:
    """A whole Produce answer frame at ``version``: its size, the response header and the body
    ``write_produce_answers`` writes (no throttle time); None when that declines. The common answer, one topic
    with one partition and no error message, is one ``struct`` pack into a layout kept per version and topic."""
    if len(answers) == 1 and len(answers[0][1]) == 1 and answers[0][1][0][5] is None:
        name, ((index, error_code, base_offset, log_append_time_ms, log_start_offset, _),) = answers[0]
        layout = _ONE_ANSWER.get((version, name)) or _one_answer_layout(version, name)
        if layout is not None:
            pack, head, tail, with_start = layout
            try:
                if not with_start:
                    return pack(
                        correlation_id, head, index, error_code, base_offset, log_append_time_ms, tail
                    )
                return pack(
                    correlation_id,
                    head,
                    index,
                    error_code,
                    base_offset,
                    log_append_time_ms,
                    log_start_offset,
                    tail,
                )
            except struct.error:  # a value past its field: the general writer would decline it too
                return None
    out = bytearray(_I32.pack(0))
    out += _I32.pack(correlation_id)
    if version >= _FLEXIBLE:
        out.append(0)  # response header v1: no tagged fields
    if not write_produce_answers(out, answers, version):
        return None
    _I32.pack_into(out, 0, len(out) - 4)
    return out


_ONE_ANSWER: dict[tuple[int, str], tuple[Callable[..., bytes], bytes, bytes, bool]] = {}


def _one_answer_layout(version: int, name: str) -> tuple[Callable[..., bytes], bytes, bytes, bool] | None:
    """The frame of a one-partition answer as one ``Struct``: the size is fixed, so it is in the format; the
    bytes before the partition (header tags, counts, the name) and after it (record errors, message, tags, a
    throttle time of 0) are constants; None when the version is not written here or the name does not fit."""
    if not FAST_RESPONSE_VERSIONS[0] <= version <= FAST_RESPONSE_VERSIONS[1]:
        return None
    compact = version >= _FLEXIBLE
    try:
        name_bytes = _encoded_name(name, compact)
    except (_OffShape, UnicodeEncodeError):
        return None
    one = b"\x02" if compact else _I32.pack(1)
    head = (b"\x00" if compact else b"") + one + name_bytes + one
    tail = b""
    if version >= _ERROR_MESSAGE:
        tail = b"\x01\x00\x00" if compact else b"\x00\x00\x00\x00\xff\xff"  # no record errors, no message
    if compact:
        tail += b"\x00"  # the topic's tagged fields
    tail += _I32.pack(0)  # throttle_time_ms: the fast path answers unthrottled
    if compact:
        tail += b"\x00"  # the answer's tagged fields
    with_start = version >= _LOG_START_OFFSET
    fields = f"{len(head)}sihqq{'q' if with_start else ''}{len(tail)}s"
    pack = functools.partial(struct.Struct(f">ii{fields}").pack, struct.calcsize(f">i{fields}"))
    layout = (pack, head, tail, with_start)
    if len(_ONE_ANSWER) >= _NAMES_LIMIT:
        _ONE_ANSWER.clear()
    _ONE_ANSWER[(version, name)] = layout
    return layout


def write_produce_answers(
    out: bytearray, answers: Sequence[tuple[str, Sequence[Answer]]], version: int, throttle_time_ms: int = 0
) -> bool:
    """Append the body of a Produce answer at ``version`` to ``out``: per topic its name and per partition an
    ``Answer`` (no record errors, no current leader, no node endpoints); True, or False with nothing written when
    a value does not fit its field (the generated code then decides)."""
    if not FAST_RESPONSE_VERSIONS[0] <= version <= FAST_RESPONSE_VERSIONS[1]:
        return False
    mark = len(out)
    try:
        _write_answers(out, answers, version, throttle_time_ms)
    except (_OffShape, struct.error, UnicodeEncodeError, TypeError):
        del out[mark:]
        return False
    return True


def _write_answers(
    out: bytearray, topics: Sequence[tuple[str, Sequence[Answer]]], version: int, throttle_time_ms: int
) -> None:
    compact = version >= _FLEXIBLE
    messages = version >= _ERROR_MESSAGE
    with_start = version >= _LOG_START_OFFSET
    pack = (_ANSWER_V5 if with_start else _ANSWER_V3).pack
    if compact:
        write_uvarint(out, len(topics) + 1)
    else:
        out += _I32.pack(len(topics))
    for name, answers in topics:
        out += _encoded_name(name, compact)
        if compact:
            write_uvarint(out, len(answers) + 1)
        else:
            out += _I32.pack(len(answers))
        for index, error_code, base_offset, log_append_time_ms, log_start_offset, message in answers:
            if with_start:
                out += pack(index, error_code, base_offset, log_append_time_ms, log_start_offset)
            else:
                out += pack(index, error_code, base_offset, log_append_time_ms)
            if messages:
                out += b"\x01" if compact else b"\x00\x00\x00\x00"  # no record errors
                _write_message(out, message, compact)
                if compact:
                    out.append(0)
        if compact:
            out.append(0)
    out += _I32.pack(throttle_time_ms)
    if compact:
        out.append(0)
