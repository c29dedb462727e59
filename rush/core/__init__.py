"""The policy core: pure decisions, no I/O. Shared by the simulator and the daemon."""

from rush.core.config import CoreConfig, parse_threshold
from rush.core.policies import POLICY_CODES, Policy, parse_policy
from rush.core.schedule import schedule
from rush.core.snapshot import Decision, Decisions, PendingJob, RunningJob, RuntimeClass, Snapshot

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
