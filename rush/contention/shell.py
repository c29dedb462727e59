"""The contention simulator's event loop: a shell around rush.core that plays the RJMS.

At every event (an arrival, an end, a noise switch) and every ``PASS_INTERVAL`` seconds (the
RJMS's periodic scheduling pass, like Slurm's backfill interval) the shell builds a
:class:`rush.core.Snapshot` (nodes are the processors; the noise job is a running job with an
unlimited request) and calls :func:`rush.core.schedule.schedule`. It starts exactly the jobs the
core starts or backfills, in the core's order, and counts the core's skips per job (as the
daemon's journal does); it decides nothing itself. Placement is the RJMS's part: a job that
fits in one pod goes to the fullest pod it fits in (best fit), else it takes whole pods in
order of free nodes, most first, so that it spans as few pods as possible.

Variation flags come from an *oracle* ``(now, [(spec, nodes)]) -> [bool]`` asked only for
jobs the pass would start: the shell runs the pass, asks about the jobs it starts that have
no answer yet, and reruns it with the answers until no unasked job starts. A flag only
matters for a job the pass would start now (the core skips exactly those), so this gives the
same decisions as asking about every pending job, with far fewer model evaluations. ``nodes``
is where the job would go if started now (its tentative placement), so job-scope features
are read on the nodes it would really get.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from rush.collect.store import FeatureStore
from rush.contention.counters import CounterRecorder
from rush.contention.model import APPS, NODES, REQUEST_FACTOR, hostname, scaled
from rush.contention.noise import NoiseSchedule
from rush.contention.state import NOISE, Running, evaluate
from rush.core.config import CoreConfig
from rush.core.schedule import schedule
from rush.core.snapshot import PendingJob, RunningJob, Snapshot

PASS_INTERVAL = 30.0
NOISE_JOB_ID = 0
EPOCH = 1_700_000_000.0  # simulated epoch of t = 0 (records and counters use epoch seconds)
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
    noise: bool  # the noise job was on at some time during the run (ground truth)

    @property
    def runtime(self) -> float:
        return self.end - self.start

    @property
    def wait(self) -> float:
        return self.start - self.submit


Oracle = Callable[[float, Sequence[tuple[JobSpec, np.ndarray]]], list[bool]]


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
    slowdown: float = 1.0


@dataclass
class Simulation:
    """One run: ``jobs`` under ``config``; ``oracle`` None means no variation predictor (FCFS+EASY).

    ``rng`` draws only the counters' measurement noise, so two policies given the same jobs
    and noise schedule see the same workload (paired trials).
    """

    jobs: Sequence[JobSpec]
    config: CoreConfig
    rng: np.random.Generator
    noise: NoiseSchedule
    store: FeatureStore | None = None
    oracle: Oracle | None = None
    pass_interval: float = PASS_INTERVAL
    keep_log: bool = False
    log: list[PassLog] = field(default_factory=list)
    predictions: int = 0
    _skips_at_start: dict[int, int] = field(default_factory=dict)

    def run(self) -> list[JobResult]:
        specs = sorted(self.jobs, key=lambda j: (j.submit, j.job_id))
        for s in specs:
            if s.job_id <= 0 or s.app not in APPS or not 1 <= s.nodes <= NODES - len(NOISE):
                raise ValueError(f"bad job spec {s}")
        free = np.ones(NODES, dtype=bool)
        free[NOISE] = False
        pending: dict[int, PendingJob] = {}
        by_id = {s.job_id: s for s in specs}
        active: dict[int, _Active] = {}
        done: list[JobResult] = []
        recorder = CounterRecorder(self.rng, origin=EPOCH)
        arrivals = 0
        t = 0.0
        next_pass = 0.0
        state = evaluate([], self.noise.level(0.0))
        while arrivals < len(specs) or pending or active:
            # Next event: arrival, end, noise switch, counter tick, periodic pass.
            t_arr = specs[arrivals].submit if arrivals < len(specs) else math.inf
            t_end = min((t + a.work * a.slowdown for a in active.values()), default=math.inf)
            t_next = min(t_arr, t_end, self.noise.next_switch(t), recorder.next_tick, next_pass)
            if not math.isfinite(t_next):
                raise RuntimeError("the simulation cannot progress (a job larger than the machine?)")
            dt = t_next - t
            for a in active.values():
                a.work -= dt / a.slowdown
            recorder.advance(state.rates, t, t_next)
            t = t_next
            changed = False
            for job_id in [j for j, a in active.items() if a.work <= _EPS * max(1.0, a.base)]:
                a = active.pop(job_id)
                free[a.running.nodes] = True
                done.append(
                    JobResult(
                        job_id,
                        a.spec.app,
                        APPS[a.spec.app].wtype,
                        a.spec.nodes,
                        a.spec.scaling,
                        [hostname(int(k)) for k in a.running.nodes],
                        a.spec.submit,
                        a.start,
                        t,
                        a.base,
                        self._skips_at_start.pop(job_id, 0),
                        self.noise.active_during(a.start, t),
                    )
                )
                changed = True
            while arrivals < len(specs) and specs[arrivals].submit <= t:
                s = specs[arrivals]
                base = scaled(APPS[s.app], s.nodes, s.scaling)[0]
                pending[s.job_id] = PendingJob(s.job_id, s.submit, s.nodes, base * REQUEST_FACTOR)
                arrivals += 1
                changed = True
            if t >= recorder.next_tick - _EPS:
                values = recorder.tick(t)
                if self.store is not None:
                    self.store.insert(recorder.samples(t, values))
            if t >= next_pass - _EPS:
                next_pass = t + self.pass_interval
                changed = changed or bool(pending)
            if changed and pending:
                started = self._pass(t, free, pending, active, by_id)
                if started:
                    next_pass = t + self.pass_interval
            state = evaluate([a.running for a in active.values()], self.noise.level(t))
            for a in active.values():
                a.slowdown = state.slowdown[a.spec.job_id]
        return sorted(done, key=lambda r: r.job_id)

    def _pass(self, t, free, pending, active, by_id) -> bool:
        """One scheduling pass; starts the core's starts. Returns whether any job started."""
        running = [RunningJob(NOISE_JOB_ID, 0.0, len(NOISE), math.inf)] + [
            RunningJob(a.spec.job_id, a.start, a.spec.nodes, pending_request(a)) for a in active.values()
        ]
        answers: dict[int, bool] = {}
        while True:
            jobs = tuple(replace(p, variable=answers.get(p.job_id, False)) for p in pending.values())
            snapshot = Snapshot(t, NODES, int(free.sum()), jobs, tuple(running))
            decisions = schedule(snapshot, self.config, explain_priorities=False)
            starts = [d.job_id for d in decisions.decisions if d.action in ("start", "backfill")]
            unasked = [j for j in starts if j not in answers]
            if self.oracle is None or not unasked:
                break
            tentative = free.copy()
            asked = []
            for j in unasked:
                nodes = place(tentative, by_id[j].nodes)
                tentative[nodes] = False  # the pass's earlier starts take their nodes first
                asked.append((by_id[j], nodes))
            self.predictions += len(asked)
            flags = self.oracle(EPOCH + t, asked)
            answers.update({spec.job_id: bool(f) for (spec, _), f in zip(asked, flags, strict=True)})
        skipped = decisions.job_ids("skip")
        for j in skipped:
            p = pending[j]
            pending[j] = replace(p, skips=p.skips + 1)
        shell_starts = []
        for j in starts:
            spec = by_id[j]
            nodes = place(free, spec.nodes)
            free[nodes] = False
            app = APPS[spec.app]
            base, net, io = scaled(app, spec.nodes, spec.scaling)
            work = base * spec.jitter
            self._skips_at_start[j] = pending.pop(j).skips
            active[j] = _Active(spec, Running(j, spec.app, nodes, net, io), t, work, base)
            shell_starts.append(j)
        if self.keep_log:
            self.log.append(PassLog(t, snapshot, starts, shell_starts, skipped))
        return bool(shell_starts)


def pending_request(a: _Active) -> float:
    return a.base * REQUEST_FACTOR


def place(free: np.ndarray, n: int) -> np.ndarray:
    """The n lowest-numbered free nodes (Slurm's linear node selection without the topology
    plugin). Marks nothing; the caller does. ``free`` is a (NODES,) bool mask."""
    nodes = np.flatnonzero(free)[:n]
    if len(nodes) < n:
        raise RuntimeError(f"{n} nodes requested, {len(nodes)} free")
    return nodes
