"""Diagnostic H-live (issue 29, round 29; ``estimates/dev_log.md``): is the drift D9 saw on BLUE's
live window (median PIT 0.79) made by *when* the predictor's history sees the window's finished
jobs, rather than by the model?

    python sim/runtime_predictions/live_history_pit.py --models DIR [--runs d9|all]

For window BLUE's Flux runs (sched-backfill ``flux`` and ``fluxion``; ``d9``: round 11's runs that
D9 measured, ``all``: every kept run too), the window's 60 jobs are predicted at their submit by
two models, each on two histories that differ only in the times finished jobs enter them:

* arm W, the walk-forward's model: the window's week refitted exactly as the cached t23
  walk-forward (``RUSH_CACHE``) fits it, the jobs' features computed on ``W log`` (the log's
  times; its quantiles must equal the cache's), ``W cut, log`` (a job outside the window is in
  the history only if it ended by the window's first submit, as for the live model; the window at
  its logged times) and ``W cut, live`` (the same, the window at the run's own starts and ends);
* arm M, the live model (``DIR``, trained as ``run_live.py`` trains it): ``M live``, its history
  fed the run's completions at their live ends (D9's pass: must give D9's PITs back), and
  ``M log``, the same completions at the log's times (live submit + logged wait / K + live runtime).

Per arm: median PIT (D9's definition, and D29's ``pit_value`` for arm W), share above q0.75, and of
the window's same-user (job, earlier job) pairs how many had the earlier one in the history at the
later submit. Writes ``results/live_history_pit.{md,json}``. Chooses nothing.

Since r29keys (D33) rush itself keys a replay's ``trace-N`` tag as N on a ``trace-id`` model, so
arm M's unpatched rows now give the keyed figures (``M live`` 0.57-0.59 on every run, rerun and
checked): the committed results, with D9's 0.79, are reproduced only at a433a04, before the fix.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
for extra in (ROOT, HERE, ROOT / "sim" / "start_estimates"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from rush.studies import arg_types  # noqa: E402

WINDOW = "BLUE"
FLUX_RUNS = ("flux", "fluxion")
FEATURE_SET = "t23"
MAX_TRAIN_JOBS = 10_000
HIDDEN = 1e13  # a history time no submit reaches (workload clock): the job never enters it
# The pre-registered criterion (dev log, round 29, H-live): thresholds on D9's runs.
LIVE_AT_LEAST = 0.69  # `W cut, live` within 0.1 of D9's 0.79
LOG_AT_MOST = 0.51  # `M log` at most 0.1 above D29's 0.411


def d9_pit(levels, seconds, real: float, limit: float) -> float:
    """D9's PIT (``live_pit.py``): the level of ``real`` in the request-capped sorted quantiles,
    interpolated; 0 below the first knot, 1 above the last."""
    q = np.minimum(np.sort(np.asarray(seconds, dtype=np.float64)), limit)
    return float(np.interp(real, q, np.asarray(levels, dtype=np.float64), left=0.0, right=1.0))


def cut_schedule(submit, log_start, log_end, window: np.ndarray, window_times=None):
    """Starts and ends (workload clock) as the live predictor knows the trace: a job outside
    ``window`` (row indices, the first one submitted first) that had not ended by the window's
    first submit never enters the history (``HIDDEN``); the window's rows at ``window_times``
    ((start, end), aligned with ``window``) or at the log's times."""
    submit, start, end = (np.asarray(a, dtype=np.float64) for a in (submit, log_start, log_end))
    if len(window) == 0:
        raise ValueError("an empty window")
    inside = np.zeros(len(submit), dtype=bool)
    inside[window] = True
    late = ~inside & (end > submit[window[0]])
    start, end = np.where(late, HIDDEN, start), np.where(late, HIDDEN, end)
    if window_times is not None:
        w_start, w_end = (np.asarray(a, dtype=np.float64) for a in window_times)
        if w_start.shape != (len(window),) or np.any(w_end < w_start):
            raise ValueError("one start at or before its end per window job")
        start[window], end[window] = w_start, w_end
    return start, end


def live_on_trace_clock(trace_submit, live_submit, live_start, live_end, k: float):
    """A run's starts and ends (wall s) on the trace's clock, anchored at each job's trace
    submit: start = trace submit + live wait x K, end = start + live runtime x K."""
    trace_submit, s, b, e = (
        np.asarray(a, dtype=np.float64) for a in (trace_submit, live_submit, live_start, live_end)
    )
    start = trace_submit + (b - s) * k
    return start, start + (e - b) * k


