"""The live planner's pass with and without the default bound (``policy.max_jobs_considered``,
rush.core.pass_budget.DEFAULT_MAX_JOBS_CONSIDERED), same run: the CPU seconds of each pass of
the Flux module's planner over a queue of one-node jobs on fake nodes, as
``benchmarks/bench_flux_nodes.py`` queues them (no broker here: the planner and the core only,
the jobs kept as the module keeps them between passes, the started ones running, half of the
running ones ending before each next pass).

Run: ``python benchmarks/bench_pass_budget.py [--jobs 10000] [--nodes 1000] [--passes 6]``.
Printed: per pass, the pending count, starts, jobs left unconsidered and the CPU seconds
(``time.process_time``: the host's load hardly moves it); the reference is the unbounded pass.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import bench_args

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rush.core.pass_budget import DEFAULT_MAX_JOBS_CONSIDERED  # noqa: E402
from rush.core.resources import Node, Request  # noqa: E402
from rush.core.warm_up import warm_live_pass  # noqa: E402
from rush.planner.config import parse_config  # noqa: E402
from rush.planner.plan import Planner  # noqa: E402
from rush.rjms.base import ClusterState, RJMSBackend, RJMSJob  # noqa: E402
from tests.queue_backend import Queue  # noqa: E402


class ModuleQueue(Queue):
    """The module's backend as the planner sees it: rush starts the jobs itself."""

    capabilities = replace(RJMSBackend.capabilities, starts_jobs=True)


def passes(args: argparse.Namespace, limit: int | str, workdir: Path) -> list[tuple[int, int, int, float]]:
    now = time.time()
    request = Request(nodes=1, cores_per_node=args.cores, exclusive=True)
    nodes = tuple(Node(f"fake{i}", args.cores) for i in range(args.nodes))
    pending = {
        k: RJMSJob(k, "PENDING", now - 100 + k * 1e-3, args.cores, 60.0, user="u", request=request)
        for k in range(1, args.jobs + 1)
    }
    running: dict[int, RJMSJob] = {}

    def state() -> ClusterState:
        busy = {name for job in running.values() for name, _, _ in job.allocation}
        view = tuple(replace(n, free_cores=0) if n.name in busy else n for n in nodes)
        free = args.cores * (args.nodes - len(busy))
        jobs = (*pending.values(), *running.values())
        return ClusterState(time.time(), args.cores * args.nodes, free, jobs, nodes=view)

    policy = {"policy": "FCFS", "backfill": "easy", "wait_quantum": 0, "max_jobs_considered": limit}
    journal = str(workdir / f"journal-{limit}.sqlite")
    config = parse_config({"daemon": {"journal": journal, "dry_run": False}, "policy": policy})
    backend = ModuleQueue(state())
    planner = Planner(config, backend=backend, journal_sync="NORMAL")
    warm_live_pass(planner.core_config)
    out = []
    for _ in range(args.passes):
        backend.state = state()
        cpu = time.process_time()
        report = planner.run_cycle()
        cpu = time.process_time() - cpu
        if not report.ok or planner.last is None:
            raise RuntimeError(f"pass failed: {report.error}")
        decisions = planner.last[2]
        started = [d for d in decisions.decisions if d.action in ("start", "backfill")]
        out.append((len(pending), len(started), len(decisions.unconsidered), cpu))
        for d in started:
            job = pending.pop(d.job_id)
            running[d.job_id] = replace(
                job, state="RUNNING", start=time.time(), allocation=tuple((n, args.cores, 0) for n in d.nodes)
            )
        for job_id in list(running)[: len(running) // 2]:
            del running[job_id]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=bench_args.positive, default=10_000)
    parser.add_argument("--nodes", type=bench_args.positive, default=1000)
    parser.add_argument("--cores", type=bench_args.positive, default=4)
    parser.add_argument("--passes", type=bench_args.positive, default=6)
    args = parser.parse_args()
    print(
        f"{args.jobs} one-node jobs on {args.nodes} nodes x {args.cores} cores, FCFS EASY, {args.passes} passes"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for limit in ("all", DEFAULT_MAX_JOBS_CONSIDERED):
            rows = passes(args, limit, Path(tmp))
            print(f"max_jobs_considered = {limit}" + ("  (reference: every job)" if limit == "all" else ""))
            for k, (waiting, started, unconsidered, cpu) in enumerate(rows):
                print(
                    f"  pass {k}: {waiting:6} pending, {started:5} started, {unconsidered:6} unconsidered, "
                    f"{cpu:.3f} s CPU"
                )
            steady = [cpu for *_, cpu in rows[1:]]
            print(
                f"  after the first pass: mean {sum(steady) / len(steady):.3f} s, max {max(steady):.3f} s CPU"
            )


if __name__ == "__main__":
    main()
