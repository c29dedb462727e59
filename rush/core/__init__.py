"""The policy core: pure decisions, no I/O. Shared by the simulator and the daemon.

The names below are loaded on first use (PEP 562): importing a light submodule such as
``rush.core.names`` must not pull in numba, which costs about half a second at start-up.

Import the function ``schedule`` as ``from rush.core.schedule import schedule``: once the
submodule ``rush.core.schedule`` is imported, Python binds that name on this package to the
module, so ``from rush.core import schedule`` then gives the module, not the function.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

_EXPORTS: dict[str, str] = {
    "CoreConfig": "rush.core.config",
    "parse_threshold": "rush.core.config",
    "POLICY_CODES": "rush.core.names",
    "Policy": "rush.core.policies",
    "parse_policy": "rush.core.policies",
    "schedule": "rush.core.schedule",
    "Decision": "rush.core.snapshot",
    "Decisions": "rush.core.snapshot",
    "PendingJob": "rush.core.snapshot",
    "RunningJob": "rush.core.snapshot",
    "RuntimeClass": "rush.core.snapshot",
    "Snapshot": "rush.core.snapshot",
}

__all__ = [
    "CoreConfig",
    "Decision",
    "Decisions",
    "POLICY_CODES",
    "PendingJob",
    "Policy",
    "RunningJob",
    "RuntimeClass",
    "Snapshot",
    "parse_policy",
    "parse_threshold",
    "schedule",
]


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'rush.core' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this hook
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


if TYPE_CHECKING:
    from rush.core.config import CoreConfig, parse_threshold
    from rush.core.names import POLICY_CODES
    from rush.core.policies import Policy, parse_policy
    from rush.core.schedule import schedule
    from rush.core.snapshot import Decision, Decisions, PendingJob, RunningJob, RuntimeClass, Snapshot
