"""The epochs of a fetch session (KIP-227), as a Fetch request carries them in ``session_epoch``: the client and
the broker sides share them."""

INITIAL_EPOCH = 0
"""A full fetch that asks for a new session (closing the one named, if any)."""
FINAL_EPOCH = -1
"""A full fetch outside any session (closing the one named, if any)."""
MAX_EPOCH = 2**31 - 1


def next_epoch(epoch: int) -> int:
    """The epoch after ``epoch`` (after the largest comes 1: 0 would ask for a new session)."""
    return 1 if epoch >= MAX_EPOCH else epoch + 1
