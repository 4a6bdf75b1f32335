"""The controller's helpers use its public surface (``cluster.controller_context.ControllerContext``) and nothing
private of any other object; a handler reaches the broker only through the services its context carries. The
oracle is the syntax tree of each module: an attribute starting with one underscore read on anything but ``self``
or ``cls``, or a handler naming ``ctx.broker``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "samsa"
CONTROLLER_HELPERS = ["cluster/elections.py", "cluster/reassignment.py", "cluster/topic_deletion.py"]


def _foreign_private_reads(path: Path) -> list[str]:
    """``x._name`` in ``path`` where ``x`` is not ``self`` or ``cls`` (dunders aside), as ``line: source``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not node.attr.startswith("_") or node.attr.startswith("__"):
            continue
        if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            continue
        found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


@pytest.mark.parametrize("module", CONTROLLER_HELPERS)
def test_a_controller_helper_touches_no_private_member(module: str) -> None:
    assert _foreign_private_reads(SRC / module) == []


def test_the_check_sees_a_private_member_reached_through_an_attribute(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("async def f(self):\n    await self.controller._write_state(1)\n    self._ok = 1\n")
    assert _foreign_private_reads(probe) == ["2: self.controller._write_state"]


@pytest.mark.parametrize("module", sorted(p.name for p in (SRC / "broker" / "handlers").glob("*.py")))
def test_a_handler_reaches_the_broker_through_its_services(module: str) -> None:
    tree = ast.parse((SRC / "broker" / "handlers" / module).read_text(encoding="utf-8"))
    reached = [
        f"{node.lineno}: {ast.unparse(node)}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr in ("broker", "server")
        and ast.unparse(node.value) == "ctx"
    ]
    assert reached == []
