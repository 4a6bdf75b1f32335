"""InitProducerId on a cluster broker while ZooKeeper is away: a real ZooKeeper and one ``samsa serve`` process.

A cluster broker hands out producer ids from a block of 1000 taken from ``/latest_producer_id_block`` (fetched
ahead). With ZooKeeper stopped it goes on answering from the block it holds; once that is used up it answers
COORDINATOR_LOAD_IN_PROGRESS (what Kafka's broker answers with no block ready; producers retry it), never an id
of a block it did not take; with ZooKeeper back it hands out ids of a new block.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.badinput.wire import Connection
from tests.cluster.waiting import wait_for

from samsa.cluster.launcher import LocalCluster
from samsa.cluster.zookeeper import ZooKeeperServer
from samsa.protocol import ErrorCode
from samsa.protocol.messages.init_producer_id import InitProducerIdRequest

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]

BLOCK = 1000


@pytest.fixture
def cluster(tmp_path: Path, zk_connect: str) -> Iterator[LocalCluster]:
    local = LocalCluster(tmp_path / "cluster", zookeeper=zk_connect)
    local.up(1)
    try:
        yield local
    finally:
        local.down()


def init_producer_id(conn: Connection) -> tuple[int, int]:
    """(error code, producer id) of an idempotent producer's InitProducerId."""
    answer = conn.request(22, 4, InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60_000))
    return answer.error_code, answer.producer_id


def test_init_producer_id_answers_load_in_progress_once_the_block_is_used_up(
    cluster: LocalCluster, zookeeper: ZooKeeperServer
) -> None:
    with Connection(cluster.broker(1).port, timeout=30) as conn:
        assert wait_for("a first producer id", lambda: init_producer_id(conn) == (ErrorCode.NONE, 0))
        zookeeper.stop()
        try:
            handed_out = [0]
            while True:
                error, producer_id = init_producer_id(conn)
                if error != ErrorCode.NONE:
                    break
                handed_out.append(producer_id)
                assert len(handed_out) <= BLOCK, "an id beyond the block held, with ZooKeeper away"
            assert error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
            assert handed_out == list(range(BLOCK))  # every id of the block, and no other
            assert (
                init_producer_id(conn)[0] == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
            )  # until ZooKeeper is back
        finally:
            zookeeper.start()
        error, producer_id = wait_for(
            "a producer id with ZooKeeper back",
            lambda: (answer := init_producer_id(conn))[0] == ErrorCode.NONE and answer,
            timeout=60,
        )
        assert producer_id >= BLOCK
