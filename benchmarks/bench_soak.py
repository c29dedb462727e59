"""Soak: 10 000 daemon cycles and 10 000 collector cycles in one process; RSS must stay flat.

Prints the process's resident set size (VmRSS) at cycle 1 000, 5 000 and 10 000 of each
loop, the journal's and the feature store's size on disk, and their row counts.

* The daemon runs its real cycle (read, reconcile, snapshot, the numba core, plan, journal)
  against ``FakeQueue``, a **fake** RJMS backend held in memory (no Slurm here): jobs arrive
  every cycle, start when processors are free and finish after their runtime, so job ids
  keep growing as on a real cluster. The queue's clock and the journal's clock advance
  ``--step`` seconds (default 60) per cycle: 10 000 cycles replay about a week, and the
  journal's retention (``--retention``, default one day) deletes old rows as it would in
  production.
* The collector service runs ``CollectorService.run`` over ``fake_counters``, a **fake**
  collector registered by this benchmark (one sample per metric per host and cycle), into
  a real feature store pruned every 60 cycles with a short retention.

Run: ``python -u benchmarks/bench_soak.py [--cycles 10000] [--pending 200] [--apply] [--only daemon]
[--model MODEL]`` (``--model``: with a runtime-class model and its live history).
"""

from __future__ import annotations

import argparse
import gc
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from rush.collect.base import Collector, Sample, register_collector
from rush.collect.config import collect_config_from_dict
from rush.collect.service import CollectorService
from rush.daemon.service import Daemon
from rush.planner.config import parse_config
from rush.rjms.base import ActionResult, ClusterState, RJMSBackend, RJMSJob

CHECKPOINTS = (1_000, 2_000, 5_000, 10_000)


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def disk(path: Path) -> str:
    """The database's size and its write-ahead log's (which grows and is reset between checkpoints)."""
    wal = Path(f"{path}-wal")
    size = path.stat().st_size / 2**20 if path.exists() else 0.0
    return f"{size:6.2f} MiB (+ WAL {wal.stat().st_size / 2**20 if wal.exists() else 0.0:4.2f})"


class FakeClock:
    def __init__(self, start: float = 1.7e9) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


class FakeQueue(RJMSBackend):
    """A fake RJMS in memory. Each read: running jobs past their runtime (half their requested
    time) finish, pending jobs start in submit order while they fit, and new jobs arrive until
    ``pending`` wait again, so the queue is stationary (a constant backlog, full machine) while
    job ids keep growing. Actions always succeed."""

    name = "fake"

    def __init__(self, clock: FakeClock, procs: int = 512, pending: int = 200) -> None:
        self.clock, self.procs, self.pending = clock, procs, pending
        self.next_id = 1
        self.jobs: dict[int, RJMSJob] = {}
        self.arrived = 0
        self._top_up()

    def _top_up(self) -> None:
        waiting = sum(1 for j in self.jobs.values() if j.start is None)
        for _ in range(self.pending - waiting):
            job_id = self.next_id
            self.next_id += 1
            self.arrived += 1
            procs = 1 << (job_id * 7919 % 6)  # 1..32, deterministic
            requested = 600.0 + (job_id * 104729 % 20) * 300.0
            self.jobs[job_id] = RJMSJob(
                job_id, "PENDING", self.clock.now, procs, requested, user=f"u{job_id % 40}"
            )

    def _advance(self) -> None:
        now = self.clock.now
        for job in list(self.jobs.values()):  # finish
            if job.start is not None and now - job.start >= job.requested_time / 2:
                del self.jobs[job.job_id]
        free = self.procs - sum(j.procs for j in self.jobs.values() if j.start is not None)
        for job in sorted(self.jobs.values(), key=lambda j: j.submit):  # start what fits
            if job.start is None and job.procs <= free:
                free -= job.procs
                self.jobs[job.job_id] = RJMSJob(
                    job.job_id, "RUNNING", job.submit, job.procs, job.requested_time, start=now, user=job.user
                )
        self._top_up()

    def read_state(self, partitions: Sequence[str] = ()) -> ClusterState:
        self._advance()
        used = sum(j.procs for j in self.jobs.values() if j.start is not None)
        return ClusterState(self.clock.now, self.procs, self.procs - used, tuple(self.jobs.values()))

    def set_priority(self, job_id: int, site_factor: int) -> ActionResult:
        return ActionResult(True, "fake")

    def hold(self, job_id: int) -> ActionResult:
        return ActionResult(True, "fake")

    def release(self, job_id: int) -> ActionResult:
        return ActionResult(True, "fake")

    def requeue(self, job_id: int, tags: dict[str, str]) -> ActionResult:
        return ActionResult(True, "fake")

    def submit(self, **kwargs: object) -> int:
        raise NotImplementedError("the fake queue takes no submissions")

    def cancel(self, job_id: int) -> ActionResult:
        return ActionResult(True, "fake")


