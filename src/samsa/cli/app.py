"""The ``samsa`` click group. Each subcommand lives in its own module and is imported only when it runs;
``serve`` is parsed by its own module without click (see ``samsa.cli.serve``)."""

from __future__ import annotations

import importlib
import os
import signal
import sys
from typing import Any

import click

# name -> "module:attribute" (modules under samsa.cli)
COMMANDS: dict[str, str] = {
    "dump-log": "dump_log:dump_log",
    "demo": "pipeline:demo",
    "pipeline": "pipeline:pipeline",
    "storage-demo": "demo:demo",
    "topics": "topics:topics",
    "get-offsets": "get_offsets:get_offsets",
    "console-producer": "console_producer:console_producer",
    "console-consumer": "console_consumer:console_consumer",
    "log-dirs": "log_dirs:log_dirs",
    "consumer-groups": "consumer_groups:consumer_groups",
    "configs": "configs:configs",
    "acls": "acls:acls",
    "cluster": "cluster:cluster",
    "leader-election": "leader_election:leader_election",
    "reassign-partitions": "reassign_partitions:reassign_partitions",
    "transactions": "transactions:transactions",
    "console": "console:console",
}


class LazyGroup(click.Group):
    """A group whose subcommands are imported on first use, so `samsa --help` stays fast.

    A tool whose reader goes away (``samsa dump-log ... | head``) stops quietly with the status of a Unix tool
    killed by SIGPIPE (141).
    """

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            # stdout is closed for good: point it at /dev/null so that Python's flush at exit stays quiet too
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(128 + signal.SIGPIPE)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *COMMANDS])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return super().get_command(ctx, cmd_name)
        module_name, attribute = target.split(":")
        module = importlib.import_module(f"samsa.cli.{module_name}")
        command: click.Command = getattr(module, attribute)
        return command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="samsa")
def cli() -> None:
    """Samsa: a Kafka-compatible commit log in Python."""


@cli.command(
    "serve",
    add_help_option=False,
    context_settings={"ignore_unknown_options": True},
    help="Run a broker until SIGTERM or SIGINT (samsa serve --help lists its options).",
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def serve(args: tuple[str, ...]) -> None:
    from .serve import main

    sys.exit(main(args))
