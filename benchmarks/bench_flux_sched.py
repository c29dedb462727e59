"""Scheduler-mode throughput on a live Flux: rush's module against flux-core's sched-simple and
sched-backfill, in the same run, for N pending short jobs.

Protocol: a 1-node instance with ``--cores`` fake cores; the queue is stopped (``flux queue
stop``), N one-core jobs with a 1-minute limit and simulated execution
(``system.exec.test.run_duration``, as flux-core's src/test/throughput.py does) are
submitted, then the queue is started. Reported per scheduler: time to the first start (the
first pass over N pending jobs), time until the last job is clean, and throughput
N / (last clean - queue start). rush runs the full core (FCFS and WFP3, EASY) and journals
every decision. sched-backfill is measured at its default queue depth (8: it sees 8 pending
jobs) and unlimited (it sees all N, like rush).

Run: ``python benchmarks/bench_flux_sched.py [--jobs 1000,10000] [--cores 64]``
(needs flux-core: .ci/vendor-flux.sh). Target: rush at least as fast as sched-backfill at
10 000 pending jobs.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import bench_args

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.flux.instance import FluxInstance, available  # noqa: E402

MODULE = ROOT / "rush" / "flux_module" / "sched-rush.py"


def rush_config(workdir: Path, policy: str) -> Path:
    path = workdir / f"rush-{policy}.toml"
    path.write_text(
        f'[daemon]\ncycle_interval = 60\njournal = "{workdir / f"journal-{policy}.sqlite"}"\n\n'
        f'[policy]\npolicy = "{policy}"\nbackfill = "easy"\n\n[rjms]\nbackend = "flux"\n'
    )
    return path


def scheduler_runs(workdir: Path) -> list[tuple[str, list[str]]]:
    return [
        ("sched-simple", ["sched-simple"]),
        ("sched-backfill (queue-depth 8)", ["sched-backfill"]),
        ("sched-backfill (unlimited)", ["sched-backfill", "queue-depth=unlimited"]),
        ("rush FCFS+EASY", [str(MODULE), f"config={rush_config(workdir, 'FCFS')}"]),
        ("rush WFP3+EASY", [str(MODULE), f"config={rush_config(workdir, 'WFP3')}"]),
    ]


def one_run(workdir: Path, load: list[str], jobs: int, cores: int) -> dict:
    with FluxInstance(workdir, size=1, cores=cores) as flux:
        flux.use_scheduler(*load)
        flux.run("queue", "stop", "--quiet", check=False)
        started = time.monotonic()
        flux.run(
            "submit", f"--cc=1-{jobs}", "--quiet", "-n1", "-t", "1m",
            "--setattr=system.exec.test.run_duration=0.001s", "true",
            timeout=1800,
        )  # fmt: skip
        submit_seconds = time.monotonic() - started
        go = time.time()
        flux.run("queue", "start", "--quiet", check=False)
        flux.run("queue", "drain", timeout=3600)
        done = json.loads(flux.run("jobs", "-a", "--count=0", "--json").stdout or "{}").get("jobs", [])
        runs = sorted(j["t_run"] for j in done if j.get("t_run"))
        cleans = [j["t_cleanup"] for j in done if j.get("t_cleanup")]
        if len(runs) != jobs:
            raise RuntimeError(f"{len(runs)} of {jobs} jobs ran")
        last = max(cleans) if cleans else time.time()
        return {
            "submit_s": submit_seconds,
            "first_start_s": runs[0] - go,
            "all_done_s": last - go,
            "jobs_per_s": jobs / (last - go),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=bench_args.counts(1), default="1000,10000")
    parser.add_argument("--cores", type=bench_args.positive, default=64)
    parser.add_argument(
        "--only",
        type=bench_args.names(),
        default=(),
        help="comma-separated run names to keep (substring match)",
    )
    args = parser.parse_args()
    why = available()
    if why:
        sys.exit(f"no Flux here: {why}")
    sizes = list(args.jobs)
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        print(f"{'scheduler':32} {'pending':>8} {'1st start':>10} {'all done':>10} {'jobs/s':>8}")
        for jobs in sizes:
            for name, load in scheduler_runs(base):
                if args.only and not any(o in name for o in args.only):
                    continue
                r = one_run(base / f"{name.split()[0]}-{jobs}-{time.monotonic_ns()}", load, jobs, args.cores)
                print(
                    f"{name:32} {jobs:>8} {r['first_start_s']:>9.2f}s {r['all_done_s']:>9.1f}s "
                    f"{r['jobs_per_s']:>8.1f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
