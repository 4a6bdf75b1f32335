"""Samsa: a Kafka-compatible, partitioned, segmented commit log in Python.

``samsa.Broker`` (an in-process broker, see ``samsa.embedded``) is imported on first use, so ``import samsa``
stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = ["Broker", "__version__"]

if TYPE_CHECKING:
    from samsa.embedded import Broker


def __getattr__(name: str) -> Any:
    if name == "Broker":
        from samsa.embedded import Broker

        return Broker
    raise AttributeError(f"module 'samsa' has no attribute {name!r}")
