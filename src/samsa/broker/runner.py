"""Run a broker as a process: the event loop, signals, the ready line and a clean stop."""

from __future__ import annotations

import asyncio
import logging
import resource
import signal
import sys

from .config import KafkaConfig

log = logging.getLogger("samsa")

EXIT_UNCLEAN_SHUTDOWN = 3
"""Exit code of a stop that could not make everything durable (the next start recovers); 1 is a failed start,
2 a bad configuration."""


def run_forever(
    config: KafkaConfig, *, use_uvloop: bool = False, log_format: str = "text", request_log: bool = False
) -> int:
    """Serve until SIGTERM or SIGINT; return the process exit code (0 after a clean shutdown). ``log_format``:
    ``text`` (Kafka's lines) or ``json`` (``log_format``); ``request_log``: a line per request (``dispatch``)."""
    if log_format == "json":
        from .log_format import configure_logging

        configure_logging(log_format, config.node_id)
    else:
        logging.basicConfig(
            level=logging.INFO, format="[%(asctime)s] %(levelname)s %(name)s: %(message)s", stream=sys.stderr
        )
    if request_log:
        logging.getLogger("kafka.request.logger").setLevel(logging.DEBUG)
    for key in sorted(config.unknown_keys):
        log.warning("the configuration '%s' was supplied but isn't a known config", key)
    warn_unavailable_modes(config)
    _raise_open_files_limit()
    if use_uvloop:
        try:
            import uvloop

            return int(uvloop.run(_serve(config)))
        except ImportError:
            log.warning("uvloop is not installed; running on asyncio's own loop")
    return asyncio.run(_serve(config))


def warn_unavailable_modes(config: KafkaConfig) -> None:
    """Settings that ask for what this broker cannot do yet: it says so and runs without them."""
    controllers = sorted(
        name
        for name in config.controller_listener_names
        if any(item.startswith(f"{name}://") for item in config.listeners)
    )
    for name in controllers:
        log.warning(
            "listener %s is a KRaft controller listener: it is not opened (no KRaft controller yet)", name
        )


def _raise_open_files_limit() -> None:
    """Lift the soft limit on open files to the hard one: each segment holds three, each connection one."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError) as exc:
            log.warning("could not raise the open files limit from %d: %s", soft, exc)


async def _serve(config: KafkaConfig) -> int:
    from .broker import KafkaServer

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        broker = KafkaServer(config)  # reads the log dirs' identity (meta.properties)
    except Exception as exc:
        log.error("the broker could not start: %s", str(exc) or type(exc).__name__)
        return 1
    try:
        await broker.start()
    except Exception as exc:
        log.error("the broker could not start: %s", str(exc) or type(exc).__name__)
        await broker.stop()
        return 1
    listeners = ", ".join(f"{name}://{host}:{port}" for name, host, port in broker.bound_addresses)
    print(
        f"[SamsaServer id={config.node_id}] started (listeners {listeners}; log dirs {', '.join(config.log_dirs)})",
        flush=True,
    )
    await stop.wait()
    log.info("[SamsaServer id=%s] shutting down", config.node_id)
    problems = await broker.stop()
    if problems:
        for problem in problems:
            log.error("not durable at shutdown: %s", problem)
        print(
            f"[SamsaServer id={config.node_id}] shut down without a clean-shutdown marker "
            f"({len(problems)} problem(s), first: {problems[0]}); the next start recovers the logs",
            file=sys.stderr,
            flush=True,
        )
        return EXIT_UNCLEAN_SHUTDOWN
    print(f"[SamsaServer id={config.node_id}] shut down completed", flush=True)
    return 0
