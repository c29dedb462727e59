"""The Slurm daemon's own cycle after the read (issue 31 item 3, round 28, r31post): the real
``Planner.run_cycle`` (:mod:`rush.planner.plan`), with its journal, books and applier, on
``bench_slurm_cycle``'s 10 000-pending Slurm states read through ``ParsedJobs``.

``bench_live_cycle``'s ``LivePath`` times the builder, the kept columns, ``schedule()`` and the
plan only; the daemon also journals the queue, settles each action it applies, keeps its books
of every job and checks the RJMS's start order. Here a backend replays the states (its read
costs nothing, every action succeeds), the journal is sqlite in a temp dir with its clock at the
state's time, and each ``run_cycle`` is timed in CPU seconds (and in wall seconds: its
commits wait for the disk), with the steps that read the
state's jobs by id and the queue rows (``_record_queue``) timed apart. After the run every journal table is dumped (the cycles' own
seconds left out), so that two trees' runs can be compared row for row
(``ab_daemon_cycle.py``).

Run: ``python benchmarks/bench_daemon_cycle.py [--cycles 8] [--rounds 3] [--full-book]``.
"""

from __future__ import annotations

import argparse
import functools
import gc
import os
import sqlite3
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace

import bench_args
import bench_live_cycle as live_cycle
import bench_slurm_cycle as slurm_cycle

import rush
import rush.planner.plan as plan_module
from rush.daemon.service import Daemon
from rush.planner.config import parse_config
from rush.planner.journal import JobRecord
from rush.rjms.base import ActionResult, ClusterState, RJMSBackend
from rush.rjms.slurm_json import ParsedJobs

print = functools.partial(print, flush=True)  # noqa: A001 - rounds show as they end
# The daemon's steps that walk the state's jobs (round 28's levers), and its queue rows
# (r31rq), timed apart.
STEPS = ("_journal_request_notes", "_check_start_order", "_observe_completions", "_touch", "_record_queue")
APPLIER_STEPS = ("reconcile", "apply")


class Replay(RJMSBackend):
    """The states in turn, as reads; every action succeeds."""

    name = "replay"

    def __init__(self, states: Sequence[ClusterState]) -> None:
        self.states, self.read = states, 0
        self.now = states[0].taken_at

    def read_state(self, partitions: Sequence[str] = ()) -> ClusterState:
        state = self.states[self.read]
        self.read += 1
        self.now = state.taken_at
        return state

    def set_priority(self, job_id: int, site_factor: int) -> ActionResult:
        return ActionResult(True, "replayed")

    def hold(self, job_id: int) -> ActionResult:
        return ActionResult(True, "replayed")

    def release(self, job_id: int) -> ActionResult:
        return ActionResult(True, "replayed")

    def requeue(self, job_id: int, tags: dict[str, str]) -> ActionResult:
        return ActionResult(True, "replayed")

    def submit(self, **kwargs: object) -> int:
        raise NotImplementedError("the replay takes no submissions")

    def cancel(self, job_id: int) -> ActionResult:
        return ActionResult(True, "replayed")


def states(args: argparse.Namespace) -> list[ClusterState]:
    """``bench_slurm_cycle``'s answers, each read as the Slurm backends read it (ParsedJobs)."""
    answers = slurm_cycle.make_answers(args)
    parsed = ParsedJobs()
    return [
        slurm_cycle.state_of(snapshot, slurm_cycle.cached_read(parsed, text, factors, ""))
        for text, factors, snapshot in zip(answers.texts, answers.factors, answers.snapshots, strict=True)
    ]


def timed(owner: object, name: str, seconds: dict[str, list[float]]) -> None:
    """``owner.name`` replaced by itself with its CPU seconds added to ``seconds[name]``."""
    function = getattr(owner, name)

    def call(*args, **kwargs):
        t0 = time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            seconds[name].append(time.process_time() - t0)

    setattr(owner, name, call)


