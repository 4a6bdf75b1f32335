"""Kafka's transaction coordinator (KIP-98): the state machine of a transactional id, the ``__transaction_state``
record formats, and (above them) the coordinator that drives markers.

``state`` and ``log_format`` are pure: time comes in as an argument, bytes go in and out, no event loop.
"""
