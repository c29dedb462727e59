"""Which jobs starve under predicted reservations, and how: every EASY head's shadow time, pass by pass.

A diagnostic (round 8). The simulator keeps no per-pass record, so this replays its event loop in
Python on processor counts (completions, false-small kills and their requeues, prediction
expiries and their corrections, arrivals, then the core's own pass, ``counts_pass``) and records
each pass's head and shadow time. Its starts are checked equal, job by job, to
``rush.simulator.engine.simulate``'s with the same core before anything is reported. Two rules
are replayed: ``estimates`` (main's: every head reserved on the estimates; the pass is given
each job's estimate as its limit) and ``limits`` (this branch's: a starved head reserved on
limits, ``rush.core.starved_head``).

For the longest waits: the job's width, when it starved, how many passes it was the head, how
many times its shadow time moved later from one such pass to the next (a *slide*), how many of
those followed the expiry of a prediction of a job started while it was the head (corrected to
its request), and the first and last shadow times. Writes ``results/full/starvation_records.md``
for CTC-SP2's full set (rush-Q) unless told otherwise.

    RUSH_TRACE_MIRROR=/work/shared/traces OMP_NUM_THREADS=1 nice -n 10 \\
        python sim/runtime_predictions/starvation_records.py [--trace CTC-SP2] [--job-set full] [--top 10]
"""

from __future__ import annotations

import argparse
import bisect
import heapq
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent


class _Sorted:
    """Running jobs by an end time (ascending), with their processors."""

    def __init__(self) -> None:
        self.end: list[float] = []
        self.job: list[int] = []
        self.procs: list[int] = []

    def insert(self, e: float, j: int, p: int) -> None:
        k = bisect.bisect_right(self.end, e)
        self.end.insert(k, e)
        self.job.insert(k, j)
        self.procs.insert(k, p)

    def remove(self, e: float, j: int) -> None:
        k = bisect.bisect_left(self.end, e)
        while self.job[k] != j:
            k += 1
        del self.end[k], self.job[k], self.procs[k]

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        return np.array(self.end, dtype=np.float64), np.array(self.procs, dtype=np.int64)


