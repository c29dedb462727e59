"""The live path of one EASY pass with start estimates (issue 31, item 3): from the RJMS's read
to the core's decisions, as the planner runs it each cycle, at 1 000 and 10 000 pending jobs on
1 000 nodes (:mod:`bench_nodes`'s machine and queue; target: <= 50 ms at 10 000).

Per cycle, CPU seconds (``time.process_time``; the host is shared) of its parts:

* ``build``: the snapshot builder (:mod:`rush.planner.snapshot_builder`), RJMS jobs to the
  core's job objects, with the daemon's default live configuration (no model);
* ``columns``: the job columns the planner keeps between cycles
  (:mod:`rush.planner.snapshot_columns`; absent on a tree without them, where the core reads
  every job object inside ``schedule``); where the builder writes the pending columns itself
  (``PendingRows``), the running jobs' only;
* ``schedule``: the core's ``schedule()`` with start estimates and the live pass budget
  (``policy.max_jobs_considered``'s default); inside it, printed apart, ``pass`` (the compiled
  scheduling pass's own time: **the reference, measured in the same run**) and ``estimates``
  (the start-estimate projection);
* ``words``: the daemon's plan (:func:`rush.planner.apply.plan_actions`): the priorities whose
  value changed since it last sent them, put in words (:mod:`rush.core.priority_explanations`),
  within its budget of RJMS calls per cycle (``--actions``, ``daemon.max_actions_per_cycle``'s
  default 200); the others are deferred and still differ at the next cycle (a tree that words
  every changed priority words them again there). On a tree that writes all of them inside
  ``schedule()``, the plan's other work only.

Two shells: ``flux-module`` keeps its job objects between passes and explains no priorities;
``daemon`` reads fresh objects from the RJMS each cycle and explains each job's priority (the
journal's words, Slurm's SiteFactor). Two cycles: ``first`` (nothing kept yet) and ``next``:
one second later, the first pass's starts running on their nodes, ``--ended`` running jobs
ended and ``--arrivals`` new jobs queued. Median of ``--repeat`` runs of both; ``rows read``:
pending jobs read from their objects into the kept columns (-1: no kept columns). Each cycle
starts after a ``gc.collect()``, so that the figures do not depend on which cycle the
collector's full pass falls in. Then ``--steady`` cycles in a row with the collector left to
run as it comes, as in a live process: the median, mean and longest cycle and the collector's
CPU per cycle by generation (a full pass over a heap of 10 000 jobs' objects costs about 100 ms here;
how often one comes depends on how many objects each cycle leaves behind).

With ``--quantiles both`` (the default) every case runs twice: without runtime predictions, and
with a live runtime predictor (:class:`rush.planner.runtime_prediction.LiveRuntimePredictor`,
the shells' own wrapper) whose model gives every job a calibrated mean and five runtime
quantiles (:class:`QuantileModel`, set answers from each job's request: the model's own cost is
not measured, what the live path does with its answers is). A pending job with quantiles
brings in the start projection's rule L2 (rush.core.remaining_runtime), a running one the
median given its elapsed time.

Run: ``python benchmarks/bench_live_cycle.py [--pending 1000,10000] [--repeat 5]``; paired with
another tree: ``PYTHONPATH=/path/to/other/tree python benchmarks/bench_live_cycle.py``.
"""

from __future__ import annotations

import argparse
import functools
import gc
import statistics
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

import bench_args
import bench_nodes
import numpy as np
from live_next_pass import next_snapshot

import rush
import rush.core.schedule as core_schedule
from rush.core import CoreConfig, PendingJob, Snapshot
from rush.core.pass_budget import DEFAULT_MAX_JOBS_CONSIDERED
from rush.core.schedule import schedule
from rush.planner.apply import plan_actions
from rush.planner.journal import JobRecord
from rush.planner.runtime_prediction import LiveRuntimePredictor
from rush.planner.snapshot_builder import SnapshotBuilder
from rush.rjms.base import ClusterState, RJMSJob

try:  # a tree without kept columns: the core reads the objects inside schedule()
    from rush.planner.snapshot_columns import KeptColumns
except ImportError:
    KeptColumns = None

print = functools.partial(print, flush=True)  # noqa: A001 - progress shows while cases run
NODES = 1_000
PODS = 32
DAEMON_ACTIONS = 200  # daemon.max_actions_per_cycle's default (RJMS calls per cycle)
PARTS = ("build", "columns", "schedule", "pass", "estimates", "words")
COLUMNS = (*PARTS, "rows read")
LEVELS = (0.1, 0.25, 0.5, 0.75, 0.9)


