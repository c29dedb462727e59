"""Features of a job at submission for the runtime-quantile predictor (issue 29).

What a site has when a job is submitted (the :data:`FEATURES` order):

* the request: log(1 + requested time), processors; the queue (SWF field 15, -1 none);
* the queue's state at the submission (:func:`queue_state`): how many of the user's jobs
  run and wait, and log(1 + the longest elapsed time) of the user's running jobs, overall
  and with the same request (-1 none): a job still running is a lower bound on its runtime,
  known before it ends;
* the time on the site's clock (:class:`~rush.models.runtime_features.Clock`): hour, weekday,
  day of month, month, week of year, quarter; the user's submission stream (seconds since
  the user's previous distinct submission, submissions in the 10 minutes before);
* per category (user, q), (user, p~), (user, submit day), user and (user, executable) (the
  job name's stand-in in an SWF trace; -1 everywhere makes it the user's category): the
  log(1 + runtime) of its last three *finished* jobs, most recently finished first, and the
  mean, standard deviation and log(1 + count) of the log runtimes of all its finished jobs;
* the user's recent runs (:data:`rush.models.runtime_features.USER_RECENT`): the last two
  runtimes, the last runtime / request, seconds since the user's last end, ends in the last
  hour, the request / the user's mean request.

Runtimes are clipped at the request (the kill). Unlike the classifier's, no feature depends
on the divider, so one feature matrix serves every week and every divider.

Feature sets (:data:`FEATURE_SETS`; the model card records which one a model was trained on):
``base`` is the list above; ``t23`` adds issue 29's round-4 study columns as far as a live
shell can compute them from the finished jobs it sees (user, processors, request, runtime,
end): the (user, processors, request) category (the job name's stand-in: the same script
resubmitted; its six per-category columns) and the user's last outcome (whether the user's
last finished job ran to its request, and the share of the user's finished jobs that did).
The study's SWF status of the last job is not among them: the shells see a job leave the
queue, not its exit state.

"Finished before t" is strict, as in :mod:`rush.models.runtime_features`. Offline, every
job's features at its submission come from one :class:`FinishedIndex` (vectorised);
live, :class:`QuantileHistory` summarises the finished jobs once and answers pending jobs
submitted after them with ``searchsorted`` lookups (a test checks both agree).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit

from rush.models.runtime_features import (
    DAY,
    LAGS,
    RECENT_ENDS,
    RECENT_WINDOW,
    STREAM,
    STREAM_WINDOW,
    TEMPORAL,
    UNKNOWN,
    USER_RECENT,
    Clock,
    FinishedIndex,
    UserHistory,
    local_day,
    submit_stream,
    temporal_features,
    user_recent_values,
)

CATEGORIES = ("user_procs", "user_reqtime", "user_day", "user", "user_app")
USER_CATEGORY = CATEGORIES.index("user")  # FinishedIndex reads the user's runs from row 3
PER_CATEGORY = (*(f"log_lag{k}" for k in LAGS), "log_mean", "log_std", "log_count")
QUEUE_STATE = ("user_running", "user_pending", "user_running_elapsed", "reqtime_running_elapsed")
STATIC = ("log_requested_time", "procs", *TEMPORAL, *STREAM, "queue", *QUEUE_STATE)
FEATURES: tuple[str, ...] = (
    *STATIC,
    *(f"{name}_{c}" for c in CATEGORIES for name in PER_CATEGORY),
    *USER_RECENT,
)
N_STATIC = len(STATIC)
N_CATEGORY = len(CATEGORIES) * len(PER_CATEGORY)
REQUEST_COLUMN = FEATURES.index("log_requested_time")  # the estimator clips at the request
SCRIPT_CATEGORY = "user_procs_reqtime"
OUTCOME = ("user_last_at_limit", "user_share_at_limit")
FEATURE_SETS: dict[str, tuple[str, ...]] = {
    "base": FEATURES,
    # Appended after ``base`` so that every base column keeps its position.
    "t23": (*FEATURES, *(f"{name}_{SCRIPT_CATEGORY}" for name in PER_CATEGORY), *OUTCOME),
}
# t23 since issue 29 round 6: it met the criterion of sim/runtime_predictions/estimates/dev_log.md.
DEFAULT_FEATURE_SET = "t23"
MAX_KEYED_REQUEST = 999_999_999  # seconds; requests beyond share one (user, procs, request) key


def feature_names(feature_set: str = DEFAULT_FEATURE_SET) -> tuple[str, ...]:
    """The columns of a feature set, in order (ValueError naming the known sets)."""
    try:
        return FEATURE_SETS[feature_set]
    except KeyError:
        raise ValueError(f"feature set {feature_set!r} is not one of {sorted(FEATURE_SETS)}") from None


def categories_of(feature_set: str) -> tuple[str, ...]:
    """The (user, value) categories whose history a feature set reads."""
    feature_names(feature_set)
    return (*CATEGORIES, SCRIPT_CATEGORY) if feature_set == "t23" else CATEGORIES


def _category_start(c: int) -> int:
    """First column of category ``c``: base categories in place, the extra one after ``base``."""
    if c < len(CATEGORIES):
        return N_STATIC + len(PER_CATEGORY) * c
    return len(FEATURES) + len(PER_CATEGORY) * (c - len(CATEGORIES))


OUTCOME_START = len(FEATURES) + len(PER_CATEGORY)  # t23's outcome columns


@dataclass
class QuantileJobs:
    """Jobs as arrays for the quantile predictor: the runtime-class columns plus ``app`` and
    ``queue`` (-1: unknown). ``submit``/``end`` are absolute Unix seconds."""

    user: np.ndarray
    procs: np.ndarray
    requested_time: np.ndarray
    submit: np.ndarray
    app: np.ndarray | None = None
    queue: np.ndarray | None = None
    runtime: np.ndarray | None = None
    end: np.ndarray | None = None
    start: np.ndarray | None = None  # NaN: not started (the queue's state)

    def __len__(self) -> int:
        return len(np.asarray(self.user))

    @classmethod
    def of(cls, jobs: Any) -> QuantileJobs:
        """Columns, a mapping of column name to array, or objects with these attributes
        (a ``JobColumns``, pending jobs); a missing ``app`` or ``queue`` is -1."""
        if isinstance(jobs, QuantileJobs):
            return jobs
        if isinstance(jobs, np.ndarray):
            raise ValueError(
                "the runtime-quantile pipeline takes job columns (user, procs, requested_time, submit), "
                "not a feature matrix"
            )
        names = _COLUMNS
        if isinstance(jobs, dict):
            missing = [c for c in names[:4] if c not in jobs]
            if missing:
                raise ValueError(f"job columns {missing} are missing; the pipeline needs {names[:4]}")
            return cls(**{c: None if jobs.get(c) is None else np.asarray(jobs[c]) for c in names})
        if all(hasattr(jobs, c) for c in names[:4]) and not isinstance(jobs, list | tuple):
            return cls(**{c: getattr(jobs, c, None) for c in names})
        jobs = list(jobs)
        return cls(
            *(np.array([getattr(j, c) for j in jobs]) for c in names[:4]),
            *(np.array([getattr(j, c, -1) for j in jobs]) for c in ("app", "queue")),
        )

    def checked(self, finished: bool = False) -> QuantileJobs:
        """Equal lengths, integer users/procs/app/queue, finite times (ValueError naming the
        column). Finished jobs' runtimes are checked by the caller (bad ones are dropped)."""
        n = len(self)
        out: dict[str, np.ndarray] = {}
        for name in _COLUMNS:
            value = getattr(self, name)
            if value is None:
                if name in ("app", "queue"):
                    out[name] = np.full(n, -1, dtype=np.int64)
                    continue
                if finished and name != "start":
                    raise ValueError(f"job column {name!r} is missing (training jobs need runtime and end)")
                continue
            integer = name in ("user", "procs", "app", "queue")
            try:
                arr = np.asarray(value, dtype=np.float64).reshape(-1)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"job column {name!r} is not numeric: {exc}") from exc
            if len(arr) != n:
                raise ValueError(f"job column {name!r} has {len(arr)} values, 'user' has {n}")
            if name in ("submit", "requested_time", "procs", "user") and not np.isfinite(arr).all():
                raise ValueError(f"job column {name!r} holds NaN or infinite values")
            if integer:
                arr = np.where(np.isfinite(arr), arr, -1).astype(np.int64)
            out[name] = arr
        return QuantileJobs(**out)

    def subset(self, rows: np.ndarray) -> QuantileJobs:
        return QuantileJobs(
            *(None if (v := getattr(self, c)) is None else np.asarray(v)[rows] for c in _COLUMNS)
        )


