"""What a handler sees of the request it serves and of the broker it runs in."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from samsa.protocol import ErrorCode, RequestHeader

from .network import ConnectionInfo

if TYPE_CHECKING:
    from samsa.cluster.controller import Controller

    from .broker import KafkaServer
    from .zk_broker import ZkBroker


@dataclass(frozen=True, slots=True)
class RequestContext:
    header: RequestHeader
    connection: ConnectionInfo
    broker: KafkaServer

    @property
    def api_version(self) -> int:
        return self.header.request_api_version

    @property
    def active_controller(self) -> Controller | None:
        """The cluster's controller when this broker is it (None: another broker is, or there is no cluster), for
        the requests only the controller serves."""
        zk_broker = self.broker.zk_broker
        if zk_broker is None or not zk_broker.controller.is_active:
            return None
        return zk_broker.controller

    def fence_controller_request(
        self, controller_epoch: int, broker_epoch: int
    ) -> tuple[ZkBroker | None, ErrorCode]:
        """For the requests only a controller sends: this broker's ZooKeeper side with Kafka's fence on the
        request's epochs (NONE: serve it), or (None, STALE_CONTROLLER_EPOCH) for a broker without
        ``zookeeper.connect``, which has no controller."""
        zk_broker = self.broker.zk_broker
        if zk_broker is None:
            return None, ErrorCode.STALE_CONTROLLER_EPOCH
        return zk_broker, zk_broker.fence_controller_request(controller_epoch, broker_epoch)