def pairs_seen(user, submit, history_end) -> tuple[int, int]:
    """Of the (job, earlier job of the same user) pairs, (how many, how many had the earlier one
    in the history at the later submit: ended at or before it)."""
    user, submit, end = (
        np.asarray(user),
        np.asarray(submit, dtype=np.float64),
        np.asarray(history_end, dtype=np.float64),
    )
    earlier = (user[:, None] == user[None, :]) & (submit[None, :] < submit[:, None])
    return int(earlier.sum()), int((earlier & (end[None, :] <= submit[:, None])).sum())


def summary(pits) -> dict:
    p = np.asarray(pits, dtype=np.float64)
    p = p[np.isfinite(p)]
    if not len(p):
        return {"jobs": 0, "median_pit": None, "above_q75": None}
    return {"jobs": int(len(p)), "median_pit": float(np.median(p)), "above_q75": float(np.mean(p > 0.75))}


def verdict(rows: list[dict]) -> dict:
    """The pre-registered criterion on D9's runs (``source`` "before L2") from the rows' medians."""
    d9 = [r for r in rows if r["source"] == "before L2"]
    runs = sorted({r["rjms"] for r in d9})

    def median(rjms, arm):
        return next((r["d9"]["median_pit"] for r in d9 if r["rjms"] == rjms and r["arm"] == arm), None)

    def at_least(rjms, arm, bound):
        m = median(rjms, arm)
        return m is not None and m >= bound

    def at_most(rjms, arm, bound):
        m = median(rjms, arm)
        return m is not None and m <= bound

    one = bool(runs) and all(at_least(r, "W cut, live", LIVE_AT_LEAST) for r in runs)
    two = bool(runs) and all(at_most(r, "M log", LOG_AT_MOST) for r in runs)
    word = "holds" if one and two else "partly" if one or two else "refuted"
    return {"runs": runs, "criterion_1": one, "criterion_2": two, "H-live": word}


# ---- arm M: the live model, its history fed at chosen times (live_pit.py's pass) ----


def trace_keyed(tagged: str) -> int | None:
    """The trace's user number N of a replay's ``trace-N`` tag (the key a model trained on an SWF
    trace's history uses, ``user_key_kind`` ``trace-id``); None for any other tag."""
    head, _, number = tagged.partition("-")
    return int(number) if head == "trace" and number.isdigit() else None


@contextlib.contextmanager
def keyed_as_trained():
    """D31, for this diagnostic only: the live predictor keys a ``trace-N`` tag as N."""
    from rush.planner import runtime_prediction

    original = runtime_prediction.history_user

    def history_user(job, own, kind="name"):  # since r29keys rush itself keys them so on a trace-id card
        number = trace_keyed(job.tags.get("user", ""))
        return original(job, own, kind) if number is None or job.user not in own else number

    runtime_prediction.history_user = history_user
    try:
        yield
    finally:
        runtime_prediction.history_user = original


def m_arm(
    w, rjms: str, model: Path, jobs: dict, history: dict[int, tuple[float, float]], keyed: bool = False
) -> dict[int, float]:
    """Per window job, D9's PIT under the live model whose history is fed each job at
    ``history[job] = (start, end)`` (wall s; the run's own for D9's pass), in end order;
    ``keyed``: D31's user keys (:func:`keyed_as_trained`)."""
    if keyed:
        with keyed_as_trained():
            return m_arm(w, rjms, model, jobs, history)
    import live_pit

    from rush.planner.runtime_prediction import load_runtime_predictor, own_accounts
    from rush.rjms.base import RJMSJob

    account = min(own_accounts(), key=lambda name: name.isdigit())
    predictor = load_runtime_predictor("runtime-quantiles", model, None)
    fed = {i: {**j, "start": history[i][0], "end": history[i][1]} for i, j in jobs.items()}
    out = {}
    for job_id, one in live_pit.at_submit(predictor, jobs, fed, (RJMSJob, account)):
        q = predictor.runtime_quantiles(one).get(job_id)
        if q is not None:
            real = jobs[job_id]["end"] - jobs[job_id]["start"]
            out[job_id] = d9_pit(q.levels, q.seconds, real, jobs[job_id]["limit"])
    return out


# ---- arm W: the walk-forward's model of the window's week ----