_COLUMNS = ("user", "procs", "requested_time", "submit", "app", "queue", "runtime", "end", "start")


def clipped(runtime: np.ndarray, requested_time: np.ndarray) -> np.ndarray:
    """Runtime clipped at the request (where the simulator kills); a request <= 0 clips nothing."""
    runtime = np.asarray(runtime, dtype=np.float64)
    requested_time = np.asarray(requested_time, dtype=np.float64)
    return np.where(requested_time > 0, np.minimum(runtime, requested_time), runtime)


def usable_history(runtime: np.ndarray, requested_time: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Finished jobs whose runtime can be learnt from: finite, >= 0, a finite end. NaN or
    negative runtimes (a broken accounting record) are left out of the history, not guessed;
    runtimes longer than the request are clipped (:func:`clipped`), zero runtimes kept."""
    runtime = np.asarray(runtime, dtype=np.float64)
    return np.isfinite(runtime) & (runtime >= 0) & np.isfinite(np.asarray(end, dtype=np.float64))


def static_block(jobs: QuantileJobs, clock: Clock) -> np.ndarray:
    """(n, N_STATIC) columns free of finished jobs, with the stream over these jobs' submits."""
    return _static(jobs, clock, submit_stream(jobs.user, jobs.submit))


def queue_state(jobs: QuantileJobs) -> np.ndarray:
    """(n, len(QUEUE_STATE)) per job, from the other jobs submitted before it (same submit:
    earlier rows) that had not ended at its submit t: running (``start`` <= t) or waiting.
    ``start`` NaN: not started; ``end`` NaN: not ended."""
    n = len(jobs)
    # By user (only a user's own jobs count), then submission: each job scans its user's jobs only.
    order = np.lexsort((np.arange(n), jobs.submit, jobs.user))
    out = np.empty((n, len(QUEUE_STATE)))
    if jobs.start is None and jobs.end is None:
        # Pending jobs only (a live pass): none runs, each waits behind its user's earlier
        # ones; the scan below would be quadratic in a user's queue for the same figures.
        user = np.asarray(jobs.user)[order]
        first = np.flatnonzero(np.r_[True, user[1:] != user[:-1]]) if n else np.zeros(0, np.int64)
        rank = np.arange(n) - np.repeat(first, np.diff(np.r_[first, n]))
        out[order] = np.column_stack([np.zeros(n), rank, np.full((n, 2), UNKNOWN)])
        return out
    start = np.full(n, np.inf) if jobs.start is None else np.nan_to_num(jobs.start, nan=np.inf)
    end = np.full(n, np.inf) if jobs.end is None else np.nan_to_num(jobs.end, nan=np.inf)
    out[order] = _queue_state(
        np.ascontiguousarray(jobs.submit[order], dtype=np.float64),
        np.ascontiguousarray(start[order], dtype=np.float64),
        np.ascontiguousarray(end[order], dtype=np.float64),
        np.ascontiguousarray(jobs.user[order], dtype=np.int64),
        np.ascontiguousarray(jobs.requested_time[order], dtype=np.float64),
    )
    return out


@njit(cache=True)
def _queue_state(submit, start, end, user, requested_time):
    n = len(submit)
    out = np.full((n, 4), UNKNOWN)
    active = np.empty(n, dtype=np.int64)
    n_active = 0
    for j in range(n):
        t = submit[j]
        if j > 0 and user[j] != user[j - 1]:
            n_active = 0  # a new user's jobs: the previous user's do not count
        kept = 0
        for a in range(n_active):
            k = active[a]
            if end[k] > t:
                active[kept] = k
                kept += 1
        n_active = kept
        running = 0
        pending = 0
        for a in range(n_active):
            k = active[a]
            if user[k] != user[j]:
                continue
            if start[k] <= t:
                running += 1
                elapsed = np.log1p(t - start[k])
                if elapsed > out[j, 2]:
                    out[j, 2] = elapsed
                if requested_time[k] == requested_time[j] and elapsed > out[j, 3]:
                    out[j, 3] = elapsed
            else:
                pending += 1
        out[j, 0] = running
        out[j, 1] = pending
        if end[j] > t:
            active[n_active] = j
            n_active += 1
    return out


def _static(jobs: QuantileJobs, clock: Clock, stream: np.ndarray) -> np.ndarray:
    n = len(jobs)
    out = np.empty((n, N_STATIC), dtype=np.float64)
    out[:, 0] = np.log1p(np.maximum(np.asarray(jobs.requested_time, dtype=np.float64), 0.0))
    out[:, 1] = jobs.procs
    out[:, 2 : 2 + len(TEMPORAL)] = temporal_features(clock.local(jobs.submit))
    out[:, 2 + len(TEMPORAL) : 2 + len(TEMPORAL) + len(STREAM)] = stream
    out[:, 2 + len(TEMPORAL) + len(STREAM)] = jobs.queue
    out[:, N_STATIC - len(QUEUE_STATE) :] = queue_state(jobs)
    return out


def category_values(
    jobs: QuantileJobs, clock: Clock, feature_set: str = DEFAULT_FEATURE_SET
) -> list[np.ndarray]:
    """The second member of each category's (user, value) pair, :func:`categories_of` order."""
    day = local_day(clock.local(jobs.submit))
    zero = np.zeros(len(jobs))
    procs = np.asarray(jobs.procs, dtype=np.float64)
    request = np.asarray(jobs.requested_time, dtype=np.float64)
    values = [procs, request, day.astype(np.float64), zero, np.asarray(jobs.app, dtype=np.float64)]
    if SCRIPT_CATEGORY in categories_of(feature_set):
        values.append(script_key(procs, request))
    return values


def script_key(procs: np.ndarray, requested_time: np.ndarray) -> np.ndarray:
    """(procs, request) as one exact float: whole seconds below 1e9, times 1e9 processors
    (below 2**53 for up to 9 million processors)."""
    request = np.clip(np.round(requested_time), 0, MAX_KEYED_REQUEST)
    return np.asarray(procs, dtype=np.float64) * (MAX_KEYED_REQUEST + 1) + request


def at_limit(runtime: np.ndarray, requested_time: np.ndarray) -> np.ndarray:
    """1.0 where a finished job ran to its request (its clipped runtime reached it: killed at
    the limit), else 0.0; a request <= 0 (none) never is."""
    requested_time = np.asarray(requested_time, dtype=np.float64)
    return ((requested_time > 0) & (np.asarray(runtime, dtype=np.float64) >= requested_time)).astype(
        np.float64
    )


def _codes(user: np.ndarray, values: list[np.ndarray]) -> np.ndarray:
    """(categories, n) dense codes of the (user, value) pairs (complex keys sort as pairs)."""
    user = np.asarray(user, dtype=np.float64)
    return np.stack(
        [np.unique(pair_keys(user, v), return_inverse=True)[1].reshape(-1) for v in values]
    ).astype(np.int64)


def _category_columns(lag: np.ndarray, log_sum: np.ndarray, log_sq: np.ndarray, count: np.ndarray):
    """(m, len(PER_CATEGORY)) from the last three runtimes (NaN none) and the log sums."""
    out = np.full((len(count), len(PER_CATEGORY)), UNKNOWN)
    out[:, :3] = np.where(np.isnan(lag), UNKNOWN, np.log1p(np.nan_to_num(lag)))
    known = count > 0
    safe = np.maximum(count, 1)
    mean = log_sum / safe
    out[:, 3] = np.where(known, mean, UNKNOWN)
    out[:, 4] = np.where(known, np.sqrt(np.maximum(log_sq / safe - mean * mean, 0.0)), UNKNOWN)
    out[:, 5] = np.log1p(count)
    return out


def offline_features(
    jobs: QuantileJobs,
    clock: Clock,
    tau: np.ndarray | None = None,
    feature_set: str = DEFAULT_FEATURE_SET,
) -> np.ndarray:
    """Every job's features (``feature_set``'s columns) as of ``tau`` (default: its
    submission) from the jobs finished strictly before; ``jobs`` must carry ``runtime`` and
    ``end``. Jobs whose runtime is not usable (:func:`usable_history`) never enter anyone's
    history."""
    names = feature_names(feature_set)
    jobs = jobs.checked(finished=True)
    n = len(jobs)
    tau = jobs.submit if tau is None else np.asarray(tau, dtype=np.float64)
    runtime = clipped(jobs.runtime, jobs.requested_time)
    usable = usable_history(jobs.runtime, jobs.requested_time, jobs.end)
    # An unusable job "finishes" never: it is sorted past every query time.
    end = np.where(usable, jobs.end, np.inf)
    runtime = np.where(usable, runtime, 0.0)
    codes = _codes(jobs.user, category_values(jobs, clock, feature_set))
    index = FinishedIndex(codes, end, runtime, jobs.requested_time, jobs.submit)
    lookup = index.lookup(np.arange(n), tau)
    out = np.empty((n, len(names)), dtype=np.float64)
    out[:, :N_STATIC] = static_block(jobs, clock)
    width = len(PER_CATEGORY)
    for c in range(len(codes)):
        logs = np.log1p(index.sorted_runtime[c])
        category = index.sorted_category[c]
        # Sums restart at each category, so a job's sums add only its category's past runtimes
        # (a running sum over all categories would carry other jobs' rounding into them).
        log_prefix = _segment_prefix(logs, category)
        sq_prefix = _segment_prefix(logs * logs, category)
        b, s = lookup.begin[c], lookup.stop[c]
        out[:, _category_start(c) : _category_start(c) + width] = _category_columns(
            lookup.lag_runtime[:, 3 * c : 3 * c + 3],
            np.where(s > b, log_prefix[np.maximum(s - 1, 0)], 0.0),
            np.where(s > b, sq_prefix[np.maximum(s - 1, 0)], 0.0),
            (s - b).astype(np.float64),
        )
    out[:, N_STATIC + N_CATEGORY : len(FEATURES)] = lookup.user_recent
    if len(names) > len(FEATURES):
        # The user's finished jobs in end order (the user category's sort): last one and share.
        c = USER_CATEGORY
        limit = at_limit(index.sorted_runtime[c], index.user_request)
        prefix = np.concatenate([[0.0], np.cumsum(limit)])
        b, s = lookup.begin[c], lookup.stop[c]
        out[:, OUTCOME_START:] = _outcome_columns(
            np.where(s > b, limit[np.maximum(s - 1, 0)], 0.0),
            prefix[s] - prefix[b],
            (s - b).astype(np.float64),
        )
    return out


def _outcome_columns(last: np.ndarray, limited: np.ndarray, count: np.ndarray) -> np.ndarray:
    """(m, len(OUTCOME)): the last job at its limit (0/1), the share at the limit; -1 no history."""
    known = count > 0
    return np.column_stack(
        [np.where(known, last, UNKNOWN), np.where(known, limited / np.maximum(count, 1), UNKNOWN)]
    )


@njit(cache=True)
def _segment_prefix(values: np.ndarray, segment: np.ndarray) -> np.ndarray:
    """Running sums of ``values`` that restart where ``segment`` (sorted) changes."""
    out = np.empty(len(values))
    total = 0.0
    for i in range(len(values)):
        if i == 0 or segment[i] != segment[i - 1]:
            total = 0.0
        total += values[i]
        out[i] = total
    return out


class QuantileHistory:
    """The finished jobs a live predictor has seen, summarised for pending jobs' features.

    ``observe_finished`` appends completions; ``observe_submitted`` records submissions (the
    stream). Summaries are rebuilt lazily after a change, so a scheduling pass of 10,000
    pending jobs costs a few ``searchsorted`` calls. Jobs are answered as of their submit,
    which must not precede the completions seen (the live case: pending jobs)."""

    def __init__(self, clock: Clock, feature_set: str = DEFAULT_FEATURE_SET) -> None:
        self.clock = clock
        self.feature_set = feature_set
        self.names = feature_names(feature_set)
        self.columns: dict[str, np.ndarray] = {
            c: np.zeros(0, dtype=np.float64)
            for c in ("user", "procs", "requested_time", "submit", "app", "runtime", "end")
        }
        self.submits = np.zeros(0, dtype=np.complex128)  # user + 1j * submit, sorted, distinct
        self._summary: dict | None = None

    def __setstate__(self, state: dict) -> None:
        # A history pickled before feature sets existed is the base set's.
        state.setdefault("feature_set", "base")
        state.setdefault("names", feature_names(state["feature_set"]))
        self.__dict__.update(state)

    @property
    def finished(self) -> int:
        return len(self.columns["user"])

    def observe_submitted(self, user: np.ndarray, submit: np.ndarray) -> None:
        keys = pair_keys(user, submit)
        self.submits = np.union1d(self.submits, keys[np.isfinite(keys)])

    def observe_finished(self, jobs: QuantileJobs) -> int:
        """Completions in end order; unusable runtimes (NaN, negative) are skipped. Returns how
        many entered the history."""
        jobs = QuantileJobs.of(jobs).checked(finished=True)
        keep = usable_history(jobs.runtime, jobs.requested_time, jobs.end)
        jobs = jobs.subset(np.flatnonzero(keep))
        runtime = clipped(jobs.runtime, jobs.requested_time)
        for name, value in (
            ("user", jobs.user),
            ("procs", jobs.procs),
            ("requested_time", jobs.requested_time),
            ("submit", jobs.submit),
            ("app", jobs.app),
            ("runtime", runtime),
            ("end", jobs.end),
        ):
            self.columns[name] = np.concatenate([self.columns[name], np.asarray(value, dtype=np.float64)])
        self.observe_submitted(jobs.user, jobs.submit)
        self._summary = None
        return len(jobs)

    def _summaries(self) -> dict:
        if self._summary is not None:
            return self._summary
        col = self.columns
        hist = QuantileJobs(col["user"], col["procs"], col["requested_time"], col["submit"], col["app"], None)
        categories = categories_of(self.feature_set)
        values = (
            category_values(hist, self.clock, self.feature_set)
            if len(hist)
            else [np.zeros(0)] * len(categories)
        )
        runtime, end = col["runtime"], col["end"]
        per: list[tuple] = []
        for v in values:
            keys = pair_keys(col["user"], v)
            order = np.lexsort((end, v, col["user"]))  # stable: ties in end keep arrival order
            k_sorted, r_sorted = keys[order], runtime[order]
            distinct, first = np.unique(k_sorted, return_index=True)
            last = np.append(first[1:], len(k_sorted)) - 1
            count = last - first + 1
            lag = np.full((len(distinct), 3), np.nan)
            for k in LAGS:
                at = last - (k - 1)
                lag[:, k - 1] = np.where(count >= k, r_sorted[np.maximum(at, 0)], np.nan)
            logs = np.log1p(r_sorted)
            codes = np.searchsorted(distinct, k_sorted)
            log_sum = _segment_prefix(logs, codes)[last] if len(first) else np.zeros(0)
            log_sq = _segment_prefix(logs * logs, codes)[last] if len(first) else np.zeros(0)
            per.append((distinct, lag, log_sum, log_sq, count.astype(np.float64)))
        # The user's recent runs: last request and end (end order), request sum, sorted ends.
        order = np.lexsort((end, col["user"]))
        users, first = np.unique(col["user"][order], return_index=True)
        last = np.append(first[1:], len(order)) - 1
        request = col["requested_time"][order]
        limit = at_limit(runtime[order], request)
        user_state = (
            users,
            request[last] if len(last) else np.zeros(0),
            end[order][last] if len(last) else np.zeros(0),
            np.add.reduceat(request, first) if len(first) else np.zeros(0),
            limit[last] if len(last) else np.zeros(0),  # the last job ran to its request
            np.add.reduceat(limit, first) if len(first) else np.zeros(0),  # how many did
        )
        ends = np.sort(pair_keys(col["user"], end))
        self._summary = {"categories": per, "user": user_state, "ends": ends}
        return self._summary

    def features(self, jobs: QuantileJobs) -> np.ndarray:
        """The feature set's columns for pending jobs from the finished history and the
        recorded stream."""
        jobs = QuantileJobs.of(jobs).checked()
        n = len(jobs)
        summary = self._summaries()
        categories = categories_of(self.feature_set)
        out = np.empty((n, len(self.names)), dtype=np.float64)
        user = np.asarray(jobs.user, dtype=np.float64)
        # One order for every key that grows with (user, submit): the searches share it.
        by_submit = np.argsort(pair_keys(user, jobs.submit), kind="stable")
        out[:, :N_STATIC] = _static(jobs, self.clock, self._stream(jobs, by_submit))
        width = len(PER_CATEGORY)
        for c, v in enumerate(category_values(jobs, self.clock, self.feature_set)):
            distinct, lag, log_sum, log_sq, count = summary["categories"][c]
            shared = by_submit if categories[c] in ("user_day", "user") else None
            at, found = _find(distinct, pair_keys(user, v), shared)
            lag_q = np.where(found[:, None], lag[at] if len(distinct) else np.nan, np.nan)
            zero = np.zeros(n)
            out[:, _category_start(c) : _category_start(c) + width] = _category_columns(
                lag_q,
                np.where(found, log_sum[at] if len(distinct) else zero, 0.0),
                np.where(found, log_sq[at] if len(distinct) else zero, 0.0),
                np.where(found, count[at] if len(distinct) else zero, 0.0),
            )
        users, request1, end1, request_sum, limit1, limit_sum = summary["user"]
        at, found = _find(users + 0j, user + 0j, by_submit)
        ucat = summary["categories"][USER_CATEGORY]
        u_at, _ = _find(ucat[0], user + 0j, by_submit)
        pick = (lambda a: np.where(found, a[at], 0.0)) if len(users) else (lambda a: np.zeros(n))
        lag = np.where(found[:, None], ucat[1][u_at], np.nan) if len(users) else np.full((n, 3), np.nan)
        ends = summary["ends"]
        hour = pair_searchsorted(ends, pair_keys(user, jobs.submit), by_submit) - pair_searchsorted(
            ends, pair_keys(user, jobs.submit - RECENT_WINDOW), by_submit
        )
        history = UserHistory(
            lag[:, 0],
            lag[:, 1],
            pick(request1),
            pick(end1),
            hour.astype(np.float64),
            pick(request_sum),
            np.where(found, ucat[4][u_at], 0.0) if len(users) else np.zeros(n),
        )
        out[:, N_STATIC + N_CATEGORY : len(FEATURES)] = user_recent_values(
            history, np.asarray(jobs.submit, dtype=np.float64), np.asarray(jobs.requested_time, float)
        )
        if len(self.names) > len(FEATURES):
            out[:, OUTCOME_START:] = _outcome_columns(pick(limit1), pick(limit_sum), history.count)
        return out

    def _stream(self, jobs: QuantileJobs, by_submit: np.ndarray) -> np.ndarray:
        """:data:`STREAM` over the recorded submissions and these jobs' own (each distinct
        (user, time) counted once)."""
        user = np.asarray(jobs.user, dtype=np.float64)
        submit = np.asarray(jobs.submit, dtype=np.float64)
        keys = pair_keys(user, submit)
        stored = self.submits
        at = pair_searchsorted(stored, keys, by_submit)
        seen = (stored[np.minimum(at, len(stored) - 1)] == keys) if len(stored) else np.zeros(len(keys), bool)
        own = np.unique(keys[~seen])  # the pass's jobs not recorded yet
        own_at = pair_searchsorted(own, keys, by_submit)
        merged_before = at + own_at
        first = pair_keys(user, np.full(len(user), -np.inf))
        user_start = pair_searchsorted(stored, first, by_submit) + pair_searchsorted(own, first, by_submit)
        since = pair_keys(user, submit - STREAM_WINDOW)
        window = pair_searchsorted(stored, since, by_submit) + pair_searchsorted(own, since, by_submit)
        out = np.full((len(keys), 2), UNKNOWN)
        prev = np.full(len(keys), -np.inf)
        for arr, i in ((stored, at - 1), (own, own_at - 1)):
            ok = (i >= 0) & (arr[np.maximum(i, 0)].real == user) if len(arr) else np.zeros(len(keys), bool)
            prev = np.where(ok, np.maximum(prev, arr[np.maximum(i, 0)].imag if len(arr) else 0.0), prev)
        has = merged_before > user_start
        out[:, 0] = np.where(has & np.isfinite(prev), submit - prev, UNKNOWN)
        out[:, 1] = np.minimum(merged_before - window, RECENT_ENDS)
        return out


def pair_keys(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """(first, second) pairs as complex numbers, which numpy sorts and searches as pairs
    (built part by part: ``a + 1j * b`` turns an infinite ``b`` into a NaN real part)."""
    first = np.asarray(first, dtype=np.float64).reshape(-1)
    out = np.empty(len(first), dtype=np.complex128)
    out.real = first
    out.imag = np.broadcast_to(np.asarray(second, dtype=np.float64), first.shape)
    return out


def _find(
    sorted_keys: np.ndarray, keys: np.ndarray, order: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Positions of ``keys`` in ``sorted_keys`` and whether each is there."""
    if not len(sorted_keys):
        return np.zeros(len(keys), dtype=np.int64), np.zeros(len(keys), dtype=bool)
    at = np.minimum(pair_searchsorted(sorted_keys, keys, order), len(sorted_keys) - 1)
    return at, sorted_keys[at] == keys


def pair_searchsorted(
    sorted_keys: np.ndarray, keys: np.ndarray, order: np.ndarray | None = None
) -> np.ndarray:
    """``np.searchsorted(sorted_keys, keys, "left")`` for complex pair keys, compiled: numpy's
    complex comparisons, each a cache miss in a history of 200,000 jobs, were most of a pass
    over 10,000 pending jobs. The keys are taken in sorted order, each search galloping on
    from the last answer (``order``: an argsort the keys share with others, e.g. by user and
    submit for every key that grows with the submit). Same order as numpy's (NaN parts
    last), so the same positions."""
    keys = np.ascontiguousarray(keys, dtype=np.complex128).reshape(-1)
    if not len(sorted_keys):
        return np.zeros(len(keys), dtype=np.int64)
    if order is None:
        order = np.argsort(keys, kind="stable")
    return _pair_search(np.ascontiguousarray(sorted_keys, dtype=np.complex128), keys, order)


@njit(cache=True, inline="always")
def _less(a: complex, b: complex) -> bool:  # pragma: no cover - compiled
    # numpy's complex ordering (npysort's CLT): lexicographic, a NaN part after every number.
    ar, ai, br, bi = a.real, a.imag, b.real, b.imag
    if ar < br:
        return ai == ai or bi != bi
    if ar > br:
        return bi != bi and ai == ai
    if ar == br or (ar != ar and br != br):
        return ai < bi or (bi != bi and ai == ai)
    return br != br


@njit(cache=True)
def _pair_search(sorted_keys, keys, order):  # pragma: no cover - compiled
    n = len(sorted_keys)
    out = np.empty(len(keys), dtype=np.int64)
    lo = 0  # every key before position lo is below the current key (keys ascend)
    for idx in order:
        key = keys[idx]
        hi, bound = lo, 1
        while hi < n and _less(sorted_keys[hi], key):
            lo = hi + 1
            hi = lo + bound
            bound *= 2
        hi = min(hi, n)
        while lo < hi:
            mid = (lo + hi) >> 1
            if _less(sorted_keys[mid], key):
                lo = mid + 1
            else:
                hi = mid
        out[idx] = lo
    return out


__all__ = [
    "CATEGORIES",
    "DAY",
    "DEFAULT_FEATURE_SET",
    "FEATURES",
    "FEATURE_SETS",
    "QuantileHistory",
    "QuantileJobs",
    "feature_names",
    "offline_features",
]
