"""Samsa as a cluster: Kafka's ZooKeeper layout, replica assignment, and a ZooKeeper server to coordinate through.

The single-broker default needs none of this; ``zookeeper.connect`` turns cluster mode on.
"""
