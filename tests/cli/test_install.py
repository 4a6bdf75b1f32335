"""``pip install .`` as a user who only wants the broker and tools does it: a wheel built from the sources, installed
into a clean virtualenv, gives a ``samsa`` that serves and talks to its broker, with the runtime dependencies only.

Building and installing needs the package index (setuptools for the build, Samsa's dependencies): without one
the test is skipped, saying so. Slow (a virtualenv, a build, an install: 15-60 s).
"""

from __future__ import annotations

import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from samsa.cluster.launcher import accepts_connections

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = {
    "samsa",
    "click",
    "cramjam",
    "crc32c",
    "kazoo",
    "rich",
    "markdown-it-py",
    "mdurl",
    "pygments",
    "prometheus_client",
}
OFFLINE_HINTS = (
    "No matching distribution",
    "Could not find a version",
    "NewConnectionError",
    "Network is unreachable",
)


def run(args: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=400)


def pip(venv: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    done = run([str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check", *args], cwd)
    if done.returncode != 0 and any(hint in done.stderr for hint in OFFLINE_HINTS):
        pytest.skip(f"no package index reachable: {done.stderr.strip().splitlines()[-1]}")
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def copy_sources(tmp_path: Path) -> Path:
    """What ``pip install .`` reads of a clone, copied, so that a build leaves nothing in the working tree."""
    source = tmp_path / "source"
    shutil.copytree(ROOT / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    return source


def build_wheel(tmp_path: Path, venv: Path) -> Path:
    """Samsa's wheel, built from a copy of the sources."""
    source = copy_sources(tmp_path)
    pip(venv, "wheel", "--no-deps", "-q", "-w", str(tmp_path / "wheels"), str(source))
    (wheel,) = (tmp_path / "wheels").glob("samsa-*.whl")
    return wheel


def serve_and_create_a_topic(samsa: str, tmp_path: Path) -> None:
    """``samsa serve`` from the install accepts connections, and ``samsa topics`` creates a topic on it."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    broker = subprocess.Popen(
        [samsa, "serve", "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}", "--override",
         f"log.dirs={tmp_path / 'logs'}"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not accepts_connections(port):
            assert broker.poll() is None and time.monotonic() < deadline, "the broker did not start"
            time.sleep(0.01)
        created = run(
            [samsa, "topics", "--bootstrap-server", f"127.0.0.1:{port}", "--create", "--topic", "t"]
        )
        assert created.stdout == "Created topic t.\n", created.stderr
    finally:
        broker.send_signal(signal.SIGTERM)
        assert broker.wait(30) == 0


def test_a_wheel_installs_a_working_samsa_with_runtime_dependencies_only(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    assert run([sys.executable, "-m", "venv", str(venv)]).returncode == 0
    wheel = build_wheel(tmp_path, venv)
    pip(venv, "install", "-q", str(wheel))

    frozen = pip(venv, "freeze", "--all").stdout.splitlines()
    installed = {re.split(r"==| @ ", line)[0].lower() for line in frozen}
    assert installed - {"pip", "setuptools", "wheel"} == {name.lower() for name in RUNTIME}
    serve_and_create_a_topic(str(venv / "bin" / "samsa"), tmp_path)


def test_pipx_installs_a_working_samsa_command(tmp_path: Path) -> None:
    """``pipx install``: the ``samsa`` command in its own environment, on the user's PATH (here a directory of
    the test's own: ``PIPX_HOME`` and ``PIPX_BIN_DIR``)."""
    pipx = shutil.which("pipx")
    if pipx is None:
        pytest.skip("pipx is not installed (make system-deps installs it)")
    source = copy_sources(tmp_path)  # ``pipx install .`` in a clone, as the README says
    home, bin_dir = tmp_path / "pipx-home", tmp_path / "pipx-bin"
    done = subprocess.run(
        [pipx, "install", str(source)],
        capture_output=True, text=True, timeout=400,
        env={"PATH": f"{bin_dir}:/usr/bin:/bin", "PIPX_HOME": str(home), "PIPX_BIN_DIR": str(bin_dir),
             "HOME": str(tmp_path)},
    )  # fmt: skip
    if done.returncode != 0 and any(hint in done.stdout + done.stderr for hint in OFFLINE_HINTS):
        pytest.skip("no package index reachable")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    serve_and_create_a_topic(str(bin_dir / "samsa"), tmp_path)
