"""``samsa serve [server.properties] [--override key=value ...]``, as Kafka's ``kafka-server-start.sh``.

Parsed with argparse rather than click: ``samsa serve`` is the command whose start-up is a figure (spawn to
accepting connections, see ``bench/bench_embedded.py``) and click's import alone is a tenth of it, so ``samsa``
hands ``serve`` its arguments before importing click (``samsa.cli.main``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

DESCRIPTION = "Run a broker until SIGTERM or SIGINT."


def _parser() -> argparse.ArgumentParser:
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
        help="run on uvloop when installed (no zero-copy sendfile)",
    )
    return parser


def main(argv: Sequence[str]) -> int:
    """Parse ``argv`` (the arguments after ``serve``), then serve; the process exit code (2: bad configuration)."""
    from samsa.broker.config import ConfigError, KafkaConfig
    from samsa.storage.properties import PropertiesError, load_properties

    parser = _parser()
    args = parser.parse_args(argv)
    try:
        props = load_properties(args.properties) if args.properties else {}
        for item in args.overrides:
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                parser.error(f"argument --override: {item!r} is not KEY=VALUE")
            props[key.strip()] = value
        config = KafkaConfig.from_properties(props)
        config.check_log_dirs()
    except (PropertiesError, ConfigError) as exc:
        print(f"samsa serve: {exc}", file=sys.stderr)
        return 2
    from samsa.broker.runner import run_forever

    return run_forever(config, use_uvloop=args.uvloop)
