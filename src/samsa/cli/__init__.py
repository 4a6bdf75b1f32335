"""The ``samsa`` command: ``samsa serve`` (``samsa.cli.serve``, no click on its path) and the click group of the
tools and demos (``samsa.cli.app``), each imported only when it runs."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any


def main(argv: Sequence[str] | None = None) -> Any:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if args[:1] == ["serve"]:
            from .serve import main as serve

            return serve(args[1:])
        from .app import cli

        return cli.main(args=args, prog_name="samsa")
    except KeyboardInterrupt:  # Ctrl-C before a command's own handling is in place (while importing)
        print("Aborted!", file=sys.stderr)
        return 130


def __getattr__(name: str) -> Any:
    """``samsa.cli.cli``, the click group, imported on first use so that ``samsa serve`` never loads click."""
    if name == "cli":
        from .app import cli

        return cli
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
