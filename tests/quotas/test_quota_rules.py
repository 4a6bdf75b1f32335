"""The client quota rules without a broker: Kafka's lookup order, which clients share a rate, the windowed rate
and its throttle time, DescribeClientQuotas' matching, and ZooKeeper's entity paths."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from samsa.broker.broker_configs import entity_path
from samsa.broker.quotas import (
    CONSUMER_BYTE_RATE,
    PRODUCER_BYTE_RATE,
    QuotaManager,
    Rate,
    describe,
    entity,
    path_entity,
)

EVERY_LEVEL = [
    entity("alice", "app"),
    entity("alice", None),
    entity("alice"),
    entity(None, "app"),
    entity(None, None),
    entity(None),
    entity(client_id="app"),
    entity(client_id=None),
]


def test_the_most_specific_entity_wins_in_kafkas_order() -> None:
    manager = QuotaManager()
    quotas = {e: {PRODUCER_BYTE_RATE: float(level)} for level, e in enumerate(EVERY_LEVEL)}
    for level in range(len(EVERY_LEVEL)):
        manager.replace({e: v for e, v in quotas.items() if v[PRODUCER_BYTE_RATE] >= level})
        found = manager.bound(PRODUCER_BYTE_RATE, "alice", "app")
        assert found is not None and found[1] == level
    assert manager.bound(CONSUMER_BYTE_RATE, "alice", "app") is None
    manager.replace({entity("bob"): {PRODUCER_BYTE_RATE: 1.0}})
    assert manager.bound(PRODUCER_BYTE_RATE, "alice", "app") is None


def test_a_users_quota_is_shared_by_its_clients_a_default_client_quota_is_not() -> None:
    manager = QuotaManager()
    manager.replace({entity("alice"): {PRODUCER_BYTE_RATE: 1000.0}})
    assert manager.record(PRODUCER_BYTE_RATE, "alice", "a", 9_000, 0) == 0
    assert manager.record(PRODUCER_BYTE_RATE, "alice", "b", 2_000, 0) > 0  # 11,000 B over 10 s: over 1000 B/s
    manager = QuotaManager()
    manager.replace({entity(client_id=None): {PRODUCER_BYTE_RATE: 1000.0}})
    assert manager.record(PRODUCER_BYTE_RATE, "alice", "a", 9_000, 0) == 0
    assert manager.record(PRODUCER_BYTE_RATE, "alice", "b", 9_000, 0) == 0  # its own rate


def test_throttle_time_is_the_excess_over_the_bound_times_the_window() -> None:
    manager = QuotaManager()
    manager.replace({entity(client_id="c"): {PRODUCER_BYTE_RATE: 1000.0}})
    # 15,000 B in the first second: 1,500 B/s over a 10 s window, 50 % over: 5 s
    assert manager.record(PRODUCER_BYTE_RATE, "u", "c", 15_000, 500) == 5_000
    # never more than the whole window
    assert manager.record(PRODUCER_BYTE_RATE, "u", "c", 10**9, 600) == 11_000


def test_the_rate_forgets_samples_older_than_the_window() -> None:
    rate = Rate(samples=3, sample_ms=1000)
    rate.record(3000, 0)
    assert rate.value(0) == 1500  # at least (3 - 1) samples of window
    assert rate.value(2999) == 3000 * 1000 / 2999
    assert rate.value(3000) == 0  # the sample is 3 s old: gone


@given(
    st.lists(
        st.tuples(st.integers(0, 30_000), st.floats(0, 1e6, allow_nan=False)), min_size=1, max_size=40
    ).map(sorted)
)
def test_rate_matches_a_sum_over_the_live_samples(events: list[tuple[int, float]]) -> None:
    rate = Rate(samples=11, sample_ms=1000)
    starts: list[list[float]] = []  # the model: [sample start, total]
    for now, value in events:
        starts = [s for s in starts if now - s[0] < 11_000]
        if starts and now - starts[-1][0] < 1000:
            starts[-1][1] += value
        else:
            starts.append([now, value])
        rate.record(value, now)
    now = events[-1][0]
    elapsed = now - starts[0][0]
    window = elapsed + max(10 - elapsed // 1000, 0) * 1000
    assert abs(rate.value(now) - sum(t for _, t in starts) * 1000 / max(window, 1)) < 1e-6


def test_describe_matches_exact_default_and_any_names() -> None:
    quotas = {e: {PRODUCER_BYTE_RATE: 1.0} for e in EVERY_LEVEL}
    exact = describe(quotas, [("client-id", 0, "app")], strict=True)
    assert [e for e, _ in exact] == [entity(client_id="app")]
    default = describe(quotas, [("user", 1, None)], strict=False)
    assert [e for e, _ in default] == [entity(None, None), entity(None, "app"), entity(None)]
    any_client = describe(quotas, [("client-id", 2, None)], strict=True)
    assert [e for e, _ in any_client] == [entity(client_id=None), entity(client_id="app")]


names = st.one_of(st.none(), st.text(min_size=1, max_size=12))


@given(names, names, st.sampled_from(["both", "user", "client"]))
def test_znode_paths_name_each_entity_and_read_back(user: str | None, client: str | None, kind: str) -> None:
    made = {"both": entity(user, client), "user": entity(user), "client": entity(client_id=client)}[kind]
    path = entity_path(made)
    assert path_entity(path) == made
    assert path.count("/") == (3 if kind == "both" else 1)  # sanitized: a name's "/" is escaped


def test_paths_as_kafka_writes_them() -> None:
    assert entity_path(entity("alice", None)) == "users/alice/clients/<default>"
    assert entity_path(entity(client_id="my app")) == "clients/my%20app"
    assert path_entity("topics/t") is None and path_entity("clients/a/users/b") is None