class QuantileModel:
    """A quantile model's answers, set from each job's request (a calibrated mean of 40 % of it
    and five quantiles from 5 % to 90 %, varied by job id), for the live predictor's wrapper."""

    retrain_every = None

    def observe(self, done) -> None:
        pass

    def predict(self, jobs) -> np.ndarray:
        return self.predict_with_quantiles(jobs)[0]

    def predict_with_quantiles(self, jobs) -> tuple[np.ndarray, tuple[float, ...], np.ndarray]:
        request = np.asarray(jobs.requested_time, dtype=np.float64)
        spread = 0.5 + (np.asarray(jobs.job_id) % 7) / 14.0  # 0.5 .. 0.93
        fractions = np.array([0.05, 0.15, 0.3, 0.6, 0.9])
        return 0.4 * request, LEVELS, request[:, None] * fractions[None, :] * spread[:, None]


def quantile_runtime() -> LiveRuntimePredictor:
    """The shells' live runtime predictor over :class:`QuantileModel` (no history store)."""
    return LiveRuntimePredictor("quantiles", QuantileModel(), None, own=frozenset())


@contextmanager
def timed_inside(seconds: dict[str, float]) -> Iterator[None]:
    """CPU seconds of the compiled pass and of the start estimates inside each schedule() call."""
    originals = {"pass": core_schedule.scheduling_pass, "estimates": core_schedule.estimate_starts}

    def timing(name, function):
        def call(*args):
            t0 = time.process_time()
            out = function(*args)
            seconds[name] += time.process_time() - t0
            return out

        return call

    core_schedule.scheduling_pass = timing("pass", originals["pass"])
    core_schedule.estimate_starts = timing("estimates", originals["estimates"])
    try:
        yield
    finally:
        core_schedule.scheduling_pass = originals["pass"]
        core_schedule.estimate_starts = originals["estimates"]


def rjms_state(snapshot: Snapshot, kept: dict[int, RJMSJob] | None) -> ClusterState:
    """``snapshot`` as an RJMS read; ``kept``: the shell's job objects, reused where unchanged
    (the Flux module), else None (a daemon's fresh read)."""
    names = [node.name for node in snapshot.nodes]
    jobs = [
        RJMSJob(
            r.job_id,
            "RUNNING",
            r.start - 60.0,
            r.procs,
            r.requested_time,
            start=r.start,
            user="u0",
            request=r.request,
            allocation=tuple((names[s.node], s.cores, s.gpus) for s in r.allocation),
        )
        for r in snapshot.running
    ]
    jobs += [
        RJMSJob(
            p.job_id, "PENDING", p.submit, p.procs, p.requested_time, user=f"u{p.user}", request=p.request
        )
        for p in snapshot.pending
    ]
    if kept is not None:
        jobs = [kept.get(j.job_id, j) if kept.get(j.job_id) == j else j for j in jobs]
        kept.clear()
        kept.update((j.job_id, j) for j in jobs)
    return ClusterState(
        snapshot.now, snapshot.total_procs, snapshot.free_procs, tuple(jobs), nodes=snapshot.nodes
    )


class LivePath:
    """What the planner does from a read to the decisions (its builder, kept columns, core)."""

    def __init__(
        self,
        config: CoreConfig,
        explain: bool,
        collect: bool = True,
        actions: int = DAEMON_ACTIONS,
        quantiles: bool = False,
    ) -> None:
        self.collect = collect
        self.builder = SnapshotBuilder(runtime=quantile_runtime() if quantiles else None)
        self.columns = KeptColumns() if KeptColumns is not None else None
        self.config, self.explain = config, explain
        self.records: dict[int, JobRecord] = {}  # the daemon's journal: priority values last sent
        self.actions = actions

    def cycle(self, state: ClusterState, seconds: dict[str, float]):
        if self.collect:  # each cycle from the same collector state (``steady`` pays the pauses)
            gc.collect()
        t0 = time.process_time()
        snapshot = self.builder.build(state, {}).snapshot
        t1 = time.process_time()
        if self.columns is not None:
            snapshot = replace(snapshot, columns=self.columns.update(snapshot.pending, snapshot.running))
        t2 = time.process_time()
        with timed_inside(seconds):
            decided = schedule(snapshot, self.config, explain_priorities=self.explain)
        t3 = time.process_time()
        if self.explain:
            # The daemon's plan: the priorities whose value changed, within its action budget
            # (the rest deferred to the next cycle), as the applier then records them sent.
            plan = plan_actions(
                decided, state, self.records, max_actions_per_cycle=self.actions, skip_limit=3
            )
            for action in plan.actions:
                if action.kind == "priority":
                    self.records[action.job_id] = JobRecord(action.job_id, last_site_factor=int(action.value))
        seconds["build"] += t1 - t0
        seconds["columns"] += t2 - t1
        seconds["schedule"] += t3 - t2
        seconds["words"] += time.process_time() - t3
        # Pending rows read: by the builder where it writes the columns itself, else the kept columns.
        self.rewritten = getattr(
            self.builder, "rows_read", -1 if self.columns is None else self.columns.pending.rewritten
        )
        return decided


