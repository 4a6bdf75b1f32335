"""``LeaderEpochFileCache.end_offset_for``, Kafka's ``endOffsetFor``: the answer to OffsetsForLeaderEpoch and to a
follower's last fetched epoch (KIP-101, KIP-279, KIP-595), case by case as Kafka's cache answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from samsa.storage.leader_epoch import LeaderEpochFileCache

LOG_END = 500


@pytest.fixture
def cache(tmp_path: Path) -> LeaderEpochFileCache:
    """Epochs 2 from offset 100, 4 from 200, 7 from 350 (epochs 0, 1, 3, 5, 6 wrote nothing here)."""
    epochs = LeaderEpochFileCache(tmp_path)
    for epoch, start in ((2, 100), (4, 200), (7, 350)):
        epochs.assign(epoch, start)
    return epochs


def test_an_undefined_epoch_is_undefined(cache: LeaderEpochFileCache) -> None:
    assert cache.end_offset_for(-1, LOG_END) is None


def test_the_latest_epoch_ends_at_the_log_end(cache: LeaderEpochFileCache) -> None:
    assert cache.end_offset_for(7, LOG_END) == (7, LOG_END)


def test_an_epoch_ends_where_the_next_one_starts(cache: LeaderEpochFileCache) -> None:
    assert cache.end_offset_for(2, LOG_END) == (2, 200)
    assert cache.end_offset_for(4, LOG_END) == (4, 350)


def test_an_epoch_with_no_entry_answers_the_largest_epoch_below_it(cache: LeaderEpochFileCache) -> None:
    assert cache.end_offset_for(3, LOG_END) == (2, 200)
    assert cache.end_offset_for(6, LOG_END) == (4, 350)


def test_an_epoch_below_the_first_answers_itself_and_the_first_start(cache: LeaderEpochFileCache) -> None:
    assert cache.end_offset_for(0, LOG_END) == (0, 100)
    assert cache.end_offset_for(1, LOG_END) == (1, 100)


def test_an_epoch_above_every_entry_is_undefined(cache: LeaderEpochFileCache) -> None:
    assert cache.end_offset_for(8, LOG_END) is None


def test_an_empty_cache_answers_undefined(tmp_path: Path) -> None:
    empty = LeaderEpochFileCache(tmp_path)
    assert empty.end_offset_for(0, LOG_END) is None
    assert empty.end_offset_for(5, LOG_END) is None


def test_the_answer_follows_a_truncation(cache: LeaderEpochFileCache) -> None:
    cache.truncate_from_end(350)  # epoch 7's records are gone: 4 is the latest again
    assert cache.end_offset_for(4, 340) == (4, 340)
    assert cache.end_offset_for(7, 340) is None
    cache.truncate_from_start(250)  # epoch 2 is gone below the log start
    assert cache.end_offset_for(2, 340) == (2, 250)


def test_the_answer_survives_a_reload(cache: LeaderEpochFileCache, tmp_path: Path) -> None:
    again = LeaderEpochFileCache(tmp_path)
    assert [again.end_offset_for(e, LOG_END) for e in range(-1, 9)] == [
        cache.end_offset_for(e, LOG_END) for e in range(-1, 9)
    ]
