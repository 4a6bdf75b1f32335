"""The import-linter contracts in pyproject.toml are live: on a copy of the sources, an import against the layers
(or into what Spark and the client must not see) breaks ``lint-imports``, and the untouched copy keeps every
contract. The oracle is lint-imports' exit code and the contract it names."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _copy(tmp_path: Path) -> Path:
    shutil.copytree(
        ROOT / "src" / "samsa", tmp_path / "src" / "samsa", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def _lint(project: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(project / "src")}  # the copy shadows the installed samsa
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=project, env=env, capture_output=True, text=True, timeout=120
    )


def test_the_untouched_copy_keeps_every_contract(tmp_path: Path) -> None:
    result = _lint(_copy(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "imported", "contract"),
    [
        ("records", "samsa.storage", "the layers import downwards only"),
        ("storage", "samsa.broker.replica_manager", "the layers import downwards only"),
        ("protocol", "samsa.storage.topic", "the layers import downwards only"),  # siblings are independent
        ("coordinator", "samsa.broker", "the layers import downwards only"),
        ("broker", "samsa.embedded", "the layers import downwards only"),
        ("clock", "samsa.records", "the layers import downwards only"),
        ("spark", "samsa.storage.log_manager", "spark reaches brokers through the client"),
        ("spark/sink", "samsa.spark.source", "spark's source above its sink"),  # the cycle that was
        ("client", "samsa.storage.topic", "the client talks to brokers through the protocol only"),
        ("records", "asyncio", "records and protocol are sans-IO"),
        # the three cycles there were: the server as a service locator, the controller's helpers, the cleaner
        ("broker/context", "samsa.broker.broker", "no import cycle inside broker, cluster or storage"),
        ("broker/zk_broker", "samsa.broker.broker", "no import cycle inside broker, cluster or storage"),
        (
            "cluster/elections",
            "samsa.cluster.controller",
            "no import cycle inside broker, cluster or storage",
        ),
        ("storage/cleaner", "samsa.storage.log_cleaner", "no import cycle inside broker, cluster or storage"),
        (
            "broker/handlers/metadata",
            "samsa.broker.zk_broker",
            "handlers see services by name, not the server",
        ),
    ],
)
def test_an_import_against_the_contracts_breaks_them(
    tmp_path: Path, module: str, imported: str, contract: str
) -> None:
    project = _copy(tmp_path)
    package = project / "src" / "samsa" / module
    target = package / "_probe.py" if package.is_dir() else package.with_suffix(".py")
    with open(target, "a", encoding="utf-8") as handle:
        handle.write(f"\nimport {imported}  # noqa\n")
    result = _lint(project)
    assert result.returncode != 0, result.stdout
    verdict = _verdict(result.stdout, contract)
    assert verdict == "BROKEN", result.stdout


@pytest.mark.parametrize(
    ("module", "imported"),
    [
        ("broker/metadata_store", "samsa.broker.broker"),
        ("cluster/topic_deletion", "samsa.cluster.controller"),
    ],
)
def test_an_import_for_type_checking_only_counts_as_a_cycle_too(
    tmp_path: Path, module: str, imported: str
) -> None:
    """A module that names its caller's type in an annotation still depends on it: the seams are protocols of the
    lower module (``services``, ``controller_context``), not ``if TYPE_CHECKING`` imports of the higher one."""
    project = _copy(tmp_path)
    with open(project / "src" / "samsa" / f"{module}.py", "a", encoding="utf-8") as handle:
        handle.write(f"\nif TYPE_CHECKING:\n    import {imported}  # noqa\n")
    result = _lint(project)
    assert result.returncode != 0, result.stdout
    assert _verdict(result.stdout, "no import cycle inside broker, cluster or storage") == "BROKEN", (
        result.stdout
    )


def _verdict(report: str, contract: str) -> str:
    """KEPT or BROKEN, as lint-imports reports the contract whose name starts with ``contract``."""
    words = " ".join(report.split())  # long names wrap over lines
    after = words[words.index(contract + " ") if contract + " " in words else words.index(contract) :]
    return min(("KEPT", "BROKEN"), key=lambda v: after.find(v) if v in after else len(after))
