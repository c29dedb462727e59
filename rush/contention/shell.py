"""The contention simulator's event loop: a shell around rush.core that plays the RJMS.

At every RJMS event (an arrival, an end) and every ``PASS_INTERVAL`` seconds (a periodic pass,
like the Flux module's timer) the shell builds a :class:`rush.core.Snapshot`
of the machine (:class:`rush.core.resources.Node` per node, ``leaf`` = its leaf switch), the
noise job and the running jobs with their allocations, and the pending jobs with their node
requests (whole nodes, exclusive), and calls :func:`rush.core.schedule.schedule`. It starts
exactly the jobs the core starts or backfills, in the core's order, **on the core's nodes**
(``Decision.nodes``), and keeps the core's skip count per job (as the daemon's journal does);
it decides nothing itself. The snapshot says which kind of pass it is (``Snapshot.trigger``):
only event passes count skips (:func:`rush.core.skip_with_limit.counts_skips`), as RUSH's count
grows only when Fluxion's event-driven loop considers the job; a periodic pass may still start
a job the predictor no longer flags. Placement is ``CoreConfig.placement``: ``first-fit`` (the lowest free
nodes in rank order: what Flux's default match does, the faithful default), ``topology`` or
``variability``.

Variation flags come from an *oracle* ``(present, [(spec, nodes)]) -> [bool]`` asked only for
jobs the pass would start: the shell runs the pass, asks about the jobs it starts that have no
answer yet, and reruns it with the answers until no unasked job starts. A flag only matters for
a job the pass would start now (the core skips exactly those), so this gives the same
decisions as asking about every pending job, with far fewer model evaluations. ``nodes`` is the
core's placement of the job in that pass (its tentative placement). ``present`` is the state
at that moment (:class:`Present`): the learned predictor reads only the feature store and a
probe on the tentative nodes from it; the diagnostic oracles read the ground truth.

A job started while flagged (its skip count had reached the limit) is a *limit hit*. With
``idle_release`` set, flagged jobs that have kept an otherwise idle machine waiting that long
start anyway (also limit hits, counted in ``idle_releases``): the simulator's way to keep an
unlimited skip limit finite when a predictor never unflags.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

import numpy as np

from rush.collect.store import FeatureStore
from rush.contention.apps import APPS, scaled
from rush.contention.counters import CounterRecorder
from rush.contention.model import REQUEST_FACTOR
from rush.contention.noise import NoiseSchedule
from rush.contention.probe import simulate_probe
from rush.contention.state import Evaluation, Fabric, Running, Utilisation
from rush.core.config import CoreConfig
from rush.core.resources import Node, Request, Slot
from rush.core.schedule import schedule
from rush.core.snapshot import PendingJob, RunningJob, Snapshot

PASS_INTERVAL = 30.0
NOISE_JOB_ID = 0
EPOCH = 1_700_000_000.0  # simulated epoch of t = 0 (records and counters use epoch seconds)
MAX_SIMULATED = 7 * 86_400.0  # a run that has not drained by then is stuck (a job flagged for ever)
_EPS = 1e-9


@dataclass(frozen=True)
class JobSpec:
    job_id: int  # > 0 (0 is the noise job)
    app: str
    nodes: int
    submit: float
    scaling: str = "weak"
    jitter: float = 1.0  # OS-noise factor of this run (lognormal, drawn by the workload's maker)


@dataclass
class JobResult:
    job_id: int
    app: str
    wtype: str
    size: int
    scaling: str
    hosts: list[str]
    submit: float
    start: float
    end: float
    base: float  # unimpeded runtime at this size (no jitter)
    skips: int
    limit_hit: bool  # started while flagged: its skips had reached the limit
    noise_level: float  # mean noise intensity over the run (ground truth)
    probe: dict[str, float] | None = None  # the run's own probe at its start (campaign runs)

    @property
    def runtime(self) -> float:
        return self.end - self.start

    @property
    def wait(self) -> float:
        return self.start - self.submit


@dataclass(frozen=True)
class Present:
    """The state at a scheduling pass, as an oracle may read it."""

    t: float  # simulation time (``EPOCH + t`` is the stores' time)
    fabric: Fabric
    running: list[Running]
    noise_level: float
    util: Utilisation
    # The ground truth of the future, for the clairvoyant diagnostic only: the running jobs'
    # unimpeded work left (in ``running``'s order) and the noise schedule.
    work_left: tuple[float, ...] = ()
    schedule: NoiseSchedule | None = None

    @property
    def now(self) -> float:
        return EPOCH + self.t


class Oracle(Protocol):
    def __call__(self, present: Present, asked: Sequence[tuple[JobSpec, np.ndarray]]) -> list[bool]: ...


@dataclass
class PassLog:
    now: float
    snapshot: Snapshot
    core_starts: list[int]
    shell_starts: list[int]
    skips: list[int]


@dataclass
class _Active:
    spec: JobSpec
    running: Running
    start: float
    work: float  # unimpeded seconds left
    base: float
    skips: int
    limit_hit: bool
    probe: dict[str, float] | None
    slowdown: float = 1.0


@dataclass
class Simulation:
    """One run: ``jobs`` under ``config`` on ``fabric``; ``oracle`` None means no variation
    predictor (FCFS+EASY).

    ``rng`` draws only the counters' and probes' measurement noise, so two policies given the
    same jobs and noise schedule see the same workload (paired trials). ``probe_at_start``
    simulates each run's own MPI probe as it starts (the campaign's control jobs).
    """

    jobs: Sequence[JobSpec]
    config: CoreConfig
    rng: np.random.Generator
    noise: NoiseSchedule
    fabric: Fabric
    store: FeatureStore | None = None
    oracle: Oracle | None = None
    probe_at_start: bool = False
    # Seconds the machine may sit idle (only the noise running) with every pending job flagged
    # before they start anyway, counted as limit hits: an unlimited skip limit under a predictor
    # that never unflags would otherwise hold them for ever. None: no release.
    idle_release: float | None = None
    pass_interval: float = PASS_INTERVAL
    keep_log: bool = False
    log: list[PassLog] = field(default_factory=list)
    predictions: int = 0
    idle_releases: int = 0
    _idle_since: float | None = None

    def __post_init__(self) -> None:
        m = self.fabric.machine
        self._nodes = machine_nodes(self.fabric)
        self._index = {node.name: k for k, node in enumerate(self._nodes)}
        noise_nodes = self.fabric.noise_nodes
        self._noise_running = RunningJob(
            NOISE_JOB_ID,
            0.0,
            len(noise_nodes) * m.cores_per_node,
            math.inf,
            request=Request(nodes=len(noise_nodes), cores_per_node=m.cores_per_node, exclusive=True),
            allocation=tuple(Slot(int(k), m.cores_per_node) for k in noise_nodes),
        )

    def run(self) -> list[JobResult]:
        m = self.fabric.machine
        specs = sorted(self.jobs, key=lambda j: (j.submit, j.job_id))
        usable = m.nodes - len(self.fabric.noise_nodes)
        for s in specs:
            if s.job_id <= 0 or s.app not in APPS or not 1 <= s.nodes <= usable:
                raise ValueError(f"bad job spec {s}")
        free = np.ones(m.nodes, dtype=bool)
        free[self.fabric.noise_nodes] = False
        pending: dict[int, PendingJob] = {}
        by_id = {s.job_id: s for s in specs}
        active: dict[int, _Active] = {}
        done: list[JobResult] = []
        recorder = CounterRecorder(self.rng, m.hosts, origin=EPOCH, leaves=m.leaf_of, pods=m.pod_of)
        arrivals = 0
        t = 0.0
        next_pass = 0.0
        state = self.fabric.evaluate([], self.noise.level(0.0))
        while arrivals < len(specs) or pending or active:
            t_arr = specs[arrivals].submit if arrivals < len(specs) else math.inf
            t_end = min((t + a.work * a.slowdown for a in active.values()), default=math.inf)
            t_next = min(t_arr, t_end, self.noise.next_switch(t), recorder.next_tick, next_pass)
            if not t_next < MAX_SIMULATED:
                raise RuntimeError(
                    f"the simulation has not drained after {MAX_SIMULATED:.0f} s: {len(pending)} jobs "
                    "still pending (flagged for ever under an unlimited skip limit?)"
                )
            dt = t_next - t
            for a in active.values():
                a.work -= dt / a.slowdown
            recorder.advance(state.rates, t, t_next)
            t = t_next
            changed = False  # a job ended or arrived: an RJMS event (its pass counts skips)
            for job_id in [j for j, a in active.items() if a.work <= _EPS * max(1.0, a.base)]:
                a = active.pop(job_id)
                free[a.running.nodes] = True
                done.append(self._result(a, t))
                changed = True
            while arrivals < len(specs) and specs[arrivals].submit <= t:
                s = specs[arrivals]
                base = scaled(APPS[s.app], s.nodes, s.scaling).base
                pending[s.job_id] = PendingJob(
                    s.job_id,
                    s.submit,
                    s.nodes * m.cores_per_node,
                    base * REQUEST_FACTOR,
                    request=Request(nodes=s.nodes, cores_per_node=m.cores_per_node, exclusive=True),
                )
                arrivals += 1
                changed = True
            if t >= recorder.next_tick - _EPS:
                values = recorder.tick(t)
                if self.store is not None:
                    self.store.insert(recorder.samples(t, values))
            periodic = False
            if t >= next_pass - _EPS:
                next_pass = t + self.pass_interval
                periodic = bool(pending)
            level = self.noise.level(t)
            state = self.fabric.evaluate([a.running for a in active.values()], level)
            trigger = "event" if changed else "periodic"
            if (
                (changed or periodic)
                and pending
                and self._pass(t, free, pending, active, by_id, state, level, trigger)
            ):
                next_pass = t + self.pass_interval
                state = self.fabric.evaluate([a.running for a in active.values()], level)
            for a in active.values():
                a.slowdown = state.slowdown[a.spec.job_id]
        return sorted(done, key=lambda r: r.job_id)

    def _result(self, a: _Active, t: float) -> JobResult:
        return JobResult(
            a.spec.job_id,
            a.spec.app,
            APPS[a.spec.app].wtype,
            a.spec.nodes,
            a.spec.scaling,
            [self.fabric.machine.hostname(int(k)) for k in a.running.nodes],
            a.spec.submit,
            a.start,
            t,
            a.base,
            a.skips,
            a.limit_hit,
            self.noise.mean_level(a.start, t),
            a.probe,
        )

    def _pass(self, t, free, pending, active, by_id, state: Evaluation, level: float, trigger: str) -> bool:
        """One scheduling pass; starts the core's starts on the core's nodes. Returns whether
        any job started. ``trigger`` is "event" (an arrival or an end) or "periodic" (the
        timer): the core counts skips only in event passes, as Fluxion's loop runs on events."""
        m = self.fabric.machine
        running = [self._noise_running] + [
            RunningJob(
                a.spec.job_id,
                a.start,
                len(a.running.nodes) * m.cores_per_node,
                a.base * REQUEST_FACTOR,
                request=Request(nodes=len(a.running.nodes), cores_per_node=m.cores_per_node, exclusive=True),
                allocation=tuple(Slot(int(k), m.cores_per_node) for k in a.running.nodes),
            )
            for a in active.values()
        ]
        nodes = self._nodes
        quiet_leaves = getattr(self.oracle, "quiet_leaves", None)
        present = Present(t, self.fabric, [a.running for a in active.values()], level, state.util,
                          tuple(a.work for a in active.values()), self.noise)  # fmt: skip
        if self.config.placement == "variability" and quiet_leaves is not None:
            quiet = np.asarray(quiet_leaves(present), dtype=bool)
            nodes = tuple(replace(n, quiet=bool(quiet[n.leaf])) for n in self._nodes)
        answers: dict[int, bool] = {}
        free_cores = int(free.sum()) * m.cores_per_node
        if active:
            self._idle_since = None
        elif self._idle_since is None:
            self._idle_since = t
        release = (
            self.idle_release is not None
            and self._idle_since is not None
            and t - self._idle_since >= self.idle_release
        )
        while True:
            jobs = tuple(
                replace(p, variable=answers.get(p.job_id, False) and not release) for p in pending.values()
            )
            snapshot = Snapshot(
                t, m.nodes * m.cores_per_node, free_cores, jobs, tuple(running), nodes=nodes, trigger=trigger
            )
            decisions = schedule(snapshot, self.config, explain_priorities=False)
            starts = [d for d in decisions.decisions if d.action in ("start", "backfill")]
            unasked = [d for d in starts if d.job_id not in answers]
            if self.oracle is None or not unasked:
                break
            # The tentative placement is the core's own: the nodes this pass gives the job.
            asked = [(by_id[d.job_id], self.node_indices(d.nodes)) for d in unasked]
            self.predictions += len(asked)
            flags = self.oracle(present, asked)
            answers.update({spec.job_id: bool(f) for (spec, _), f in zip(asked, flags, strict=True)})
        skipped = decisions.job_ids("skip")
        for d in decisions.of("skip"):  # the core's count after this pass (value), not the shell's
            pending[d.job_id] = replace(pending[d.job_id], skips=int(d.value))
        shell_starts = []
        for d in starts:
            spec = by_id[d.job_id]
            where = self.node_indices(d.nodes)
            if len(where) != spec.nodes or not free[where].all():
                raise RuntimeError(
                    f"the core placed job {d.job_id} on {d.nodes}: not {spec.nodes} free nodes"
                )
            free[where] = False
            run = Running.of(d.job_id, spec.app, where, m, spec.scaling)
            probe = simulate_probe(self.fabric, state.util, where, self.rng) if self.probe_at_start else None
            s = scaled(APPS[spec.app], spec.nodes, spec.scaling)
            skips = pending.pop(d.job_id).skips
            flagged = answers.get(d.job_id, False)
            self.idle_releases += flagged and release
            active[d.job_id] = _Active(spec, run, t, s.base * spec.jitter, s.base, skips, flagged, probe)
            shell_starts.append(d.job_id)
        if shell_starts:
            self._idle_since = None
        if self.keep_log:
            self.log.append(PassLog(t, snapshot, [d.job_id for d in starts], shell_starts, skipped))
        return bool(shell_starts)

    def node_indices(self, names: Sequence[str]) -> np.ndarray:
        return np.fromiter((self._index[n] for n in names), dtype=np.int64, count=len(names))


def machine_nodes(fabric: Fabric) -> tuple[Node, ...]:
    """The machine as the core sees it: node k is ``hosts[k]`` on leaf ``k // leaf_size``, in pod
    ``k // pod_size``."""
    m = fabric.machine
    return tuple(
        Node(m.hostname(k), m.cores_per_node, leaf=int(m.leaf_of[k]), pod=int(m.pod_of[k]))
        for k in range(m.nodes)
    )
