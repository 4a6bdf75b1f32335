"""The purgatory's deadlines are on the injected clock: a manual clock advanced past a deadline ends the wait; a
notification ends it early; an unadvanced manual clock still lets the real-time bound end it."""

from __future__ import annotations

import asyncio
import time

from samsa.broker.purgatory import Purgatory
from samsa.clock import ManualClock


def test_a_manual_clock_advanced_past_the_deadline_ends_the_wait() -> None:
    async def scenario() -> tuple[bool, float]:
        clock = ManualClock()
        purgatory = Purgatory(clock)
        waiting = asyncio.create_task(purgatory.wait(["tp"], clock.monotonic_ms() + 60_000))
        await asyncio.sleep(0.05)
        assert not waiting.done() and purgatory.watched() == 1
        started = time.monotonic()
        clock.advance(59_999)
        await asyncio.sleep(0.05)
        assert not waiting.done()  # not yet at the deadline
        clock.advance(1)
        result = await asyncio.wait_for(waiting, 5)
        return result, time.monotonic() - started

    woken, elapsed = asyncio.run(scenario())
    assert woken is False and elapsed < 5  # expired by the clock, in far less than 60 s of real time


def test_a_notification_wakes_and_an_unadvanced_clock_falls_back_to_real_time() -> None:
    async def scenario() -> tuple[bool, bool, float]:
        clock = ManualClock()
        purgatory = Purgatory(clock)
        waiting = asyncio.create_task(purgatory.wait(["a", "b"], clock.monotonic_ms() + 10_000))
        await asyncio.sleep(0.01)
        purgatory.notify("b")
        notified = await asyncio.wait_for(waiting, 5)
        started = time.monotonic()
        bounded = await purgatory.wait(["a"], clock.monotonic_ms() + 200)
        return notified, bounded, time.monotonic() - started

    notified, bounded, elapsed = asyncio.run(scenario())
    assert notified is True
    assert bounded is False and 0.15 < elapsed < 5
    assert Purgatory(ManualClock()).watched() == 0
