"""Fit a response built with every field to the version the client asked for.

Handlers fill in everything they know (leader epochs, log start offsets, error messages...); fields that the
requested version does not have are put back to their defaults here, recursively, so the encoder's rule (a
non-default value in a field the version lacks is an error, as in Kafka) only ever catches real mistakes.

What to look at is worked out once per (message class, version) and cached: the fields the version lacks (with
their defaults), and the struct fields whose classes need a look in turn. A class with neither is returned as it
is without reading a field, so a response made only of fields its version has costs one dictionary lookup.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from samsa.protocol.schema import in_range

_Absent = tuple[
    str, Any, Callable[[], Any] | None
]  # attribute, default value, default factory (None: a value)
_Nested = tuple[str, bool, type, "_Plan"]  # attribute, is an array, struct class, the struct's plan


@dataclasses.dataclass(frozen=True, slots=True)
class _Plan:
    absent: tuple[_Absent, ...]
    nested: tuple[_Nested, ...]


_PLANS: dict[tuple[type, int], _Plan | None] = {}


def fit_to_version(message: Any, version: int) -> Any:
    cls = type(message)
    try:
        plan = _PLANS[(cls, version)]
    except KeyError:
        plan = _plan(cls, version)
    if plan is None:
        return message
    return _apply(plan, message, version)


def _plan(cls: type, version: int) -> _Plan | None:
    """What ``fit_to_version`` must do for ``cls`` at ``version`` (None: nothing), computed once."""
    key = (cls, version)
    specs = getattr(cls, "FIELDS", None)
    _PLANS[key] = None  # also guards against a struct that contains itself
    if specs is None or not dataclasses.is_dataclass(cls):
        return None
    fields = {f.name: f for f in dataclasses.fields(cls)}
    absent: list[_Absent] = []
    nested: list[_Nested] = []
    for spec in specs:
        if not in_range(version, spec.versions):
            field = fields[spec.attr]
            if field.default is not dataclasses.MISSING:
                absent.append((spec.attr, field.default, None))
            elif field.default_factory is not dataclasses.MISSING:
                absent.append((spec.attr, field.default_factory(), field.default_factory))
        elif spec.struct is not None:
            sub = _plan_of(spec.struct, version)
            if sub is not None:
                nested.append((spec.attr, spec.is_array, spec.struct, sub))
    plan = _Plan(tuple(absent), tuple(nested)) if absent or nested else None
    _PLANS[key] = plan
    return plan


def _plan_of(cls: type, version: int) -> _Plan | None:
    try:
        return _PLANS[(cls, version)]
    except KeyError:
        return _plan(cls, version)


def _apply(plan: _Plan, message: Any, version: int) -> Any:
    changes: dict[str, Any] = {}
    for attr, default, factory in plan.absent:
        if getattr(message, attr) != default:
            changes[attr] = factory() if factory is not None else default
    for attr, is_array, struct, sub in plan.nested:
        value = getattr(message, attr)
        if value is None:
            continue
        if is_array:
            fitted = [
                _apply(sub, item, version) if type(item) is struct else fit_to_version(item, version)
                for item in value
            ]
            if any(a is not b for a, b in zip(fitted, value, strict=True)):
                changes[attr] = fitted
        else:
            one = _apply(sub, value, version) if type(value) is struct else fit_to_version(value, version)
            if one is not value:
                changes[attr] = one
    return dataclasses.replace(message, **changes) if changes else message
