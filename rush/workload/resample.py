"""Weekly user-profile resampling: new traces that keep each user's job properties.

The trace is cut into weeks from its first submit. For every user, the *weekly slices*
are the weeks from that user's first active week to the last one, empty weeks included
(so a user active one week in four stays that sparse). The new trace has ``weeks``
weeks; for each output week and each user, one of the user's slices is drawn uniformly
at random and its jobs are copied with their offsets within the week.

Documented statistics (tested): a user's expected jobs per output week equal the user's
jobs divided by the number of weeks in the user's span; every output job's (runtime,
processors, requested time) is one of that user's original jobs; the output is sorted by
submit time and renumbered 1..n. Deterministic under ``seed``.
"""

from __future__ import annotations

import numpy as np

from rush.workload.model import SWF_FIELDS, Trace

WEEK = 7 * 86400


def user_weekly_slices(trace: Trace) -> dict[int, list[np.ndarray]]:
    """For each user, one array of job indices per week of the user's active span."""
    submit = trace["submit"].astype(np.float64)
    if len(submit) == 0:
        return {}
    week = ((submit - submit.min()) // WEEK).astype(np.int64)
    user = trace["user"]
    slices: dict[int, list[np.ndarray]] = {}
    order = np.lexsort((submit, week, user))
    for u in np.unique(user):
        idx = order[user[order] == u]
        weeks = week[idx]
        first, last = int(weeks.min()), int(weeks.max())
        bounds = np.searchsorted(weeks, np.arange(first, last + 2))
        slices[int(u)] = [idx[bounds[k] : bounds[k + 1]] for k in range(last - first + 1)]
    return slices


def resample_weekly(trace: Trace, weeks: int, seed: int = 0) -> Trace:
    """A ``weeks``-week trace drawn from each user's weekly slices (module docstring)."""
    if weeks <= 0:
        raise ValueError("weeks must be positive")
    rng = np.random.default_rng(seed)
    submit = trace["submit"].astype(np.float64)
    t0 = float(submit.min()) if len(submit) else 0.0
    week_of = ((submit - t0) // WEEK).astype(np.int64) if len(submit) else submit.astype(np.int64)
    chosen: list[np.ndarray] = []
    new_submit: list[np.ndarray] = []
    for _, slices in sorted(user_weekly_slices(trace).items()):
        picks = rng.integers(0, len(slices), size=weeks)
        for out_week, pick in enumerate(picks):
            idx = slices[pick]
            if len(idx) == 0:
                continue
            offset = submit[idx] - (t0 + week_of[idx] * WEEK)
            chosen.append(idx)
            new_submit.append(out_week * WEEK + offset)
    if chosen:
        index = np.concatenate(chosen)
        times = np.concatenate(new_submit)
    else:
        index = np.zeros(0, dtype=np.int64)
        times = np.zeros(0)
    order = np.lexsort((index, times))
    index, times = index[order], times[order]
    columns = {f: trace[f][index].copy() for f in SWF_FIELDS}
    columns["submit"] = times.astype(columns["submit"].dtype)
    columns["job_id"] = np.arange(1, len(index) + 1, dtype=np.int64)
    # Waits, dependencies and think times of the original schedule mean nothing here.
    for f in ("wait", "preceding_job", "think_time"):
        columns[f] = np.full(len(index), -1, dtype=columns[f].dtype)
    header = dict(trace.header)
    header["Note"] = (
        f"weekly user-profile resampling of {trace.name or 'a trace'} by rush: {weeks} weeks, seed {seed}"
    )
    header["MaxJobs"] = header["MaxRecords"] = str(len(index))
    return Trace(
        columns=columns,
        header=header,
        name=f"{trace.name}-resampled-{weeks}w-{seed}",
        labels={k: dict(v) for k, v in trace.labels.items()},
    )
