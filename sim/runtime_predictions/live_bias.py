"""Where the late bias of rush's live start estimates comes from (issue 29, item 4; README,
"The late bias").

    python sim/runtime_predictions/live_bias.py            # every kept run of live_windows.py
    python sim/runtime_predictions/live_bias.py --runs latest --window CTC   # the current runs only

For each committed live run (every kept one: ``before_l2/``, each ``repeats/...-repN`` and the
current CSV when it is not a copy of a kept one; each row names its run in ``source``) (``live_windows.py``'s windows and runs, rush's daemon beside the
RJMS) the estimate rush made for each job at submit is made again, off line, with the core's
own pass (:func:`rush.core.schedule.schedule`, the rule the daemon ran) on the run's real state
at the moment the live estimate was made: the jobs submitted and not yet started (FCFS order),
the jobs running (their real starts), each job's runtime as the live predictor gave it (the
run's model, its history fed with the run's completions in end order, as the daemon feeds it).
Then the same with one input changed at a time:

* ``deployed``: as live (a running job with quantiles ends at its median given its elapsed
  time); it must give the live estimates back (``live`` beside it) for the rest to mean anything;
* ``running: mean``: a running job ends at its (calibrated) mean from its start, no conditioning;
* ``running: conditional mean``: at E[R | R > elapsed] of its predicted distribution;
* ``running: real``: at its real end (the running jobs known, the queue still predicted);
* ``all real``: every job's real runtime (what is left: the projection against the RJMS's own
  scheduling).

Per window, run, variant and wait class: mean signed error (estimate minus real start, trace
minutes; positive: late), mean absolute error, share late. Writes ``results/live_bias.{md,csv}``.
The model of each window is trained again as ``run_live.py`` trains it (same command, same
cut, same scale: the same model) into a cache directory unless ``--models DIR`` holds it. The
rows recomputed for each run are kept there too (``rows-*.json``, keyed by the run's CSV and
JSON, the model and what is recomputed), so a later call recomputes only runs it has not seen;
remove the directory after changing the recomputation's code.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "sim" / "start_estimates"))

import live_windows  # noqa: E402

from rush.studies.arg_types import names  # noqa: E402

VARIANTS = (
    "deployed",
    "running: mean",
    "running: conditional mean",
    "running: real",
    "all real",
    "queue: L2",
)
CLASSES = ("<10min", "10min-1h", ">1h")
# The wait class each window's recomputations measure (the classes with waits the RJMS's own
# estimates reach); every other window: ">1h".
MEASURED_WAIT = {"SDSC": "10min-1h"}
# Round 14's rule D (rush.core.runtime_drift), recomputed by live_drift.py: "queue: L2" with every
# job's quantiles (queued and running) shifted by its user's drift, the record fed the run's
# completions. Not in VARIANTS: live_bias.md stays the deployed rules' table.
DRIFT_VARIANT = "queue: L2 + drift"
# Round 15's rule D2 (post hoc): the record seeded from the model's training data
# (training_seed), the queue's L2 length scaled by exp(shift); a pass of its own (D's record is
# not seeded).
D2_VARIANT = "queue: L2 x seeded drift"
# Round 16's rule C (rush.core.runtime_conformal), recomputed by live_conformal.py: "queue: L2" with
# every job's quantiles (queued and running) at the levels the run's recent completions' PITs map
# them to (one record for all users, fed the run's completions). A pass of its own.
CONFORMAL_VARIANT = "queue: L2 + C"
# Round 17's decomposition (live_decompose.py): "queue: L2" with the running jobs at their real
# ends, so that L2 -> this -> "all real" takes the running jobs, then the queued ones, apart.
L2_RUNNING_REAL = "queue: L2, running: real"
# Round 30's rule T (rush.core.remaining_runtime.rule_upper), recomputed by live_tail_estimates.py:
# "queue: L2"'s pass with the core's estimate_rule "T" (the queue's tail carried to the request).
TAIL_VARIANT = "queue: T"
# Round 31's rules M and MR (estimates/dev_log.md, D36; not in the core), recomputed by
# live_sampled_estimates.py: the median over rush.core.start_distribution's scenarios of the core's
# pass, each running job (MR), or each running and queued job (M), given its draw as its estimate.
SAMPLED_RUNNING_VARIANT = "running: sampled (MR)"
SAMPLED_VARIANT = "sampled (M)"
# And every job, running or queued, at its limit (no prediction: what Slurm's squeue --start reads).
ALL_LIMITS = "all limits"


def training_seed(w, model: Path) -> dict[int, list[float]]:
    """Rule D2's seed for window ``w``: each trace user's last residuals (rule D's) of the jobs
    the window's model was trained on (finished by the window's first submit, times / K), scored
    by that model in-sample (features as of each job's submission), keyed as the replay tags the
    user (``trace-N``). Under Slurm no live job carries that key (one account)."""
    import run_live

    from rush.core.runtime_drift import drift_residual, quantile_median, seeded_records
    from rush.models.runtime_features import TimeBase
    from rush.models.runtime_quantiles_features import offline_features
    from rush.models.runtime_quantiles_pipeline import load_quantile_model
    from rush.models.runtime_quantiles_walkforward import trace_jobs
    from rush.models.training_cut import TrainingCut
    from rush.planner.snapshot_builder import user_id
    from rush.workload.catalogue import load_trace
    from rush.workload.model import workload_from_trace

    pipeline, card = load_quantile_model(model, fields=[])
    features, regressor = pipeline.named_steps["features"], pipeline.named_steps["regressor"]
    loaded = load_trace(str(run_live.trace_path(w.trace)))
    workload = workload_from_trace(loaded)
    for name in ("app", "queue"):
        workload.extra.pop(name, None)
    workload = TrainingCut.parse(f"job:{w.window.partition(':')[0]}", float(w.speedup), workload).apply(
        workload
    )
    codes = np.asarray(workload.user, dtype=np.int64)
    jobs = trace_jobs(workload, TimeBase.from_header(loaded.header, None))
    for name in ("app", "queue"):
        if hasattr(jobs, name):
            setattr(jobs, name, None)
    X = offline_features(jobs, features.clock_, feature_set=features.feature_set)
    q = np.expm1(regressor.predict_log_quantiles(X))
    levels = [float(v) for v in regressor.levels_]
    residual = np.array(
        [
            drift_residual(r, quantile_median(levels, row), lim)
            for r, row, lim in zip(
                jobs.runtime.tolist(), q.tolist(), jobs.requested_time.tolist(), strict=True
            )
        ]
    )
    keys = np.array([user_id(f"trace-{c}") if c >= 0 else -1 for c in codes.tolist()], dtype=np.int64)
    return seeded_records(keys, np.asarray(jobs.end, dtype=np.float64), residual, np.inf)


def model_path(w, models: Path) -> Path:
    import run_live

    path = live_windows.model_file(w, models)
    if not path.exists() and not run_live.train_quantiles(w.trace, w.window, w.speedup, path):
        raise SystemExit(f"could not train the model for {w.name}")
    return path


def scaled_jobs(w, rjms: str):
    """The window as the replay scaled it for this RJMS (limits: Slurm's minute, Flux's second)."""
    import run_live

    from rush.studies.replay_window import Window, scale_window
    from rush.workload.catalogue import load_trace
    from rush.workload.model import workload_from_trace

    workload = workload_from_trace(load_trace(str(run_live.trace_path(w.trace))))
    step = 60.0 if rjms.startswith("slurm") else 1.0
    return scale_window(workload, Window.parse(w.window), float(w.speedup), 32, limit_granularity=step)


def real_jobs(w, rjms: str, path: Path) -> dict[int, dict]:
    """The run at ``path`` (its JSON beside the CSV) as it really went, per trace job: real
    submit, start and end (unix s, wall), processors, limit (wall s, the RJMS's rounding) and the
    tags the replay gave it (Flux: the trace user)."""
    report = json.loads(path.with_suffix(".json").read_text())
    origin = float(report["clock_offset"])
    per_job = {int(p["job_id"]): p for p in report["per_job"]}
    scaled = scaled_jobs(w, rjms)
    jobs = {}
    for i, job_id in enumerate(scaled.job_id.tolist()):
        p = per_job[job_id]
        tags = {} if rjms.startswith("slurm") else {"user": f"trace-{int(scaled.user[i])}"}
        jobs[job_id] = {
            "submit": origin + p["real_submit"],
            "start": origin + p["real_start"],
            "end": origin + p["real_end"],
            "procs": int(scaled.procs[i]),
            "limit": float(scaled.requested_time[i]),
            "tags": tags,
        }
    return jobs


def reconstruct(
    w,
    rjms: str,
    model: Path,
    moments: list[tuple[float, int, str]] | None = None,
    variants=VARIANTS,
    path: Path | None = None,
    seed: dict[int, list[float]] | None = None,
) -> list[dict]:
    """One row per job with a live estimate at submit: its class, the live error and each
    variant's (trace seconds). ``moments``: (unix time, job, tag) to recompute at instead of
    the live estimates' moments (each row then has its ``tag`` and ``at``). ``path``: the run's
    CSV (its JSON beside it); the current run of the window by default."""
    from rush.core.config import CoreConfig
    from rush.core.remaining_runtime import conditional_mean_runtime, quantile_knots
    from rush.core.schedule import schedule
    from rush.core.snapshot import PendingJob, RunningJob, Snapshot
    from rush.planner.runtime_prediction import load_runtime_predictor, own_accounts
    from rush.rjms.base import RJMSJob

    path = path or live_windows.csv_path(live_windows.RUNS[rjms][0], rjms, w)
    k = float(w.speedup)
    live = {int(r["trace_job_id"]): r for r in live_windows.read_rows(path) if r["estimator"] == "rush"}
    jobs = real_jobs(w, rjms, path)
    account = min(own_accounts(), key=lambda name: name.isdigit())
    predictor = load_runtime_predictor("runtime-quantiles", model, None)
    predictor.drift = DRIFT_VARIANT in variants or D2_VARIANT in variants  # the record only when asked for
    predictor.conformal = CONFORMAL_VARIANT in variants  # rule C's record only when asked for
    if predictor.conformal and predictor.drift:
        raise ValueError("rule C is measured on the model's own quantiles: a pass without D or D2")
    if D2_VARIANT in variants:  # rule D2: the seeded record, the shift on the queue's length
        if DRIFT_VARIANT in variants:
            raise ValueError("rules D and D2 keep different records: one pass each")
        predictor.drift_length = True
        predictor.seed_residuals(seed or {})
    config = CoreConfig.from_names("FCFS", "easy", "none")
    queries = sorted(
        moments
        if moments is not None
        else [
            (float(r["estimated_at"]), job_id, "")
            for job_id, r in live.items()
            if r["error"] is not None and r["estimated_at"] not in ("", None)
        ]
    )
    finished: set[int] = set()
    out = []
    for now, job_id, tag in queries:
        done = sorted((j["end"], i) for i, j in jobs.items() if j["end"] <= now and i not in finished)
        if done:
            predictor.observe_finished(
                [(_rjms_job(RJMSJob, i, jobs[i], "COMPLETED", account), e) for e, i in done]
            )
            finished.update(i for _, i in done)
        visible = {i: j for i, j in jobs.items() if j["submit"] <= now and j["end"] > now}
        states = {i: ("PENDING" if j["start"] > now else "RUNNING") for i, j in visible.items()}
        rjms_jobs = [_rjms_job(RJMSJob, i, visible[i], states[i], account) for i in sorted(visible)]
        predictor.predict_new(rjms_jobs)
        predicted = predictor.estimates(rjms_jobs)
        quantiles = predictor.model_quantiles(rjms_jobs)
        drifted = predictor.runtime_quantiles(rjms_jobs) if predictor.drift or predictor.conformal else {}
        pending = [
            PendingJob(i, visible[i]["submit"], visible[i]["procs"], visible[i]["limit"], predicted[i][0])
            for i in sorted(visible, key=lambda i: (visible[i]["submit"], i))
            if states[i] == "PENDING"
        ]
        running = [
            RunningJob(
                i,
                visible[i]["start"],
                visible[i]["procs"],
                visible[i]["limit"],
                predicted[i][0],
                runtime_quantiles=quantiles.get(i),
            )  # fmt: skip
            for i in sorted(visible)
            if states[i] == "RUNNING"
        ]
        busy = sum(r.procs for r in running)
        row = {"job": job_id, "wait_class": live[job_id]["wait_class"], "live": live[job_id]["error"]}
        row.update(tag=tag, at=now)
        if predictor.drift:  # rule D: the job's shift then, and how many residuals its user had
            user = predictor.user_of.get(job_id)
            row.update(
                shift=predictor.shift.get(job_id, 0.0), residuals=len(predictor.residuals.get(user, ()))
            )
        if predictor.conformal:  # rule C: the job's map of the median and q0.75, and the record's size
            m = predictor.level_map.get(job_id, ())
            row.update(c_levels=list(m), pits=len(predictor.pits))
        real_start = jobs[job_id]["start"]
        for variant in variants:
            if variant in (SAMPLED_RUNNING_VARIANT, SAMPLED_VARIANT):
                scene = (now, job_id, pending, running, busy)
                start = _sampled_start(scene, quantiles, config, variant == SAMPLED_VARIANT)
                row[variant] = (start - real_start) * k if np.isfinite(start) else None
                continue
            p, r = pending, running
            if variant == "running: mean":
                r = [replace(x, runtime_quantiles=None) for x in running]
            elif variant == "running: conditional mean":
                r = [_conditional_mean(x, now, quantile_knots, conditional_mean_runtime) for x in running]
            elif variant in ("running: real", "all real", L2_RUNNING_REAL):
                r = [
                    replace(x, runtime_quantiles=None, estimate=jobs[x.job_id]["end"] - x.start)
                    for x in running
                ]
            elif variant == ALL_LIMITS:
                r = [replace(x, runtime_quantiles=None, estimate=None) for x in running]
            if variant == "all real":
                p = [replace(x, estimate=jobs[x.job_id]["end"] - jobs[x.job_id]["start"]) for x in pending]
            elif variant == ALL_LIMITS:
                p = [replace(x, estimate=None) for x in pending]
            elif variant in ("queue: L2", L2_RUNNING_REAL, TAIL_VARIANT):  # the queue on its quantiles
                p = [replace(x, runtime_quantiles=quantiles.get(x.job_id)) for x in pending]
            elif variant in (
                DRIFT_VARIANT,
                D2_VARIANT,
                CONFORMAL_VARIANT,
            ):  # L2 on D's, D2's or C's quantiles
                p = [replace(x, runtime_quantiles=drifted.get(x.job_id)) for x in pending]
                r = [replace(x, runtime_quantiles=drifted.get(x.job_id)) for x in running]
            snap = Snapshot(now=now, total_procs=32, free_procs=32 - busy, pending=tuple(p), running=tuple(r))
            rule = replace(config, estimate_rule="T") if variant == TAIL_VARIANT else config
            decided = schedule(snap, rule, explain_priorities=False)
            start = decided.estimated_start.get(job_id, np.inf)
            row[variant] = (start - real_start) * k if np.isfinite(start) else None
        out.append(row)
    return out


def reconstructed(models: Path, w, rjms: str, path: Path, moments=None, variants=VARIANTS) -> list[dict]:
    """:func:`reconstruct` of the run at ``path``, kept in ``models`` keyed by the run's CSV and
    JSON, the window's model and the moments and variants asked for: the same inputs give the
    same rows, so they are computed once."""
    import hashlib

    model = model_path(w, models)
    key = hashlib.sha256()
    for part in (path.read_bytes(), path.with_suffix(".json").read_bytes(), model.read_bytes()):
        key.update(hashlib.sha256(part).digest())
    key.update(json.dumps([rjms, w.speedup, moments, list(variants)]).encode())
    cache = models / f"rows-{key.hexdigest()[:32]}.json"
    if cache.exists():
        return json.loads(cache.read_text())
    rows = reconstruct(w, rjms, model, moments, variants, path=path)
    cache.write_text(json.dumps(rows))
    return rows


def _rjms_job(cls, job_id: int, j: dict, state: str, account: str):
    return cls(job_id=job_id, state=state, submit=j["submit"], procs=j["procs"], requested_time=j["limit"],
               start=None if state == "PENDING" else j["start"], user=account, tags=j["tags"])  # fmt: skip


def _knots(x) -> tuple[np.ndarray, np.ndarray] | None:
    """A job's quantile function's knots as the core makes them (quantiles sorted, capped by the
    request; closed at it), or None without quantiles."""
    from rush.core.remaining_runtime import quantile_knots

    if x.runtime_quantiles is None:
        return None
    q = np.minimum(np.sort(np.asarray(x.runtime_quantiles.seconds, dtype=np.float64)), x.requested_time)
    xs, ps = quantile_knots(
        np.log1p(q)[None, :], np.asarray(x.runtime_quantiles.levels), np.log1p([x.requested_time])
    )
    return xs[0], ps


def _sampled_start(scene: tuple, quantiles: dict, config, draw_queue: bool) -> float:
    """Rule MR (``draw_queue`` False) or M at one moment: ``scene`` = (now, the job, pending and
    running jobs as the pass sees them, busy processors); per scenario of
    :mod:`rush.core.start_distribution` (levels seeded from ``now``, running jobs first, then the
    queue), each running job with quantiles gets its draw above its elapsed time as its estimate,
    each queued one its quantiles (L2) or, under M, its draw (at least 1 s, at most its request);
    the core's pass; the median of the job's estimated starts."""
    from dataclasses import replace

    from rush.core.schedule import schedule
    from rush.core.snapshot import Snapshot
    from rush.core.start_distribution import (
        SCENARIOS,
        median_of_starts,
        sampled_runtime,
        scenario_levels,
        scenario_seed,
    )

    now, job_id, pending, running, busy = scene
    queue = [replace(x, runtime_quantiles=quantiles.get(x.job_id)) for x in pending]
    levels = scenario_levels(scenario_seed(now), SCENARIOS, len(running) + len(queue))
    knots_r = [_knots(x) for x in running]
    knots_q = [_knots(x) for x in queue]
    starts = np.empty((SCENARIOS, 1))
    for s in range(SCENARIOS):
        r = [
            x if kn is None
            else replace(x, runtime_quantiles=None, estimate=float(sampled_runtime(*kn, now - x.start, levels[s, i], np.inf)))
            for i, (x, kn) in enumerate(zip(running, knots_r, strict=True))
        ]  # fmt: skip
        p = queue
        if draw_queue:
            p = [
                x if kn is None
                else replace(x, runtime_quantiles=None, estimate=float(min(max(
                    sampled_runtime(*kn, 0.0, levels[s, len(running) + i], x.requested_time), 1.0), x.requested_time)))
                for i, (x, kn) in enumerate(zip(queue, knots_q, strict=True))
            ]  # fmt: skip
        snap = Snapshot(now=now, total_procs=32, free_procs=32 - busy, pending=tuple(p), running=tuple(r))
        starts[s, 0] = schedule(snap, config, explain_priorities=False).estimated_start.get(job_id, np.inf)
    return float(median_of_starts(starts)[0])


def _conditional_mean(x, now: float, quantile_knots, conditional_mean_runtime):
    """The running job ending at E[R | R > elapsed] of its predicted distribution."""
    from dataclasses import replace

    if x.runtime_quantiles is None:
        return x
    q = np.minimum(np.sort(np.asarray(x.runtime_quantiles.seconds, dtype=np.float64)), x.requested_time)
    xs, ps = quantile_knots(
        np.log1p(q)[None, :], np.asarray(x.runtime_quantiles.levels), np.log1p([x.requested_time])
    )
    return replace(
        x, runtime_quantiles=None, estimate=float(conditional_mean_runtime(xs[0], ps, now - x.start))
    )


def summary(window: str, rjms: str, rows: list[dict], source: str = "current") -> list[dict]:
    out = []
    for cls in CLASSES:
        mine = [r for r in rows if r["wait_class"] == cls]
        if not mine:
            continue
        for variant in ("live", *VARIANTS):
            errors = [r[variant] for r in mine if r[variant] is not None]
            out.append(
                {
                    "window": window,
                    "run": rjms,
                    "source": source,
                    "wait": cls,
                    "variant": variant,
                    "jobs": len(errors),
                    "mean_signed_min": statistics.fmean(errors) / 60 if errors else None,
                    "mean_abs_min": statistics.fmean(abs(e) for e in errors) / 60 if errors else None,
                    "late": sum(e > 0 for e in errors) / len(errors) if errors else None,
                    # how well the recomputation gives the live estimates back: ``deployed`` for
                    # runs made before rule L2, ``queue: L2`` for runs since (L2 is what ran)
                    "agree_with_live_min": (
                        statistics.fmean(abs(r[variant] - r["live"]) for r in mine if r[variant] is not None)
                        / 60
                        if variant in ("deployed", "queue: L2") and any(r[variant] is not None for r in mine)
                        else None
                    ),
                }
            )
    return out


def markdown(table: list[dict]) -> str:
    def f(v, fmt):
        return "-" if v is None else format(v, fmt)

    lines = [
        "# The late bias of rush's live estimates at submit, taken apart",
        "",
        "Written by `python sim/runtime_predictions/live_bias.py` (see its docstring). Trace minutes; "
        "signed: estimate minus real start (positive: late). `live`: the run's own estimates; "
        "`deployed`: the core's pass again on the run's real state, as deployed before rule L2 "
        "(|deployed - live| per job, mean, in the last column); the others change one input; "
        "`queue: L2` is the rule deployed since, so for the `repN` runs its |L2 - live| is the "
        "check that the recomputation gives the live estimates back.",
        "",
        "`source`: which kept run (`before L2`: round 10's or 11's, made before rule L2; `repN`: the "
        "runs since; `current`: the window's current CSV when it is not a copy of a kept run).",
        "",
        "| window | run | source | wait | variant | jobs | mean signed | MAE | late | |variant - live| |",
        "|---|---|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for t in table:
        lines.append(
            f"| {t['window']} | {t['run']} | {t['source']} | {t['wait']} | {t['variant']} | {t['jobs']} | "
            f"{f(t['mean_signed_min'], '+.1f')} | {f(t['mean_abs_min'], '.1f')} | "
            f"{f(None if t['late'] is None else 100 * t['late'], '.0f')} % | {f(t['agree_with_live_min'], '.1f')} |"
        )
    return "\n".join(lines) + "\n"


def kept_runs(w, rjms: str) -> list[tuple[str, Path]]:
    """(source, CSV) of every kept run of this window and RJMS (``live_windows.repeat_sources``:
    ``before L2``, then ``rep1``, ``rep2``, ...), and the current CSV as ``current`` when it is
    not a byte-for-byte copy of one of them."""
    import filecmp

    kind = live_windows.RUNS[rjms][0]
    kept = live_windows.repeat_sources(kind, rjms, w)
    current = live_windows.csv_path(kind, rjms, w)
    if current.exists() and not any(filecmp.cmp(current, p, shallow=False) for _, p in kept):
        kept.append(("current", current))
    return kept


def run_sources(text: str) -> set[str]:
    """An argparse type: ``all``, ``latest`` or kept runs' sources (``before L2``, ``repN``,
    ``current``: :func:`kept_runs`' labels), comma-separated."""
    sources = set(names()(text))
    if sources in ({"all"}, {"latest"}):
        return sources
    if odd := sorted(s for s in sources if not re.fullmatch(r"before L2|current|rep[1-9][0-9]*", s)):
        raise argparse.ArgumentTypeError(
            f"{odd[0]!r} is not a kept run's source: give all, latest, or some of 'before L2', rep1, rep2, ..., current"
        )
    return sources


def recorded_runs(argv: list[str] | None, description: str) -> tuple[Path, list[tuple]]:
    """The command line the live-window recomputations share (``--models``, ``--window``,
    ``--runs``) and the recorded daemon runs they replay: the models' directory and (window,
    RJMS, CSV, source) per run, the runs since rule L2 (``repN``, ``current``) first."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--models", default="", help="a directory holding (or to hold) the windows' models")
    parser.add_argument(
        "--window",
        type=names(tuple(w.name for w in live_windows.WINDOWS)),
        default=(),
        help="windows, comma-separated (default: all)",
    )
    parser.add_argument(
        "--runs",
        type=run_sources,
        default="all",
        help="'all' (every kept run), 'latest' (each window's current CSV) or sources, "
        "comma-separated ('before L2', 'rep1', 'current', ...)",
    )
    args = parser.parse_args(argv)
    models = Path(args.models) if args.models else Path(tempfile.gettempdir()) / "rush-live-bias-models"
    models.mkdir(parents=True, exist_ok=True)
    wanted, sources = set(args.window), args.runs
    runs = []
    for w in live_windows.WINDOWS:
        if wanted and w.name not in wanted:
            continue
        for rjms in w.runs:
            if rjms in ("slurm-burst", "rush-module"):  # a reference run; no daemon estimate replayed
                continue
            path = live_windows.csv_path(live_windows.RUNS[rjms][0], rjms, w)
            if sources == {"latest"}:
                runs += [(w, rjms, path, "current")] * path.exists()
                continue
            runs += [
                (w, rjms, p, source)
                for source, p in kept_runs(w, rjms)
                if sources == {"all"} or source in sources
            ]
    return models, sorted(runs, key=lambda r: r[3] == "before L2")


def in_order(table: list[dict]) -> list[dict]:
    """The rows by window (as ``live_windows.WINDOWS``), run and kept run (``before L2`` first,
    then ``rep1``, ``rep2``, ..., ``current``), each run's rows in the order they were made."""
    names = [w.name for w in live_windows.WINDOWS]

    def source(s: str) -> tuple:
        return (s != "before L2", s == "current", int(s[3:]) if s.startswith("rep") else 0)

    return sorted(table, key=lambda t: (names.index(t["window"]), t["run"], source(t["source"])))


def write_results(stem: str, table: list[dict], text: str) -> None:
    """``results/STEM.csv`` (the table's rows) and ``results/STEM.md`` (``text``), printed."""
    out = HERE / "results" / stem
    with open(out.with_suffix(".csv"), "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(table[0]) if table else ["window"])
        writer.writeheader()
        writer.writerows(table)
    out.with_suffix(".md").write_text(text)
    print(text)


def write_report(stem: str, report: dict, text: str) -> None:
    """``results/STEM.json`` (``report``) and ``results/STEM.md`` (``text``), printed: the
    recomputations that keep their reading beside their rows (live_keyed_estimates, ...)."""
    out = HERE / "results" / stem
    out.with_suffix(".json").write_text(json.dumps(report, indent=1) + "\n")
    out.with_suffix(".md").write_text(text)
    print(text)


def run_rows(models: Path, w, rjms: str, path: Path, source: str) -> list[dict]:
    """This table's rows of one recorded run (``source``: its kept run's label)."""
    return summary(w.name, rjms, reconstructed(models, w, rjms, path), source)


def main(argv: list[str] | None = None) -> int:
    models, runs = recorded_runs(argv, __doc__.split("\n\n")[0])
    table = []
    for w, rjms, path, source in runs:  # the results written after each run, so a stopped one keeps them
        table += run_rows(models, w, rjms, path, source)
        write_results("live_bias", in_order(table), markdown(in_order(table)))
        print(w.name, rjms, source, "done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())


def both_estimated(
    window: str, rows: list[dict], csv_rows: list[dict], keys: tuple[str, ...]
) -> tuple[str, dict, list[dict]]:
    """The wait class measured on ``window``, the RJMS's own error per trace job of that class
    (from the run's CSV), and the recomputed ``rows`` of those jobs that have every one of
    ``keys``: the jobs both rush and the RJMS estimated at submit."""
    cls = MEASURED_WAIT.get(window, ">1h")
    own = {
        r["trace_job_id"]: r["error"]
        for r in csv_rows
        if r["estimator"] != "rush" and r["wait_class"] == cls and r["error"] is not None
    }
    mine = [
        r
        for r in rows
        if r["wait_class"] == cls and str(r["job"]) in own and all(r[k] is not None for k in keys)
    ]
    return cls, own, mine


def mae_minutes(errors) -> float:
    """Mean absolute error, seconds in, minutes out."""
    return statistics.fmean(abs(v) for v in errors) / 60
