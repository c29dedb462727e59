"""The Slurm daemon's read of its queue, before ``bench_live_cycle.py``'s window opens: the
answer decoded (``json.loads``), each job record parsed (:func:`rush.rjms.slurm_json.parse_job`)
and each job given its site factor from sprio, as ``SlurmBackend.read_state`` does every cycle
with a pending job under the ``site_factor`` lever (and ``with_fairshare`` with
``site.fairshare = "rjms"``).

Two variants alternated in one process (the order swapped each round): ``main`` (**the
reference**, main's read before round 23: ``parse_job`` making each job with ``RJMSJob``'s
``__init__``, then ``dataclasses.replace`` per job for its factor) and ``now`` (the job made by
:func:`rush.rjms.base.made_job`, the factor set by :func:`rush.rjms.base.with_fields`). Records:
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
from rush.rjms import slurm_json  # noqa: E402
from rush.rjms.base import RJMSJob, made_job, with_fields  # noqa: E402
from tests.daemon.fake_slurmrestd import job_record  # noqa: E402

print = functools.partial(print, flush=True)  # noqa: A001 - rounds show as they end
# Per variant: the parse's job constructor and the site-factor step.
VARIANTS: dict[str, tuple[Callable[..., RJMSJob], Callable[[RJMSJob, int], RJMSJob]]] = {
    "main": (RJMSJob, lambda j, f: replace(j, site_factor=f)),
    "now": (made_job, lambda j, f: with_fields(j, site_factor=f)),
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
    print(f"{args.pending} pending records, CPU ms (median of {args.repeat}); 'main' is the reference")
    print(
        f"{'round':>5} {'variant':7s} {'decode':>7} {'parse':>7} {'factors':>8} {'read':>7} "
        f"{'parse - main':>9} {'factors x main':>9}"
    )
    for r in range(args.rounds):
        decode, data = cpu_ms(lambda: json.loads(text), args.repeat)
        order = list(VARIANTS) if r % 2 == 0 else list(VARIANTS)[::-1]
        parse, factors, made = {}, {}, {}
        for name in order:
            slurm_json.made_job, step = VARIANTS[name]  # the parse's constructor, by its module's name
            try:
                parse[name], jobs = cpu_ms(
                    lambda data=data: [slurm_json.parse_job(rec, "site_factor") for rec in data["jobs"]],
                    args.repeat,
                )
            finally:
                slurm_json.made_job = made_job
            sprio = {j.job_id: 1_000 + j.job_id % 500 for j in jobs}  # as sprio gives them
            factors[name], made[name] = cpu_ms(
                lambda step=step, jobs=jobs, sprio=sprio: [step(j, sprio.get(j.job_id, 0)) for j in jobs],
                args.repeat,
            )
        assert made["main"] == made["now"]  # the same jobs either way
        for name in order:
            print(
                f"{r + 1:5d} {name:7s} {decode:7.1f} {parse[name]:7.1f} {factors[name]:8.1f} "
                f"{decode + parse[name] + factors[name]:7.1f} {parse[name] - parse['main']:+9.1f} "
                f"{factors[name] / factors['main']:9.2f}"
            )
    print(f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
