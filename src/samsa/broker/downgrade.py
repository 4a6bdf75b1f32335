"""Fit a response built with every field to the version the client asked for.

Handlers fill in everything they know (leader epochs, log start offsets, error messages...); fields that the
requested version does not have are put back to their defaults here, recursively, so the encoder's rule (a
non-default value in a field the version lacks is an error, as in Kafka) only ever catches real mistakes.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from samsa.protocol.schema import in_range


def fit_to_version(message: Any, version: int) -> Any:
    specs = getattr(type(message), "FIELDS", None)
    if specs is None:
        return message
    changes: dict[str, Any] = {}
    defaults = {f.name: f for f in dataclasses.fields(message)}
    for spec in specs:
        value = getattr(message, spec.attr)
        if not in_range(version, spec.versions):
            field = defaults[spec.attr]
            if field.default is not dataclasses.MISSING:
                default = field.default
            elif field.default_factory is not dataclasses.MISSING:
                default = field.default_factory()
            else:
                continue
            if value != default:
                changes[spec.attr] = default
            continue
        if spec.struct is not None and value is not None:
            if spec.is_array:
                fitted = [fit_to_version(item, version) for item in value]
                if any(a is not b for a, b in zip(fitted, value, strict=True)):
                    changes[spec.attr] = fitted
            else:
                one = fit_to_version(value, version)
                if one is not value:
                    changes[spec.attr] = one
    return dataclasses.replace(message, **changes) if changes else message
