"""The client properties file of Kafka's tools (``--command-config``, ``--producer.config``, ``--consumer.config``,
``--admin.config``): its security settings reach every connection the tool makes.

``command_config_option(name)`` adds the option to a click command: the file is read when the option is parsed
(a bad key is a usage error naming it) and its properties and ``samsa.client.ClientSecurity`` are kept in the
command's click context (``meta``, shared with subcommands), where ``tool_client`` finds them when the tool opens
its ``KafkaClient``. The keys are Kafka's client keys (``security.protocol``, ``sasl.mechanism``,
``sasl.jaas.config`` or ``sasl.username``/``sasl.password``, ``ssl.truststore.location`` with
``ssl.truststore.type=PEM`` or ``ssl.ca.location``, ``ssl.keystore.location``); ``client.id`` and
``request.timeout.ms`` are read by the tools that use them; others are ignored, as Kafka's tools ignore what their
client does not know.

One command per process (click's context is the invocation's); not thread-safe.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from samsa.client import ClientSecurity, KafkaClient, SecurityConfigError

__all__ = ["command_config_option", "command_properties", "read_command_config", "tool_client"]

PROPERTIES_KEY = "samsa.command_config"
SECURITY_KEY = "samsa.client_security"
F = TypeVar("F", bound=Callable[..., Any])


class CommandConfigError(ValueError):
    """A properties file a tool cannot connect with (the message names the file and the key)."""


def read_command_config(path: str) -> dict[str, str]:
    """The properties of ``path``, checked: CommandConfigError when unreadable or when its security settings
    cannot make a connection (``ClientSecurity.from_properties``)."""
    from samsa.storage.properties import PropertiesError, load_properties

    try:
        props = load_properties(path)
    except PropertiesError as exc:
        raise CommandConfigError(str(exc)) from None
    try:
        ClientSecurity.from_properties(props).ssl_context()
    except SecurityConfigError as exc:
        raise CommandConfigError(f"{path}: {exc}") from None
    if not props.get("request.timeout.ms", "1").strip().isdigit():
        raise CommandConfigError(f"{path}: request.timeout.ms must be a number of milliseconds")
    return props


def command_config_option(name: str = "--command-config", what: str = "admin client") -> Callable[[F], F]:
    """The click option reading a client properties file into the command's context (module doc)."""

    def keep(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            props = read_command_config(value)
        except CommandConfigError as exc:
            raise click.BadParameter(str(exc), ctx=ctx, param=param) from None
        ctx.meta[PROPERTIES_KEY] = props
        ctx.meta[SECURITY_KEY] = ClientSecurity.from_properties(props)
        return value

    return click.option(
        name,
        callback=keep,
        expose_value=False,
        metavar="FILE",
        help=f"A properties file for the {what}: security.protocol, sasl.*, ssl.* as Kafka's clients take them.",
    )


def command_properties() -> dict[str, str]:
    """The properties the running command was given (empty without the option)."""
    ctx = click.get_current_context(silent=True)
    return dict(ctx.meta.get(PROPERTIES_KEY, {})) if ctx is not None else {}


def tool_client(bootstrap_servers: str, **options: Any) -> KafkaClient:
    """A ``KafkaClient`` with the security of the running command's properties file (PLAINTEXT without one)."""
    ctx = click.get_current_context(silent=True)
    security = ctx.meta.get(SECURITY_KEY) if ctx is not None else None
    return KafkaClient(bootstrap_servers, security=security, **options)
