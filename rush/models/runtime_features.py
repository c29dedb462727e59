"""Features of a job at submission for the small/large runtime classifier.

Only what is known when the job is submitted is used (the :data:`FEATURES` order):

* job: requested time p~ and requested processors q;
* temporal, on the site's wall clock (:class:`Clock`) at the submission's absolute Unix
  time (one time base offline and live, :class:`TimeBase`): hour, weekday (Monday 0), day of
  month, month, week of year (``day_of_year // 7 + 1``), quarter;
* the user's submission stream (:data:`STREAM`, at the submission in every mode): seconds
  since the user's previous distinct submission time (-1 none), and how many distinct
  submission times the user had in the :data:`STREAM_WINDOW` before (at most
  :data:`RECENT_ENDS`): resubmission bursts after failed runs;
* lag: for each category (user, q), (user, p~) and (user, submit day), the class (0 small,
  1 large, -1 unknown) of the previous 1, 2 and 3 *finished* jobs of that category, most
  recently finished first;
* aggregation: per category, the fraction of its finished jobs that were small (-1 unknown);
* the user's recent runs (category user, issue 13: failed or aborted runs come in bursts and
  are the small jobs a class-only history misses): the runtimes of the user's last two
  finished jobs (seconds, Tsafrir's predictor) and the last one's runtime / request ratio,
  seconds since the user's last job ended (0 when it ended after the submission, live), how
  many of the user's jobs ended in the hour before the submission (at most
  :data:`RECENT_ENDS`), and the job's request / the mean request of the user's finished jobs.

A finished job's class is its runtime (clipped at its requested time, as the simulator
kills there) against the divider in force when the features are computed, so a weekly
retraining relabels the whole history consistently.

"Finished before t" means the job's logged end (submit + wait + runtime) is *strictly*
before t. Strict, so that a zero-length job submitted at t never appears in its own
history (with ``<=`` its own label would leak into its features).

This module holds the offline, vectorised computation (:class:`FinishedIndex`), used by
the walk-forward loop for all jobs at once. The live daemon's incremental store,
:class:`rush.models.history.RuntimeHistory`, computes the same values from completion
events; a test checks that both agree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np

TEMPORAL = ("hour", "weekday", "monthday", "month", "week", "quarter")
CATEGORIES = ("user_procs", "user_reqtime", "user_day", "user")
USER_CATEGORY = CATEGORIES.index("user")
LAGS = (1, 2, 3)
USER_RECENT = (
    "user_last_runtime",
    "user_last2_runtime",
    "user_last_ratio",
    "user_since_last_end",
    "user_ends_last_hour",
    "user_request_vs_mean",
)
STREAM = ("user_since_last_submit", "user_submits_last_10min")
STREAM_WINDOW = 600.0
FEATURES: tuple[str, ...] = (
    "requested_time",
    "procs",
    *TEMPORAL,
    *STREAM,
    *(f"lag{k}_{c}" for c in CATEGORIES for k in LAGS),
    *(f"frac_small_{c}" for c in CATEGORIES),
    *USER_RECENT,
)
N_HISTORY = 4 * len(CATEGORIES)  # lag classes and small fractions
RECENT_WINDOW = 3600.0  # "ended in the hour before the submission"
RECENT_ENDS = 100  # that count is capped (the live store keeps this many ends per user)
N_STATIC = 2 + len(TEMPORAL) + len(STREAM)  # columns that do not depend on finished jobs
UNKNOWN = -1.0
DAY = 86400
# Without UnixStartTime, trace time 0 is taken as an arbitrary Monday 00:00 UTC (1970-01-05).
ARBITRARY_MONDAY = 4 * DAY


@dataclass(frozen=True)
class Clock:
    """The site's wall clock: absolute Unix seconds to local wall-clock seconds.

    Calendar features and the (user, day) category are read on this clock. ``timezone`` is
    an IANA name (daylight saving applied, offsets looked up per UTC hour); without one,
    ``utc_offset`` seconds are added (0: UTC).
    """

    timezone: str | None = None
    utc_offset: float = 0.0

    @classmethod
    def of(cls, timezone: str | None = None, utc_offset: float = 0.0) -> Clock:
        """A checked clock: a known IANA zone, an offset within +-18 h (ModelError otherwise)."""
        from rush.errors import ModelError

        if timezone is not None:
            try:
                ZoneInfo(timezone)
            except (ZoneInfoNotFoundError, ValueError, TypeError) as exc:
                raise ModelError(
                    f"unknown time zone {timezone!r}",
                    where="timezone",
                    fix="give an IANA zone name such as Europe/Stockholm or UTC",
                ) from exc
        if not math.isfinite(utc_offset) or abs(utc_offset) > 18 * 3600:
            raise ModelError(
                f"UTC offset {utc_offset!r} s is not within +-18 h",
                where="utc_offset",
                fix="give the offset in seconds, e.g. 3600",
            )
        return cls(timezone, float(utc_offset))

    def describe(self) -> str:
        if self.timezone is not None:
            return self.timezone
        hours, rest = divmod(abs(int(self.utc_offset)), 3600)
        return (
            "UTC"
            if not self.utc_offset
            else f"UTC{'-' if self.utc_offset < 0 else '+'}{hours:02d}:{rest // 60:02d}"
        )

    def local(self, unix: np.ndarray | float) -> np.ndarray:
        unix = np.asarray(unix, dtype=np.float64)
        if self.timezone is None:
            return unix + self.utc_offset
        zone = ZoneInfo(self.timezone)
        hours = np.floor(unix / 3600.0).astype(np.int64)
        span = int(hours.max()) - int(hours.min()) + 1 if hours.size else 0  # Python ints: no overflow
        if 0 < span <= 64:  # a scheduling pass's jobs, submitted within a day or two: every hour of it
            first = hours.min()
            distinct, inverse = np.arange(first, first + span), hours - first
        else:
            distinct, inverse = np.unique(hours, return_inverse=True)
        from datetime import datetime

        offsets = np.array(
            [datetime.fromtimestamp(int(h) * 3600, zone).utcoffset().total_seconds() for h in distinct],
            dtype=np.float64,
        )
        return unix + offsets[inverse.reshape(hours.shape)]

    def local_scalar(self, unix: float) -> float:
        """:meth:`local` for one time (the daemon's completion events), without numpy."""
        unix = float(unix)
        if self.timezone is None:
            return unix + self.utc_offset
        from datetime import datetime

        hour = math.floor(unix / 3600.0) * 3600
        return unix + datetime.fromtimestamp(hour, ZoneInfo(self.timezone)).utcoffset().total_seconds()

    def to_dict(self) -> dict:
        return {"timezone": self.timezone, "utc_offset": self.utc_offset}

    @classmethod
    def from_dict(cls, data: dict) -> Clock:
        return cls.of(data.get("timezone"), float(data.get("utc_offset", 0.0)))


@dataclass(frozen=True)
class TimeBase:
    """How a source's times become the one time base: absolute Unix epoch seconds.

    ``unix = source time + unix_start``; calendar features are then read on ``clock``, the
    site's zone. For an SWF trace (and sacct output, converted with the same header):
    ``unix_start`` is the ``UnixStartTime`` header; the zone is ``TimeZoneString`` (IANA),
    else ``TimeZone`` (seconds east of UTC), else UTC. Fallback without ``UnixStartTime``:
    time 0 is 1970-01-05 00:00 (a Monday) and ``unix_start_known`` is False, so hours and
    weekdays are relative to the log's start, not real dates; the model card says so.
    ``timezone`` overrides the header's zone (``rush train --timezone``).
    """

    unix_start: float
    unix_start_known: bool
    clock: Clock
    zone_source: str  # "TimeZoneString", "TimeZone", "--timezone" or "default UTC"

    @classmethod
    def from_header(cls, header: dict[str, str] | None, timezone: str | None = None) -> TimeBase:
        header = header or {}

        def number(key: str) -> float | None:
            raw = str(header.get(key, "")).strip().split(" ")[0]
            try:
                value = float(raw)
            except ValueError:
                return None
            return value if math.isfinite(value) else None

        start = number("UnixStartTime")
        if timezone is not None:
            clock, source = Clock.of(timezone), "--timezone"
        else:
            zone = str(header.get("TimeZoneString", "")).strip() or None
            try:
                clock, source = (Clock.of(zone), "TimeZoneString") if zone else (None, "")
            except Exception:  # an unknown zone name in the header: fall through to TimeZone
                clock, source = None, ""
            if clock is None:
                offset = number("TimeZone")
                if offset is not None and abs(offset) <= 18 * 3600:
                    clock, source = Clock.of(None, offset), "TimeZone"
                else:
                    clock, source = Clock(), "default UTC"
        known = start is not None
        return cls(start if known else float(ARBITRARY_MONDAY), known, clock, source)

    def to_dict(self) -> dict:
        return {
            "base": "unix-epoch-seconds",
            "unix_start": self.unix_start,
            "unix_start_known": self.unix_start_known,
            "timezone": self.clock.timezone,
            "utc_offset": self.clock.utc_offset,
            "zone_source": self.zone_source,
        }


def temporal_features(local_seconds: np.ndarray) -> np.ndarray:
    """(n, 6) hour, weekday (Monday 0), day of month, month, week of year, quarter."""
    t = np.asarray(local_seconds, dtype=np.float64)
    days = np.floor(t / DAY).astype(np.int64)
    out = np.empty((len(days), len(TEMPORAL)), dtype=np.float64)
    out[:, 0] = np.floor((t - days * DAY) / 3600.0)
    # The calendar columns depend on the day alone: when the jobs span fewer days than there
    # are jobs (a scheduling pass: a day or two), compute them once per day of the span.
    span = int(days.max()) - int(days.min()) if len(days) else -1  # Python ints: no overflow
    if 0 <= span < len(days):
        first = days.min()
        out[:, 1:] = _calendar(np.arange(first, first + span + 1, dtype=np.int64))[days - first]
    else:
        out[:, 1:] = _calendar(days)
    return out


def _calendar(days: np.ndarray) -> np.ndarray:
    """(n, 5) weekday, day of month, month, week of year, quarter of local day numbers."""
    date = days.astype("datetime64[D]")
    month_start = date.astype("datetime64[M]")
    month = month_start.astype(np.int64) % 12 + 1
    day_of_year = (date - date.astype("datetime64[Y]")).astype(np.int64)
    return np.column_stack(
        [
            (days + 3) % 7,  # 1970-01-01 was a Thursday
            (date - month_start).astype(np.int64) + 1,
            month,
            day_of_year // 7 + 1,
            (month - 1) // 3 + 1,
        ]
    )


def static_features(
    requested_time: np.ndarray,
    procs: np.ndarray,
    local_submit: np.ndarray,
    stream: np.ndarray | None = None,
) -> np.ndarray:
    """The columns free of finished jobs: p~, q, the temporal features and the submission
    stream (``stream``: :func:`submit_stream`'s (n, 2); None: unknown)."""
    out = np.empty((len(requested_time), N_STATIC), dtype=np.float64)
    out[:, 0] = requested_time
    out[:, 1] = procs
    out[:, 2 : 2 + len(TEMPORAL)] = temporal_features(local_submit)
    out[:, 2 + len(TEMPORAL) :] = UNKNOWN if stream is None else stream
    return out


def submit_stream(user: np.ndarray, submit: np.ndarray) -> np.ndarray:
    """(n, 2) :data:`STREAM` of every job among these jobs' distinct (user, submit) times."""
    user = np.asarray(user)
    submit = np.asarray(submit, dtype=np.float64)
    n = len(submit)
    out = np.full((n, len(STREAM)), UNKNOWN)
    if n == 0:
        return out
    codes = np.unique(user, return_inverse=True)[1].reshape(-1).astype(np.int64)
    window = submit - STREAM_WINDOW
    times = np.unique(np.concatenate([submit, window]))
    scale = np.int64(len(times) + 1)
    key = codes * scale + np.searchsorted(times, submit)
    distinct = np.unique(key)
    pos = np.searchsorted(distinct, key, side="left")  # distinct earlier times of the user
    prev = distinct[np.maximum(pos - 1, 0)]
    has_prev = (pos > 0) & (prev // scale == codes)
    out[:, 0] = np.where(has_prev, submit - times[np.minimum(prev % scale, len(times) - 1)], UNKNOWN)
    first = np.searchsorted(distinct, codes * scale + np.searchsorted(times, window), side="left")
    out[:, 1] = np.minimum(pos - first, RECENT_ENDS)
    return out


def local_day(local_seconds: np.ndarray) -> np.ndarray:
    return np.floor(np.asarray(local_seconds, dtype=np.float64) / DAY).astype(np.int64)


def _pair_codes(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Dense integer codes of the (a, b) pairs."""
    _, a_code = np.unique(a, return_inverse=True)
    b_values, b_code = np.unique(b, return_inverse=True)
    key = a_code.reshape(-1).astype(np.int64) * len(b_values) + b_code.reshape(-1)
    return np.unique(key, return_inverse=True)[1].reshape(-1).astype(np.int64)


def category_codes(
    user: np.ndarray, procs: np.ndarray, requested_time: np.ndarray, day: np.ndarray
) -> np.ndarray:
    """(4, n) codes of the categories (user, q), (user, p~), (user, submit day), user."""
    return np.stack(
        [
            _pair_codes(user, procs),
            _pair_codes(user, requested_time),
            _pair_codes(user, day),
            np.unique(user, return_inverse=True)[1].reshape(-1).astype(np.int64),
        ]
    )


class UserHistory(NamedTuple):
    """Per queried job, its user's finished history before the job's submit."""

    r1: np.ndarray  # runtime of the last finished job (NaN: none)
    r2: np.ndarray  # runtime of the one before (NaN: none)
    request1: np.ndarray  # requested time of the last finished job
    end1: np.ndarray  # end of the last finished job
    ends_last_hour: np.ndarray  # how many of the user's jobs ended in the last hour
    request_sum: np.ndarray  # sum of the requested times of the finished jobs
    count: np.ndarray  # how many finished jobs


def user_recent_values(history: UserHistory, submit: np.ndarray, requested_time: np.ndarray) -> np.ndarray:
    """(m, 6) :data:`USER_RECENT` from the user's finished history (NaN r1/r2: none).

    One formula for the offline index and the live store (it calls this on one row), so
    both give the same bits."""
    r1, r2, request1, end1, ends_last_hour, request_sum, count = history
    known = count > 0
    out = np.full((len(count), len(USER_RECENT)), UNKNOWN)
    out[:, 0] = np.where(np.isnan(r1), UNKNOWN, r1)
    out[:, 1] = np.where(np.isnan(r2), UNKNOWN, r2)
    safe_request1 = np.where(request1 > 0, request1, 1.0)
    out[:, 2] = np.where(known, np.where(request1 > 0, np.nan_to_num(r1) / safe_request1, 1.0), UNKNOWN)
    out[:, 3] = np.where(known, np.maximum(submit - end1, 0.0), UNKNOWN)
    out[:, 4] = np.minimum(ends_last_hour, RECENT_ENDS)
    mean = request_sum / np.maximum(count, 1)
    out[:, 5] = np.where(known, requested_time / np.maximum(mean, 1.0), UNKNOWN)
    return out


@dataclass
class HistoryLookup:
    """Where each queried job's finished history sits in :class:`FinishedIndex` order."""

    lag_runtime: np.ndarray  # (m, 3 * categories): runtimes of the previous 1..3 finished jobs; NaN none
    begin: np.ndarray  # (categories, m): first sorted position of the job's category
    stop: np.ndarray  # (categories, m): one past its last job finished before the query time
    user_recent: np.ndarray | None = None  # (m, len(USER_RECENT)), with the user category


class FinishedIndex:
    """Every job of a trace sorted by (category, end), for "finished before τ" queries.

    Built once; a query for m jobs at times τ is a few ``searchsorted`` calls. Only the
    prefix of a category with end < τ is ever read, so jobs that had not finished leak
    nothing (neither their runtimes nor how many there are).
    """

    def __init__(
        self,
        categories: np.ndarray,
        end: np.ndarray,
        runtime: np.ndarray,
        requested_time: np.ndarray | None = None,
        submit: np.ndarray | None = None,
    ) -> None:
        self.categories = categories
        self.end = np.asarray(end, dtype=np.float64)
        n = len(self.end)
        self.requested_time = (
            np.zeros(n) if requested_time is None else np.asarray(requested_time, dtype=np.float64)
        )
        self.submit = self.end if submit is None else np.asarray(submit, dtype=np.float64)
        self.order: list[np.ndarray] = []
        self.sorted_runtime: list[np.ndarray] = []
        self.sorted_category: list[np.ndarray] = []
        for codes in categories:
            order = np.lexsort((self.end, codes))  # stable: ties in end keep job order
            self.order.append(order)
            self.sorted_runtime.append(np.asarray(runtime, dtype=np.float64)[order])
            self.sorted_category.append(codes[order])
        self.has_user = len(categories) > USER_CATEGORY
        if self.has_user:
            order = self.order[USER_CATEGORY]
            self.user_end = self.end[order]
            self.user_request = self.requested_time[order]
            self.user_request_prefix = np.concatenate([[0.0], np.cumsum(self.user_request)])

    def lookup(self, jobs: np.ndarray, tau: np.ndarray) -> HistoryLookup:
        """History of jobs ``jobs`` (indices) as known just before times ``tau``."""
        jobs = np.asarray(jobs, dtype=np.int64)
        tau = np.asarray(tau, dtype=np.float64)
        # Exact (category, time) comparison through ranks of all times involved.
        hour_before = self.submit[jobs] - RECENT_WINDOW
        times = np.unique(np.concatenate([self.end, tau, hour_before]))
        end_rank = np.searchsorted(times, self.end)
        tau_rank = np.searchsorted(times, tau)
        scale = np.int64(len(times) + 1)
        m = len(jobs)
        lag = np.full((m, 3 * len(self.order)), np.nan)
        begin = np.empty((len(self.order), m), dtype=np.int64)
        stop = np.empty((len(self.order), m), dtype=np.int64)
        for c, order in enumerate(self.order):
            codes = self.categories[c][jobs]
            sorted_codes = self.sorted_category[c]
            key = sorted_codes * scale + end_rank[order]
            stop[c] = np.searchsorted(key, codes * scale + tau_rank, side="left")  # end < tau
            begin[c] = np.searchsorted(sorted_codes, codes, side="left")
            count = stop[c] - begin[c]
            for k in LAGS:
                at = np.maximum(stop[c] - k, 0)
                lag[:, 3 * c + k - 1] = np.where(count >= k, self.sorted_runtime[c][at], np.nan)
        user_recent = None
        if self.has_user:
            c = USER_CATEGORY
            codes = self.categories[c][jobs]
            key = self.sorted_category[c] * scale + end_rank[self.order[c]]
            first_recent = np.searchsorted(key, codes * scale + np.searchsorted(times, hour_before), "left")
            b, s = begin[c], stop[c]
            last = np.maximum(s - 1, 0)
            history = UserHistory(
                lag[:, 3 * c],
                lag[:, 3 * c + 1],
                self.user_request[last] if len(last) else np.zeros(0),
                self.user_end[last] if len(last) else np.zeros(0),
                np.maximum(s - np.maximum(first_recent, b), 0),
                self.user_request_prefix[s] - self.user_request_prefix[b],
                s - b,
            )
            user_recent = user_recent_values(
                history,
                self.submit[jobs],
                self.requested_time[jobs],
            )
        return HistoryLookup(lag, begin, stop, user_recent)

    def small_prefix(self, divider: float) -> list[np.ndarray]:
        """Per category, cumulative counts of small jobs in sorted order (leading 0)."""
        return [np.concatenate([[0], np.cumsum(runtime <= divider)]) for runtime in self.sorted_runtime]


def history_features(
    lookup: HistoryLookup, rows: np.ndarray, divider: float, prefix: list[np.ndarray] | None
) -> np.ndarray:
    """(len(rows), history columns): lag classes and small fractions under ``divider``, then
    the user's recent runs (when the index has the user category).

    ``rows`` select lookup rows; ``prefix`` is :meth:`FinishedIndex.small_prefix` for the
    same divider. A non-finite divider (no history yet) gives all-unknown values.
    """
    m = len(rows)
    n_cat = lookup.begin.shape[0]
    recent = 0 if lookup.user_recent is None else lookup.user_recent.shape[1]
    out = np.full((m, 4 * n_cat + recent), UNKNOWN)
    if not np.isfinite(divider) or prefix is None:
        return out
    if recent:
        out[:, 4 * n_cat :] = lookup.user_recent[rows]
    lag = lookup.lag_runtime[rows]
    out[:, : 3 * n_cat] = np.where(np.isnan(lag), UNKNOWN, (lag > divider).astype(np.float64))
    for c in range(n_cat):
        begin, stop = lookup.begin[c, rows], lookup.stop[c, rows]
        count = stop - begin
        small = prefix[c][stop] - prefix[c][begin]
        out[:, 3 * n_cat + c] = np.where(count > 0, small / np.maximum(count, 1), UNKNOWN)
    return out
