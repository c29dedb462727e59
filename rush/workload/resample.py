"""Weekly user-profile resampling: new traces that keep each user's job properties.

The trace is cut into weeks from its first submit. For every user, the *weekly slices*
are the weeks from that user's first active week to the last one, **empty weeks
included** (our choice: a user active one week in four stays that sparse, instead of
being active every output week; weeks outside the user's span are not counted, so a user
who joined late is not diluted by the weeks before). A user whose id is unknown (``-1``)
is one more user. The new trace has ``weeks`` weeks; for each output week and each user,
one of the user's slices is drawn uniformly at random (with replacement) and its jobs are
copied with their offsets within the week.

Documented statistics (tested): a user's expected jobs per output week equal the user's
jobs divided by the number of weeks in the user's span; every output job's (runtime,
processors, requested time) is one of that user's original jobs; the output is sorted by
submit time and renumbered 1..n; waits, dependencies and think times are reset to ``-1``.
``UnixStartTime`` moves to the original first submit, so times of day and days of the week
keep their phase. Deterministic under ``seed`` (numpy ``default_rng``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rush.errors import RushError
from rush.workload.limits import MAX_WEEKS, check_seed
from rush.workload.model import SWF_FIELDS, Trace

WEEK = 7 * 86400


def _weeks(trace: Trace) -> tuple[np.ndarray, float]:
    submit = trace["submit"].astype(np.float64)
    t0 = float(submit.min()) if len(submit) else 0.0
    return ((submit - t0) // WEEK).astype(np.int64), t0


class WeeklySlices(Sequence[np.ndarray]):
    """One user's jobs per week of its active span, empty weeks included.

    Only the weeks that hold jobs are stored: a user whose first and last submits are years
    (or, in a hostile trace, 2**53 seconds) apart costs memory in proportion to its jobs,
    not to its span.
    """

    def __init__(self, span: int, weeks: np.ndarray, jobs: list[np.ndarray]) -> None:
        self.span = span  # weeks from the first to the last active week, inclusive
        self.weeks = weeks  # sorted offsets (from the first week) of the weeks with jobs
        self.jobs = jobs
        self._empty = np.zeros(0, dtype=np.int64)

    def __len__(self) -> int:
        return self.span

    def __getitem__(self, k):  # type: ignore[override]
        if isinstance(k, slice):
            return [self[i] for i in range(*k.indices(self.span))]
        if k < 0:
            k += self.span
        if not 0 <= k < self.span:
            raise IndexError(k)
        at = int(np.searchsorted(self.weeks, k))
        return self.jobs[at] if at < len(self.weeks) and self.weeks[at] == k else self._empty


def user_weekly_slices(trace: Trace) -> dict[int, WeeklySlices]:
    """For each user, one array of job indices per week of the user's active span (in order)."""
    if len(trace) == 0:
        return {}
    week, _ = _weeks(trace)
    user = trace["user"].astype(np.int64)
    order = np.lexsort((trace["submit"], week, user))
    starts = np.flatnonzero(np.r_[True, np.diff(user[order]) != 0])
    ends = np.r_[starts[1:], len(order)]
    slices: dict[int, WeeklySlices] = {}
    for lo, hi in zip(starts.tolist(), ends.tolist(), strict=True):
        idx = order[lo:hi]
        weeks = week[idx]
        first, last = int(weeks[0]), int(weeks[-1])
        active = np.flatnonzero(np.r_[True, np.diff(weeks) != 0])  # first job of each active week
        bounds = np.r_[active, len(idx)]
        jobs = [idx[bounds[k] : bounds[k + 1]] for k in range(len(active))]
        slices[int(user[idx[0]])] = WeeklySlices(last - first + 1, weeks[active] - first, jobs)
    return slices


def resample_weekly(trace: Trace, weeks: int, seed: int = 0) -> Trace:
    """A ``weeks``-week trace drawn from each user's weekly slices (module docstring)."""
    if isinstance(weeks, bool) or not isinstance(weeks, int) or not 0 < weeks <= MAX_WEEKS:
        raise RushError(
            f"weeks must be positive (at most {MAX_WEEKS}), got {weeks}", where="weeks", fix="e.g. 8 weeks"
        )
    check_seed(seed, where="seed")
    rng = np.random.default_rng(seed)
    submit = trace["submit"].astype(np.float64)
    week_of, t0 = _weeks(trace)
    offset_in_week = submit - (t0 + week_of * WEEK)
    chosen: list[np.ndarray] = []
    new_submit: list[np.ndarray] = []
    for _, slices in sorted(user_weekly_slices(trace).items()):
        picks = rng.integers(0, len(slices), size=weeks)
        for out_week, pick in enumerate(picks.tolist()):
            idx = slices[pick]
            if len(idx):
                chosen.append(idx)
                new_submit.append(out_week * WEEK + offset_in_week[idx])
    index = np.concatenate(chosen) if chosen else np.zeros(0, dtype=np.int64)
    times = np.concatenate(new_submit) if new_submit else np.zeros(0)
    order = np.lexsort((index, times))
    index, times = index[order], times[order]
    columns = {f: trace[f][index].copy() for f in SWF_FIELDS}
    columns["submit"] = np.round(times).astype(columns["submit"].dtype)
    columns["job_id"] = np.arange(1, len(index) + 1, dtype=np.int64)
    # Waits, dependencies and think times of the original schedule mean nothing here.
    for f in ("wait", "preceding_job", "think_time"):
        columns[f] = np.full(len(index), -1, dtype=columns[f].dtype)
    header = dict(trace.header)
    header["Note"] = (
        f"weekly user-profile resampling of {trace.name or 'a trace'} by rush: {weeks} weeks, seed {seed}"
    )
    header["MaxJobs"] = header["MaxRecords"] = str(len(index))
    if trace.unix_start_time is not None:
        header["UnixStartTime"] = str(trace.unix_start_time + int(t0))
    for key in ("StartTime", "EndTime"):
        header.pop(key, None)  # they described the original log
    return Trace(
        columns=columns,
        header=header,
        name=f"{trace.name}-resampled-{weeks}w-{seed}",
        labels={k: dict(v) for k, v in trace.labels.items() if k != "job_id"},
    )
