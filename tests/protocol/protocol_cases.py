from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import samsa.protocol.messages as messages_pkg

SHARED = Path(__file__).resolve().parents[3] / "shared"
DESCRIPTORS = SHARED / "kafka-messages"


def all_message_classes() -> list[type]:
    """Every top-level generated message class (request, response and data), in a stable order."""
    found = []
    for info in sorted(pkgutil.iter_modules(messages_pkg.__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"samsa.protocol.messages.{info.name}")
        for name in sorted(vars(module)):
            obj = getattr(module, name)
            if isinstance(obj, type) and obj.__module__ == module.__name__ and hasattr(obj, "VALID_VERSIONS"):
                found.append(obj)
    return found


def message_versions() -> list[tuple[type, int]]:
    return [
        (cls, v)
        for cls in all_message_classes()
        for v in range(cls.VALID_VERSIONS[0], cls.VALID_VERSIONS[1] + 1)
    ]
