"""The Slurm daemon's whole steady cycle, read included (issue 31 item 3, round 27, r31read3):
from squeue's answer to the daemon's plan, at 10 000 pending jobs on 1 000 nodes, two ways in
one process: **main's** read (``parse_job`` per record, ``with_fields`` per job: new job objects
every cycle) and the **cached** read (:class:`rush.rjms.slurm_json.ParsedJobs`: an unchanged
record's job is last cycle's object), each followed by ``bench_live_cycle.py``'s daemon cycle
(:class:`bench_live_cycle.LivePath`: builder, kept columns, ``schedule()`` with start estimates,
the plan and its words).

The queue is ``bench_live_cycle``'s (:mod:`bench_nodes`, time limits rounded up to minutes),
written as the 22.05-shaped short records a daemon reads (the fields ``parse_job`` reads and
``last_sched_evaluation``; a running job's ``job_resources`` core map and ``gres_detail``).
Between cycles the answer changes as Slurm's does: every pending record's
``last_sched_evaluation`` advances, the last cycle's starts run where the pass put them,
``--ended`` running jobs end, ``--arrivals`` jobs are queued, 1 % of the pending records change
their ``priority`` and the site factors the plan set come back (in sprio's factors and in the
record's ``priority``). A reference run (main's read, untimed) makes the answers and records
each cycle's decisions and plan; every timed run is checked against it after each cycle.

Per round, each path runs ``--cycles`` cycles in a row on the same answers (order swapped each
round), the collector settled as the daemon settles it and left to run as it comes; printed:
the medians of cycles 2 to N of the read, the rest of the cycle and the whole (CPU ms), and
``bench_live_cycle.steady()``'s Flux module (kept objects, no read) in the same round.

With ``--fairshare`` (``site.fairshare = "rjms"``, round 27, r31fair) each pending record carries
an account (``acct0``-``acct7`` by user) and each cycle has an ``sshare`` answer (``-P -n -a``'s
``account|user|partition|factor`` lines, one per user association, six decimals as sshare
prints them), read as the backends read it (``parse_sshare``, then the fair-share step: main's
``with_fields`` per pending job, the cached path as the tree's backends do it); between cycles
``--fair-changes`` associations get a new factor (Fair Tree's ranks move for a few users as
usage is charged) and new users' associations appear.

With ``--moving-starts F`` (round 28, r31move: :class:`Moving`) every pending record carries
an expected ``start_time`` as backfill sets it, and each cycle a fraction F of them moves (by up
to 10 minutes); with ``--finished N`` squeue also lists N finished jobs (COMPLETED, FAILED,
CANCELLED in turn, with their allocation, as MinJobAge keeps them: 300 s at one job ending a
second is 300), the ones that ended last cycle added and the oldest dropped.

Run: ``python benchmarks/bench_slurm_cycle.py [--pending 10000] [--rounds 5] [--cycles 12]
[--fairshare [--fair-changes 3]] [--moving-starts 0.3] [--finished 300]``.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import math
import os
import random
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from types import SimpleNamespace
from typing import Any

import bench_args
import bench_live_cycle as live_cycle
import bench_nodes
from live_next_pass import next_snapshot

import rush
from rush.core import CoreConfig, PendingJob, RunningJob, Snapshot
from rush.core.pass_budget import DEFAULT_MAX_JOBS_CONSIDERED
from rush.core.resources import Request
from rush.planner.collector import settle_collector
from rush.rjms import site_factor as site_factor_values
from rush.rjms import slurm
from rush.rjms.base import ClusterState, RJMSJob, with_fields
from rush.rjms.slurm_json import FINAL_STATES, ParsedJobs, parse_job

print = functools.partial(print, flush=True)  # noqa: A001 - rounds show as they end
BASE_PRIORITY = 10_000


def request_fields(request: Request, procs: int) -> dict[str, Any]:
    """What Slurm writes of a job's request (``-N n --ntasks-per-node=c``, ``--exclusive``,
    ``--gres=gpu:g``; a processor-count job: ``-n procs`` only)."""
    if request.nodes == 0:
        return {
            "cpus": procs,
            "node_count": 1,
            "tasks": procs,
            "tasks_per_node": 0,
            "tres_req_str": f"cpu={procs},mem=4G,node=1,billing={procs}",
            "tres_per_node": "",
            "shared": None,
            "partition": request.partition,
        }
    cpus = request.nodes * request.cores_per_node
    return {
        "cpus": procs,
        "node_count": request.nodes,
        "tasks": cpus,
        "tasks_per_node": request.cores_per_node,
        "tres_req_str": f"cpu={cpus},mem=4G,node={request.nodes},billing={cpus}",
        "tres_per_node": f"gres:gpu:{request.gpus_per_node}" if request.gpus_per_node else "",
        "shared": "exclusive" if request.exclusive else None,
        "partition": request.partition,
    }


def account_of(user: int) -> str:
    """A pending job's account with ``--fairshare`` (its user's association's)."""
    return f"acct{user % 8}"


