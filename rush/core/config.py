"""Configuration of one scheduling core: policy, backfilling, thresholds, limits."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Literal

from rush.core.names import BACKFILL_MODES, ESTIMATE_RULE_L2, ESTIMATE_RULES, PREDICTION_CORRECTIONS
from rush.core.policies import Policy, parse_policy
from rush.core.priority_values import MAX_VALUE
from rush.core.resources import PLACEMENTS
from rush.errors import PolicyError

BackfillMode = Literal["easy", "conservative", "none"]
DEFAULT_THRESHOLD = 200_000.0


@dataclass(frozen=True)
class CoreConfig:
    """Everything the core needs besides the snapshot.

    * ``threshold``: starvation threshold T in seconds; a job that has waited strictly more
      than T goes ahead of all others, FCFS among them. ``None`` disables it.
    * ``backfill_policy``: order of the backfill scan; ``None`` means the primary policy.
    * ``use_classes``: predicted-small jobs go before predicted-large ones (after starved jobs).
    * ``divider``: runtime class divider in seconds; with ``kill_false_small`` an opted-in
      (idempotent) predicted-small job that runs past it is killed and requeued as large.
    * ``skip_limit``: a job predicted to suffer variability is skipped at most this many times.
    * ``priority_weight``: scale the RJMS priority values into [1, priority_weight].
    * ``max_jobs_considered``: a live pass considers at most this many pending jobs besides
      those holding a standing reservation (:mod:`rush.core.pass_budget`); None: all.
    * ``prediction_correction``: how a running job's estimate is corrected once it outlives
      its predicted runtime (``none``, ``request``, ``stepwise``;
      :mod:`rush.core.runtime_predictions`); kills stay at the request.
    * ``estimate_rule``: how the start estimates project a queued job with predicted quantiles
      (:data:`rush.core.names.ESTIMATE_RULES`, :func:`rush.core.remaining_runtime.rule_upper`):
      ``L2`` (the default) or ``T``; only the estimates read it, never a decision.
    * ``rjms_priority_first``: order by the RJMS's priority (``PendingJob.rjms_priority``,
      highest first) before the policy, which decides among equal priorities (rush as the
      RJMS's scheduler: Flux's urgency, holds and priority plugins keep their meaning).
    * ``placement``: where a job goes on a cluster with nodes (:data:`rush.core.resources.PLACEMENTS`):
      ``first-fit`` (the default, as RUSH's Flux matched), ``topology`` or ``variability``.
    """

    policy: Policy = field(default_factory=lambda: Policy("FCFS"))
    backfill: BackfillMode = "easy"
    backfill_policy: Policy | None = None
    threshold: float | None = DEFAULT_THRESHOLD
    use_classes: bool = False
    divider: float | None = None
    kill_false_small: bool = False
    max_requeues: int = 1
    skip_limit: int = 10
    # Seconds; > 0 rounds waits down to 0, Q, 2Q, 4Q, ... for time-dependent policies, so
    # live priority values change only on that schedule (0: exact waits, the default offline).
    wait_quantum: float = 0.0
    placement: str = "first-fit"
    prediction_correction: str = "none"
    estimate_rule: str = ESTIMATE_RULE_L2
    # Beside a site's own priorities: the values are scaled into [1, priority_weight]
    # (rush.core.priority_values.scaled); None: the full range, rush's order overrides them.
    priority_weight: int | None = None
    # A live pass considers at most this many pending jobs (beyond those holding a standing
    # reservation), as Slurm's bf_max_job_test; the rest wait for the next pass
    # (rush.core.pass_budget). None: every job.
    max_jobs_considered: int | None = None
    rjms_priority_first: bool = False

    def __post_init__(self) -> None:
        if self.max_jobs_considered is not None and not (
            isinstance(self.max_jobs_considered, int)
            and not isinstance(self.max_jobs_considered, bool)
            and self.max_jobs_considered >= 1
        ):
            raise PolicyError(
                f"max_jobs_considered {self.max_jobs_considered!r} is not an integer >= 1",
                where="policy.max_jobs_considered",
                fix="a number of jobs, e.g. 10000 (leave it out to consider every job)",
            )
        if self.priority_weight is not None and not (
            isinstance(self.priority_weight, int) and 1 <= self.priority_weight <= MAX_VALUE
        ):
            raise PolicyError(
                f"priority_weight {self.priority_weight!r} is not an integer in [1, {MAX_VALUE}]",
                where="site.priority_weight",
                fix=f"an integer from 1 to {MAX_VALUE} (a larger one overflows Slurm's 32-bit SiteFactor)",
            )
        if self.placement not in PLACEMENTS:
            raise PolicyError(
                f"unknown placement {self.placement!r}",
                where="placement",
                fix=f"use one of: {', '.join(PLACEMENTS)}",
            )
        if self.prediction_correction not in PREDICTION_CORRECTIONS:
            raise PolicyError(
                f"unknown prediction correction {self.prediction_correction!r}",
                where="prediction_correction",
                fix=f"use one of: {', '.join(PREDICTION_CORRECTIONS)}",
            )
        if self.estimate_rule not in ESTIMATE_RULES:
            raise PolicyError(
                f"unknown estimate rule {self.estimate_rule!r}",
                where="policy.estimate_rule",
                fix=f"use one of: {', '.join(ESTIMATE_RULES)}",
            )
        if self.backfill not in BACKFILL_MODES:
            raise PolicyError(
                f"unknown backfilling {self.backfill!r}",
                where="--backfill",
                fix=f"use one of: {', '.join(BACKFILL_MODES)}",
            )
        if self.threshold is not None:
            parse_threshold(self.threshold)
        if self.kill_false_small and (self.divider is None or self.divider <= 0):
            raise PolicyError(
                "false-small kills need a positive divider", where="divider", fix="train a runtime classifier"
            )
        if self.skip_limit < 0:
            raise PolicyError("skip_limit must be >= 0", where="skip_limit")
        if not (math.isfinite(self.wait_quantum) and self.wait_quantum >= 0):
            raise PolicyError(
                f"wait quantum must be a finite number of seconds >= 0, not {self.wait_quantum!r}",
                where="wait_quantum",
                fix="e.g. 60 (live default) or 0 (exact waits)",
            )
        if self.divider is not None and not (math.isfinite(self.divider) and self.divider > 0):
            raise PolicyError(
                f"divider must be a finite number of seconds > 0, not {self.divider!r}", where="divider"
            )

    @property
    def scan_policy(self) -> Policy:
        return self.backfill_policy or self.policy

    @classmethod
    def from_names(
        cls,
        policy: str | Policy = "FCFS",
        backfill: str = "easy",
        threshold: float | str | None = DEFAULT_THRESHOLD,
        backfill_policy: str | Policy | None = None,
        **kwargs: object,
    ) -> CoreConfig:
        """Policies by name, or already parsed (a LEARNED policy is: its file is read above the core)."""
        return cls(
            policy=_parsed(policy),
            backfill=backfill,  # type: ignore[arg-type]
            backfill_policy=_parsed(backfill_policy) if backfill_policy else None,
            threshold=parse_threshold(threshold),
            **kwargs,  # type: ignore[arg-type]
        )


def _parsed(policy: str | Policy) -> Policy:
    return policy if isinstance(policy, Policy) else parse_policy(policy)


def parse_threshold(value: float | str | None) -> float | None:
    """Seconds >= 0 (finite), or None for no threshold; booleans and NaN are refused."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise PolicyError(
            f"starvation threshold {value!r} is not a number of seconds",
            where="--threshold",
            fix="give seconds, e.g. 200000, or none",
        )
    if isinstance(value, str):
        if value.strip().lower() in ("none", "off", ""):
            return None
        try:
            value = float(value)
        except ValueError:
            raise PolicyError(
                f"bad starvation threshold {value!r}",
                where="--threshold",
                fix="give seconds, e.g. 200000, or none",
            ) from None
    # A bool is an int to Python: `threshold = true` must not become 1 s; NaN compares false with
    # everything and inf never triggers, so both would silently disable the threshold.
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise PolicyError(
            f"bad starvation threshold {value!r}",
            where="--threshold",
            fix="give a finite number of seconds, e.g. 200000, or none to disable it",
        )
    if not (math.isfinite(value) and value >= 0):
        raise PolicyError(
            f"starvation threshold must be a finite number of seconds >= 0, not {value!r}",
            where="--threshold",
            fix="e.g. 200000, or none to disable it",
        )
    return float(value)
