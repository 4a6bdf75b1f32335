"""The Samsa broker: Kafka's wire protocol over asyncio, on top of ``samsa.storage``."""