def dump(path: Path) -> list[tuple]:
    """Every row of every journal table, in order; the cycles' own seconds left out."""
    with sqlite3.connect(path) as db:
        out: list[tuple] = []
        for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"):
            columns = [c[1] for c in db.execute(f"PRAGMA table_info({table})") if c[1] != "seconds"]
            out.append((table, *columns))
            out += db.execute(f"SELECT {', '.join(columns)} FROM {table} ORDER BY rowid").fetchall()
    return out


def run(
    read: Sequence[ClusterState], full_book: bool = False
) -> tuple[list[float], dict[str, list[float]], list[tuple]]:
    """One new daemon through the states: each ``run_cycle``'s CPU seconds, the timed steps'
    seconds, and its journal's dump. ``full_book``: the journal starts with a record (defaults
    only) for every job of the first state, as a daemon that has run some 50 cycles at 10 000
    pending has one for nearly every job (a record is made when a job's first site factor is
    settled, 200 a cycle); without it the book holds only the records these cycles make."""
    with tempfile.TemporaryDirectory(prefix="rush-daemon-cycle-") as tmp:
        journal = Path(tmp) / "journal.sqlite"
        config = parse_config(
            {
                "daemon": {"journal": str(journal)},
                # A fixed origin (live it is the day rush started): the priorities then repeat.
                "policy": {"policy": "WFP3", "backfill": "easy", "time_origin": read[0].taken_at - 86_400},
            }
        )
        backend = Replay(read)
        daemon = Daemon(config, backend=backend, dry_run=False)
        daemon.journal.clock = lambda: backend.now
        if full_book:
            with daemon.journal.transaction():
                for job in read[0].jobs:
                    daemon.journal.save_job(JobRecord(job.job_id))
        seconds: dict[str, list[float]] = defaultdict(list)
        for step in STEPS:
            timed(daemon, step, seconds)
        for step in APPLIER_STEPS:
            timed(daemon.applier, step, seconds)
        # The journal's queue write (its statements and commit) apart from the rows' making (r31rq).
        timed(daemon.journal, "record_queue", seconds)
        plan_actions = plan_module.plan_actions
        timed(plan_module, "plan_actions", seconds)
        whole = []
        gc.collect()
        try:
            for _ in read:
                t0, w0 = time.process_time(), time.perf_counter()
                report = daemon.run_cycle()
                whole.append(time.process_time() - t0)
                # Wall too: the journal's commits wait for the disk (synchronous=FULL), not the CPU.
                seconds["wall"].append(time.perf_counter() - w0)
                assert report.ok, report.error
        finally:
            plan_module.plan_actions = plan_actions
        daemon.journal.close()
        return whole, seconds, dump(journal)


def medians(whole: list[float], seconds: dict[str, list[float]], skip: int) -> dict[str, float]:
    """CPU ms, medians of the cycles after the first ``skip``."""
    out = {"whole": 1e3 * statistics.median(whole[skip:])}
    out.update((k, 1e3 * statistics.median(v[skip:])) for k, v in seconds.items())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pending", type=bench_args.positive, default=10_000)
    parser.add_argument(
        "--cycles", type=bench_args.count(3), default=8, help="cycles a round (the first two are not timed)"
    )
    parser.add_argument("--rounds", type=bench_args.positive, default=3)
    parser.add_argument("--full-book", action="store_true", help="start with a record for every job")
    args = parser.parse_args()
    options = SimpleNamespace(
        pending=args.pending, cycles=args.cycles, ended=5, arrivals=5, actions=live_cycle.DAEMON_ACTIONS
    )
    print(f"rush from {rush.__file__}; load {os.getloadavg()}")
    read = states(options)
    first = None
    for r in range(args.rounds):
        whole, seconds, rows = run(read, args.full_book)
        assert first is None or rows == first, "the journal differs between rounds"
        first = rows
        parts = medians(whole, seconds, 2)
        print(
            f"round {r + 1}: "
            + "  ".join(f"{k} {v:.1f}" for k, v in parts.items())
            + f"; load {os.getloadavg()[0]:.2f}"
        )


if __name__ == "__main__":
    main()
