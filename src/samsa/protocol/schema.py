"""Field metadata the generator attaches to every message class (``FIELDS``), for tests and introspection.

A version range is ``(low, high)`` inclusive; ``low > high`` means "no versions".
"""

from __future__ import annotations

from typing import NamedTuple


class FieldSpec(NamedTuple):
    """One field of a generated message or struct, as its descriptor declares it."""

    attr: str  # the Python attribute name (snake_case of Kafka's name)
    kafka_type: (
        str  # Kafka's type of the field or, for arrays, of one element: int32, string, records, struct, ...
    )
    is_array: bool
    versions: tuple[int, int]
    nullable_versions: tuple[int, int]
    tagged_versions: tuple[int, int]
    tag: int | None
    struct: type | None  # the generated class for struct-typed fields
    flexible_versions: tuple[int, int] | None  # a per-field override (only RequestHeader.ClientId has one)
    ignorable: bool


def in_range(version: int, versions: tuple[int, int]) -> bool:
    return versions[0] <= version <= versions[1]
