"""The Samsa broker: Kafka's wire protocol over asyncio, on top of ``samsa.storage``.

network.Server, FrameProtocol           listeners and connections; frames received in place
dispatch.RequestDispatcher              a frame to its API's handler, the answer encoded
handlers/<api>.py                       one module per Kafka API, given ``services.BrokerServices``
replica_manager.ReplicaManager          partitions this broker leads or follows: produce, fetch, ISR, acks=all
metadata_store                          the catalog handlers answer from: local, or ZooKeeper's (cluster mode)
replica_offsets_log.ReplicaOffsetsLog   ``__consumer_offsets`` for the group coordinator
zk_broker.ZkBroker                      cluster mode: registration, the controller, fetchers, the ISR channel
broker.KafkaServer                      one broker: wires the above together and runs them
"""