def pending_record(job: PendingJob, stamp: int, priority: int, account: str = "") -> dict[str, Any]:
    return {
        "job_id": job.job_id,
        "job_state": "PENDING",
        "submit_time": int(job.submit),
        "start_time": 0,
        "end_time": 0,
        "time_limit": int(job.requested_time // 60),
        "user_name": f"u{job.user}",
        "account": account,
        "name": f"job{job.job_id}",
        "admin_comment": "",
        "state_reason": "Priority",
        "restart_cnt": 0,
        "nice": None,
        "priority": priority,
        "last_sched_evaluation": stamp,
        "job_resources": None,
        "gres_detail": [],
        **request_fields(job.request, job.procs),
    }


def running_record(job: RunningJob, names: list[str], stamp: int) -> dict[str, Any]:
    """A running job's record with 22.05's core map of its allocation (one socket per node)."""
    allocated = [
        {
            "nodename": names[s.node],
            "sockets": {"0": {"cores": {str(c): "allocated" for c in range(s.cores)}}},
            "cpus_used": 0,
            "memory_used": 0,
            "memory_allocated": 0,
        }
        for s in job.allocation
    ]
    gpus = [s.gpus for s in job.allocation]
    return {
        "job_id": job.job_id,
        "job_state": "RUNNING",
        "submit_time": int(job.start) - 60,
        "start_time": int(job.start),
        "end_time": int(job.start + job.requested_time),
        "time_limit": int(job.requested_time // 60),
        "user_name": "u0",
        "account": "",
        "name": f"job{job.job_id}",
        "admin_comment": "",
        "state_reason": "None",
        "restart_cnt": 0,
        "nice": None,
        "priority": BASE_PRIORITY,
        "last_sched_evaluation": stamp,
        "job_resources": {
            "nodes": ",".join(names[s.node] for s in job.allocation),
            "allocated_cpus": job.procs,
            "allocated_hosts": len(job.allocation),
            "allocated_nodes": allocated,
        },
        "gres_detail": [f"gpu:{g}(IDX:0-{g - 1})" for g in gpus] if any(gpus) else [],
        **request_fields(job.request, job.procs),
    }


def in_minutes(snapshot: Snapshot) -> Snapshot:
    """The snapshot with every time limit rounded up to a minute (Slurm keeps minutes)."""

    def up(seconds: float) -> float:
        return math.ceil(seconds / 60.0) * 60.0

    return replace(
        snapshot,
        pending=tuple(replace(p, requested_time=up(p.requested_time)) for p in snapshot.pending),
        running=tuple(replace(r, requested_time=up(r.requested_time)) for r in snapshot.running),
    )


@dataclass
class Answers:
    """The cycles' squeue answers, sprio's factors, the snapshots they were written from, and
    the reference run's decisions and plans (what every timed run must give)."""

    texts: list[str] = field(default_factory=list)
    factors: list[dict[int, int]] = field(default_factory=list)
    shares: list[str] = field(default_factory=list)  # sshare's answers ("": fair-share off)
    snapshots: list[Snapshot] = field(default_factory=list)
    outcomes: list[tuple] = field(default_factory=list)


def answer_text(
    snapshot: Snapshot,
    stamp: int,
    priority: Callable[[int], int],
    fairshare: bool,
    moving: Moving | None = None,
) -> str:
    names = [node.name for node in snapshot.nodes]
    records = [running_record(r, names, 0) for r in snapshot.running]
    records += [
        pending_record(p, stamp, priority(p.job_id), account_of(p.user) if fairshare else "")
        for p in snapshot.pending
    ]
    if moving is not None:  # backfill's expected starts, then the finished jobs still listed
        for record in records[len(snapshot.running) :]:
            record["start_time"] = moving.starts.get(record["job_id"], 0)
        records += moving.finished
    return json.dumps({"jobs": records})


FINISHED = (("COMPLETED", "None", 0), ("FAILED", "NonZeroExitCode", 256), ("CANCELLED", "None", 15))
FIRST_FINISHED_ID = 1_000_000_000  # the jobs that ended before the first cycle


@dataclass
class Moving:
    """What a real slurmctld changes in squeue's answer between cycles beyond the default run
    (round 28, r31move): backfill's expected ``start_time`` of pending jobs (set for each one
    it tests, moving as running jobs end and jobs arrive), and the finished jobs squeue keeps
    listing for ``MinJobAge`` (COMPLETED, FAILED, CANCELLED records with their allocation,
    as tests/slurm/recorded/22.05 shows them). Its own random stream: the default answers are
    unchanged."""

    fraction: float  # of the pending jobs whose expected start moves each cycle
    listed: int  # finished records listed (about MinJobAge x the rate jobs end)
    rng: random.Random = field(default_factory=lambda: random.Random(28))
    starts: dict[int, int] = field(default_factory=dict)
    finished: list[dict[str, Any]] = field(default_factory=list)

    def next_starts(self, snapshot: Snapshot, stamp: int) -> None:
        """Every pending job an expected start; ``fraction`` of those it had moved."""
        if not self.fraction:
            return
        pending = [p.job_id for p in snapshot.pending]
        self.starts = {j: self.starts[j] for j in pending if j in self.starts}
        moved = self.rng.sample(sorted(self.starts), round(self.fraction * len(self.starts)))
        for job_id in moved:
            self.starts[job_id] += self.rng.randint(-600, 600) or 1
        for job_id in pending:
            self.starts.setdefault(job_id, stamp + self.rng.randint(60, 86_400))

    def next_finished(self, snapshot: Snapshot, later: Snapshot) -> None:
        """The jobs of ``snapshot`` that ended before ``later`` listed as finished (the first
        cycle: ``listed`` earlier ones), the oldest dropped beyond ``listed``."""
        if not self.listed:
            return
        names = [node.name for node in snapshot.nodes]
        if not self.finished:  # shaped as the running jobs' records, in turn
            running = snapshot.running
            self.finished = [
                self.ended(running_record(running[k % len(running)], names, 0), FIRST_FINISHED_ID + k, k)
                for k in range(self.listed)
            ]
        still = {r.job_id for r in later.running}
        self.finished += [
            self.ended(running_record(r, names, 0), r.job_id, r.job_id)
            for r in snapshot.running
            if r.job_id not in still
        ]
        del self.finished[: len(self.finished) - self.listed]

    @staticmethod
    def ended(record: dict[str, Any], job_id: int, k: int) -> dict[str, Any]:
        state, reason, status = FINISHED[k % len(FINISHED)]
        return {**record, "job_id": job_id, "job_state": state, "state_reason": reason, "exit_code": status}


def sshare_text(shares: dict[int, float]) -> str:
    """``sshare -P -n -a -o Account,User,Partition,FairShare``'s answer: the root and account
    lines (no user: skipped by the read), then one line per user association."""
    lines = ["root|||1.000000"] + [f" acct{a}|||0.500000" for a in range(8)]
    lines += [f"  {account_of(u)}|u{u}||{f:.6f}" for u, f in sorted(shares.items())]
    return "\n".join(lines) + "\n"


def next_shares(shares: dict[int, float], snapshot: Snapshot, rng: random.Random, changes: int) -> None:
    """Each pending job's user association (a new user's appears) and ``changes`` of the
    associations given a new factor, as a Fair Tree's ranks move for a few users a cycle."""
    for user in sorted({p.user for p in snapshot.pending} - set(shares)):
        shares[user] = rng.random()
    for user in rng.sample(sorted(shares), min(changes, len(shares))):
        shares[user] = rng.random()


def outcome(decided, plan) -> tuple:
    """What must come out the same: the pass's decisions but the priority ones (kept unwritten),
    every priority value, the order, reservations and estimates, and the plan's actions."""
    kinds = [k for k in decided.counts() if k != "priority"]
    return (
        decided.among(kinds),
        decided.order,
        decided.priority,
        decided.reserved_at,
        decided.estimated_start,
        [(a.kind, a.job_id, a.reason, a.value) for a in plan.actions],
        list(plan.deferred_priorities),
    )


class PlanKept:
    """``bench_live_cycle``'s ``plan_actions`` wrapped to keep its last plan (one call a cycle)."""

    def __init__(self) -> None:
        self.plan = None
        self.original = live_cycle.plan_actions

    def __call__(self, *args, **kwargs):
        self.plan = self.original(*args, **kwargs)
        return self.plan


PLANS = PlanKept()
live_cycle.plan_actions = PLANS


def state_of(snapshot: Snapshot, jobs: list[RJMSJob]) -> ClusterState:
    return ClusterState(
        snapshot.now, snapshot.total_procs, snapshot.free_procs, tuple(jobs), nodes=snapshot.nodes
    )


def config() -> CoreConfig:
    return CoreConfig(backfill="easy", max_jobs_considered=DEFAULT_MAX_JOBS_CONSIDERED)


def main_read(text: str, factors: dict[int, int], share_text: str = "") -> list[RJMSJob]:
    """Main's read (``SlurmBackend.read_state``'s steps): decode, ``parse_job`` per record, the
    finished jobs left out, ``with_fields`` per job with its site factor; with an sshare
    answer, ``with_fields`` per pending job with its association's fair-share factor."""
    jobs = [parse_job(r, "site_factor") for r in json.loads(text)["jobs"]]
    jobs = [j for j in jobs if j.state not in FINAL_STATES]
    jobs = [with_fields(j, site_factor=factors.get(j.job_id, 0)) for j in jobs]
    if not share_text:
        return jobs
    shares = site_factor_values.parse_sshare(share_text)
    return [
        with_fields(
            j, fairshare=site_factor_values.fairshare_of(j.job_id, j.account, j.user, j.partition, shares)
        )
        if j.state == "PENDING"
        else j
        for j in jobs
    ]


def cached_read(
    parsed: ParsedJobs, text: str, factors: dict[int, int], share_text: str = ""
) -> list[RJMSJob]:
    """The same steps through :class:`ParsedJobs`, as the tree's backends read: its fair-share
    step is ``ParsedJobs.with_fairshare`` where the tree has one (r31fair), else the module's
    ``slurm.with_fairshare`` (integ before r31fair)."""
    jobs = [j for j in parsed.parse(json.loads(text)["jobs"], "site_factor") if j.state not in FINAL_STATES]
    jobs = parsed.with_site_factors(jobs, factors)
    if not share_text:
        return jobs
    shares = site_factor_values.parse_sshare(share_text)
    fair = getattr(parsed, "with_fairshare", None)
    return fair(jobs, shares) if fair is not None else slurm.with_fairshare(jobs, shares)


def make_answers(args: argparse.Namespace) -> Answers:
    """The reference run (main's read, untimed): each cycle's answer from the snapshot, the
    cycle run, its outcome kept, the next snapshot made from its decisions; the cached read
    checked against main's job by job on every answer."""
    snapshot = in_minutes(bench_nodes.make_snapshot(args.pending, 1, live_cycle.NODES, live_cycle.PODS))
    rng = random.Random(27)
    bumps: dict[int, int] = defaultdict(int)
    factors: dict[int, int] = {}
    shares: dict[int, float] = {}
    fairshare = getattr(args, "fairshare", False)
    live = live_cycle.LivePath(config(), explain=True, collect=False, actions=args.actions)
    parsed = ParsedJobs()
    out = Answers()
    moving = Moving(getattr(args, "moving_starts", 0.0), getattr(args, "finished", 0))
    moving.next_finished(snapshot, snapshot)  # listed from the first answer
    for cycle in range(args.cycles):
        moving.next_starts(snapshot, 1_700_000_000 + cycle)
        text = answer_text(
            snapshot,
            1_700_000_000 + cycle,
            lambda j: max(BASE_PRIORITY + bumps[j] + factors.get(j, 0), 0),
            fairshare,
            moving if moving.fraction or moving.listed else None,
        )
        if fairshare:
            next_shares(shares, snapshot, rng, args.fair_changes)
        share_text = sshare_text(shares) if fairshare else ""
        jobs = main_read(text, factors, share_text)
        assert cached_read(parsed, text, factors, share_text) == jobs, (
            f"cycle {cycle}: the cached read differs"
        )
        if cycle == 0:
            check_written(snapshot, jobs)
        decided = live.cycle(state_of(snapshot, jobs), defaultdict(float))
        out.texts.append(text)
        out.factors.append(dict(factors))
        out.shares.append(share_text)
        out.snapshots.append(snapshot)
        out.outcomes.append(outcome(decided, PLANS.plan))
        for action in PLANS.plan.actions:  # the site factors set come back in the next read
            if action.kind == "priority":
                factors[action.job_id] = int(action.value)
        later = next_snapshot(snapshot, decided, args.ended, kept=False)
        moving.next_finished(snapshot, later)
        snapshot = in_minutes(live_cycle.with_arrivals(later, args.arrivals, args.pending + cycle))
        pending = [p.job_id for p in snapshot.pending]
        for job_id in rng.sample(pending, len(pending) // 100):  # the age factor, 1 % a cycle
            bumps[job_id] += 1 + cycle
    return out


def check_written(snapshot: Snapshot, jobs: list[RJMSJob]) -> None:
    """The records say what the snapshot holds: each job's request, processors, limit and
    (running) allocation as parse_job reads them back."""
    names = [node.name for node in snapshot.nodes]
    by_id = {j.job_id: j for j in jobs}
    assert len(by_id) == len(snapshot.pending) + len(snapshot.running)
    for p in snapshot.pending:
        j = by_id[p.job_id]
        assert (j.request, j.procs, j.requested_time, j.submit) == (
            p.request,
            p.procs,
            p.requested_time,
            p.submit,
        )
    for r in snapshot.running:
        j = by_id[r.job_id]
        assert (j.request, j.procs, j.requested_time, j.start) == (
            r.request,
            r.procs,
            r.requested_time,
            r.start,
        )
        assert j.allocation == tuple((names[s.node], s.cores, s.gpus) for s in r.allocation)


def run_path(answers: Answers, cached: bool, args: argparse.Namespace) -> list[tuple[float, float]]:
    """``args.cycles`` cycles in a row on the answers: (read, rest) CPU seconds of each; every
    cycle's outcome checked against the reference's after it (outside the timing)."""
    live = live_cycle.LivePath(config(), explain=True, collect=False, actions=args.actions)
    parsed = ParsedJobs()
    seconds = []
    gc.collect()
    for text, factors, share_text, snapshot, want in zip(
        answers.texts, answers.factors, answers.shares, answers.snapshots, answers.outcomes, strict=True
    ):
        t0 = time.process_time()
        jobs = (
            cached_read(parsed, text, factors, share_text) if cached else main_read(text, factors, share_text)
        )
        state = state_of(snapshot, jobs)
        t1 = time.process_time()
        decided = live.cycle(state, defaultdict(float))
        t2 = time.process_time()
        seconds.append((t1 - t0, t2 - t1))
        assert outcome(decided, PLANS.plan) == want, "a decision or action differs from the reference"
    return seconds


def moving_flags(parser: argparse.ArgumentParser) -> None:
    """``--moving-starts`` and ``--finished`` (:class:`Moving`), for this benchmark and the A/B."""
    parser.add_argument(
        "--moving-starts",
        type=bench_args.fraction,
        default=0.0,
        help="fraction of pending jobs whose expected start_time moves each cycle (0: all 0)",
    )
    parser.add_argument(
        "--finished", type=bench_args.non_negative, default=0, help="finished jobs squeue lists (MinJobAge's)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pending", type=bench_args.positive, default=10_000)
    parser.add_argument("--rounds", type=bench_args.positive, default=5)
    parser.add_argument(
        "--cycles", type=bench_args.count(2), default=12, help="cycles a round (the first is not timed)"
    )
    parser.add_argument("--ended", type=bench_args.non_negative, default=5)
    parser.add_argument("--arrivals", type=bench_args.non_negative, default=5)
    parser.add_argument("--actions", type=bench_args.non_negative, default=live_cycle.DAEMON_ACTIONS)
    parser.add_argument(
        "--fairshare", action="store_true", help='site.fairshare = "rjms": sshare read each cycle'
    )
    parser.add_argument(
        "--fair-changes",
        type=bench_args.non_negative,
        default=3,
        help="associations whose factor changes a cycle",
    )
    moving_flags(parser)
    args = parser.parse_args()
    print(
        f"rush from {rush.__file__}; fair-share {'on' if args.fairshare else 'off'}; "
        f"moving starts {args.moving_starts:g}, finished listed {args.finished}; load {os.getloadavg()}"
    )
    warm = bench_nodes.make_snapshot(100, 1, live_cycle.NODES, live_cycle.PODS)  # numba's cache, not timed
    live_cycle.LivePath(config(), True).cycle(live_cycle.rjms_state(warm, None), defaultdict(float))
    answers = make_answers(args)
    sizes = [len(t) for t in answers.texts]
    print(
        f"{args.pending} pending, {len(answers.snapshots[0].running)} running; answers {min(sizes) / 1e6:.1f}-"
        f"{max(sizes) / 1e6:.1f} MB; {settle_collector()}"
    )
    flux = SimpleNamespace(steady=args.cycles, ended=args.ended, arrivals=args.arrivals, actions=args.actions)
    print("CPU ms, medians of cycles 2 to N: read / rest / whole; cached / main of the whole")
    rows = []
    for r in range(args.rounds):
        took = {}
        for cached in (False, True) if r % 2 == 0 else (True, False):
            took[cached] = run_path(answers, cached, args)
        flux_seconds, _ = live_cycle.steady(args.pending, "flux-module", False, flux)
        row = {}
        for cached, seconds in took.items():
            steady = seconds[1:]
            row["cached" if cached else "main"] = tuple(
                1e3 * statistics.median(f(s) for s in steady)
                for f in (lambda s: s[0], lambda s: s[1], lambda s: s[0] + s[1])
            )
        row["flux"] = 1e3 * statistics.median(flux_seconds[1:])
        rows.append(row)
        m, c = row["main"], row["cached"]
        print(
            f"round {r + 1} ({'main first' if r % 2 == 0 else 'cached first'}): "
            f"main {m[0]:6.1f} / {m[1]:5.1f} / {m[2]:6.1f}   cached {c[0]:6.1f} / {c[1]:5.1f} / {c[2]:6.1f}"
            f"   x {c[2] / m[2]:.3f}   Flux module {row['flux']:5.1f}; load {os.getloadavg()[0]:.2f}"
        )
    print(
        "medians of rounds: main whole {:.1f} (rest {:.1f}), cached whole {:.1f} (rest {:.1f}), Flux module {:.1f}".format(
            statistics.median(r["main"][2] for r in rows),
            statistics.median(r["main"][1] for r in rows),
            statistics.median(r["cached"][2] for r in rows),
            statistics.median(r["cached"][1] for r in rows),
            statistics.median(r["flux"] for r in rows),
        )
    )
    print(f"load {os.getloadavg()}")


if __name__ == "__main__":
    main()