def estimates_run():
    """``estimates/run.py`` (its walk-forward cache) under its own name: ``run`` here is the study's."""
    spec = importlib.util.spec_from_file_location("estimates_run", HERE / "estimates" / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class WeekModel:
    """The walk-forward's fits of the weeks the window's rows fall in, on the log's inputs, and
    predictions of the window from any feature rows."""

    def __init__(self, workload, header, rows: np.ndarray, cut: bool = False) -> None:
        """``cut``: one model, trained on the jobs ended before the window's first submit (the
        live model's cut, D30) instead of each week's."""
        from sklearn.base import clone

        from rush.models.runtime_quantiles import RuntimeQuantileRegressor
        from rush.models.runtime_quantiles_walkforward import WEEK, training_rows, walkforward_inputs

        self.workload, self.header, self.rows = workload, header, rows
        jobs, features, runtime, end = walkforward_inputs(workload, header, feature_set=FEATURE_SET)
        self.jobs, self.log_features, self.runtime = jobs, features, runtime
        origin = float(jobs.submit[0])
        self.week = ((jobs.submit[rows] - origin) // WEEK).astype(np.int64)
        moment = {int(k): origin + WEEK * k for k in self.week}
        if cut:
            self.week = np.zeros(len(rows), dtype=np.int64)
            moment = {0: float(jobs.submit[rows[0]])}
        order = np.argsort(end, kind="stable")
        self.models, self.trained_on = {}, {}
        for k in sorted(moment):
            finished, train = training_rows(order, end[order], moment[k], MAX_TRAIN_JOBS)
            self.trained_on[k] = len(train)
            d = float(np.median(runtime[finished]))
            self.models[k] = (
                clone(RuntimeQuantileRegressor()).set_params(divider=d).fit(features[train], runtime[train])
            )
        self.levels = np.asarray(RuntimeQuantileRegressor().quantiles, dtype=np.float64)

    def quantiles(self, features: np.ndarray) -> np.ndarray:
        """The window's quantiles (seconds) from ``features`` (every row of the workload)."""
        out = np.empty((len(self.rows), len(self.levels)))
        for k, model in self.models.items():
            mine = self.week == k
            out[mine] = np.expm1(model.predict_log_quantiles(features[self.rows[mine]]))
        return out

    def features(self, start: np.ndarray, end: np.ndarray) -> np.ndarray:
        from rush.models.runtime_quantiles_walkforward import ReplaySchedule, walkforward_inputs

        return walkforward_inputs(
            self.workload, self.header, feature_set=FEATURE_SET, schedule=ReplaySchedule(start, end)
        )[1]


def w_arm(week: WeekModel, features: np.ndarray) -> tuple[list[float], list[float]]:
    """(D9's PITs, D29's ``pit_value`` PITs) of the window's jobs (trace runtimes and requests)."""
    from rush.core.runtime_conformal import pit_value

    q = week.quantiles(features)
    real = np.asarray(week.workload.runtime, dtype=np.float64)[week.rows]
    req = np.asarray(week.workload.requested_time, dtype=np.float64)[week.rows]
    d9 = [d9_pit(week.levels, row, min(r, lim), lim) for row, r, lim in zip(q, real, req, strict=True)]
    d29 = [pit_value(week.levels, row, r, lim) for row, r, lim in zip(q, real, req, strict=True)]
    return d9, d29


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    arg_types.add_models_folder(parser)
    parser.add_argument("--runs", default="d9", help="d9 (round 11's runs, D9's) or all (every kept run too)")
    parser.add_argument(
        "--decompose", action="store_true", help="also D30: the week's model built like the live one"
    )
    args = parser.parse_args(argv)
    if args.runs not in ("d9", "all"):
        parser.error(f"--runs: {args.runs!r} is not d9 or all")
    models = args.models
    models.mkdir(parents=True, exist_ok=True)
    import live_bias

    rows = run_arms(models, args.runs)
    report = {"rows": rows, "verdict": verdict(rows)}
    live_bias.write_report("live_history_pit", report, markdown(report))
    if args.decompose:
        parts = decompose(models)
        (HERE / "results" / "live_history_pit_models.json").write_text(json.dumps(parts, indent=1) + "\n")
        text = "\n".join([
            "# D30: BLUE's window, median PIT under the week's model built like the live one",
            "",
            "Written by `python sim/runtime_predictions/live_history_pit.py --decompose` (its docstring and "
            "`estimates/dev_log.md`, D30). `q`: without the job fields (app, queue); `c`: trained on the "
            "jobs ended before the window's first submit; D9's PIT definition.",
            "",
            "| variant | history | jobs | median PIT | above q0.75 |",
            "|---|---|---:|---:|---:|",
            *(f"| {p['variant']} | {p['history']} | {p['d9']['jobs']} | {p['d9']['median_pit']:.3f} | "
              f"{100 * p['d9']['above_q75']:.0f} % |" for p in parts),
        ]) + "\n"  # fmt: skip
        (HERE / "results" / "live_history_pit_models.md").write_text(text)
        print(text)
    return 0


def window_setup():
    """(the live window, the estimates' ``run`` module, the trace, the workload up to the
    window's last job, the window's rows, their trace job ids)."""
    import live_windows

    w = next(x for x in live_windows.WINDOWS if x.name == WINDOW)
    run = estimates_run()
    trace, full = run.load("SDSC-BLUE")
    first = int(w.window.partition(":")[0])
    window = np.arange(first, first + int(w.window.partition(":")[2]))
    # The walk-forward is causal: jobs after the window change nothing of the window's predictions.
    workload = full.subset(np.arange(window[-1] + 1))
    return w, run, trace, workload, window, np.asarray(workload.job_id)[window].tolist()


def log_times(week: WeekModel) -> tuple[np.ndarray, np.ndarray]:
    """Every job's logged start and end on the workload's clock (``workload.submit``)."""
    shift = week.jobs.submit - np.asarray(week.workload.submit, dtype=np.float64)
    return week.jobs.start - shift, week.jobs.end - shift


def decompose(models: Path) -> list[dict]:
    """D30: the window's median PIT under the week's model refitted without the job fields
    (``q``), on the live model's cut (``c``) or both, on the log-timed history (cut as the live
    model's) and, for ``Wqc``, on D9's two runs' live-timed history."""
    import dataclasses

    import live_bias
    import live_windows

    w, _, trace, workload, window, ids = window_setup()
    bare = dataclasses.replace(
        workload, extra={a: v for a, v in workload.extra.items() if a not in ("app", "queue")}
    )
    submit = np.asarray(workload.submit, dtype=np.float64)
    out = []
    for name, data, cut in (
        ("W", workload, False),
        ("Wq", bare, False),
        ("Wc", workload, True),
        ("Wqc", bare, True),
    ):
        week = WeekModel(data, trace.header, window, cut=cut)
        start, end = log_times(week)
        out.append({"variant": name, "history": "cut, log",
                    "d9": summary(w_arm(week, week.features(*cut_schedule(submit, start, end, window)))[0])})  # fmt: skip
    for rjms in FLUX_RUNS:  # the last week model is Wqc
        path = live_windows.BEFORE_L2 / live_windows.csv_path(live_windows.RUNS[rjms][0], rjms, w).name
        jobs = live_bias.real_jobs(w, rjms, path)
        live = np.array([[jobs[i]["submit"], jobs[i]["start"], jobs[i]["end"]] for i in ids])
        on_trace = live_on_trace_clock(submit[window], *live.T, float(w.speedup))
        features = week.features(*cut_schedule(submit, start, end, window, on_trace))
        out.append(
            {
                "variant": "Wqc",
                "history": f"cut, live ({rjms}, D9's run)",
                "d9": summary(w_arm(week, features)[0]),
            }
        )
        # D31: the live model with the window's users keyed as its training history keys them
        wait_log = (start - submit)[window] / float(w.speedup)
        log_wall = {i: (jobs[i]["submit"] + wl, jobs[i]["submit"] + wl + jobs[i]["end"] - jobs[i]["start"])
                    for i, wl in zip(ids, wait_log.tolist(), strict=True)}  # fmt: skip
        model = live_bias.model_path(w, models)
        for name, history in (
            ("live", {i: (j["start"], j["end"]) for i, j in jobs.items()}),
            ("log", log_wall),
        ):
            pits = m_arm(w, rjms, model, jobs, history, keyed=True)
            out.append({"variant": "M keyed", "history": f"{name} ({rjms}, D9's run)",
                        "d9": summary([pits.get(i, np.nan) for i in ids])})  # fmt: skip
    return out


def run_arms(models: Path, runs: str) -> list[dict]:
    import live_bias
    import live_windows

    w, run, trace, workload, window, ids = window_setup()
    k = float(w.speedup)
    week = WeekModel(workload, trace.header, window)
    cached = run.cached_walkforward("SDSC-BLUE", MAX_TRAIN_JOBS, 40, 1, 0.1, 15, FEATURE_SET)
    same = np.array_equal(week.quantiles(week.log_features), cached.quantiles[window])
    d9_log, d29_log = w_arm(week, week.log_features)
    user = np.asarray(workload.user)[window]
    submit_w = np.asarray(workload.submit, dtype=np.float64)
    log_start, log_end = log_times(week)
    cut_log = cut_schedule(submit_w, log_start, log_end, window)
    d9_cut, d29_cut = w_arm(week, week.features(*cut_log))
    model = live_bias.model_path(w, models)
    out = []
    for rjms in FLUX_RUNS:
        kept = live_windows.repeat_sources(live_windows.RUNS[rjms][0], rjms, w)
        for source, path in kept if runs == "all" else [s for s in kept if s[0] == "before L2"]:
            jobs = live_bias.real_jobs(w, rjms, path)
            live = np.array([[jobs[i]["submit"], jobs[i]["start"], jobs[i]["end"]] for i in ids])
            on_trace = live_on_trace_clock(submit_w[window], *live.T, k)
            cut_live = cut_schedule(submit_w, log_start, log_end, window, on_trace)
            d9_live, d29_live = w_arm(week, week.features(*cut_live))
            wait_log = (log_start - submit_w)[window] / k
            log_wall = {i: (jobs[i]["submit"] + wl, jobs[i]["submit"] + wl + jobs[i]["end"] - jobs[i]["start"])
                        for i, wl in zip(ids, wait_log.tolist(), strict=True)}  # fmt: skip
            m_live = m_arm(w, rjms, model, jobs, {i: (j["start"], j["end"]) for i, j in jobs.items()})
            m_log = m_arm(w, rjms, model, jobs, log_wall)
            d9_check = None  # D9's own pass (live_pit.py) on the runs it measured: the same PITs?
            if source == "before L2":
                import live_pit

                ref = {r["job"]: r["pit"] for r in live_pit.job_rows(w, rjms, model, live_windows.BEFORE_L2)}
                d9_check = ref == m_live
            arms = [
                ("W log", d9_log, d29_log, pairs_seen(user, submit_w[window], log_end[window])),
                ("W cut, log", d9_cut, d29_cut, pairs_seen(user, submit_w[window], cut_log[1][window])),
                ("W cut, live", d9_live, d29_live, pairs_seen(user, submit_w[window], on_trace[1])),
                ("M live", [m_live.get(i, np.nan) for i in ids], None, pairs_seen(user, live[:, 0], live[:, 2])),
                ("M log", [m_log.get(i, np.nan) for i in ids], None,
                 pairs_seen(user, live[:, 0], [log_wall[i][1] for i in ids])),
            ]  # fmt: skip
            for arm, d9, d29, (pairs, seen) in arms:
                out.append({"rjms": rjms, "source": source, "arm": arm, "d9": summary(d9),
                            "d29": None if d29 is None else summary(d29), "pairs": pairs, "seen": seen,
                            "w_log_equals_cache": same, "m_live_equals_d9": d9_check})  # fmt: skip
            print(rjms, source, "done", flush=True)
    return out


def markdown(report: dict) -> str:
    def f(v, fmt=".3f"):
        return "-" if v is None else format(v, fmt)

    lines = [
        "# H-live: BLUE's live window, PIT at submit by the history's times (issue 29, round 29)",
        "",
        "Written by `python sim/runtime_predictions/live_history_pit.py` (see its docstring). "
        "Median PIT of the window's 60 jobs; `D9 def.`: `live_pit.py`'s PIT, `D29 def.`: "
        "`rush.core.runtime_conformal.pit_value` (arm W only); pairs: the window's same-user (job, "
        "earlier job) pairs, and how many had the earlier one in the history at the later submit.",
        "",
        "| run | kept run | arm | jobs | median PIT (D9 def.) | above q0.75 | median PIT (D29 def.) | pairs seen |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in report["rows"]:
        d29 = r["d29"] or {}
        lines.append(f"| {r['rjms']} | {r['source']} | {r['arm']} | {r['d9']['jobs']} | {f(r['d9']['median_pit'])} | "
                     f"{f(None if r['d9']['above_q75'] is None else 100 * r['d9']['above_q75'], '.0f')} % | "
                     f"{f(d29.get('median_pit'))} | {r['seen']} of {r['pairs']} |")  # fmt: skip
    v = report["verdict"]
    same = all(r["w_log_equals_cache"] for r in report["rows"])
    lines += [
        "",
        f"`W log`'s quantiles equal the cached walk-forward's: {same}. `M live`'s PITs equal "
        "`live_pit.py`'s (D9's pass) job by job on D9's runs: "
        f"{all(r['m_live_equals_d9'] for r in report['rows'] if r['m_live_equals_d9'] is not None)}.",
        f"Criterion 1 (`W cut, live` >= {LIVE_AT_LEAST} on {', '.join(v['runs'])}): {v['criterion_1']}; "
        f"criterion 2 (`M log` <= {LOG_AT_MOST}): {v['criterion_2']}; H-live: **{v['H-live']}** "
        "(read only if the validity checks of the dev log hold).",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
