"""What a handler sees of the request it serves and of the broker it runs in: the services it uses, by name
(``services.BrokerServices``), never the server object."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from samsa.protocol import ErrorCode, RequestHeader
from samsa.security.acl import SUPPORTED_OPERATIONS, AclOperation, ResourceType, operations_bit_field

from .network import ConnectionInfo

if TYPE_CHECKING:
    from samsa.cluster.controller import Controller

    from .services import BrokerServices, ZkSupport


CLUSTER_NAME = "kafka-cluster"  # the one Cluster resource's name
OPERATIONS_NOT_ASKED = -(
    2**31
)  # an *_authorized_operations field the request did not ask for (Kafka's INT_MIN)


@dataclass(frozen=True, slots=True)
class RequestContext:
    header: RequestHeader
    connection: ConnectionInfo
    services: BrokerServices

    @property
    def api_version(self) -> int:
        return self.header.request_api_version

    @property
    def principal(self) -> str:
        """The principal the request acts as (``User:ANONYMOUS`` on a connection that did not authenticate)."""
        return self.connection.principal

    def authorize(self, operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
        """Whether this request's principal, from its host, may do ``operation`` on the resource (always, when
        ``authorizer.class.name`` is unset); a denial is logged (throttled) by the authorizer."""
        authorizer = self.services.authorizer
        if authorizer is None:
            return True
        return authorizer.authorize(
            self.principal, self.connection.client_host, operation, resource_type, name
        )

    def may(self, operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
        """``authorize`` without a log line on denial (filtering what a listing shows, as Metadata's topics)."""
        authorizer = self.services.authorizer
        if authorizer is None:
            return True
        return authorizer.would_allow(
            self.principal, self.connection.client_host, operation, resource_type, name
        )

    def authorized_operations(self, resource_type: ResourceType, name: str) -> int:
        """The operations on the resource this principal may do, as Kafka's bit field (the ``*_authorized_operations``
        of Metadata, DescribeCluster, DescribeGroups): every supported one when authorization is off, as Kafka."""
        allowed = [op for op in SUPPORTED_OPERATIONS[resource_type] if self.may(op, resource_type, name)]
        return operations_bit_field(allowed)

    def authorize_cluster(self, operation: AclOperation) -> bool:
        return self.authorize(operation, ResourceType.CLUSTER, CLUSTER_NAME)

    def authorize_idempotent_write(self) -> bool:
        """An idempotent producer's InitProducerId: IdempotentWrite on the cluster, or Write on some topic (as
        Kafka 2.8+)."""
        authorizer = self.services.authorizer
        if authorizer is None or self.authorize_cluster(AclOperation.IDEMPOTENT_WRITE):
            return True
        host = self.connection.client_host
        return authorizer.authorize_any(self.principal, host, AclOperation.WRITE, ResourceType.TOPIC)

    @property
    def active_controller(self) -> Controller | None:
        """The cluster's controller when this broker is it (None: another broker is, or there is no cluster), for
        the requests only the controller serves."""
        zk_support = self.services.zk_support
        if zk_support is None or not zk_support.controller.is_active:
            return None
        return zk_support.controller

    def fence_controller_request(
        self, controller_epoch: int, broker_epoch: int
    ) -> tuple[ZkSupport | None, ErrorCode]:
        """For the requests only a controller sends: this broker's ZooKeeper side with Kafka's fence on the
        request's epochs (NONE: serve it), or (None, STALE_CONTROLLER_EPOCH) for a broker without
        ``zookeeper.connect``, which has no controller."""
        zk_support = self.services.zk_support
        if zk_support is None:
            return None, ErrorCode.STALE_CONTROLLER_EPOCH
        return zk_support, zk_support.fence_controller_request(controller_epoch, broker_epoch)
