"""Samsa as a cluster: Kafka's ZooKeeper layout, the controller, replication, and a ZooKeeper server.

    znodes, zk_client                       Kafka's znodes and their JSON, over kazoo
    assignment                              replica assignment (Kafka's round-robin, rack-aware)
    controller.Controller                   the elected controller; its helpers (elections, reassignment,
                                            topic_deletion) see it through controller_context.ControllerContext
    metadata_cache                          what the controller last sent this broker (UpdateMetadata)
    replica_fetcher, follower               a follower's fetches from its leaders, and its side of a partition
    isr_channel                             AlterPartition requests from a leader to the controller
    replication_quota                       the replication throttles
    zookeeper                               a ZooKeeper server for tests and ``samsa cluster``
    launcher.LocalCluster                   a cluster of ``samsa serve`` processes on this machine
    status                                  what ZooKeeper says of a cluster (``samsa cluster status``)

The single-broker default needs none of this; ``zookeeper.connect`` turns cluster mode on. The broker's side of
cluster mode (registration, the metadata store over ZooKeeper) is ``samsa.broker.zk_broker``.
"""
