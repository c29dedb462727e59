"""The Slurm daemon's read of its queue, before ``bench_live_cycle.py``'s window opens: the
answer decoded (``json.loads``), each job record parsed (:func:`rush.rjms.slurm_json.parse_job`)
and each job given its site factor from sprio, as ``SlurmBackend.read_state`` does every cycle
with a pending job under the ``site_factor`` lever (and ``with_fairshare`` with
``site.fairshare = "rjms"``).

The site-factor step two ways, alternated in one process (the order swapped each round):
``replace`` (``dataclasses.replace`` per job: **the reference**, main's step before round 23)
and ``with_fields`` (:func:`rush.rjms.base.with_fields`, what the backends call). Records:
``--pending`` pending jobs shaped as slurmrestd 22.05 writes them
(``job_record` of `tests/daemon/fake_slurmrestd.py``; every tenth tagged by the job_submit plugin).
CPU ms (``time.process_time``), medians of ``--repeat``; the collector set as the daemon sets
it (:func:`rush.planner.collector.settle_collector`).

Run: ``python benchmarks/bench_slurm_read.py [--pending 10000] [--rounds 3] [--repeat 7]``.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import replace

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import rush  # noqa: E402
from rush.planner.collector import settle_collector  # noqa: E402
from rush.rjms.base import RJMSJob, with_fields  # noqa: E402
from rush.rjms.slurm_json import parse_job  # noqa: E402
from tests.daemon.fake_slurmrestd import job_record  # noqa: E402

print = functools.partial(print, flush=True)  # noqa: A001 - rounds show as they end
STEPS: dict[str, Callable[[RJMSJob, int], RJMSJob]] = {
    "replace": lambda j, f: replace(j, site_factor=f),
    "with_fields": lambda j, f: with_fields(j, site_factor=f),
}


def answer(pending: int) -> str:
    """squeue --json's answer: ``pending`` pending jobs, every tenth with rush's tags."""
    records = [
        job_record(
            k + 1,
            user_name=f"u{k % 97}",
            admin_comment="rush:idempotent=1;wtype=network" if k % 10 == 0 else "",
        )
        for k in range(pending)
    ]
    return json.dumps({"jobs": records})


def cpu_ms(work: Callable[[], object], repeat: int) -> tuple[float, object]:
    """Median CPU ms of ``work`` over ``repeat`` calls, and its last result."""
    seconds, out = [], None
    for _ in range(repeat):
        t0 = time.process_time()
        out = work()
        seconds.append(time.process_time() - t0)
    return statistics.median(seconds) * 1e3, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pending", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    text = answer(args.pending)
    print(f"rush from {rush.__file__}; {settle_collector()}; load {os.getloadavg()[0]:.1f}")
    print(f"{args.pending} pending records, CPU ms (median of {args.repeat}); 'replace' is the reference")
    print(f"{'round':>5} {'decode':>7} {'parse':>7} {'step':12s} {'factors':>8} {'read':>7} {'x ref':>6}")
    for r in range(args.rounds):
        decode, data = cpu_ms(lambda: json.loads(text), args.repeat)
        parse, jobs = cpu_ms(
            lambda data=data: [parse_job(rec, "site_factor") for rec in data["jobs"]], args.repeat
        )
        factors = {j.job_id: 1_000 + j.job_id % 500 for j in jobs}  # as sprio gives them
        order = list(STEPS) if r % 2 == 0 else list(STEPS)[::-1]
        took, made = {}, {}
        for name in order:
            step = STEPS[name]
            took[name], made[name] = cpu_ms(
                lambda step=step, jobs=jobs, factors=factors: [
                    step(j, factors.get(j.job_id, 0)) for j in jobs
                ],
                args.repeat,
            )
        assert made["replace"] == made["with_fields"]  # the same jobs either way
        for name in order:
            print(
                f"{r + 1:5d} {decode:7.1f} {parse:7.1f} {name:12s} {took[name]:8.1f} "
                f"{decode + parse + took[name]:7.1f} {took[name] / took['replace']:6.2f}"
            )
    print(f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