def with_arrivals(snapshot: Snapshot, count: int, seed: int) -> Snapshot:
    """``count`` new jobs (bench_nodes' mix) queued at the snapshot's time."""
    rng = np.random.default_rng(seed)
    first = max(p.job_id for p in snapshot.pending) + 1
    new = []
    for k in range(count):
        request, procs = bench_nodes.make_request(rng)
        new.append(PendingJob(first + k, snapshot.now, procs, 3_600.0, user=k % 7, request=request))
    return replace(snapshot, pending=(*snapshot.pending, *new))


def run(pending: int, shell: str, quantiles: bool, args) -> dict[str, dict[str, float]]:
    """CPU seconds per part of the first and the next cycle, medians of ``args.repeat`` runs;
    ``quantiles``: with the live quantile predictor."""
    config = CoreConfig(backfill="easy", max_jobs_considered=DEFAULT_MAX_JOBS_CONSIDERED)
    snapshot = bench_nodes.make_snapshot(pending, 1, NODES, PODS)
    runs: dict[str, list[dict[str, float]]] = {"first": [], "next": []}
    for _ in range(args.repeat):
        live = LivePath(config, explain=shell == "daemon", actions=args.actions, quantiles=quantiles)
        objects: dict[int, RJMSJob] | None = {} if shell == "flux-module" else None
        first = defaultdict(float)
        decided = live.cycle(rjms_state(snapshot, objects), first)
        later = with_arrivals(
            next_snapshot(snapshot, decided, args.ended, kept=False), args.arrivals, pending
        )
        second = defaultdict(float)
        live.cycle(rjms_state(later, objects), second)
        second["rows read"] = live.rewritten
        first["rows read"] = len(snapshot.pending) if KeptColumns is not None else -1
        runs["first"].append(first)
        runs["next"].append(second)
    return {cycle: {p: statistics.median(r[p] for r in rs) for p in COLUMNS} for cycle, rs in runs.items()}


@contextmanager
def collector_pauses() -> Iterator[dict[int, float]]:
    """CPU seconds of the garbage collector's passes, by generation, wherever they fall."""
    pauses: dict[int, float] = defaultdict(float)
    began = [0.0]

    def note(phase: str, info: dict) -> None:
        if phase == "start":
            began[0] = time.process_time()
        else:
            pauses[info["generation"]] += time.process_time() - began[0]

    gc.callbacks.append(note)
    try:
        yield pauses
    finally:
        gc.callbacks.remove(note)


def steady(pending: int, shell: str, quantiles: bool, args) -> tuple[list[float], dict[int, float]]:
    """``args.steady`` cycles in a row, the collector left to run as it comes: each cycle's CPU
    seconds (from the read to the decisions) and the collector's seconds by generation (its
    passes during the simulated reads included: a live process pays them wherever they fall)."""
    config = CoreConfig(backfill="easy", max_jobs_considered=DEFAULT_MAX_JOBS_CONSIDERED)
    snapshot = bench_nodes.make_snapshot(pending, 1, NODES, PODS)
    live = LivePath(
        config, explain=shell == "daemon", collect=False, actions=args.actions, quantiles=quantiles
    )
    objects: dict[int, RJMSJob] | None = {} if shell == "flux-module" else None
    seconds = []
    gc.collect()
    with collector_pauses() as pauses:
        for cycle in range(args.steady):
            state = rjms_state(snapshot, objects)
            t0 = time.process_time()
            decided = live.cycle(state, defaultdict(float))
            seconds.append(time.process_time() - t0)
            later = next_snapshot(snapshot, decided, args.ended, kept=False)
            snapshot = with_arrivals(later, args.arrivals, pending + cycle)
    return seconds, dict(pauses)


