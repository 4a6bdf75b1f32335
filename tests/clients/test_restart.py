"""A broker restarted, cleanly or after kill -9, serves every acknowledged record again."""

from __future__ import annotations

import pytest

from .harness import BrokerProcess, Message, ck_consume, ck_produce, kp_consume

pytestmark = pytest.mark.clients


def batch(prefix: str, n: int) -> list[Message]:
    return [Message(f"{prefix}{i}".encode(), f"{prefix}-value-{i}".encode() * 3) for i in range(n)]


@pytest.mark.parametrize("how", ["clean", "kill -9"])
def test_acknowledged_records_survive_restart(fresh_broker: BrokerProcess, how: str) -> None:
    fresh_broker.overrides["log.segment.bytes"] = "16384"  # several segments
    fresh_broker.start()
    first = batch("a", 300)
    acked = ck_produce(fresh_broker.bootstrap, "durable", first, "none", acks="all", **{"batch.size": 4000})
    assert len(acked) == len(first)
    marker = fresh_broker.data_dir / ".kafka_cleanshutdown"
    if how == "clean":
        assert fresh_broker.stop() == 0
        assert marker.exists()
    else:
        fresh_broker.kill()
        assert not marker.exists()
    fresh_broker.start()
    consumed = ck_consume(fresh_broker.bootstrap, "durable", len(first))
    assert [c.message() for c in consumed][: len(first)] == [
        Message(m.key, m.value, (), consumed[i].timestamp) for i, m in enumerate(first)
    ]
    # the log carries on after the restart at the right offset
    more = batch("b", 20)
    acked_more = ck_produce(fresh_broker.bootstrap, "durable", more, "gzip", **{"batch.size": 4000})
    assert [o for _, o in acked_more] == list(range(300, 320))
    assert len(kp_consume(fresh_broker.bootstrap, "durable", 320)) == 320
