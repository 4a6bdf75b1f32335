"""``samsa serve [server.properties] [--override key=value ...]``, as Kafka's ``kafka-server-start.sh``."""

from __future__ import annotations

import sys

import click


@click.command("serve")
@click.argument("properties", required=False, type=click.Path(dir_okay=False))
@click.option(
    "--override", "overrides", multiple=True, metavar="KEY=VALUE", help="override a server property"
)
@click.option(
    "--uvloop/--no-uvloop", default=False, help="run on uvloop when installed (no zero-copy sendfile)"
)
def serve(properties: str | None, overrides: tuple[str, ...], uvloop: bool) -> None:
    """Run a broker until SIGTERM or SIGINT."""
    from samsa.broker.config import ConfigError, KafkaConfig
    from samsa.broker.runner import run_forever
    from samsa.storage.properties import PropertiesError, load_properties

    try:
        props = load_properties(properties) if properties else {}
        for item in overrides:
            key, sep, value = item.partition("=")
            if not sep or not key:
                raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--override")
            props[key.strip()] = value
        config = KafkaConfig.from_properties(props)
    except (PropertiesError, ConfigError) as exc:
        click.echo(f"samsa serve: {exc}", err=True)
        sys.exit(2)
    sys.exit(run_forever(config, use_uvloop=uvloop))
