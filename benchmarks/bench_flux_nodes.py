"""Flux scheduler module at scale on fake nodes: rush against flux-core's sched-backfill, same run
(issue 20 "Speed and scale": 1 000 fake nodes, 10 000 pending one-node jobs; target: rush's
throughput >= sched-backfill's and its first start within 2x sched-backfill's).

Protocol, per scheduler, each in a fresh single-broker instance: ``[fake-resources]`` (flux-core
0.88's rc1 task: a synthetic R of NODES hosts ``fake[0-N-1]`` written to ``resource.R``,
with the resource module's ``monitor-force-up noverify``, so every fake node is up on one
broker). The queue is stopped, JOBS one-node jobs (``-N1``: whole nodes) with a 1-minute
limit and simulated execution (``system.exec.test.run_duration``, flux-core's job-exec test
mode, as its src/test/throughput.py does: no shell is launched, so ranks without a broker
are fine) are submitted, then the queue is started. Reported: time from queue start to the
first job's RUN (the first pass over JOBS pending jobs), time until the last job started,
time until the last job is clean, throughput JOBS / (last clean - queue start), and the
broker's peak RSS (VmHWM: Python modules run inside the broker). rush runs with FCFS, EASY,
no extras (cycle_interval 60 s: passes come from Flux events) and journals every decision;
its journal gives the passes' own seconds. ``--profile`` runs rush's module under cProfile
(benchmarks/flux_profiled_sched.py) and prints the top functions.

Run: ``python benchmarks/bench_flux_nodes.py [--nodes 1000] [--jobs 1000,3000,10000] [--profile]``

Measured output: see the "Measured" comment at the end of this file.
"""

from __future__ import annotations

import argparse
import json
import pstats
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.flux.instance import FluxInstance, available  # noqa: E402
from tests.flux.module_config import MODULE, write_config  # noqa: E402

PROFILED = ROOT / "benchmarks" / "flux_profiled_sched.py"
FAST = ROOT / "benchmarks" / "flux_fast_sched.py"  # the suggested fix, prototyped
RUN_DURATION = "0.01s"  # simulated run time of every job


def fake_nodes(nodes: int, cores: int) -> str:
    return f"[fake-resources]\nnnodes = {nodes}\ncores-per-node = {cores}\n"


def scheduler_runs(workdir: Path, args: argparse.Namespace) -> list[tuple[str, list[str]]]:
    """(name, ``flux module load`` arguments); rush's config is written in its run's workdir,
    with write_config's settings (FCFS, EASY, wait_quantum 0: the differential test's) and
    no periodic pass within the run (60 s), so that its journal is the run's own."""
    runs = [("sched-backfill", ["sched-backfill"])]
    if args.unlimited:
        runs.append(("sched-backfill unlimited", ["sched-backfill", "queue-depth=unlimited"]))
    workdir.mkdir(parents=True, exist_ok=True)
    runs.append(("rush FCFS+EASY", [str(PROFILED if args.profile else MODULE)]))
    if args.fast:
        runs.append(("rush FCFS+EASY rank-cache", [str(FAST)]))
    return runs


def broker_peak_rss_mb(flux: FluxInstance) -> float:
    pid = flux.run("getattr", "broker.pid", check=False).stdout.strip()
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        pass
    return float("nan")


