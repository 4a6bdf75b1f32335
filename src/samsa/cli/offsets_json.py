"""``samsa dump-log --offsets-decoder``: a ``__consumer_offsets`` record's key and value as Kafka's tool prints them.

What is appended to a record line (``<n>`` is the key's or value's int16 schema version, as a JSON string)::

    key: {"type":"<n>","data":{...}} payload: {"version":"<n>","data":{...}}
    key: {"type":"<n>","data":{...}} payload: <DELETE>                  (a tombstone)
    key: Error at offset <o>, skipping. <why>                           (a key or value that does not decode)

``data`` is the message's fields at that version, in the descriptor's order under Kafka's camelCase names, compact
JSON (no spaces, non-ASCII kept as is): fields the version does not have are left out, bytes are Base64, nullable
values ``null``. Keys 0 and 1 are ``OffsetCommitKey`` (value ``OffsetCommitValue``), key 2 is ``GroupMetadataKey``
(value ``GroupMetadataValue``). A group of protocol type ``consumer`` has each member's subscription and assignment
decoded as the consumer protocol's messages (at the version their own first two bytes name); bytes that do not
decode stay Base64, as Kafka's tool leaves them.

Pure functions of one record; nothing here reads files.
"""

from __future__ import annotations

import base64
import json
import re
import struct
from typing import Any

from samsa.coordinator.offsets_topic import GROUP_KEY_VERSION
from samsa.protocol.errors import DecodeError
from samsa.protocol.messages.consumer_protocol import ConsumerProtocolAssignment, ConsumerProtocolSubscription
from samsa.protocol.messages.group_metadata_record import GroupMetadataKey, GroupMetadataValue
from samsa.protocol.messages.offset_commit_record import OffsetCommitKey, OffsetCommitValue
from samsa.protocol.schema import FieldSpec, in_range
from samsa.records import Record

_VERSION = struct.Struct(">h")
_CONSUMER_PROTOCOL_TYPE = "consumer"
_OFFSET_KEY_VERSIONS = (0, 1)


class _Undecodable(Exception):
    """A key or value that is not a message this tool knows."""


def camel_case(attr: str) -> str:
    """Kafka's field name for a generated attribute: ``current_state_timestamp`` -> ``currentStateTimestamp``."""
    head, *rest = attr.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def message_json(message: Any, version: int) -> dict[str, Any]:
    """A generated message's fields at ``version`` as Kafka's generated JSON converters write them."""
    specs: tuple[FieldSpec, ...] = type(message).FIELDS
    out: dict[str, Any] = {}
    for spec in specs:
        if not in_range(version, spec.versions) or spec.tag is not None:
            continue
        out[camel_case(spec.attr)] = _field_json(spec, getattr(message, spec.attr), version)
    return out


def _field_json(spec: FieldSpec, value: Any, version: int) -> Any:
    if value is None:
        return None
    if spec.is_array:
        return [_scalar_json(spec, item, version) for item in value]
    return _scalar_json(spec, value, version)


def _scalar_json(spec: FieldSpec, value: Any, version: int) -> Any:
    if spec.struct is not None:
        return message_json(value, version)
    if isinstance(value, bytes | bytearray | memoryview):
        return _b64(bytes(value))
    if isinstance(value, bool | int | float | str):
        return value
    return str(value)  # a uuid


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _version_of(data: bytes, what: str) -> tuple[int, bytes]:
    if len(data) < _VERSION.size:
        raise _Undecodable(f"the {what} is shorter than its version")
    (version,) = _VERSION.unpack_from(data)
    return version, data[_VERSION.size :]


def _decode(cls: Any, body: bytes, version: int, what: str) -> Any:
    low, high = cls.VALID_VERSIONS
    if not low <= version <= high:
        raise _Undecodable(f"the {what} has version {version}, which {cls.__name__} does not have")
    try:
        return cls.decode(body, version)
    except (DecodeError, struct.error, ValueError, UnicodeDecodeError) as exc:
        raise _Undecodable(f"the {what} does not decode as {cls.__name__} v{version}: {exc}") from exc


def _consumer_protocol_json(cls: Any, data: bytes) -> Any:
    """A member's subscription or assignment decoded as the consumer protocol's message, or its Base64."""
    try:
        version, body = _version_of(data, "bytes")
        return message_json(_decode(cls, body, version, "bytes"), version)
    except _Undecodable:
        return _b64(data)


def _group_value_json(value: GroupMetadataValue, version: int) -> dict[str, Any]:
    out = message_json(value, version)
    if value.protocol_type == _CONSUMER_PROTOCOL_TYPE:
        for member_json, member in zip(out["members"], value.members, strict=True):
            member_json["subscription"] = _consumer_protocol_json(
                ConsumerProtocolSubscription, member.subscription
            )
            member_json["assignment"] = _consumer_protocol_json(ConsumerProtocolAssignment, member.assignment)
    return out


def _key_and_payload(key: bytes, value: bytes | None) -> tuple[str, str]:
    key_version, key_body = _version_of(key, "key")
    if key_version in _OFFSET_KEY_VERSIONS:
        key_message: Any = _decode(OffsetCommitKey, key_body, key_version, "key")
        value_cls: Any = OffsetCommitValue
    elif key_version == GROUP_KEY_VERSION:
        key_message = _decode(GroupMetadataKey, key_body, key_version, "key")
        value_cls = GroupMetadataValue
    else:
        raise _Undecodable(
            f"key type {key_version} is not an offset commit (0, 1) or a group metadata (2) key"
        )
    key_text = _dumps({"type": str(key_version), "data": message_json(key_message, key_version)})
    if value is None:
        return key_text, "<DELETE>"
    value_version, value_body = _version_of(value, "value")
    decoded = _decode(value_cls, value_body, value_version, "value")
    data = (
        _group_value_json(decoded, value_version)
        if isinstance(decoded, GroupMetadataValue)
        else message_json(decoded, value_version)
    )
    return key_text, _dumps({"version": str(value_version), "data": data})


def offsets_record_text(record: Record) -> str:
    """What follows a record line's ``headerKeys: [...]``: `` key: .. payload: ..``, or the reason it cannot."""
    if record.key is None:
        return f" key: Error at offset {record.offset}, skipping. The record has no key"
    try:
        key_text, payload_text = _key_and_payload(bytes(record.key), record.value)
    except _Undecodable as exc:
        return f" key: Error at offset {record.offset}, skipping. {_sentence(str(exc))}"
    return f" key: {key_text} payload: {payload_text}"


def _sentence(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text[:1].upper() + text[1:]