@register_collector("fake_counters")
class FakeCounters(Collector):
    """A fake collector: ``metrics`` readings for each of ``hosts`` hosts, stamped now."""

    def __init__(self, hosts: int = 64, metrics: int = 8) -> None:
        self.hosts, self.metrics = hosts, metrics
        self.calls = 0

    def collect(self) -> list[Sample]:
        self.calls += 1
        now = time.time()
        return [
            Sample(now, f"node{h:04d}", "fake_counters", f"m{m}", float(self.calls + h + m))
            for h in range(self.hosts)
            for m in range(self.metrics)
        ]


def soak_daemon(
    tmp: Path, cycles: int, step: float, retention: float, pending: int, apply: bool, model: Path | None
) -> None:
    clock = FakeClock()
    journal_path = tmp / "journal.sqlite"
    config = parse_config(
        {
            "daemon": {"journal": str(journal_path), "journal_retention": 3600},
            "policy": {"policy": "WFP3", "backfill": "easy", "use_classes": model is not None},
            # --model: a runtime-class model whose live per-user history the daemon keeps.
            "models": {"runtime_class": str(model), "history": str(tmp / "history.json")} if model else {},
        }
    )
    # --apply: the fake queue "applies" every action, per-job state lives in the journal.
    backend = FakeQueue(clock, pending=pending)
    daemon = Daemon(config, backend=backend, dry_run=not apply)
    daemon.journal.clock = clock
    daemon.journal.retention = retention  # below the configurable minimum: a week in minutes
    print(
        f"daemon ({daemon.mode}): {cycles} cycles, {step:g} s apart (fake clock), "
        f"journal retention {retention:g} s, {pending} jobs pending at the start"
    )
    started = time.perf_counter()
    for n in range(1, cycles + 1):
        report = daemon.run_cycle()
        if not report.ok:
            raise SystemExit(f"cycle {n} failed: {report.error}")
        clock.now += step
        if n in CHECKPOINTS or n == cycles:
            gc.collect()
            counts = daemon.journal.counts()
            queue = backend.jobs.values()
            print(
                f"  cycle {n:6d}: RSS {rss_mib():7.1f} MiB  journal {disk(journal_path)}  "
                f"rows {counts}  queue {sum(j.start is None for j in queue)} pending "
                f"{sum(j.start is not None for j in queue)} running, {backend.arrived} arrived  "
                f"{time.perf_counter() - started:6.1f} s",
                flush=True,
            )
    daemon.journal.close()


def soak_collector(tmp: Path, cycles: int) -> None:
    store = tmp / "features.sqlite"
    config = collect_config_from_dict(
        {
            "store": str(store),
            "retention": 5,
            "prune_every": 60,
            "metrics_address": "",
            "sources": [{"collector": "fake_counters"}],
        }
    )
    config.interval = 0.0  # no wait between cycles (the configurable minimum is 0.1 s)
    service = CollectorService(config)
    print(f"collector: {cycles} cycles, 64 hosts x 8 metrics per cycle, retention 5 s")
    started, done = time.perf_counter(), 0
    try:
        for target in sorted({c for c in CHECKPOINTS if c <= cycles} | {cycles}):
            reports = service.run(cycles=target - done)
            done = target
            gc.collect()
            print(
                f"  cycle {done:6d}: RSS {rss_mib():7.1f} MiB  store {disk(store)}  "
                f"reports kept {len(reports)}  {time.perf_counter() - started:6.1f} s",
                flush=True,
            )
    finally:
        service.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=10_000)
    parser.add_argument("--pending", type=int, default=200)
    parser.add_argument("--step", type=float, default=60.0, help="fake seconds per daemon cycle")
    parser.add_argument("--retention", type=float, default=86_400.0, help="journal retention (s)")
    parser.add_argument("--only", choices=("daemon", "collector"))
    parser.add_argument("--apply", action="store_true", help="daemon applies (to the fake queue)")
    parser.add_argument("--model", type=Path, help="a runtime-class model (rush train runtime-class)")
    args = parser.parse_args()
    print(f"start: RSS {rss_mib():.1f} MiB")
    with tempfile.TemporaryDirectory(prefix="rush-soak-") as tmp:
        if args.only != "collector":
            soak_daemon(
                Path(tmp), args.cycles, args.step, args.retention, args.pending, args.apply, args.model
            )
        if args.only != "daemon":
            soak_collector(Path(tmp), args.cycles)


if __name__ == "__main__":
    main()