def wait_all_clean(flux: FluxInstance, jobs: int, timeout: float) -> None:
    """Poll until every job is inactive (``flux queue drain`` also waits, but this reports progress)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = flux.run(
            "jobs", "-a", "--filter=inactive", "--count=0", "-no", "{id}", check=False, timeout=120
        )
        if len(out.stdout.split()) >= jobs:
            return
        time.sleep(2.0)
    raise TimeoutError(f"not all {jobs} jobs inactive after {timeout} s")


def one_run(workdir: Path, load: list[str], jobs: int, args: argparse.Namespace) -> dict:
    env = {"RUSH_BENCH_PROFILE": str(workdir / "rush.prof")}
    with FluxInstance(workdir, size=1, config=fake_nodes(args.nodes, args.cores), env=env) as flux:
        up = flux.run("resource", "list", "-s", "up", "-no", "{nnodes}").stdout.strip()
        if up != str(args.nodes):
            raise RuntimeError(f"{up} nodes up, not {args.nodes}: {flux.log_tail()}")
        flux.use_scheduler(*load)
        flux.run("queue", "stop", "--quiet", check=False)
        started = time.monotonic()
        flux.run(
            "submit", f"--cc=1-{jobs}", "--quiet", "-N1", "-t", "1m",
            f"--setattr=system.exec.test.run_duration={RUN_DURATION}", "true",
            timeout=3600,
        )  # fmt: skip
        submit_seconds = time.monotonic() - started
        rss_before = broker_peak_rss_mb(flux)
        go = time.time()
        flux.run("queue", "start", "--quiet", check=False)
        wait_all_clean(flux, jobs, timeout=args.timeout)
        done = json.loads(flux.run("jobs", "-a", "--count=0", "--json", timeout=120).stdout or "{}")["jobs"]
        runs = sorted(j["t_run"] for j in done if j.get("t_run"))
        cleans = [j["t_cleanup"] for j in done if j.get("t_cleanup")]
        if len(runs) != jobs:
            raise RuntimeError(f"{len(runs)} of {jobs} jobs ran")
        nodes_used = {j.get("nodelist") for j in done}
        result = {
            "submit_s": submit_seconds,
            "first_start_s": runs[0] - go,
            "all_started_s": runs[-1] - go,
            "all_done_s": max(cleans) - go,
            "jobs_per_s": jobs / (max(cleans) - go),
            "rss_mb": broker_peak_rss_mb(flux),
            "rss_before_mb": rss_before,
            "distinct_nodes": len(nodes_used),
        }
    journal = workdir / "journal.sqlite"
    if journal.exists():
        result.update(journal_figures(journal))
    return result


def journal_figures(journal: Path) -> dict:
    """The planner's own pass seconds and decision counts from rush's journal."""
    db = sqlite3.connect(journal)
    rows = db.execute(
        "SELECT seconds, pending FROM cycles WHERE seconds IS NOT NULL ORDER BY cycle"
    ).fetchall()
    decisions = db.execute("SELECT count(*) FROM decisions").fetchone()[0]
    db.close()
    if not rows:
        return {}
    seconds = [r[0] for r in rows]
    return {
        "passes": len(rows),
        "pass_s_total": sum(seconds),
        "pass_s_first": seconds[0],
        "pass_s_max": max(seconds),
        "first_pending": rows[0][1],
        "decision_rows": decisions,
    }


def print_profile(path: Path, top: int) -> None:
    if not path.exists():
        print(f"  (no profile at {path})")
        return
    stats = pstats.Stats(str(path))
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--cores", type=int, default=4, help="cores per fake node")
    parser.add_argument("--jobs", default="1000,3000")
    parser.add_argument("--only", default="", help="comma-separated run names to keep (substring)")
    parser.add_argument("--profile", action="store_true", help="rush under cProfile; print the top")
    parser.add_argument("--unlimited", action="store_true", help="also sched-backfill queue-depth=unlimited")
    parser.add_argument("--fast", action="store_true", help="also rush with the rank-cached pool")
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--keep", default="", help="keep every run's directory under this one")
    args = parser.parse_args()
    why = available()
    if why:
        sys.exit(f"no Flux here: {why}")
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        if args.keep:
            base = Path(tempfile.mkdtemp(dir=args.keep))
            print(f"instances, journals and profiles kept in {base}")
        print(f"{args.nodes} fake nodes x {args.cores} cores, one-node jobs, run {RUN_DURATION}")
        header = (
            f"{'scheduler':26} {'jobs':>6} {'submit':>7} {'1st start':>10} {'all started':>12} "
            f"{'all done':>9} {'jobs/s':>7} {'RSS MB':>7}"
        )
        for jobs in [int(x) for x in args.jobs.split(",")]:
            print(header)
            results = {}
            for name, load in scheduler_runs(base / f"cfg-{jobs}", args):
                if args.only and not any(o in name for o in args.only.split(",")):
                    continue
                workdir = base / f"{name.split()[0]}-{jobs}-{time.monotonic_ns()}"
                if "rush" in name:
                    # The journal goes where journal_figures looks for it.
                    workdir.mkdir(parents=True)
                    load = [*load, f"config={write_config(workdir, interval=60)}"]
                r = one_run(workdir, load, jobs, args)
                results[name] = r
                print(
                    f"{name:26} {jobs:>6} {r['submit_s']:>6.1f}s {r['first_start_s']:>9.2f}s "
                    f"{r['all_started_s']:>11.1f}s {r['all_done_s']:>8.1f}s {r['jobs_per_s']:>7.1f} "
                    f"{r['rss_mb']:>7.0f}",
                    flush=True,
                )
                if "passes" in r:
                    print(
                        f"    rush journal: {r['passes']} passes, {r['pass_s_total']:.1f} s in passes "
                        f"(first {r['pass_s_first']:.2f} s over {r['first_pending']} pending, max "
                        f"{r['pass_s_max']:.2f} s), {r['decision_rows']} decision rows",
                        flush=True,
                    )
                if args.profile and name == "rush FCFS+EASY":
                    print_profile(workdir / "rush.prof", 25)
            theirs = results.get("sched-backfill")
            for name, ours in results.items():
                if theirs and name.startswith("rush"):
                    print(
                        f"  {name} / sched-backfill: throughput "
                        f"{ours['jobs_per_s'] / theirs['jobs_per_s']:.2f}x (target >= 1), first start "
                        f"{ours['first_start_s'] / theirs['first_start_s']:.2f}x (target <= 2)",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
