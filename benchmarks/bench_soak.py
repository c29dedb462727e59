"""Soak: 10 000 daemon cycles and 10 000 collector cycles in one process; RSS must stay flat.

Prints the process's resident set size (VmRSS) and its peak (VmHWM) at cycle 1 000, 5 000 and
10 000 of each loop (and at each eighth of the run), the journal's and the feature store's size
on disk, their row counts, and the journal's growth per day of fake time: while the retention
window fills, and once it is full (what retention leaves behind). References from the same run:
the peak RSS of a bare interpreter and of one with the compiled core loaded.

* The daemon runs its real cycle (read, reconcile, snapshot, the numba core, plan, journal)
  against ``FakeQueue``, a **fake** RJMS backend held in memory (no Slurm here): jobs arrive
  every cycle, start when processors are free and finish after their runtime, so job ids
  keep growing as on a real cluster. The queue's clock and the journal's clock advance
  ``--step`` seconds (default 60) per cycle: 10 000 cycles replay about a week, and the
  journal's retention (``--retention``, default one day) deletes old rows as it would in
  production.
* The Flux module (``--only flux``, needs flux-core): rush as Flux's scheduler in a real broker,
  beside flux-core's sched-simple, ``--pending`` jobs of 10 s on ``--flux-cores`` cores for
  ``--flux-seconds``; the RSS and peak of the module's process (Flux runs a Python module as a
  child process of the broker) and of the broker.
* The collector service runs ``CollectorService.run`` over ``fake_counters``, a **fake**
  collector registered by this benchmark (one sample per metric per host and cycle), into
  a real feature store pruned every 60 cycles with a short retention.

Run: ``python -u benchmarks/bench_soak.py [--cycles 10000] [--pending 200] [--apply] [--only daemon]
[--model MODEL]`` (``--model``: with a runtime-class model and its live history). At 10 000
pending jobs (issue 31): ``--only daemon --pending 10000 --cycles 240 --retention 3600``
(a cycle takes seconds there: the run covers four hours of fake time, four retention windows).
"""

from __future__ import annotations

import argparse
import gc
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import bench_args

from rush.collect.base import Collector, Sample, register_collector
from rush.collect.config import collect_config_from_dict
from rush.collect.service import CollectorService
from rush.daemon.service import Daemon
from rush.planner.config import parse_config
from rush.rjms.base import ActionResult, ClusterState, RJMSBackend, RJMSJob

CHECKPOINTS = (1_000, 2_000, 5_000, 10_000)
REFERENCE_CORE = """
from rush.core import CoreConfig, PendingJob, Snapshot
from rush.core.schedule import schedule
schedule(Snapshot(0.0, 8, 8, (PendingJob(1, 0.0, 1, 60.0),), ()), CoreConfig())
"""
PRINT_PEAK = """
import pathlib
line = [l for l in pathlib.Path("/proc/self/status").read_text().splitlines() if l.startswith("VmHWM:")]
print(int(line[0].split()[1]) / 1024)
"""


def rss_mib(field: str = "VmRSS", pid: int | str = "self") -> float:
    """Resident set size now (VmRSS) or its peak so far (VmHWM) of a process, in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def peak_mib(pid: int | str = "self") -> float:
    return rss_mib("VmHWM", pid)


class Growth:
    """The journal's size at each checkpoint (database + WAL), to print its growth per day:
    before the retention window is full (what one window holds) and after (what is left
    behind by retention: should be about nothing)."""

    def __init__(self, path: Path, retention: float) -> None:
        self.path, self.retention = path, retention
        self.points: list[tuple[float, float]] = []  # (fake seconds since start, MiB)

    def add(self, elapsed: float) -> None:
        wal = Path(f"{self.path}-wal")
        size = self.path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)
        self.points.append((elapsed, size / 2**20))

    def report(self, step: float) -> str:
        filling = [p for p in self.points if p[0] <= self.retention]
        full = [p for p in self.points if p[0] >= 2 * self.retention]
        out = []
        if len(filling) >= 2:
            (t0, s0), (t1, s1) = filling[0], filling[-1]
            out.append(f"while the window fills: {(s1 - s0) / (t1 - t0) * 86400:8.1f} MiB per day")
        if len(full) >= 2:
            (t0, s0), (t1, s1) = full[0], full[-1]
            out.append(
                f"with retention on (from {t0 / 3600:.1f} h to {t1 / 3600:.1f} h of fake time): "
                f"{(s1 - s0) / (t1 - t0) * 86400:8.2f} MiB per day"
            )
        else:
            out.append("with retention on: run past twice the retention for this figure")
        return f"journal growth at one cycle per {step:g} s: " + "; ".join(out)


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
    growth = Growth(journal_path, retention)
    checkpoints = set(CHECKPOINTS) | {max(1, round(cycles * k / 8)) for k in range(1, 9)}
    for n in range(1, cycles + 1):
        report = daemon.run_cycle()
        if not report.ok:
            raise SystemExit(f"cycle {n} failed: {report.error}")
        clock.now += step
        if n in checkpoints or n == cycles:
            gc.collect()
            growth.add(n * step)
            counts = daemon.journal.counts()
            queue = backend.jobs.values()
            print(
                f"  cycle {n:6d}: RSS {rss_mib():7.1f} MiB (peak {peak_mib():7.1f})  journal {disk(journal_path)}  "
                f"rows {counts}  queue {sum(j.start is None for j in queue)} pending "
                f"{sum(j.start is not None for j in queue)} running, {backend.arrived} arrived  "
                f"{time.perf_counter() - started:6.1f} s",
                flush=True,
            )
    daemon.journal.close()
    print(f"daemon: peak RSS {peak_mib():.1f} MiB over {cycles} cycles at {pending} pending jobs")
    print(growth.report(step))


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


def module_pid(broker: int, name: str) -> int:
    """The broker's child process that runs the Python module ``name`` (flux-module-python-exec)."""
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            ppid = next(
                int(line.split()[1]) for line in status.read_text().splitlines() if line.startswith("PPid:")
            )
            if ppid == broker and name in (status.parent / "cmdline").read_text():
                return int(status.parent.name)
        except (OSError, StopIteration, ValueError):
            continue
    raise SystemExit(f"no process of the Flux module {name} under broker {broker}")


