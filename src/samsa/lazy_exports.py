"""A package's names imported from their modules on first use (PEP 562), so importing one piece of the package
does not load the rest: ``samsa.records`` and ``samsa.storage`` use it to keep a broker's start-up small."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, namespace: dict[str, Any], exports: Mapping[str, tuple[str, ...]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``: each name of ``exports`` (module -> names) is imported
    from its module when first asked for, then kept in the package's ``namespace``."""
    module_of = {name: module for module, names in exports.items() for name in names}
    # __all__ stays a literal list for the type checker and linter: it must name what ``exports`` gives, no more
    if set(namespace.get("__all__", module_of)) != set(module_of):
        raise ImportError(f"{package}.__all__ and its lazy exports name different things")

    def __getattr__(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *module_of})

    return __getattr__, __dir__
