"""The contention simulator's event loop: a shell around rush.core that plays the RJMS.

At every event (an arrival, an end, a noise switch) and every ``PASS_INTERVAL`` seconds (the
RJMS's periodic scheduling pass, like Slurm's backfill interval) the shell builds a
:class:`rush.core.Snapshot` of the fat-tree (512 :class:`rush.core.resources.Node` of
``CORES_PER_NODE`` cores, ``leaf`` = pod), the noise job and the running jobs with their
allocations, and the pending jobs with their node requests (whole nodes, exclusive, as the
model's applications ask), and calls :func:`rush.core.schedule.schedule`. It starts exactly
the jobs the core starts or backfills, in the core's order, **on the core's nodes**
(``Decision.nodes``), and counts the core's skips per job (as the daemon's journal does); it
decides nothing itself. Placement is ``CoreConfig.placement``: ``first-fit`` (lowest free
nodes, the faithful default: RUSH's Flux used its default match), ``topology`` (fewest pods)
or ``variability`` (topology packing; flagged jobs go to quiet pods first).

Variation flags come from an *oracle* ``(now, [(spec, nodes)]) -> [bool]`` asked only for
jobs the pass would start: the shell runs the pass, asks about the jobs it starts that have
no answer yet, and reruns it with the answers until no unasked job starts. A flag only
matters for a job the pass would start now (the core skips exactly those), so this gives the
same decisions as asking about every pending job, with far fewer model evaluations. ``nodes``
is the core's placement of the job in that pass (its tentative placement), so job-scope
features are read on the nodes it would really get. With ``placement="variability"`` an
oracle that has ``quiet_pods(now) -> bool per pod`` marks each pod's nodes ``Node.quiet``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from rush.collect.store import FeatureStore
from rush.contention.counters import CounterRecorder
from rush.contention.model import APPS, CORES_PER_NODE, NODES, POD_SIZE, REQUEST_FACTOR, hostname, scaled
from rush.contention.noise import NoiseSchedule
from rush.contention.state import NOISE, Running, evaluate
from rush.core.config import CoreConfig
from rush.core.resources import Node, Request, Slot
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
                pending[s.job_id] = PendingJob(
                    s.job_id,
                    s.submit,
                    s.nodes * CORES_PER_NODE,
                    base * REQUEST_FACTOR,
                    request=node_request(s.nodes),
                )
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
        """One scheduling pass; starts the core's starts on the core's nodes. Returns whether
        any job started."""
        running = [NOISE_RUNNING] + [
            running_job(a.spec.job_id, a.start, a.running.nodes, pending_request(a)) for a in active.values()
        ]
        nodes = MACHINE
        quiet_pods = getattr(self.oracle, "quiet_pods", None)
        if self.config.placement == "variability" and quiet_pods is not None:
            nodes = machine(np.asarray(quiet_pods(EPOCH + t), dtype=bool))
        answers: dict[int, bool] = {}
        while True:
            jobs = tuple(replace(p, variable=answers.get(p.job_id, False)) for p in pending.values())
            snapshot = Snapshot(
                t, NODES * CORES_PER_NODE, int(free.sum()) * CORES_PER_NODE, jobs, tuple(running), nodes=nodes
            )
            decisions = schedule(snapshot, self.config, explain_priorities=False)
            starts = [d for d in decisions.decisions if d.action in ("start", "backfill")]
            unasked = [d for d in starts if d.job_id not in answers]
            if self.oracle is None or not unasked:
                break
            # The tentative placement is the core's own: the nodes this pass gives the job.
            asked = [(by_id[d.job_id], node_indices(d.nodes)) for d in unasked]
            self.predictions += len(asked)
            flags = self.oracle(EPOCH + t, asked)
            answers.update({spec.job_id: bool(f) for (spec, _), f in zip(asked, flags, strict=True)})
        skipped = decisions.job_ids("skip")
        for j in skipped:
            p = pending[j]
            pending[j] = replace(p, skips=p.skips + 1)
        shell_starts = []
        for d in starts:
            spec = by_id[d.job_id]
            where = node_indices(d.nodes)
            if len(where) != spec.nodes or not free[where].all():
                raise RuntimeError(
                    f"the core placed job {d.job_id} on {d.nodes}: not {spec.nodes} free nodes"
                )
            free[where] = False
            app = APPS[spec.app]
            base, net, io = scaled(app, spec.nodes, spec.scaling)
            work = base * spec.jitter
            self._skips_at_start[d.job_id] = pending.pop(d.job_id).skips
            active[d.job_id] = _Active(spec, Running(d.job_id, spec.app, where, net, io), t, work, base)
            shell_starts.append(d.job_id)
        if self.keep_log:
            self.log.append(PassLog(t, snapshot, [d.job_id for d in starts], shell_starts, skipped))
        return bool(shell_starts)


def pending_request(a: _Active) -> float:
    return a.base * REQUEST_FACTOR


def node_request(nodes: int) -> Request:
    """What every job of the model asks: whole nodes, exclusive."""
    return Request(nodes=nodes, cores_per_node=CORES_PER_NODE, exclusive=True)


def machine(quiet: np.ndarray | None = None) -> tuple[Node, ...]:
    """The fat-tree as the core sees it: node k is ``n%03d`` on leaf (pod) k // POD_SIZE;
    ``quiet`` (one flag per pod) marks the pods the variation predictor sees as quiet."""
    return tuple(
        Node(
            hostname(k),
            CORES_PER_NODE,
            leaf=k // POD_SIZE,
            quiet=True if quiet is None else bool(quiet[k // POD_SIZE]),
        )
        for k in range(NODES)
    )


def running_job(job_id: int, start: float, nodes: np.ndarray, requested: float) -> RunningJob:
    """A running job with its allocation (whole nodes) for the core."""
    return RunningJob(
        job_id,
        start,
        len(nodes) * CORES_PER_NODE,
        requested,
        request=node_request(len(nodes)),
        allocation=tuple(Slot(int(k), CORES_PER_NODE) for k in nodes),
    )


def node_indices(names: Sequence[str]) -> np.ndarray:
    """Node names (``n%03d``) back to indices."""
    return np.fromiter((_INDEX[n] for n in names), dtype=np.int64, count=len(names))


MACHINE = machine()
_INDEX = {node.name: k for k, node in enumerate(MACHINE)}
# The noise job: a running job holding its nodes for ever (an unlimited request).
NOISE_RUNNING = running_job(NOISE_JOB_ID, 0.0, NOISE, math.inf)
