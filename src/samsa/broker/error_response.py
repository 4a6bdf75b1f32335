"""An API's error response, mirrored from its request: what the broker answers when a handler fails on a
server-side problem (storage), and what ``samsa.embedded``'s ``inject_error`` answers with.

Each response entry mirrors the request entry it answers (topic names and ids, partition indexes, resource names
are copied), every ``error_code`` field carries the error, everything else keeps its default (offsets -1, no
records), so a client sees a well-formed answer for exactly what it asked about.
"""

from __future__ import annotations

from typing import Any

from samsa.protocol import ErrorCode, api_schema
from samsa.protocol.schema import FieldSpec

TOPIC_NAME = frozenset({"name", "topic", "topic_name"})
GROUP_ID = frozenset({"group_id"})
IDENTITY_GROUPS: tuple[frozenset[str], ...] = (
    TOPIC_NAME,
    frozenset({"topic_id"}),
    frozenset({"partition_index", "index", "partition", "partition_id"}),
    frozenset({"resource_type"}),
    frozenset({"resource_name"}),
    GROUP_ID,
    frozenset({"transactional_id"}),
)
"""Fields that say *which* topic, partition or resource an entry is about, under the names APIs give them."""

OFFSET_SUFFIXES = ("offset", "watermark")


def error_response(key: int, request: Any, error: ErrorCode) -> Any:
    """The response of API ``key`` to ``request`` with every ``error_code`` field set to ``error``.

    Each response entry mirrors the request's entry it answers (topic names and ids, partition indexes, resource
    names are copied); everything else keeps its default (offsets -1, no records).
    """
    return _mirror(api_schema(key).response_type, request, int(error))


def _mirror(cls: Any, source: Any, code: int, named: tuple[str, Any] | None = None) -> Any:
    """``named``: (field, value) for an entry that answers a plain value of the request (a topic or group
    name in a list of names, as DeleteTopics v0-5 and DeleteGroups send them), with no fields of its own."""
    source_specs: tuple[FieldSpec, ...] = getattr(type(source), "FIELDS", ())
    source_arrays = [s for s in source_specs if s.struct is not None and s.is_array]
    targets = [s for s in cls.FIELDS if s.struct is not None and s.is_array]
    pairs = _pair_arrays(targets, source_arrays)
    names = {t.attr: n for t in targets for n in [_names_for(t.struct, source_specs)] if n}
    values: dict[str, Any] = {}
    for spec in cls.FIELDS:
        if spec.attr == "error_code":
            values[spec.attr] = code
        elif named is not None and spec.attr == named[0]:
            values[spec.attr] = named[1]
        elif spec.struct is not None:
            paired = getattr(source, pairs[spec.attr].attr) if spec.attr in pairs else None
            if spec.is_array and spec.attr in names and not paired:  # the request named them in plain values
                field, array = names[spec.attr]
                values[spec.attr] = [
                    _mirror(spec.struct, None, code, (field, value)) for value in getattr(source, array) or []
                ]
            elif spec.is_array and spec.attr in pairs:
                values[spec.attr] = [_mirror(spec.struct, item, code) for item in paired or []]
        else:
            found = _identity_source(spec.attr, source_specs)
            if found is not None:
                values[spec.attr] = getattr(source, found)
            elif spec.kafka_type == "int64" and spec.attr.endswith(OFFSET_SUFFIXES):
                values[spec.attr] = -1  # Kafka's "no offset" in an error answer
    return cls(**values)


def _pair_arrays(targets: list[FieldSpec], sources: list[FieldSpec]) -> dict[str, FieldSpec]:
    """Which request array each response array answers: the same name, else the first with a common identity."""
    pairs: dict[str, FieldSpec] = {}
    unused = list(sources)
    for target in targets:
        match = next((s for s in unused if s.attr == target.attr), None)
        if match is None:
            target_ids = _identities(target.struct)
            match = next((s for s in unused if target_ids & _identities(s.struct)), None)
        if match is not None:
            pairs[target.attr] = match
            unused.remove(match)
    return pairs


_NAMED_BY = ((TOPIC_NAME, "topic"), (GROUP_ID, "group"))
"""Which entry field answers a request's list of plain names, by what the list's own name says it holds."""


def _names_for(struct: Any, source_specs: tuple[FieldSpec, ...]) -> tuple[str, str] | None:
    """(entry field, request list) when ``struct`` entries answer a request's list of plain names."""
    fields = {spec.attr for spec in getattr(struct, "FIELDS", ())}
    for spec in source_specs:
        if spec.is_array and spec.struct is None:
            for group, word in _NAMED_BY:
                if word in spec.attr and fields & group:
                    return next(iter(sorted(fields & group))), spec.attr
    return None


def _identities(struct: Any) -> set[int]:
    names = {spec.attr for spec in getattr(struct, "FIELDS", ())}
    return {i for i, group in enumerate(IDENTITY_GROUPS) if names & group}


def _identity_source(attr: str, source_specs: tuple[FieldSpec, ...]) -> str | None:
    for group in IDENTITY_GROUPS:
        if attr in group:
            for spec in source_specs:
                if spec.attr in group and spec.struct is None and not spec.is_array:
                    return spec.attr
    return None
