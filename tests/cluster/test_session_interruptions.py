"""Controller tasks that meet a lost or expired ZooKeeper session: one INFO line each, no ERROR, no traceback.

The controller runs here without ZooKeeper (its client is never started); each task's work is replaced by one
that raises what kazoo raises while the session is away. The kazoo client's reconnect policy is checked too:
bounded at about a second between tries, forever (kazoo's default backs off to an hour).
"""

from __future__ import annotations

import asyncio
import logging

import pytest
from kazoo.exceptions import ConnectionLoss, SessionExpiredError
from kazoo.retry import RetryFailedError

from samsa.cluster import elections
from samsa.cluster.controller import Controller
from samsa.cluster.zk_client import ZkClient, ZkSessionInterruptedError, is_session_interruption
from samsa.topic_partition import TopicPartition

SESSION_AWAY = [
    SessionExpiredError(),
    ConnectionLoss(),
    RetryFailedError("Exceeded retry deadline"),
    ZkSessionInterruptedError("ZooKeeper session interrupted"),
]


def test_the_reconnect_policy_tries_about_every_second_forever() -> None:
    policy = ZkClient("127.0.0.1:1").kazoo._conn_retry
    assert policy.max_tries == -1
    assert policy.max_delay <= 1.0
    assert policy.max_delay * (1 + policy.max_jitter) <= 1.25


@pytest.mark.parametrize("exc", SESSION_AWAY, ids=lambda e: type(e).__name__)
def test_the_session_away_is_told_from_other_failures(exc: Exception) -> None:
    assert is_session_interruption(exc)
    assert not is_session_interruption(ValueError("a bug"))


async def run_rebalance(raised: BaseException, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run the controller's event loop and its automatic rebalance for three checks, each raising ``raised``."""
    monkeypatch.setattr(elections, "FIRST_REBALANCE_DELAY_S", 0.0)
    controller = Controller(ZkClient("127.0.0.1:1"), 1, "PLAINTEXT")
    controller.elections.config.leader_imbalance_check_interval_s = 0.01
    checks = 0

    async def failing() -> None:
        nonlocal checks
        checks += 1
        raise raised

    monkeypatch.setattr(controller.elections, "_rebalance_once", failing)
    controller._loop = asyncio.get_running_loop()
    events = asyncio.create_task(controller._run())
    rebalance = asyncio.create_task(controller.elections._rebalance_periodically())
    try:
        while checks < 3:
            await asyncio.sleep(0.01)
    finally:
        rebalance.cancel()
        events.cancel()
        await asyncio.gather(rebalance, events, return_exceptions=True)


@pytest.mark.parametrize("exc", SESSION_AWAY, ids=lambda e: type(e).__name__)
def test_the_automatic_rebalance_says_a_session_away_in_one_info_line(
    exc: Exception, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="samsa.cluster")
    asyncio.run(run_rebalance(exc, monkeypatch))
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert all(r.exc_info is None for r in caplog.records)
    lines = [r.getMessage() for r in caplog.records if "auto_leader_rebalance" in r.getMessage()]
    assert len(lines) >= 3 and all("ZooKeeper session of broker 1 was away" in line for line in lines)


def test_any_other_rebalance_failure_is_still_an_error_with_its_traceback(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="samsa.cluster")
    asyncio.run(run_rebalance(ValueError("a bug"), monkeypatch))
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert errors and all(r.exc_info is not None for r in errors)


def test_a_reassignment_check_stops_at_a_session_away_instead_of_an_error_per_partition(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    controller = Controller(ZkClient("127.0.0.1:1"), 1, "PLAINTEXT")
    reassignments = controller.reassignments
    moving = [TopicPartition("t", p) for p in range(3)]
    monkeypatch.setattr(reassignments, "moving", lambda: moving)
    tried: list[TopicPartition] = []

    async def advance(tp: TopicPartition, *, started: bool) -> None:
        tried.append(tp)
        raise SessionExpiredError()

    monkeypatch.setattr(reassignments, "_advance", advance)
    caplog.set_level(logging.INFO, logger="samsa.cluster")
    with pytest.raises(SessionExpiredError):
        asyncio.run(reassignments.check())
    assert tried == moving[:1]
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
