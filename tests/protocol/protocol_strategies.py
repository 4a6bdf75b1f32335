"""Hypothesis strategies derived from the generated ``FIELDS`` metadata (the descriptors' facts), not by hand."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from samsa.protocol.schema import FieldSpec, in_range

_INTS = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
}
_TEXT = st.text(max_size=12)
_BYTES = st.binary(max_size=24)


def _scalar(kind: str) -> st.SearchStrategy[Any]:
    if kind in _INTS:
        low, high = _INTS[kind]
        return st.integers(low, high)
    return {
        "bool": st.booleans(),
        "float64": st.floats(allow_nan=False),
        "string": _TEXT,
        "bytes": _BYTES,
        "records": _BYTES,
        "uuid": st.uuids(),
    }[kind]


def _field(spec: FieldSpec, version: int, depth: int) -> st.SearchStrategy[Any]:
    if spec.struct is not None:
        item: st.SearchStrategy[Any] = message_strategy(spec.struct, version, depth + 1)
    else:
        item = _scalar(spec.kafka_type)
    if spec.is_array:
        item = st.lists(item, max_size=3 if depth < 2 else 1)
    if in_range(version, spec.nullable_versions):
        item = st.none() | item
    return item


def message_strategy(cls: type, version: int, depth: int = 0) -> st.SearchStrategy[Any]:
    """Instances of ``cls`` whose every field is valid at ``version``; absent fields keep their defaults."""
    fields = {
        spec.attr: _field(spec, version, depth)
        for spec in cls.FIELDS
        if in_range(version, spec.versions)  # type: ignore[attr-defined]
    }
    return st.builds(cls, **fields)
