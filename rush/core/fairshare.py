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
  in the period are added undecayed, as the decay thread of Slurm's priority/multifactor
  plugin does. Slurm decays by ``(1 - 0.693 / half_life) ** seconds``, the first-order form of
  the same factor: the two differ by a relative ``(ln 2) ** 2 / (2 * half_life)`` per
  half-life (4e-7 for Slurm's default 7 days). Normalised usage
  ``U = usage / usage of all associations``. A sacct trace's groups are Slurm accounts.
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
    ordered: bool  # a policy reads the factors (else only usage and the factors at starts)


class UsageLedger(NamedTuple):
    """What the replay accumulates, per association: decayed usage kept *scaled* by
    ``D ** -k`` after tick k (D: one period's decay), so that a tick adds the period's usage
    without touching the old (normalised usage, all the factor needs, is scale-free); the same
    for accounts and the total; processors running now (``rate``) and the current period's
    corrections for runs that started or ended inside it (``fresh``); the factors, computed
    when a job needs one (``stamp``: the epoch they were computed in). A tick visits only the
    associations in ``active[:active_count[0]]`` (running jobs or corrections this period;
    ``listed`` marks them): a site has hundreds of users, a few dozen run at once.

    ``clock`` = [next tick, last tick, scale D ** -k, epoch]. ``job_factor``: the factor each
    job is ordered with (its association's at the last tick before it queued, or since).
    """

    usage: np.ndarray
    group_usage: np.ndarray
    total: np.ndarray  # one entry: all associations' scaled usage
    rate: np.ndarray
    fresh: np.ndarray
    factor: np.ndarray
    stamp: np.ndarray
    clock: np.ndarray
    job_factor: np.ndarray
    active: np.ndarray
    active_count: np.ndarray
    listed: np.ndarray


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
    # One key per (group, user) pair, in (group, user) order (np.unique over rows is slower).
    users, user_slot = np.unique(user, return_inverse=True)
    groups, group_slot = np.unique(group, return_inverse=True)
    keys, job_assoc = np.unique(
        group_slot.reshape(-1) * len(users) + user_slot.reshape(-1), return_inverse=True
    )
    assoc_group, assoc_user = groups[keys // max(len(users), 1)], users[keys % max(len(users), 1)]
    job_assoc = job_assoc.reshape(-1).astype(np.int64)
    raw = np.array([model.user_shares.get(int(u), 1.0) for u in assoc_user], dtype=np.float64)
    if not model.by_group:
        return Associations(assoc_user, assoc_group, raw / raw.sum(), np.ones(len(raw)), job_assoc)
    groups, slot = np.unique(assoc_group, return_inverse=True)
    group_raw = np.array([model.group_shares.get(int(g), 1.0) for g in groups], dtype=np.float64)
    local = raw / np.bincount(slot, weights=raw)[slot]
    share = local * (group_raw / group_raw.sum())[slot]
    return Associations(assoc_user, assoc_group, share, local, job_assoc)


def fair_share_tree(
    found: Associations, model: DecayedFairShare, first_submit: float, ordered: bool = True
) -> FairShareTree:
    """The compiled loop's view of ``found`` under ``model``; the first tick is one period
    after the first submit. ``ordered``: a policy of the run reads the factors."""
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
        bool(ordered),
    )


def no_fair_share() -> FairShareTree:
    """No model: the loop never ticks and the jobs keep their static factors."""
    empty_i, empty_f = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    return FairShareTree(empty_i, empty_i, empty_f, empty_f, 0, 1.0, np.inf, np.inf, False)


@njit(cache=True, nogil=True)
def new_ledger(tree: FairShareTree, jobs: int) -> UsageLedger:
    """No usage yet: every factor is 1."""
    count = len(tree.norm_share)
    clock = np.empty(4)
    clock[0] = tree.first_tick
    clock[1] = tree.first_tick - tree.period if tree.period < np.inf else -np.inf
    clock[2] = 1.0
    clock[3] = 0.0
    return UsageLedger(
        np.zeros(count),
        np.zeros(tree.n_groups),
        np.zeros(1),
        np.zeros(count),
        np.zeros(count),
        np.ones(count),
        np.full(count, -1.0),  # no factor computed yet
        clock,
        np.ones(jobs),
        np.zeros(count, dtype=np.int64),
        np.zeros(1, dtype=np.int64),
        np.zeros(count, dtype=np.bool_),
    )


@njit(cache=True, nogil=True, inline="always")
def _listed(ledger: UsageLedger, a: int) -> None:
    if not ledger.listed[a]:
        ledger.listed[a] = True
        ledger.active[ledger.active_count[0]] = a
        ledger.active_count[0] += 1


@njit(cache=True, nogil=True, inline="always")  # per job: no call, no reference counts
def run_starts(ledger: UsageLedger, tree: FairShareTree, job: int, procs: int, now: float) -> None:
    """``job`` holds ``procs`` processors from ``now``: its association is charged from here on."""
    a = tree.job_assoc[job]
    ledger.rate[a] += procs
    ledger.fresh[a] -= procs * (now - ledger.clock[1])  # the rate charges from the last tick
    _listed(ledger, a)


@njit(cache=True, nogil=True, inline="always")  # per job: no call, no reference counts
def run_ends(ledger: UsageLedger, tree: FairShareTree, job: int, procs: int, now: float) -> None:
    """``job``'s run ends at ``now`` (finished or killed: the processors were used either way)."""
    a = tree.job_assoc[job]
    ledger.rate[a] -= procs
    ledger.fresh[a] += procs * (now - ledger.clock[1])
    _listed(ledger, a)


@njit(cache=True, nogil=True, inline="always")  # per tick: no reference counts
def close_period(ledger: UsageLedger, tree: FairShareTree) -> None:
    """At the tick ``clock[0]``: the period's processor-seconds join the decayed usage."""
    tick = ledger.clock[0]
    span = tick - ledger.clock[1]
    scale = ledger.clock[2] / tree.decay  # D ** -k at this tick k
    added = 0.0
    kept = 0
    for k in range(ledger.active_count[0]):
        a = ledger.active[k]
        used = ledger.fresh[a] + ledger.rate[a] * span
        ledger.usage[a] += used * scale
        if tree.n_groups > 0:
            ledger.group_usage[tree.assoc_group[a]] += used * scale
        added += used * scale
        ledger.fresh[a] = 0.0
        if ledger.rate[a] > 0:  # still running: charged at the next tick too
            ledger.active[kept] = a
            kept += 1
        else:
            ledger.listed[a] = False
    ledger.active_count[0] = kept
    ledger.total[0] += added
    if scale > 1e100:  # keep the scaled sums finite: fold the scale back in
        ledger.usage[:] /= scale
        ledger.group_usage[:] /= scale
        ledger.total[0] /= scale
        scale = 1.0
    ledger.clock[1] = tick
    ledger.clock[0] = tick + tree.period
    ledger.clock[2] = scale
    ledger.clock[3] += 1.0


@njit(cache=True, nogil=True, inline="always")  # per job: no call, no reference counts
def association_factor(ledger: UsageLedger, tree: FairShareTree, a: int) -> float:
    """Association ``a``'s classic factor ``2 ** (-UE / S)`` (module docstring), computed once
    per period."""
    if ledger.stamp[a] == ledger.clock[3]:
        return ledger.factor[a]
    value = 1.0
    total = ledger.total[0]
    if total > 0.0:
        effective = ledger.usage[a] / total
        if tree.n_groups > 0:
            account = ledger.group_usage[tree.assoc_group[a]] / total
            effective += (account - effective) * tree.local_share[a]
        value = 2.0 ** (-effective / tree.norm_share[a])
    ledger.factor[a] = value
    ledger.stamp[a] = ledger.clock[3]
    return value


def decayed_usage(ledger: UsageLedger) -> np.ndarray:
    """Each association's usage as Slurm keeps it (decayed processor-seconds)."""
    return ledger.usage / ledger.clock[2]


def classic_factors(ledger: UsageLedger, tree: FairShareTree) -> np.ndarray:
    """Every association's factor now."""
    return np.array([association_factor(ledger, tree, a) for a in range(len(ledger.usage))])
