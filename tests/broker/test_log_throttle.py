"""``LogThrottle``: a repeated fault's message once per interval per key, with the count held back."""

from __future__ import annotations

from samsa.log_throttle import LogThrottle


def test_a_key_is_due_once_per_interval_and_counts_what_it_held_back() -> None:
    throttle = LogThrottle(60)
    assert throttle.due(0, "a") == 0  # the first time: at once
    assert [throttle.due(t, "a") for t in (1, 30, 59)] == [None, None, None]
    assert throttle.due(0.5, "b") == 0  # keys are apart
    assert throttle.due(60, "a") == 3  # a minute on: due, with the three held back
    assert throttle.due(61, "a") is None


def test_a_forgotten_key_is_due_again_at_once() -> None:
    throttle = LogThrottle(60)
    assert not throttle.forget("task")
    assert throttle.due(0, "task") == 0 and throttle.due(1, "task") is None
    assert throttle.forget("task")  # it recovered: said by the caller
    assert throttle.due(2, "task") == 0


def test_a_due_line_says_how_many_it_stands_for() -> None:
    assert LogThrottle.held_back(0) == ""
    assert LogThrottle.held_back(3) == " (3 more since the last line)"
