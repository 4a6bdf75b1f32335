"""``samsa console``: serve the web console of a Kafka-protocol cluster at ``http://HOST:PORT/`` until SIGINT.

    samsa console --bootstrap-server localhost:9092 --port 8080 [--log-dirs /var/lib/kafka/data ...]

Read-only: the console answers GET only and sends the cluster read requests only (see ``samsa.console``).
"""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import click


@click.command("console")
@click.option(
    "--bootstrap-server", required=True, help="host:port of a broker (comma-separated for several)."
)
@click.option(
    "--port", type=click.IntRange(0, 65535), default=8080, show_default=True, help="HTTP port (0: any)."
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address the console listens on.")
@click.option(
    "--log-dirs",
    "log_dirs",
    multiple=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="A log dir to read segments from, read-only (repeatable). Without it, the brokers' own log dirs are "
    "read when they are on this machine; otherwise segments show as not available.",
)
def console(bootstrap_server: str, port: int, host: str, log_dirs: tuple[Path, ...]) -> None:
    """A web console for a Kafka-protocol cluster: brokers, topics, replicas, segments, consumer lag."""
    from samsa.client import KafkaError
    from samsa.client.client import parse_bootstrap

    try:
        parse_bootstrap(bootstrap_server)
    except KafkaError as exc:
        raise click.BadParameter(str(exc), param_hint="--bootstrap-server") from None
    try:
        asyncio.run(_serve(bootstrap_server, host, port, list(log_dirs)))
    except OSError as exc:
        raise click.ClickException(f"cannot serve on {host}:{port}: {exc}") from None


async def _serve(bootstrap_server: str, host: str, port: int, log_dirs: list[Path]) -> None:
    from samsa.console import Console

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    app = Console(bootstrap_server, host=host, port=port, log_dirs=log_dirs)
    url = await app.start()
    click.echo(f"samsa console for {bootstrap_server} at {url}", err=True)
    try:
        await stop.wait()
    finally:
        await app.close()
