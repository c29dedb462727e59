"""Fair-share from decayed usage: Slurm's classic factor, for the simulator to replay a site's
accounting (issue 22) and feed LINEAR's ``fairshare`` term.

What is implemented, and where it comes from:

* **Associations.** One per user (``by_group=False``: every user directly under the root), or
  one per (group, user) pair under one account per group (``by_group=True``), as a Slurm site
  with an account per unix group has. Raw shares default to 1 (equal shares).
* **Normalised shares** (Slurm, classic fair-share, https://slurm.schedmd.com/classic_fair_share.html):
  ``S = (S_user / S_siblings) * (S_account / S_sibling_accounts)``.
* **Decayed usage** (PriorityDecayHalfLife, PriorityCalcPeriod): every ``calc_period`` seconds
  the usage so far decays by ``2 ** (-calc_period / half_life)`` and the processor-seconds used
  in the period are added undecayed, as Slurm's decay thread does. Slurm decays by
  ``(1 - ln 2 / half_life) ** seconds``, the first-order form of the same factor (the
  difference is below 1e-6 relative for half-lives of an hour or more). Normalised usage
  ``U = usage / usage of all associations``.
* **Effective usage** (classic): ``UE = U`` under the root, and under an account
  ``UE = U + (UE_account - U) * S_user / S_siblings``.
* **Factor** (classic): ``F = 2 ** (-UE / S)``, in (0, 1]; 1 before anybody used anything.

Fair Tree (Slurm's default since 19.05) ranks associations instead; it is not implemented.
The kernels are small and separate: importing this module compiles nothing else.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
from numba import njit

from rush.errors import ConfigError

DEFAULT_CALC_PERIOD = 300.0  # Slurm's PriorityCalcPeriod default: 5 minutes


@dataclass(frozen=True)
class DecayedFairShare:
    """The fair-share settings of a replay: Slurm's PriorityDecayHalfLife and
    PriorityCalcPeriod (seconds), associations by user or by (group, user), raw shares
    per user id and per group id (missing: 1)."""

    half_life: float
    calc_period: float = DEFAULT_CALC_PERIOD
    by_group: bool = False
    user_shares: Mapping[int, float] = field(default_factory=dict)
    group_shares: Mapping[int, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name, value, example in (
            ("half_life", self.half_life, "604800 (7 days, Slurm's default)"),
            ("calc_period", self.calc_period, "300 (Slurm's default)"),
        ):
            if not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
                raise ConfigError(
                    f"the fair-share {name} must be a finite number of seconds > 0, got {value!r}",
                    where=f"fair-share {name}",
                    fix=f"e.g. {example}",
                )
        for name, shares in (("user_shares", self.user_shares), ("group_shares", self.group_shares)):
            for key, value in shares.items():
                if not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
                    raise ConfigError(
                        f"the raw shares of {key!r} must be a finite number > 0, got {value!r}",
                        where=f"fair-share {name}[{key!r}]",
                        fix="give every association a positive share (1 for equal shares)",
                    )


class FairShareTree(NamedTuple):
    """The associations as the compiled loop sees them (A associations, G accounts; G = 0:
    every association directly under the root)."""

    job_assoc: np.ndarray  # int64 per job: its association
    assoc_group: np.ndarray  # int64 per association: its account (-1: under the root)
    norm_share: np.ndarray  # float64 per association: S
    local_share: np.ndarray  # float64 per association: S_user / S_siblings in its account
    n_groups: int
    decay: float  # usage kept after one period: 2 ** (-calc_period / half_life)
    period: float  # calc_period; inf: no fair-share model (nothing ever ticks)
    first_tick: float


class UsageLedger(NamedTuple):
    """What the replay accumulates: decayed usage per association, the current period's
    processor-seconds, the factors, ``clock`` = [next tick, last tick], and the factor each
    job is ordered with (its association's at the last tick before it queued or since)."""

    usage: np.ndarray
    fresh: np.ndarray
    factor: np.ndarray
    group_usage: np.ndarray
    clock: np.ndarray
    job_factor: np.ndarray


@dataclass(frozen=True)
class Associations:
    """Who each association is: user id and group id (-1 when by user only), its normalised
    share S and its part of its account's share (S_user / S_siblings; 1 under the root), and
    each job's association."""

    user: np.ndarray
    group: np.ndarray
    norm_share: np.ndarray
    local_share: np.ndarray
    job_assoc: np.ndarray


def associations(user: np.ndarray, group: np.ndarray | None, model: DecayedFairShare) -> Associations:
    """The trace's associations (users, or (group, user) pairs) and their normalised shares."""
    user = np.asarray(user, dtype=np.int64)
    if model.by_group:
        if group is None or len(group) != len(user):
            raise ConfigError(
                "fair-share by group needs each job's group",
                where="workload.extra['group']",
                fix="read a trace that has groups (SWF column 13), or give fair-share by user",
            )
        group = np.asarray(group, dtype=np.int64)
    else:
        group = np.full(len(user), -1, dtype=np.int64)
    pairs, job_assoc = np.unique(np.stack([group, user], axis=1), axis=0, return_inverse=True)
    assoc_group, assoc_user = pairs[:, 0], pairs[:, 1]
    job_assoc = job_assoc.reshape(-1).astype(np.int64)
    raw = np.array([model.user_shares.get(int(u), 1.0) for u in assoc_user], dtype=np.float64)
    if not model.by_group:
        return Associations(assoc_user, assoc_group, raw / raw.sum(), np.ones(len(raw)), job_assoc)
    groups, slot = np.unique(assoc_group, return_inverse=True)
    group_raw = np.array([model.group_shares.get(int(g), 1.0) for g in groups], dtype=np.float64)
    local = raw / np.bincount(slot, weights=raw)[slot]
    share = local * (group_raw / group_raw.sum())[slot]
    return Associations(assoc_user, assoc_group, share, local, job_assoc)


def fair_share_tree(found: Associations, model: DecayedFairShare, first_submit: float) -> FairShareTree:
    """The compiled loop's view of ``found`` under ``model``; the first tick is one period
    after the first submit."""
    if model.by_group:
        groups, slot = np.unique(found.group, return_inverse=True)
        assoc_group, n_groups = slot.reshape(-1).astype(np.int64), len(groups)
    else:
        assoc_group, n_groups = np.full(len(found.user), -1, dtype=np.int64), 0
    return FairShareTree(
        np.ascontiguousarray(found.job_assoc, dtype=np.int64),
        assoc_group,
        np.ascontiguousarray(found.norm_share, dtype=np.float64),
        np.ascontiguousarray(found.local_share, dtype=np.float64),
        n_groups,
        2.0 ** (-model.calc_period / model.half_life),
        float(model.calc_period),
        float(first_submit) + float(model.calc_period),
    )


def no_fair_share() -> FairShareTree:
    """No model: the loop never ticks and the jobs keep their static factors."""
    empty_i, empty_f = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    return FairShareTree(empty_i, empty_i, empty_f, empty_f, 0, 1.0, np.inf, np.inf)


@njit(cache=True, nogil=True)
def new_ledger(tree: FairShareTree, jobs: int) -> UsageLedger:
    """No usage yet: every factor is 1."""
    count = len(tree.norm_share)
    clock = np.empty(2)
    clock[0] = tree.first_tick
    clock[1] = -np.inf
    return UsageLedger(
        np.zeros(count), np.zeros(count), np.ones(count), np.zeros(tree.n_groups), clock, np.ones(jobs)
    )


@njit(cache=True, nogil=True)
def charge(
    ledger: UsageLedger, tree: FairShareTree, job: int, procs: int, since: float, until: float
) -> None:
    """Add ``job``'s processor-seconds from max(``since``, last tick) to ``until`` to this period."""
    begin = max(since, ledger.clock[1])
    if until > begin:
        ledger.fresh[tree.job_assoc[job]] += procs * (until - begin)


@njit(cache=True, nogil=True)
def classic_factors(usage: np.ndarray, tree: FairShareTree, group_usage: np.ndarray, out: np.ndarray) -> None:
    """``out[a] = 2 ** (-UE_a / S_a)`` (module docstring) for decayed ``usage``."""
    total = 0.0
    for a in range(len(usage)):
        total += usage[a]
    if total <= 0.0:
        out[:] = 1.0
        return
    if tree.n_groups > 0:
        group_usage[:] = 0.0
        for a in range(len(usage)):
            group_usage[tree.assoc_group[a]] += usage[a]
    for a in range(len(usage)):
        effective = usage[a] / total
        if tree.n_groups > 0:
            account = group_usage[tree.assoc_group[a]] / total
            effective += (account - effective) * tree.local_share[a]
        out[a] = 2.0 ** (-effective / tree.norm_share[a])


@njit(cache=True, nogil=True)
def close_period(ledger: UsageLedger, tree: FairShareTree) -> None:
    """At the tick ``clock[0]``: decay the usage, add the period's, recompute the factors."""
    for a in range(len(ledger.usage)):
        ledger.usage[a] = ledger.usage[a] * tree.decay + ledger.fresh[a]
        ledger.fresh[a] = 0.0
    classic_factors(ledger.usage, tree, ledger.group_usage, ledger.factor)
    ledger.clock[1] = ledger.clock[0]
    ledger.clock[0] += tree.period
