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

Then the whole read (decode, parse, site factors) three ways, alternated in one process: the
current read (**the reference**: ``parse_job`` per record, ``with_fields`` per job), the cached
read first (:class:`rush.rjms.slurm_json.ParsedJobs`, empty), second (right after a first read,
which keeps only its lists) and the cached re-read after two
reads of the same queue, (a) unchanged (each pending record's ``last_sched_evaluation``
advanced, as Slurm's scheduler does every pass; parse_job does not read it) and (b) with 1 % of
the records changed (their priority). Each timed re-read follows the last one's queue, so every
repeat is a next read; the reference reads the same answers. ``--shape 25.11``: the records are
the recorded Slurm 25.11 pending record (``tests/slurm/recorded/25.11/commands``, about 5.6 KB
of JSON each), ids varied, instead of slurmrestd 22.05's short ones.

``--first-pairs N`` (round 27, r31read3): only the first read, N pairs of the current read and
the cached first read of the same answer, one after the other, the order swapped each pair;
each pair's ratio (cached / current), their median and quartiles.

Run: ``python benchmarks/bench_slurm_read.py [--pending 10000] [--rounds 3] [--repeat 7] [--shape 22.05|25.11]
[--reads-only | --first-pairs 41]``.
"""

from __future__ import annotations

import argparse
import copy
import functools
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import bench_args

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import rush  # noqa: E402
from rush.planner.collector import settle_collector  # noqa: E402
from rush.rjms.base import RJMSJob, with_fields  # noqa: E402
from rush.rjms.slurm_json import ParsedJobs, parse_job  # noqa: E402
from tests.daemon.fake_slurmrestd import job_record  # noqa: E402

print = functools.partial(print, flush=True)  # noqa: A001 - rounds show as they end
STEPS: dict[str, Callable[[RJMSJob, int], RJMSJob]] = {
    "replace": lambda j, f: replace(j, site_factor=f),
    "with_fields": lambda j, f: with_fields(j, site_factor=f),
}


RECORDED_25 = Path(__file__).resolve().parents[1] / "tests" / "slurm" / "recorded" / "25.11" / "commands"


def queue(pending: int, shape: str = "22.05") -> list[dict[str, Any]]:
    """``pending`` pending job records, every tenth with rush's tags; each with the time of the
    scheduler's last look (``last_sched_evaluation``), as Slurm writes it."""
    if shape == "25.11":
        jobs = json.loads((RECORDED_25 / "jobs.json").read_text())["jobs"]
        template = next(r for r in jobs if r["job_state"] == ["PENDING"] and r["hold"] is False)
        return [
            {
                **copy.deepcopy(template),
                "job_id": k + 1,
                "user_name": f"u{k % 97}",
                "admin_comment": "rush:idempotent=1;wtype=network" if k % 10 == 0 else "",
            }
            for k in range(pending)
        ]
    return [
        job_record(
            k + 1,
            user_name=f"u{k % 97}",
            admin_comment="rush:idempotent=1;wtype=network" if k % 10 == 0 else "",
            last_sched_evaluation=1_700_000_000,
        )
        for k in range(pending)
    ]


def answer(pending: int) -> str:
    """squeue --json's answer: ``pending`` pending jobs, every tenth with rush's tags."""
    return json.dumps({"jobs": queue(pending)})


def next_answers(records: list[dict[str, Any]], count: int, changed: float, seed: int) -> list[str]:
    """``count`` successive answers of the queue: each advances every record's
    ``last_sched_evaluation`` and changes the priority of a ``changed`` share of the records."""
    rng = random.Random(seed)
    records = copy.deepcopy(records)
    texts = []
    for step in range(count):
        for record in records:
            stamp = record["last_sched_evaluation"]
            if isinstance(stamp, dict):
                stamp["number"] += 1
            else:
                record["last_sched_evaluation"] = stamp + 1
        for k in rng.sample(range(len(records)), int(len(records) * changed)):
            priority = records[k]["priority"]
            if isinstance(priority, dict):
                priority["number"] = priority["number"] + 1 + step
            else:
                records[k]["priority"] = priority + 1 + step
        texts.append(json.dumps({"jobs": records}))
    return texts


def current_read(text: str, factors: dict[int, int]) -> list[RJMSJob]:
    """The read before round 23's r31read: parse_job per record, with_fields per job."""
    jobs = [parse_job(r, "site_factor") for r in json.loads(text)["jobs"]]
    return [with_fields(j, site_factor=factors.get(j.job_id, 0)) for j in jobs]


def cached_read(parsed: ParsedJobs, text: str, factors: dict[int, int]) -> list[RJMSJob]:
    """The read as the Slurm backends make it now (:class:`ParsedJobs`)."""
    return parsed.with_site_factors(parsed.parse(json.loads(text)["jobs"], "site_factor"), factors)


def cpu_ms_each(work: Callable[[str], object], texts: list[str]) -> float:
    """Median CPU ms of ``work`` over ``texts``, read one after the other."""
    seconds = []
    for text in texts:
        t0 = time.process_time()
        work(text)
        seconds.append(time.process_time() - t0)
    return statistics.median(seconds) * 1e3


def whole_reads(args: argparse.Namespace) -> None:
    """The whole read: the current one (reference), the cached one first, and cached re-reads."""
    records = queue(args.pending, args.shape)
    factors = {r["job_id"]: 1_000 + r["job_id"] % 500 for r in records}  # as sprio gives them
    first_text = json.dumps({"jobs": records})
    print(
        f"\nwhole read (decode, parse, site factors), {args.shape}-shaped records, {len(first_text) // len(records)} bytes each; 'current' is the reference"
    )
    print(f"{'round':>5} {'case':10s} {'current':>8} {'cached':>8} {'x ref':>6}")
    for r in range(args.rounds):
        unchanged = next_answers(records, args.repeat + 2, 0.0, seed=r)
        changed = next_answers(records, args.repeat + 2, 0.01, seed=100 + r)
        cases: list[tuple[str, Callable[[], float], Callable[[], float]]] = []
        cases.append(
            (
                "first",
                lambda: cpu_ms(lambda: current_read(first_text, factors), args.repeat)[0],
                lambda: cpu_ms(lambda: cached_read(ParsedJobs(), first_text, factors), args.repeat)[0],
            )
        )

        def second(texts: list[str] = unchanged) -> float:
            """The re-read right after a first read (deciding nothing)."""
            seconds = []
            for _ in range(args.repeat):
                parsed = ParsedJobs()
                cached_read(parsed, texts[0], factors)
                t0 = time.process_time()
                cached_read(parsed, texts[1], factors)
                seconds.append(time.process_time() - t0)
            return statistics.median(seconds) * 1e3

        cases.append(
            (
                "second",
                lambda texts=unchanged: cpu_ms_each(
                    lambda t: current_read(t, factors), [texts[1]] * args.repeat
                ),
                second,
            )
        )
        for name, texts in (("unchanged", unchanged), ("1% changed", changed)):

            def cached(texts: list[str] = texts) -> float:
                parsed = ParsedJobs()
                for text in texts[:2]:  # two reads before: the kept records are keyed, as in a daemon
                    cached_read(parsed, text, factors)
                return cpu_ms_each(lambda text: cached_read(parsed, text, factors), texts[2:])

            cases.append(
                (name, lambda texts=texts: cpu_ms_each(lambda t: current_read(t, factors), texts[2:]), cached)
            )
        for name, current, cached in cases:
            # Same jobs either way (checked outside the timing), then both timed, order swapped each round.
            took = {}
            for which in ("current", "cached") if r % 2 == 0 else ("cached", "current"):
                took[which] = (current if which == "current" else cached)()
            print(
                f"{r + 1:5d} {name:10s} {took['current']:8.1f} {took['cached']:8.1f} {took['cached'] / took['current']:6.2f}"
            )
        parsed = ParsedJobs()
        for text in changed:
            assert cached_read(parsed, text, factors) == current_read(text, factors)


def first_pairs(args: argparse.Namespace) -> None:
    """The first read alone: ``args.first_pairs`` pairs (current, cached first) alternated one
    by one, the order swapped each pair; the per-pair ratios' median and quartiles."""
    records = queue(args.pending, args.shape)
    factors = {r["job_id"]: 1_000 + r["job_id"] % 500 for r in records}  # as sprio gives them
    text = json.dumps({"jobs": records})
    assert cached_read(ParsedJobs(), text, factors) == current_read(text, factors)  # same jobs
    reads = {
        "current": lambda: current_read(text, factors),
        "cached": lambda: cached_read(ParsedJobs(), text, factors),
    }
    took: dict[str, list[float]] = {"current": [], "cached": []}
    for pair in range(args.first_pairs):
        for name in ("current", "cached") if pair % 2 == 0 else ("cached", "current"):
            took[name].append(cpu_ms(reads[name], 1)[0])
        if pair % 10 == 9:
            print(f"pair {pair + 1}: load {os.getloadavg()[0]:.2f}")
    ratios = [b / a for a, b in zip(took["current"], took["cached"], strict=True)]
    q1, q2, q3 = statistics.quantiles(ratios, n=4)
    print(
        f"first read, {args.first_pairs} pairs, CPU ms: current median {statistics.median(took['current']):.1f}, "
        f"cached median {statistics.median(took['cached']):.1f}; per-pair ratio median {statistics.median(ratios):.3f}, "
        f"quartiles {q1:.3f} {q2:.3f} {q3:.3f}, min {min(ratios):.3f}, max {max(ratios):.3f}"
    )


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
    parser.add_argument("--pending", type=bench_args.positive, default=10_000)
    parser.add_argument("--rounds", type=bench_args.positive, default=3)
    parser.add_argument("--repeat", type=bench_args.positive, default=7)
    parser.add_argument("--shape", choices=("22.05", "25.11"), default="22.05")
    parser.add_argument("--reads-only", action="store_true", help="only the whole-read table")
    parser.add_argument(
        "--first-pairs", type=bench_args.non_negative, default=0, help="only the first read, this many pairs"
    )
    args = parser.parse_args()
    if args.first_pairs:
        print(f"rush from {rush.__file__}; {settle_collector()}; load {os.getloadavg()}")
        first_pairs(args)
        print(f"load {os.getloadavg()}")
        return
    if args.reads_only:
        print(f"rush from {rush.__file__}; {settle_collector()}; load {os.getloadavg()[0]:.1f}")
        whole_reads(args)
        print(f"load {os.getloadavg()[0]:.1f}")
        return
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
    whole_reads(args)
    print(f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