def soak_flux(tmp: Path, pending: int, seconds: float, cores: int) -> None:
    """rush as Flux's scheduler (the broker module) against flux-core's sched-simple in the same
    run: ``pending`` one-core jobs of 10 s on ``cores`` cores, so the queue stays long while jobs
    keep starting and ending for ``seconds``; the RSS and peak RSS of the module's process (Flux
    runs a Python module in a process of its own, a child of the broker) and of the broker,
    sampled every tenth of the run."""
    from bench_flux_sched import MODULE, rush_config

    from tests.flux.instance import FluxInstance, available

    why = available()
    if why:
        print(f"flux: skipped ({why})")
        return
    runs = [
        ("sched-simple", ["sched-simple"]),
        ("rush FCFS+EASY", [str(MODULE), f"config={rush_config(tmp, 'FCFS')}"]),
    ]
    for name, load in runs:
        with FluxInstance(tmp / name.split()[0], size=1, cores=cores) as flux:
            flux.use_scheduler(*load)
            broker = int(flux.run("getattr", "broker.pid").stdout)
            module = module_pid(broker, "sched-rush.py" if "rush" in name else "sched-simple")
            flux.run("queue", "stop", "--quiet", check=False)
            flux.run(
                "submit", f"--cc=1-{pending}", "--quiet", "-n1", "-t", "1m",
                "--setattr=system.exec.test.run_duration=10s", "true", timeout=3600,
            )  # fmt: skip
            before = rss_mib(pid=module)
            flux.run("queue", "start", "--quiet", check=False)
            print(f"flux {name}: {pending} jobs queued on {cores} cores, module RSS {before:.1f} MiB")
            started = time.monotonic()
            for k in range(1, 11):
                time.sleep(max(0.0, started + seconds * k / 10 - time.monotonic()))
                done = len(flux.run("jobs", "--filter=inactive", "--count=0", "-no", "{id}").stdout.split())
                print(
                    f"  {time.monotonic() - started:6.0f} s: module RSS {rss_mib(pid=module):7.1f} MiB "
                    f"(peak {peak_mib(module):7.1f}), broker {rss_mib(pid=broker):6.1f}  {done} jobs done",
                    flush=True,
                )
            print(
                f"flux {name}: module peak RSS {peak_mib(module):.1f} MiB, broker {peak_mib(broker):.1f} MiB"
            )
            flux.cancel_all()
            # With thousands of jobs left the instance takes minutes to stop on a busy machine
            # (the fixture's own shutdown allows 30 s).
            flux.run("shutdown", "--quiet", check=False, timeout=900)
            flux.proc.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=bench_args.positive, default=10_000)
    parser.add_argument("--pending", type=bench_args.positive, default=200)
    parser.add_argument(
        "--step", type=bench_args.positive_number, default=60.0, help="fake seconds per daemon cycle"
    )
    parser.add_argument(
        "--retention", type=bench_args.positive_number, default=86_400.0, help="journal retention (s)"
    )
    parser.add_argument("--only", choices=("daemon", "collector", "flux"))
    parser.add_argument(
        "--flux-seconds", type=bench_args.positive_number, default=300.0, help="how long the Flux soak runs"
    )
    parser.add_argument("--flux-cores", type=bench_args.positive, default=64)
    parser.add_argument("--apply", action="store_true", help="daemon applies (to the fake queue)")
    parser.add_argument("--model", type=Path, help="a runtime-class model (rush train runtime-class)")
    args = parser.parse_args()
    # References in the same run: a bare interpreter, and one with the compiled core loaded.
    for what, code in (("python -c pass", "pass"), ("python + rush core loaded", REFERENCE_CORE)):
        out = subprocess.run(
            [sys.executable, "-c", code + PRINT_PEAK], capture_output=True, text=True, check=True
        )
        print(f"reference: peak RSS of {what}: {float(out.stdout):.1f} MiB")
    print(f"start: RSS {rss_mib():.1f} MiB")
    with tempfile.TemporaryDirectory(prefix="rush-soak-") as tmp:
        if args.only in (None, "daemon"):
            soak_daemon(
                Path(tmp), args.cycles, args.step, args.retention, args.pending, args.apply, args.model
            )
        if args.only in (None, "collector"):
            soak_collector(Path(tmp), args.cycles)
        if args.only in (None, "flux"):
            soak_flux(Path(tmp), args.pending, args.flux_seconds, args.flux_cores)


if __name__ == "__main__":
    main()