def replay(workload, config, inputs, rule: str):
    """(start, per-pass records [(t, head, shadow, jobs whose prediction expired at this event, jobs
    the pass started)]) of the replay."""
    from rush.core.false_small_kill import RUN_DIVIDER_REQUEUE, is_killable, requeue_as_large, run_outcome
    from rush.core.job_rules import effective_estimate, limit_estimate
    from rush.core.pass_data import (
        PassJobs,
        PassMoment,
        PassState,
        RunningSet,
        new_out,
        new_queues,
        pass_config,
    )
    from rush.core.runtime_predictions import CORRECTION_NONE, correction_code, running_estimate
    from rush.core.scheduling_pass import counts_pass, drop_started
    from rush.simulator.engine import _order_policy

    n = len(workload)
    submit = np.ascontiguousarray(workload.submit, dtype=np.float64)
    runtime = np.ascontiguousarray(workload.runtime, dtype=np.float64)
    limit = np.ascontiguousarray(workload.requested_time, dtype=np.float64)
    procs = np.ascontiguousarray(workload.procs, dtype=np.int64)
    estimate = np.ascontiguousarray(inputs.estimate, dtype=np.float64)
    runtime_class = np.ascontiguousarray(inputs.runtime_class, dtype=np.int64).copy()
    divider = np.ascontiguousarray(inputs.divider, dtype=np.float64)
    order = _order_policy(config.policy, 0.0, workload, estimate)
    scan = (
        order
        if config.scan_policy == config.policy
        else _order_policy(config.scan_policy, 0.0, workload, estimate)
    )
    pcfg = pass_config(config, order, scan, 0.0)
    correction = correction_code(config.prediction_correction)
    kill, max_requeues = bool(config.kill_false_small), int(config.max_requeues)
    est = np.empty(n)
    sure = np.empty(n)
    requeues = np.zeros(n, dtype=np.int64)
    for j in range(n):
        killable = is_killable(kill, runtime_class[j], True, 0, max_requeues)
        est[j] = effective_estimate(estimate[j], limit[j], killable, divider[j])
        sure[j] = limit_estimate(limit[j], killable, divider[j])
    on_limits = rule == "limits"
    jobs = PassJobs(
        submit,
        procs,
        estimate,
        est,
        runtime_class,
        np.zeros(n, dtype=np.bool_),
        np.full(n, 0.5),
        sure if on_limits else est,
    )
    state = PassState(
        np.zeros(n, dtype=np.int64),
        np.full(n, np.inf),
        np.full(n, np.inf),
        np.full(n, -1, dtype=np.int64),
        np.zeros((0, 5)),
        np.full(n, np.inf),
    )
    queues, out = new_queues(n), new_out(n)
    started_mark = np.zeros(n, dtype=np.bool_)
    start, end = np.full(n, -1.0), np.full(n, -1.0)
    outcome = np.zeros(n, dtype=np.int64)
    run_est_end, run_len, run_sure_end = np.zeros(n), np.zeros(n), np.zeros(n)
    by_est, by_limit = _Sorted(), _Sorted()
    ends: list[tuple[float, int]] = []
    expiries: list[tuple[float, int]] = []
    free, qn, nxt = int(workload.machine_procs), 0, 0
    records = []
    while nxt < n or ends or qn > 0:
        t = np.inf
        if nxt < n:
            t = submit[nxt]
        if ends and ends[0][0] < t:
            t = ends[0][0]
        if expiries and expiries[0][0] < t:
            t = expiries[0][0]
        if t == np.inf:
            break
        while ends and ends[0][0] <= t:
            _, j = heapq.heappop(ends)
            free += procs[j]
            by_est.remove(run_est_end[j], j)
            by_limit.remove(run_sure_end[j], j)
            if outcome[j] == RUN_DIVIDER_REQUEUE:
                runtime_class[j], requeues[j] = requeue_as_large(requeues[j])
                outcome[j] = 0
                killable = is_killable(kill, runtime_class[j], True, requeues[j], max_requeues)
                est[j] = effective_estimate(estimate[j], limit[j], killable, divider[j])
                sure[j] = limit_estimate(limit[j], killable, divider[j])
                start[j] = end[j] = -1.0
                queues.queue[qn] = queues.scan[qn] = j
                qn += 1
        expired_now = []
        while expiries and expiries[0][0] <= t:
            expired, j = heapq.heappop(expiries)
            if start[j] < 0 or run_est_end[j] != expired or end[j] <= t:
                continue
            by_est.remove(run_est_end[j], j)
            elapsed = max(t - start[j], run_len[j])
            run_len[j] = running_estimate(correction, est[j], elapsed, limit[j])
            run_est_end[j] = start[j] + run_len[j]
            by_est.insert(run_est_end[j], j, procs[j])
            expired_now.append(j)
            if end[j] > run_est_end[j] and run_est_end[j] > expired:
                heapq.heappush(expiries, (run_est_end[j], j))
        while nxt < n and submit[nxt] <= t:
            queues.queue[qn] = queues.scan[qn] = nxt
            qn += 1
            nxt += 1
        if qn == 0 or free <= 0:
            continue
        e_end, e_procs = by_est.arrays()
        l_end, l_procs = by_limit.arrays() if on_limits else (e_end, e_procs)
        running = RunningSet(e_end, e_procs, len(e_end), l_end, l_procs)
        result = counts_pass(PassMoment(t, free, qn, False, True), pcfg, jobs, state, queues, running, out)
        if result.head >= 0:
            records.append(
                (t, int(result.head), float(result.shadow), expired_now, out.start[: result.started].tolist())
            )
        for k in range(result.started):
            j = int(out.start[k])
            started_mark[j] = True
            free -= procs[j]
            start[j] = t
            killable = is_killable(kill, runtime_class[j], True, requeues[j], max_requeues)
            length, outcome[j] = run_outcome(runtime[j], limit[j], 0, 0, killable, divider[j])
            end[j] = t + length
            run_est_end[j] = t + est[j]
            run_len[j] = est[j]
            run_sure_end[j] = t + sure[j]
            heapq.heappush(ends, (end[j], j))
            by_est.insert(run_est_end[j], j, procs[j])
            by_limit.insert(run_sure_end[j], j, procs[j])
            if correction != CORRECTION_NONE and end[j] > run_est_end[j]:
                heapq.heappush(expiries, (run_est_end[j], j))
        if result.started:
            qn = drop_started(queues, qn, started_mark, pcfg.same_scan)
            started_mark[out.start[: result.started]] = False
    return start, records


