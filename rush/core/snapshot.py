"""The core's input (a snapshot of the queue) and output (decisions with reasons).

These types are pure data: the daemon builds a :class:`Snapshot` from the RJMS, the
simulator builds the equivalent arrays inside its event loop, and both get their
decisions from the same kernels (:mod:`rush.core.ordering`, :mod:`rush.core.scheduling_pass`,
:mod:`rush.core.false_small_kill`, :mod:`rush.core.job_rules`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import TYPE_CHECKING, Literal

from rush.core.resources import Fabric, Node, Request, Slot

if TYPE_CHECKING:  # pure data here: the record's module loads numpy and numba
    from rush.core.decision_columns import DecisionColumns
    from rush.core.job_columns import SnapshotColumns
    from rush.core.kept_nodes import KeptNodes
    from rush.core.priority_explanations import PriorityExplanations


class RuntimeClass(IntEnum):
    """Predicted runtime class of a job (see the runtime classifier)."""

    UNKNOWN = -1
    SMALL = 0
    LARGE = 1


@dataclass(frozen=True)
class RuntimeQuantiles:
    """A job's predicted runtime distribution: ``seconds`` at quantile ``levels`` (increasing,
    within (0, 1)), as the deployed runtime-quantile model gave them at the job's start."""

    levels: tuple[float, ...]
    seconds: tuple[float, ...]
    # Rule D2 (rush.core.runtime_drift.drift_projection_length; round 15, off by default): the
    # log factor a queued job's projection length is scaled by (0.0: none).
    projection_shift: float = 0.0


@dataclass(frozen=True)
class PendingJob:
    job_id: int
    submit: float
    procs: int
    requested_time: float
    # Runtime estimate used for scheduling; None means requested_time.
    estimate: float | None = None
    runtime_class: RuntimeClass = RuntimeClass.UNKNOWN
    # Opted in to being killed and requeued when predicted small but running past the divider.
    idempotent: bool = False
    # The variation predictor expects this job to suffer performance variability if started now.
    variable: bool = False
    # How many times this job has been skipped already (kept by the journal in the daemon).
    skips: int = 0
    user: int = -1
    # How many times rush has killed and requeued this job (a requeued job is large).
    requeues: int = 0
    # Its standing conservative reservation from the previous pass (inf: none); the daemon
    # keeps it in its journal, as the simulator keeps it in its arrays.
    reserved_at: float = math.inf
    # Nodes x (cores, GPUs), exclusivity, partition (rush.core.resources); None: ``procs``
    # cores anywhere.
    request: Request | None = None
    # The RJMS's own priority of the job (larger first), for the RJMS policy.
    rjms_priority: float = 0.0
    # The site's fair-share factor of the job's association in [0, 1] (Slurm's FairShare,
    # flux-accounting's fairshare; 1: no usage), for LINEAR's fairshare term; None: unknown,
    # counted as rush.core.names.NEUTRAL_FAIRSHARE.
    fairshare: float | None = None
    # Its predicted runtime distribution (None: no quantile model): start estimates project it
    # for the upper part of it (rush.core.remaining_runtime.queued_projection_runtimes).
    runtime_quantiles: RuntimeQuantiles | None = None


@dataclass(frozen=True)
class RunningJob:
    job_id: int
    start: float
    procs: int
    requested_time: float
    estimate: float | None = None
    runtime_class: RuntimeClass = RuntimeClass.UNKNOWN
    idempotent: bool = False
    # How many times rush has already killed and requeued this job.
    requeues: int = 0
    # What a job killed in this pass is requeued with (it competes in the same pass, as in
    # the simulator): its original submit time (None: its start), skips so far, and whether
    # the variation predictor flags it now.
    submit: float | None = None
    skips: int = 0
    variable: bool = False
    request: Request | None = None
    # Where it runs, on a cluster with nodes (what it gives back when it ends).
    allocation: tuple[Slot, ...] = ()
    # Its predicted runtime distribution (None: no quantile model): start estimates end it at
    # its median runtime given how long it has run (rush.core.remaining_runtime).
    runtime_quantiles: RuntimeQuantiles | None = None


