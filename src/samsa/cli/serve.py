"""``samsa serve [server.properties] [--override key=value ...]``, as Kafka's ``kafka-server-start.sh``.

Parsed without click: ``samsa serve`` is the command whose start-up is a figure (spawn to accepting connections,
see ``bench/bench_embedded.py``) and click's import alone is a tenth of it, so ``samsa`` hands ``serve`` its
arguments before importing click (``samsa.cli.main``). The usual command lines (a properties file, ``--override``
and ``--[no-]uvloop``) are read by ``parse_plain``, since argparse and the modules its help formatter imports cost
about 7 ms here; anything else (``--help``, an unknown or abbreviated option, a value that looks like an option)
goes to argparse, which parses it or says what is wrong, as it always did.

With no argument at all it prints its usage and exits 1, as ``kafka-server-start.sh`` does, rather than serve
from the default ``/tmp/kafka-logs``. Before any log is loaded, each listener's address is tried: one that another
process holds ends the start at once, naming the listener (exit 1).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import argparse

    from samsa.broker.config import KafkaConfig

DESCRIPTION = "Run a broker until SIGTERM or SIGINT."
USAGE = "USAGE: samsa serve server.properties [--override property=value]*  (samsa serve --help lists every option)"


def _parser() -> argparse.ArgumentParser:
    import argparse

    parser = argparse.ArgumentParser(prog="samsa serve", description=DESCRIPTION)
    parser.add_argument("properties", nargs="?", help="a Kafka server.properties file")
    parser.add_argument(
        "--override",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a server property (repeatable)",
    )
    parser.add_argument(
        "--uvloop",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="run on uvloop when installed (fetches still use sendfile while nothing is queued)",
    )
    parser.add_argument(
        "--log-format",
        choices=("text", "json"),
        default="text",
        help="text: Kafka's log lines; json: one JSON object per line (time, level, logger, message, broker id, "
        "topic-partition)",
    )
    parser.add_argument(
        "--request-log",
        action="store_true",
        help="log every request with the principal it ran as (Kafka's kafka.request.logger at DEBUG)",
    )
    return parser


class ServeArgs(NamedTuple):
    properties: str | None
    overrides: list[str]
    uvloop: bool
    log_format: str = "text"
    request_log: bool = False


def parse_plain(argv: Sequence[str]) -> ServeArgs | None:
    """``argv`` as argparse would read it, when it is made only of: at most one properties path (not starting
    with ``-``), ``--override VALUE`` (VALUE not starting with ``-``), ``--override=VALUE``, ``--uvloop`` and
    ``--no-uvloop`` (the last one wins). None for anything else, which argparse must see."""
    properties: str | None = None
    overrides: list[str] = []
    uvloop = False
    position = 0
    while position < len(argv):
        item = argv[position]
        if item == "--override":
            if position + 1 == len(argv) or argv[position + 1].startswith("-"):
                return None
            overrides.append(argv[position + 1])
            position += 2
            continue
        if item.startswith("--override="):
            overrides.append(item[len("--override=") :])
        elif item in ("--uvloop", "--no-uvloop"):
            uvloop = item == "--uvloop"
        elif item.startswith("-") or properties is not None:
            return None
        else:
            properties = item
        position += 1
    return ServeArgs(properties, overrides, uvloop)


def parse_args(argv: Sequence[str]) -> ServeArgs:
    """The command line: ``parse_plain``'s reading, else argparse's (which exits with its usage on an error)."""
    plain = parse_plain(argv)
    if plain is not None:
        return plain
    args = _parser().parse_args(argv)
    return ServeArgs(args.properties, args.overrides, args.uvloop, args.log_format, args.request_log)


def main(argv: Sequence[str]) -> int:
    """Parse ``argv`` (the arguments after ``serve``), then serve; the process exit code (2: bad configuration)."""
    from samsa.broker.config import ConfigError, KafkaConfig
    from samsa.storage.properties import PropertiesError, load_properties

    if not argv:
        print(USAGE, file=sys.stderr)
        return 1
    args = parse_args(argv)
    try:
        props = load_properties(args.properties) if args.properties else {}
        for item in args.overrides:
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                _parser().error(f"argument --override: {item!r} is not KEY=VALUE")
            props[key.strip()] = value
        config = KafkaConfig.from_properties(props)
        config.check_log_dirs()
    except (PropertiesError, ConfigError) as exc:
        print(f"samsa serve: {exc}", file=sys.stderr)
        return 2
    taken = listener_in_use(config)
    if taken is not None:
        print(f"samsa serve: {taken}", file=sys.stderr)
        return 1
    from samsa.broker.runner import run_forever

    return run_forever(
        config, use_uvloop=args.uvloop, log_format=args.log_format, request_log=args.request_log
    )


def listener_in_use(config: KafkaConfig) -> str | None:
    """Why a listener cannot be opened (its address taken, or not this host's), tried before any log is loaded;
    None when every listener's address can be bound. A fixed port only: port 0 always binds."""
    import errno
    import socket

    for name, host, port in config.listener_addresses:
        if port == 0:
            continue
        try:
            infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        except OSError as exc:
            return f"cannot listen on {name}://{host}:{port}: {exc.strerror or exc}"
        for family, kind, proto, _, address in dict.fromkeys(infos):
            try:
                with socket.socket(family, kind, proto) as probe:
                    probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    probe.bind(address)
            except OSError as exc:
                if exc.errno == errno.EAFNOSUPPORT:
                    continue  # a family this host does not have
                reason = "the address is already in use" if exc.errno == errno.EADDRINUSE else exc.strerror
                return f"cannot listen on {name}://{host}:{port}: {reason} (port {port} of {address[0]})"
    return None
