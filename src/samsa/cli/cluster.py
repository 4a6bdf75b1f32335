"""``samsa cluster up|add|down|status``: a ZooKeeper and N brokers on this machine (:mod:`samsa.cluster.launcher`).

samsa cluster up --brokers 3          # prints the bootstrap servers; the processes keep running
samsa cluster up --security           # SASL_SSL with a new CA, ACLs on; writes client.properties
samsa cluster add                     # one more broker (partitions move to it with reassign-partitions)
samsa cluster status                  # brokers, controller, partitions without a full ISR, moves, deletions
samsa cluster start --broker 2        # start a broker that stopped (crashed), on its log dir and port
samsa cluster restart --broker 2      # stop it (a clean stop) if it runs, then start it
samsa cluster down                    # every broker of the directory, one started by hand included
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from samsa.cluster.launcher import BrokerProcess
    from samsa.cluster.local_security import SecureSetup

DEFAULT_DIR = Path("/tmp/samsa-cluster")

dir_option = click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_DIR,
    show_default=True,
    help="where the cluster keeps its state, log dirs and ZooKeeper data",
)


@click.group()
def cluster() -> None:
    """Run a cluster of brokers over ZooKeeper on this machine."""


@cluster.command()
@click.option("--brokers", type=click.IntRange(1, 64), default=3, show_default=True)
@click.option("--zookeeper", metavar="HOST:PORT[/CHROOT]", help="use this ZooKeeper instead of starting one")
@click.option(
    "--port",
    "base_port",
    type=click.IntRange(0, 65535),
    default=9092,
    show_default=True,
    help="broker 1 listens on this port, broker 2 on the next... (0: free ports)",
)
@click.option(
    "--override", "overrides", multiple=True, metavar="KEY=VALUE", help="a broker property (repeatable)"
)
@click.option(
    "--security",
    is_flag=True,
    help="SASL_SSL between everyone (a new CA, PLAIN and SCRAM, ACLs with User:admin the super user); writes "
    "the client properties to connect with",
)
@dir_option
def up(
    brokers: int,
    zookeeper: str | None,
    base_port: int,
    overrides: tuple[str, ...],
    security: bool,
    directory: Path,
) -> None:
    """Start ZooKeeper (unless --zookeeper) and the brokers; print the bootstrap servers."""
    from samsa.cluster.launcher import STATE_FILE, ClusterError, LocalCluster

    if (directory / STATE_FILE).exists():
        raise click.ClickException(
            f"a cluster is already up in {directory}: `samsa cluster start --broker N --dir {directory}` starts "
            f"a broker that stopped, `samsa cluster down --dir {directory}` stops them all"
        )
    config: dict[str, str] = {}
    setup = _secure_setup(directory) if security else None
    if setup is not None:
        config.update(setup.broker_config)
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--override")
        config[key.strip()] = value
    try:
        local = LocalCluster(
            directory,
            zookeeper=zookeeper,
            broker_config=config,
            listener="SASL_SSL" if setup is not None else "PLAINTEXT",
            client_config=setup.client_config if setup is not None else None,
        ).up(brokers, base_port=base_port)
    except ClusterError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"ZooKeeper: {local.zookeeper_connect}")
    for broker in local.brokers:
        click.echo(
            f"broker {broker.broker_id}: {broker.address} (pid {broker.pid}, logs in {directory}/broker-{broker.broker_id})"
        )
    click.echo(f"bootstrap servers: {local.bootstrap_servers}")
    if setup is not None:
        _how_to_connect(setup, local.bootstrap_servers)


def _secure_setup(directory: Path) -> SecureSetup:
    from samsa.cluster.local_security import secure_setup

    try:
        import cryptography  # noqa: F401
    except ImportError:  # pragma: no cover - the security extra not installed
        raise click.ClickException(
            "--security needs the cryptography package: pip install cryptography"
        ) from None
    return secure_setup(directory)


def _how_to_connect(setup: SecureSetup, bootstrap: str) -> None:
    click.echo(f"security: SASL_SSL, CA {setup.ca_file}; users admin (super user) and alice (no ACL yet)")
    click.echo(f"  Kafka's tools and samsa's: --command-config {setup.client_properties}")
    click.echo(
        f"    samsa topics --bootstrap-server {bootstrap} --command-config {setup.client_properties} --list"
    )
    click.echo(f"  librdkafka (kcat -F, confluent-kafka): {setup.librdkafka_properties}")
    click.echo(f"    kcat -F {setup.librdkafka_properties} -b {bootstrap} -L")
    click.echo(f"  alice's PLAIN password: {setup.passwords['alice']}; let her read a topic with")
    click.echo(
        f"    samsa acls --bootstrap-server {bootstrap} --command-config {setup.client_properties} --add "
        "--allow-principal User:alice --operation Read --topic <topic>"
    )


@cluster.command()
@dir_option
def add(directory: Path) -> None:
    """Start one more broker with the same settings; it joins by registering, and holds no partition until
    `samsa reassign-partitions` moves some onto it."""
    from samsa.cluster.launcher import ClusterError, LocalCluster

    try:
        local = LocalCluster.find(directory)
        broker_id = local.add_broker()
    except ClusterError as exc:
        raise click.ClickException(str(exc)) from None
    broker = local.broker(broker_id)
    click.echo(
        f"broker {broker_id}: {broker.address} (pid {broker.pid}, logs in {directory}/broker-{broker_id})"
    )
    click.echo(f"bootstrap servers: {local.bootstrap_servers}")


broker_option = click.option(
    "--broker", "broker_id", type=int, required=True, help="the broker's id (broker-<id> in the directory)"
)


@cluster.command()
@broker_option
@dir_option
def start(broker_id: int, directory: Path) -> None:
    """Start one broker that is not running (after a crash, or a stop), on its log dir and port."""
    from samsa.cluster.launcher import ClusterError, LocalCluster

    try:
        local = LocalCluster.find(directory)
        pid = local.running_pid(broker_id)
        if pid:
            raise ClusterError(
                f"broker {broker_id} is running (pid {pid}): `samsa cluster restart --broker {broker_id}` "
                "restarts it"
            )
        local.start_broker(broker_id)
        local.wait_controller_known([broker_id])
    except ClusterError as exc:
        raise click.ClickException(str(exc)) from None
    _started(local.broker(broker_id), directory)


@cluster.command()
@broker_option
@dir_option
def restart(broker_id: int, directory: Path) -> None:
    """Stop one broker (a clean stop, moving its leaderships away) if it runs, whoever started it, then start
    it again on its log dir and port."""
    from samsa.cluster.launcher import ClusterError, LocalCluster

    try:
        local = LocalCluster.find(directory)
        stopped = local.restart_broker(broker_id)
    except ClusterError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(
        f"stopped broker {broker_id} (pid {stopped})" if stopped else f"broker {broker_id} was not running"
    )
    _started(local.broker(broker_id), directory)


def _started(broker: BrokerProcess, directory: Path) -> None:
    click.echo(
        f"broker {broker.broker_id}: {broker.address} (pid {broker.pid}, logs in {directory}/broker-{broker.broker_id})"
    )


@cluster.command()
@dir_option
def down(directory: Path) -> None:
    """Stop the brokers (a clean stop), then ZooKeeper if `up` started it."""
    from samsa.cluster.launcher import ClusterError, LocalCluster

    try:
        local = LocalCluster.find(directory)
    except ClusterError as exc:
        raise click.ClickException(str(exc)) from None
    started_zookeeper = local.started_zookeeper
    running = local.down()
    already = len(local.brokers) - running
    click.echo(
        f"stopped {running} brokers"
        + (f" ({already} had stopped already)" if already else "")
        + (" and ZooKeeper" if started_zookeeper else "")
    )


@cluster.command()
@dir_option
@click.option("--bootstrap", is_flag=True, help="print only the bootstrap servers (for scripts)")
def status(directory: Path, bootstrap: bool) -> None:
    """Brokers, the controller, partitions whose ISR is not every replica, moves and deletions under way."""
    from samsa.cluster.launcher import ClusterError, LocalCluster

    if bootstrap:
        try:
            click.echo(LocalCluster.find(directory).bootstrap_servers)
        except ClusterError as exc:
            raise click.ClickException(str(exc)) from None
        return
    from samsa.cluster.status import cluster_status

    try:
        local = LocalCluster.find(directory)
        report = cluster_status(local.zookeeper_connect)
    except ClusterError as exc:
        raise click.ClickException(str(exc)) from None
    for broker in local.brokers:
        alive = broker.broker_id in report.live
        state = "up" if alive else ("down" if not broker.pid else "not registered")
        marker = " (controller)" if broker.broker_id == report.controller else ""
        click.echo(f"broker {broker.broker_id}: {broker.address} {state}{marker}")
    click.echo(f"topics: {report.topics}, partitions: {report.partitions}")
    if not report.under_replicated:
        click.echo("every partition has its full ISR")
    for tp, leader, replicas, isr in report.under_replicated:
        click.echo(
            f"\tTopic: {tp.topic}\tPartition: {tp.partition}\tLeader: {leader}\tReplicas: {','.join(map(str, replicas))}\tIsr: {','.join(map(str, isr))}"
        )
    for tp, adding, removing in report.reassigning:
        click.echo(
            f"moving {tp.topic}-{tp.partition}: adding {','.join(map(str, adding)) or '-'}, removing {','.join(map(str, removing)) or '-'}"
        )
    for topic in report.deleting:
        click.echo(f"deleting {topic}: waiting for every replica to be deleted")
