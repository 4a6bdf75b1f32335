"""The controller holds UpdateMetadata until the new leaders named in LeaderAndIsr have answered (so no broker
names a leader before it leads), at most ``LEADER_ANSWER_WAIT_S``. A leader that leaves the cluster meanwhile
will never answer: the wait for it ends when it leaves, not after the whole timeout. Before, a leader paused
past its session held every broker's next metadata 5 s (seen in the nemesis: clients were told
COORDINATOR_NOT_AVAILABLE for a group whose coordinator was serving).

An in-process ``Controller`` on a real ZooKeeper, brokers 1-3 registered by sessions of their own; nothing
listens at their addresses, so no LeaderAndIsr is ever answered.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from tests.cluster.test_controller_alter_partition import controller_of, registered

from samsa.cluster.controller import LEADER_ANSWER_WAIT_S
from samsa.cluster.znodes import TopicAssignment

pytestmark = [pytest.mark.timeout(120), pytest.mark.slow]


def test_the_controller_stops_waiting_for_a_leader_that_left(zk_connect: str) -> None:
    with registered(zk_connect, [1, 2, 3]) as sessions:
        sessions[0].create_topic("led", TopicAssignment({0: (2, 3, 1)}), {})

        async def until(what: str, check: Callable[[], bool], timeout: float = 30.0) -> None:
            """Poll ``check`` on the controller's own loop (it reads the controller's state)."""
            deadline = asyncio.get_running_loop().time() + timeout
            while not check():
                assert asyncio.get_running_loop().time() < deadline, f"timed out waiting for {what}"
                await asyncio.sleep(0.05)

        async def scenario() -> None:
            async with controller_of(zk_connect, 1) as controller:
                await until("broker 2 named leader, unanswered", lambda: 2 in controller.awaiting_leaders())
                # broker 2 leaves: its registration goes with its session
                await asyncio.to_thread(sessions[1].close)
                left = asyncio.get_running_loop().time()
                await until(
                    "the wait for broker 2 to end",
                    lambda: 2 not in controller.awaiting_leaders(),
                    LEADER_ANSWER_WAIT_S * 2,
                )
                assert asyncio.get_running_loop().time() - left < LEADER_ANSWER_WAIT_S / 2

        asyncio.run(scenario())
