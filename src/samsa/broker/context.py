"""What a handler sees of the request it serves and of the broker it runs in."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from samsa.protocol import RequestHeader

from .network import ConnectionInfo

if TYPE_CHECKING:
    from .broker import KafkaServer


@dataclass(frozen=True, slots=True)
class RequestContext:
    header: RequestHeader
    connection: ConnectionInfo
    broker: KafkaServer

    @property
    def api_version(self) -> int:
        return self.header.request_api_version