def settle(collector: str) -> None:
    """The collector set up as a shell does after its start-up (``--collector``)."""
    if collector == "freeze":
        gc.collect()
        gc.freeze()
    elif collector == "rush":
        from rush.planner.collector import settle_collector

        settle_collector()
    print(f"collector: {collector}; thresholds {gc.get_threshold()}; frozen {gc.get_freeze_count()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--pending",
        type=bench_args.counts(1),
        default="1000,10000",
        help="pending-job counts, comma-separated",
    )
    parser.add_argument("--repeat", type=bench_args.positive, default=5)
    parser.add_argument(
        "--ended", type=bench_args.non_negative, default=5, help="running jobs ended before the next cycle"
    )
    parser.add_argument(
        "--arrivals", type=bench_args.non_negative, default=5, help="jobs queued before the next cycle"
    )
    parser.add_argument("--shells", type=bench_args.names(bench_args.SHELLS), default="flux-module,daemon")
    parser.add_argument(
        "--actions",
        type=bench_args.non_negative,
        default=DAEMON_ACTIONS,
        help="the daemon's daemon.max_actions_per_cycle (RJMS calls per cycle; its default 200)",
    )
    parser.add_argument(
        "--collector",
        choices=("default", "freeze", "rush"),
        default="rush",
        help="after warm-up: CPython's defaults, a start-up gc.freeze() only (the shells before "
        "rush.planner.collector), or the shells' rule (rush.planner.collector.settle_collector)",
    )
    parser.add_argument(
        "--steady",
        type=bench_args.non_negative,
        default=12,
        help="cycles in a row, collector as it comes (0: none)",
    )
    parser.add_argument(
        "--quantiles",
        choices=("no", "yes", "both"),
        default="both",
        help="without runtime predictions, with the live quantile predictor (every job), or both",
    )
    args = parser.parse_args()
    modes = {"no": (False,), "yes": (True,), "both": (False, True)}[args.quantiles]
    print(f"rush from {rush.__file__}; kept columns: {'yes' if KeptColumns is not None else 'no'}")
    warm = bench_nodes.make_snapshot(100, 1, NODES, PODS)  # numba's cache loaded once, not timed
    LivePath(CoreConfig(backfill="easy"), True).cycle(rjms_state(warm, None), defaultdict(float))
    settle(args.collector)
    print(
        f"{NODES} nodes, EASY with start estimates, CPU ms (median of {args.repeat}); 'pass' is the reference"
    )
    print(
        f"{'shell':12s} {'q':1s} {'pending':>7s} {'cycle':6s} {'total':>7s} "
        + " ".join(f"{p:>9s}" for p in COLUMNS)
    )
    for quantiles in modes:
        for pending in args.pending:
            for shell in args.shells:
                for cycle, parts in run(pending, shell, quantiles, args).items():
                    total = parts["build"] + parts["columns"] + parts["schedule"] + parts["words"]
                    print(
                        f"{shell:12s} {'yn'[not quantiles]} {pending:7d} {cycle:6s} {total * 1e3:7.1f} "
                        + " ".join(f"{parts[p] * 1e3:9.1f}" for p in PARTS)
                        + f" {parts['rows read']:9.0f}"
                    )
    if args.steady < 2:
        return
    print(
        f"{args.steady} cycles in a row, collector as it comes: cycle CPU ms (2nd on), collector ms per cycle"
    )
    print(
        f"{'shell':12s} {'q':1s} {'pending':>7s} {'median':>7s} {'mean':>7s} {'max':>7s} "
        f"{'gen 0':>7s} {'gen 1':>7s} {'gen 2':>7s}"
    )
    for quantiles in modes:
        for pending in args.pending:
            for shell in args.shells:
                seconds, pauses = steady(pending, shell, quantiles, args)
                per_cycle = [pauses.get(g, 0.0) / len(seconds) * 1e3 for g in (0, 1, 2)]
                print(
                    f"{shell:12s} {'yn'[not quantiles]} {pending:7d} "
                    f"{statistics.median(seconds[1:]) * 1e3:7.1f} "
                    f"{statistics.mean(seconds[1:]) * 1e3:7.1f} {max(seconds[1:]) * 1e3:7.1f} "
                    + " ".join(f"{p:7.1f}" for p in per_cycle)
                )


if __name__ == "__main__":
    main()