def head_history(records, threshold: float, submit: np.ndarray) -> dict[int, dict]:
    """Per job that was ever a head: passes as head, slides (all, after starving), slides that
    followed the expiry of a job started while it was head, first and last shadow times."""
    out: dict[int, dict] = {}
    prev_head, prev_shadow = -1, np.inf
    started_under: set[int] = set()
    for t, head, shadow, expired, started in records:
        h = out.setdefault(
            head,
            {
                "passes": 0,
                "slides": 0,
                "starved_slides": 0,
                "expiry_slides": 0,
                "first": shadow,
                "last": shadow,
            },
        )
        h["passes"] += 1
        if head == prev_head and shadow > prev_shadow:
            h["slides"] += 1
            h["starved_slides"] += t - submit[head] > threshold
            h["expiry_slides"] += any(j in started_under for j in expired)
        if head != prev_head:
            started_under = set()
        h["last"] = shadow
        prev_head, prev_shadow = head, shadow
        started_under.update(started)  # backfilled around this head
    return out


def main() -> None:
    from rush.core.config import CoreConfig
    from rush.models.runtime_quantiles_features import DEFAULT_FEATURE_SET
    from rush.models.walkforward import published_job_set
    from rush.simulator.engine import simulate
    from rush.studies.arg_types import count, trace_spec
    from rush.studies.runtime_predictions import THRESHOLD
    from rush.studies.runtime_predictions_quantiles import SCHEDULERS, _published, scheduler_inputs
    from rush.studies.tables import write_table
    from rush.workload.catalogue import load_trace
    from rush.workload.model import workload_from_trace

    sys.path.insert(0, str(HERE))
    from rush_q import default_walkforward

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trace", type=trace_spec, default="CTC-SP2")
    parser.add_argument("--job-set", default="full", choices=("published", "full"))
    # scheduler_inputs is given neither FCFS-CI's decisions nor the classifier: SCHEDULERS only
    parser.add_argument("--scheduler", default="rush-Q", choices=SCHEDULERS)
    parser.add_argument("--top", type=count(1), default=10)
    args = parser.parse_args()
    full = workload_from_trace(load_trace(args.trace))
    wf = default_walkforward(args.trace, DEFAULT_FEATURE_SET)
    picked = _published(full) if args.job_set == "published" else np.arange(len(full))
    workload = published_job_set(full) if args.job_set == "published" else full
    inputs, kw = scheduler_inputs(args.scheduler, wf, picked, 0.1)
    config = CoreConfig.from_names(kw.pop("policy"), "easy", THRESHOLD, kw.pop("scan", None), **kw)
    simulated = simulate(workload, config, inputs)
    rows = []
    for rule in ("estimates", "limits"):
        start, records = replay(workload, config, inputs, rule)
        if rule == "limits" and not np.array_equal(start, simulated.start):
            raise SystemExit(
                f"the replay differs from the simulator at {np.flatnonzero(start != simulated.start)[:5]}"
            )
        wait = start - workload.submit
        history = head_history(records, THRESHOLD, workload.submit)
        print(rule, "passes with a head:", len(records), "max wait", wait.max(), flush=True)
        for j in np.argsort(-wait, kind="stable")[: args.top]:
            h = history.get(int(j), {})
            rows.append(
                {
                    "rule": rule,
                    "job_id": int(workload.job_id[j]),
                    "procs": int(workload.procs[j]),
                    "wait_s": float(wait[j]),
                    "starved_at_s": float(workload.submit[j] + THRESHOLD),
                    "start_s": float(start[j]),
                    "passes_as_head": h.get("passes", 0),
                    "slides": h.get("slides", 0),
                    "slides_after_starving": h.get("starved_slides", 0),
                    "slides_after_an_expiry": h.get("expiry_slides", 0),
                    "first_shadow_s": h.get("first"),
                    "last_shadow_s": h.get("last"),
                }
            )
            print(rows[-1], flush=True)
    write_table(
        HERE / "results" / args.job_set,
        f"starvation_records_{args.trace}_{args.scheduler.replace(' ', '_')}",
        rows,
    )


if __name__ == "__main__":
    main()
