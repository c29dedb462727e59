"""rush's start estimate at submit taken apart, job by job, on the live runs under a head-only
estimator (issue 29, item 4; README, round 17).

    python sim/runtime_predictions/live_decompose.py [--models DIR] [--window BLUE] [--runs rep1,rep2]

For each job rush and the RJMS's own estimator (sched-backfill's or Fluxion's ``t_estimate``)
both estimated in the window's measured wait class (``live_bias.MEASURED_WAIT``; over an hour
but on SDSC), rush's error at submit (estimate minus real start, trace minutes) is split into
four parts that add up to it exactly, each the change of the estimate when one more input is
made real (the core's own pass, as ``live_bias.py`` recomputes it, on the run's real state at
the moment rush made its estimate):

* ``L2``: the recomputed estimate as deployed (rule L2); ``live`` beside it is what the daemon
  published (their difference is the recomputation's fidelity, not a part);
* (a) ``running``: L2 minus the same with the jobs running at submit at their real ends;
* (b) ``queued``: that minus ``all real`` (the queued jobs' real runtimes as well);
* (c1) ``arrivals``: ``all real`` (EASY replayed without arrivals) minus the start the core's
  own EASY gives the job with every runtime real *and* the later arrivals, from the real state
  at submit (an event loop over the core's pass: decisions on limits, as sched-backfill and
  Fluxion decide, time on the real runtimes): what later jobs taking the machine first did;
* (c2) ``RJMS order``: that start minus the real one: the RJMS's own order and timing against
  the core's EASY (what no runtime model can change).

Beside them: the later-submitted jobs that started before the job (really, and in the core's
EASY with the real future), and (d) the moment of the RJMS's first estimate (trace minutes
after submit, share of the wait) with both estimators' errors then (rush's recomputed with L2
at that moment). Writes ``results/live_decompose.{md,csv}`` (one row per job and run; per run,
the means).
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import live_bias  # noqa: E402
import live_same_moment  # noqa: E402
import live_windows  # noqa: E402

STAGES = ("queue: L2", live_bias.L2_RUNNING_REAL, "all real")
VARIANTS = (*STAGES, live_bias.ALL_LIMITS)  # the limits: a reference, not a part
SAME_MOMENT = tuple(key for _, key in live_same_moment.ESTIMATORS if key != "rjms")
PARTS = ("running", "queued", "arrivals", "RJMS order")
HEAD_ONLY = ("flux", "fluxion")
# sched-backfill's queue-depth as run_live.py loads it (the module's default).
FLUX_QUEUE_DEPTH = 8


def _advance(jobs: dict[int, dict], job_id: int, start: dict, end: dict, now: float) -> float | None:
    """The next arrival of an unstarted job or end of a started one after ``now``; None once
    ``job_id`` has started, or never will (no event left: its start is then inf)."""
    if job_id in start:
        return None
    later = [j["submit"] for i, j in jobs.items() if j["submit"] > now and i not in start]
    later += [e for i, e in end.items() if e > now]
    if not later:
        start[job_id] = np.inf
        return None
    return min(later)


def easy_with_arrivals(jobs: dict[int, dict], job_id: int, t0: float) -> dict[int, float]:
    """The starts the core's FCFS + EASY pass gives from the run's real state at ``t0`` (the jobs
    started by then at their real starts and ends) with every later arrival at its real submit
    and every job's real runtime, a pass at each submit and end deciding on limits, until
    ``job_id`` starts (every job started by then; ``job_id`` inf if it never does)."""
    from rush.core.config import CoreConfig
    from rush.core.schedule import schedule
    from rush.core.snapshot import PendingJob, RunningJob, Snapshot

    config = CoreConfig.from_names("FCFS", "easy", "none")
    runtime = {i: j["end"] - j["start"] for i, j in jobs.items()}
    start = {i: j["start"] for i, j in jobs.items() if j["start"] <= t0}
    end = {i: jobs[i]["end"] for i in start}
    now = t0
    while job_id not in start:
        running = [
            RunningJob(i, start[i], jobs[i]["procs"], jobs[i]["limit"]) for i in sorted(start) if end[i] > now
        ]
        pending = [
            PendingJob(i, jobs[i]["submit"], jobs[i]["procs"], jobs[i]["limit"])
            for i in sorted(jobs, key=lambda i: (jobs[i]["submit"], i))
            if jobs[i]["submit"] <= now and i not in start
        ]
        busy = sum(r.procs for r in running)
        snap = Snapshot(
            now=now, total_procs=32, free_procs=32 - busy, pending=tuple(pending), running=tuple(running)
        )
        decided = schedule(snap, config, explain_priorities=False)
        for p in pending:
            if decided.estimate_basis.get(p.job_id) == "now":
                start[p.job_id], end[p.job_id] = now, now + runtime[p.job_id]
        now = _advance(jobs, job_id, start, end, now)
        if now is None:
            break
    return start


def flux_backfill_with_arrivals(
    jobs: dict[int, dict], job_id: int, t0: float, depth: int = FLUX_QUEUE_DEPTH
) -> dict[int, float]:
    """As :func:`easy_with_arrivals`, under a replica of flux-core's sched-backfill as the live
    runs loaded it (a model of that RJMS for this diagnostic, not a rule of rush's): it sees the
    first ``depth`` pending jobs (FCFS), starts the head while it fits, and backfills another of
    them only if its limit ends by the head's shadow time (the running jobs freed at their
    limits' ends), with no second clause (a job on processors the reservation leaves free)."""
    runtime = {i: j["end"] - j["start"] for i, j in jobs.items()}
    start = {i: j["start"] for i, j in jobs.items() if j["start"] <= t0}
    end = {i: jobs[i]["end"] for i in start}
    now = t0
    while job_id not in start:
        free = 32 - sum(jobs[i]["procs"] for i in start if end[i] > now)
        pending = sorted(
            (i for i in jobs if jobs[i]["submit"] <= now and i not in start),
            key=lambda i: (jobs[i]["submit"], i),
        )
        while pending and jobs[pending[0]]["procs"] <= free:  # the head starts; the next is asked for
            head = pending.pop(0)
            start[head], end[head] = now, now + runtime[head]
            free -= jobs[head]["procs"]
        queue = pending[:depth]
        if queue and job_id not in start:
            need, shadow, avail = jobs[queue[0]]["procs"], np.inf, free
            for e, p in sorted(
                (start[i] + jobs[i]["limit"], jobs[i]["procs"]) for i in start if end[i] > now
            ):
                avail += p
                if avail >= need:
                    shadow = max(e, now)
                    break
            for i in queue[1:]:
                if jobs[i]["procs"] <= free and now + jobs[i]["limit"] <= shadow:
                    start[i], end[i] = now, now + runtime[i]
                    free -= jobs[i]["procs"]
        now = _advance(jobs, job_id, start, end, now)
        if now is None:
            break
    return start


def overtaking(jobs: dict[int, dict], job_id: int, start: dict[int, float]) -> tuple[int, float]:
    """How many jobs submitted after ``job_id`` started before it (by ``start``), and their
    processor-minutes (wall)."""
    mine = jobs[job_id]
    later = [
        i
        for i, j in jobs.items()
        if (j["submit"], i) > (mine["submit"], job_id) and i in start and start[i] < start[job_id]
    ]
    return len(later), sum(jobs[i]["procs"] * (jobs[i]["end"] - jobs[i]["start"]) for i in later) / 60


def decompose(w, rjms: str, path: Path, models: Path, source: str) -> list[dict]:
    """One row per job both estimated in the window's measured class of the run at ``path``."""
    k = float(w.speedup)
    rows = live_windows.read_rows(path)
    rush = {int(r["trace_job_id"]): r for r in rows if r["estimator"] == "rush"}
    cls = live_bias.MEASURED_WAIT.get(w.name, ">1h")
    own = {
        int(r["trace_job_id"]): r
        for r in rows
        if r["estimator"] not in ("rush", "rush-module")
        and r["wait_class"] == cls
        and r["error"] is not None
        and r["estimated_at"] not in ("", None)
    }
    both = sorted(j for j in own if rush.get(j, {}).get("error") is not None and rush[j]["estimated_at"])
    # The recomputed predictor re-predicts a pending job only when asked, so its answers depend on
    # the moments it is asked at: at submit, live_bias.py's (every live estimate's moment), at the
    # RJMS's first estimate live_same_moment.py's (its moments): each part is theirs, row for row.
    at = {(r["job"], "submit"): r for r in live_bias.reconstructed(models, w, rjms, path, None, VARIANTS)}
    then = live_bias.reconstructed(models, w, rjms, path, live_same_moment.moments(rows)[0], SAME_MOMENT)
    at.update({(r["job"], "rjms"): r for r in then if r["tag"] == "rjms"})
    jobs = live_bias.real_jobs(w, rjms, path)
    real = {i: j["start"] for i, j in jobs.items()}
    out = []
    for j in both:
        r = at.get((j, "submit"))
        if r is None or any(r[s] is None for s in STAGES) or (j, "rjms") not in at:
            continue
        t0 = float(rush[j]["estimated_at"])
        sim = easy_with_arrivals(jobs, j, t0)
        e_sim = (sim[j] - jobs[j]["start"]) * k
        later_real, area_real = overtaking(jobs, j, real)
        later_sim, _ = overtaking(jobs, j, sim)
        replica = flux_backfill_with_arrivals(jobs, j, t0)[j] if rjms == "flux" else None
        wait = jobs[j]["start"] - jobs[j]["submit"]
        t_rjms = float(own[j]["estimated_at"])
        out.append(
            {
                "window": w.name,
                "run": rjms,
                "source": source,
                "job": j,
                "wait_min": wait * k / 60,
                "live_min": rush[j]["error"] / 60,
                "L2_min": r["queue: L2"] / 60,
                "running_min": (r["queue: L2"] - r[live_bias.L2_RUNNING_REAL]) / 60,
                "queued_min": (r[live_bias.L2_RUNNING_REAL] - r["all real"]) / 60,
                "arrivals_min": (r["all real"] - e_sim) / 60,
                "RJMS order_min": e_sim / 60,
                # of (c2), what sched-backfill's own rule (its replica) accounts for
                "sb rule_min": None if replica is None else (sim[j] - replica) * k / 60,
                "limits_min": None if r[live_bias.ALL_LIMITS] is None else r[live_bias.ALL_LIMITS] / 60,
                "later_first_real": later_real,
                "later_first_area": area_real,
                "later_first_easy": later_sim,
                "lag_min": (t_rjms - jobs[j]["submit"]) * k / 60,
                "lag_share": (t_rjms - jobs[j]["submit"]) / max(wait, 1e-9),
                "rjms_error_min": own[j]["error"] / 60,
                "rush_at_rjms_min": None
                if at[(j, "rjms")]["queue: L2"] is None
                else at[(j, "rjms")]["queue: L2"] / 60,
            }
        )
    return out


def means(rows: list[dict]) -> list[dict]:
    """Per window, run and kept run: the mean of each column, MAE of each stage."""
    out = []
    keys = sorted({(r["window"], r["run"], r["source"]) for r in rows}, key=str)
    for key in keys:
        mine = [r for r in rows if (r["window"], r["run"], r["source"]) == key]
        m = {"window": key[0], "run": key[1], "source": key[2], "job": f"mean of {len(mine)}"}
        for col in mine[0]:
            if col in m or col in ("window", "run", "source", "job"):
                continue
            vals = [r[col] for r in mine if r[col] is not None]
            m[col] = statistics.fmean(vals) if vals else None
        # MAE of the estimate as each input is made real, and of the RJMS's own
        stage = [r["L2_min"] for r in mine]
        m["MAE L2"] = statistics.fmean(abs(v) for v in stage)
        for part in PARTS:
            stage = [s - r[f"{part}_min"] for s, r in zip(stage, mine, strict=True)]
            m[f"MAE without {part}"] = statistics.fmean(abs(v) for v in stage)
        # what a perfect order model alone (c2 removed) and perfect runtimes alone ((a), (b)
        # removed) would leave, and every job at its limit
        m["MAE without RJMS order only"] = statistics.fmean(
            abs(r["L2_min"] - r["RJMS order_min"]) for r in mine
        )
        vals = [abs(r["limits_min"]) for r in mine if r["limits_min"] is not None]
        m["MAE limits"] = statistics.fmean(vals) if vals else None
        m["MAE RJMS"] = statistics.fmean(abs(r["rjms_error_min"]) for r in mine)
        vals = [abs(r["rush_at_rjms_min"]) for r in mine if r["rush_at_rjms_min"] is not None]
        m["MAE rush at RJMS moment"] = statistics.fmean(vals) if vals else None
        out.append(m)
    return out


def markdown(rows: list[dict], summary: list[dict]) -> str:
    def f(v, fmt="+.1f"):
        return "-" if v is None else format(v, fmt)

    lines = [
        "# rush's error at submit taken apart, job by job (round 17)",
        "",
        "Written by `python sim/runtime_predictions/live_decompose.py` (see its docstring). Trace",
        "minutes; signed: estimate minus real start (negative: early). `live`: what the daemon",
        "published; `L2`: the core's pass again on the run's real state at submit (rule L2, as",
        "deployed). The parts add up to `L2`: (a) `running`, the running jobs' predicted ends; (b)",
        "`queued`, the queued jobs' predicted runtimes; (c1) `arrivals`, later jobs under the core's",
        "own EASY with every runtime real; (c2) `RJMS order`, the RJMS's order and timing against the",
        "core's EASY. `later first`: jobs submitted after it that started before it, really (and",
        "their processor-minutes, wall) / in the core's EASY with the real future. (d) `lag`: the",
        "RJMS's first estimate, trace minutes after submit (share of the wait); `RJMS` its error",
        "then, `rush then` rush's (L2, recomputed) at that moment. `limits`: rush's pass at submit",
        "with every job at its limit (no prediction), a reference. `of which sb's rule` (sched-backfill",
        "only): the core's EASY start minus the start under a replica of sched-backfill's own rule",
        "(`flux_backfill_with_arrivals`), both with the real future: the part of (c2) its rule explains.",
        "",
        "| run | job | wait | live | L2 | (a) running | (b) queued | (c1) arrivals | (c2) RJMS order "
        "| of which sb's rule | later first: real (proc-min) / EASY | (d) lag (share) | RJMS | rush then | limits |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['window']} {live_windows.OWN[r['run']]} {r['source']} | {r['job']} | {r['wait_min']:.0f} | "
            f"{f(r['live_min'])} | {f(r['L2_min'])} | {f(r['running_min'])} | {f(r['queued_min'])} | "
            f"{f(r['arrivals_min'])} | {f(r['RJMS order_min'])} | {f(r['sb rule_min'])} | {r['later_first_real']} "
            f"({r['later_first_area']:.0f}) / {r['later_first_easy']} | {r['lag_min']:.0f} "
            f"({100 * r['lag_share']:.0f} %) | {f(r['rjms_error_min'])} | {f(r['rush_at_rjms_min'])} | "
            f"{f(r['limits_min'])} |"
        )
    lines += [
        "",
        "Per run, means (signed parts) and the MAE of rush's estimate as each part is removed in",
        "turn (the last, `without RJMS order`, is 0 by construction); `− (c2) only`: L2 with only",
        "the RJMS's order removed (a perfect order model, the model's runtimes); `limits`: every job",
        "at its limit; beside the RJMS's own MAE and rush's at the RJMS's moment:",
        "",
        "| run | jobs | L2 | (a) | (b) | (c1) | (c2) | of which sb's rule | later first real / EASY | lag (share) "
        "| MAE L2 | − (a) | − (b) | − (c1) | − (c2) only | limits | RJMS | rush at RJMS's moment |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for m in summary:
        lines.append(
            f"| {m['window']} {live_windows.OWN[m['run']]} {m['source']} | {m['job'].split()[-1]} | "
            f"{f(m['L2_min'])} | {f(m['running_min'])} | {f(m['queued_min'])} | {f(m['arrivals_min'])} | "
            f"{f(m['RJMS order_min'])} | {f(m['sb rule_min'])} | {m['later_first_real']:.1f} / {m['later_first_easy']:.1f} | "
            f"{m['lag_min']:.0f} ({100 * m['lag_share']:.0f} %) | {f(m['MAE L2'], '.1f')} | "
            f"{f(m['MAE without running'], '.1f')} | {f(m['MAE without queued'], '.1f')} | "
            f"{f(m['MAE without arrivals'], '.1f')} | {f(m['MAE without RJMS order only'], '.1f')} | "
            f"{f(m['MAE limits'], '.1f')} | {f(m['MAE RJMS'], '.1f')} | "
            f"{f(m['MAE rush at RJMS moment'], '.1f')} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    models, runs = live_bias.recorded_runs(argv, __doc__.split("\n\n")[0])
    rows: list[dict] = []
    for w, rjms, path, source in runs:
        if rjms not in HEAD_ONLY:
            continue
        rows += decompose(w, rjms, path, models, source)
        ordered = live_bias.in_order(rows)
        live_bias.write_results("live_decompose", ordered, markdown(ordered, means(ordered)))
        print(w.name, rjms, source, "done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