@dataclass(frozen=True)
class Snapshot:
    now: float
    total_procs: int
    free_procs: int
    # A tuple, or the jobs as columns with each job made when read (rush.core.job_columns.PendingRows:
    # the planner's snapshot builder writes the pass's columns straight from the RJMS read).
    pending: Sequence[PendingJob] = ()
    running: tuple[RunningJob, ...] = ()
    # Origin for the F1-F4 and Lin "submit time" term r (the trace start in the simulator).
    time_origin: float = 0.0
    # The nodes (rush.core.resources); empty: a bag of ``total_procs`` processors.
    nodes: tuple[Node, ...] = ()
    fabric: Fabric = Fabric()
    # What triggered this pass: "event" (a job submitted or ended, resources changed) or
    # "periodic" (a timer or a cycle with no such change); only an event pass counts skips
    # (rush.core.skip_with_limit.counts_skips).
    trigger: str = "event"
    # Conservative on nodes: the last pass's ``Decisions.kept``, given back unchanged so that
    # each standing reservation keeps its nodes (rush.core.kept_nodes); None: times only.
    kept: KeptNodes | None = None
    # The jobs' columns, row for row in ``pending`` and ``running`` order, as a shell keeps them
    # between passes (rush.planner.snapshot_columns: a cycle rewrites only the rows whose job
    # changed); None: the core reads them from the objects. The pass reads its per-job inputs
    # from the columns, and the objects only for the words of the few decisions it makes.
    columns: SnapshotColumns | None = None


# Which of these jobs (ids, priority values: two lists in one order) a reader keeps, one answer each.
KeepMany = Callable[[list[int], list[int]], Iterable[bool]]

# ``infeasible``: a request this machine can never satisfy (rush.core.node_view); the job is
# left out of the pass, and the shell denies it (Flux) or journals it (Slurm).
Action = Literal["start", "backfill", "reserve", "skip", "kill", "priority", "infeasible"]


@dataclass(frozen=True)
class Decision:
    job_id: int
    action: Action
    reason: str
    # start/reserve time, priority value, ... depending on the action.
    value: float | None = None
    # kill: the class and requeue count the job is requeued with (false_small_kill.requeue_as_large).
    requeue_class: RuntimeClass | None = None
    requeues: int | None = None
    # start/backfill: where (node names); reserve: where the reservation holds them.
    nodes: tuple[str, ...] = ()
    # The same as (node name, cores, GPUs) per node: what the job takes on each.
    allocation: tuple[tuple[str, int, int], ...] = ()


@dataclass
class Decisions:
    now: float
    # Pending job ids, highest priority first (starvation, class, then policy order).
    order: list[int] = field(default_factory=list)
    # Priority value per pending job id (rush.core.priority_values): larger runs first, in the
    # order of ``order``; a job's value depends on its own score only, not on the others.
    priority: dict[int, int] = field(default_factory=dict)
    # The terms the value comes from: ordering group (0 starved, 1, 2 predicted large) and key
    # (the policy's score, smaller first; rush.core.ordering).
    priority_group: dict[int, int] = field(default_factory=dict)
    priority_key: dict[int, float] = field(default_factory=dict)
    # Every decision, in the pass's order: kills, infeasible jobs, one ``priority`` per pending
    # job in rank order, reservations, starts, skips. The priority ones may be kept as the
    # pass's arrays and put in words when first read (rush.core.priority_explanations): read
    # them with ``of``, ``among``, ``counts`` or ``priorities_where`` to leave them unwritten.
    decisions: list[Decision] = field(default_factory=list)
    # State for the next pass: standing conservative reservations by job id (the daemon
    # journals them and gives them back as PendingJob.reserved_at).
    reserved_at: dict[int, float] = field(default_factory=dict)
    # Estimated start per pending job id (inf: not in sight), why (rush.core.start_estimates:
    # now, reservation, projection, never), and the job whose predicted end it waits for.
    estimated_start: dict[int, float] = field(default_factory=dict)
    estimate_basis: dict[int, str] = field(default_factory=dict)
    waits_behind: dict[int, int] = field(default_factory=dict)
    # Running job id -> why its predicted quantiles were refused for the start estimates (its
    # end then read off its estimate: the prediction or the request); the shells journal it.
    estimate_notes: dict[int, str] = field(default_factory=dict)
    # Pending job ids a bounded pass left unconsidered (CoreConfig.max_jobs_considered), in
    # priority order: not started, not reserved this pass (rush.core.pass_budget).
    unconsidered: list[int] = field(default_factory=list)
    # Conservative on nodes: the reservations' nodes and what the pass left booked, for the
    # shell to give back as the next ``Snapshot.kept`` (rush.core.kept_nodes); else None.
    kept: KeptNodes | None = None
    # The values above by pending job as columns aligned with the pass's pending columns
    # (rush.core.decision_columns), as schedule() made them; None: read the dictionaries.
    columns: DecisionColumns | None = field(default=None, compare=False, repr=False)

    def explain_later(self, listed: list[Decision], explained: PriorityExplanations, at: int) -> None:
        """``listed``: every decision but the priority ones, which stand, in ``explained``'s
        rank order, after the first ``at`` of them (kills, infeasible jobs)."""
        self._listed, self._explained, self._explained_at = listed, explained, at

    def of(self, action: Action) -> list[Decision]:
        return self.among((action,))

    def among(self, actions: Collection[str]) -> list[Decision]:
        """The decisions of these kinds, in the pass's order."""
        if self._explained is not None and "priority" not in actions:
            return [d for d in self._listed if d.action in actions]
        return [d for d in self.decisions if d.action in actions]

    def job_ids(self, action: Action) -> list[int]:
        return [d.job_id for d in self.of(action)]

    def counts(self) -> dict[str, int]:
        """Decisions by kind, kinds in the order they first come."""
        counts: dict[str, int] = {}
        explained, at = self._explained, self._explained_at
        listed = self._listed if explained is not None else self.decisions
        for k, d in enumerate(listed):
            if k == at and explained is not None and len(explained):
                counts["priority"] = counts.get("priority", 0) + len(explained)
            counts[d.action] = counts.get(d.action, 0) + 1
        if explained is not None and len(explained) and len(listed) <= at:
            counts["priority"] = counts.get("priority", 0) + len(explained)
        return counts

    def priorities_where(self, keep: Callable[[int, int], bool]) -> list[Decision]:
        """The priority decisions whose (job id, value) ``keep`` holds, largest value first
        (equal values in rank order); only those are put in words."""
        return self.split_priorities_where(lambda ids, values: map(keep, ids, values), None)[0]

    def split_priorities_where(
        self, keep: KeepMany, words: int | None
    ) -> tuple[list[Decision], list[tuple[int, int]]]:
        """As :meth:`priorities_where`, with ``keep`` asked once for every job (job ids and
        values as two lists; a reader can then test them in bulk), the first ``words`` of them
        as decisions in words (None: all) and the rest only as (job id, value), left unwritten."""
        if self._explained is not None:
            return self._explained.split_where(keep, words)
        ranked = [
            d for d in sorted(self.of("priority"), key=lambda d: -(d.value or 0)) if d.value is not None
        ]
        asked = keep([d.job_id for d in ranked], [int(d.value) for d in ranked])
        kept = [d for d, k in zip(ranked, asked, strict=True) if k]
        cut = len(kept) if words is None else max(words, 0)
        return kept[:cut], [(d.job_id, d.value) for d in kept[cut:]]


def _every_decision(self: Decisions) -> list[Decision]:
    """Every decision, the priority ones put in words at the first read (then kept)."""
    if self._explained is not None:
        at, listed = self._explained_at, self._listed
        # A new list: a shallow copy of these decisions may share the old one.
        self._listed = [*listed[:at], *self._explained.decisions(), *listed[at:]]
        self._explained = None
    return self._listed


def _set_decisions(self: Decisions, decisions: list[Decision]) -> None:
    self._listed, self._explained, self._explained_at = decisions, None, 0


# ``decisions`` stays a field (construction, ``dataclasses.replace``, equality and repr see
# every decision in words) read through a property, so that the priority ones can wait.
Decisions.decisions = property(_every_decision, _set_decisions)  # type: ignore[assignment]
