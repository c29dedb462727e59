"""Features of a job at submission for the small/large runtime classifier.

Only information available when the job is submitted is used:

* job: requested time p~ and requested processors q;
* temporal (local time from ``UnixStartTime`` + ``TimeZone``): hour, weekday, day of month,
  month, week of year, quarter;
* lag: for each category (user, q), (user, p~) and (user, submit day), the class (0 small,
  1 large, -1 unknown) of the previous 1, 2 and 3 *finished* jobs of that category;
* aggregation: per category, the fraction of its finished jobs that were small (-1 unknown).

"Finished" is decided by the caller feeding :meth:`RuntimeHistory.observe_finished`: the
walk-forward loop feeds jobs whose logged end (submit + wait + runtime) has passed, the
live daemon feeds real completion events. A finished job's class is its runtime against
the divider in force when the features are computed.

:class:`RuntimeHistory` is the one implementation for both offline and live use. Its
per-category summaries are cached per divider, so features for 10 000 pending jobs are a
few dictionary lookups each.
"""

from __future__ import annotations

import bisect
import json
from collections import deque
from pathlib import Path

import numpy as np

from rush.errors import ModelError

TEMPORAL = ("hour", "weekday", "monthday", "month", "week", "quarter")
CATEGORIES = ("user_procs", "user_reqtime", "user_day")
FEATURES: tuple[str, ...] = (
    "requested_time",
    "procs",
    *TEMPORAL,
    *(f"lag{k}_{c}" for c in CATEGORIES for k in (1, 2, 3)),
    *(f"frac_small_{c}" for c in CATEGORIES),
)
UNKNOWN = -1.0
DAY = 86400


def temporal_features(unix_time: np.ndarray) -> np.ndarray:
    """(n, 6) hour, weekday (Monday 0), day of month, month, week of year, quarter."""
    t = np.asarray(unix_time, dtype=np.float64)
    days = np.floor(t / DAY).astype(np.int64)
    date = days.astype("datetime64[D]")
    month_start = date.astype("datetime64[M]")
    month = month_start.astype(np.int64) % 12 + 1
    day_of_year = (date - date.astype("datetime64[Y]")).astype(np.int64)
    return np.column_stack(
        [
            np.floor((t - days * DAY) / 3600.0),
            (days + 3) % 7,  # 1970-01-01 was a Thursday
            (date - month_start).astype(np.int64) + 1,
            month,
            day_of_year // 7 + 1,
            (month - 1) // 3 + 1,
        ]
    ).astype(np.float64)


def _keys(user: int, procs: int, requested_time: float, day: int) -> tuple[tuple, tuple, tuple]:
    return (("q", user, procs), ("p", user, float(requested_time)), ("d", user, day))


class RuntimeHistory:
    """Per-category history of finished jobs; answers the lag and aggregation features."""

    def __init__(self) -> None:
        self.recent: dict[tuple, deque] = {}  # last three finished runtimes, oldest first
        self.runtimes: dict[tuple, list[float]] = {}  # all finished runtimes, sorted
        self._summary: dict[tuple, tuple[float, float, float, float]] = {}
        self._summary_divider: float | None = None

    def observe_finished(
        self, user: int, procs: int, requested_time: float, submit_local: float, runtime: float
    ) -> None:
        """A job finished; ``submit_local`` is its local submit time (unix + time zone)."""
        day = int(submit_local // DAY)
        for key in _keys(int(user), int(procs), requested_time, day):
            self.recent.setdefault(key, deque(maxlen=3)).append(float(runtime))
            bisect.insort(self.runtimes.setdefault(key, []), float(runtime))
            self._summary.pop(key, None)

    def _category(self, key: tuple, divider: float) -> tuple[float, float, float, float]:
        if self._summary_divider != divider:
            self._summary = {}
            self._summary_divider = divider
        cached = self._summary.get(key)
        if cached is not None:
            return cached
        recent = self.recent.get(key)
        if recent is None or not np.isfinite(divider):
            value = (UNKNOWN, UNKNOWN, UNKNOWN, UNKNOWN)
        else:
            lags = [0.0 if r <= divider else 1.0 for r in reversed(recent)]
            lags += [UNKNOWN] * (3 - len(lags))
            runtimes = self.runtimes[key]
            value = (*lags, bisect.bisect_right(runtimes, divider) / len(runtimes))
        self._summary[key] = value
        return value

    def features(
        self,
        user: np.ndarray,
        procs: np.ndarray,
        requested_time: np.ndarray,
        submit_local: np.ndarray,
        divider: float,
    ) -> np.ndarray:
        """The :data:`FEATURES` matrix for jobs submitted at local times ``submit_local``."""
        n = len(user)
        out = np.empty((n, len(FEATURES)), dtype=np.float64)
        out[:, 0] = requested_time
        out[:, 1] = procs
        out[:, 2:8] = temporal_features(submit_local)
        days = np.floor(np.asarray(submit_local, dtype=np.float64) / DAY).astype(np.int64)
        user = np.asarray(user, dtype=np.int64)
        seconds = (np.asarray(procs, dtype=np.int64), np.asarray(requested_time, dtype=np.float64), days)
        for c, (kind, second) in enumerate(zip(("q", "p", "d"), seconds, strict=True)):
            # Pending jobs share categories: look each distinct one up once.
            pairs = np.column_stack([user.astype(np.float64), second.astype(np.float64)])
            distinct, inverse = np.unique(pairs, axis=0, return_inverse=True)
            cast = float if kind == "p" else int
            summaries = np.array(
                [self._category((kind, int(u), cast(v)), divider) for u, v in distinct], dtype=np.float64
            ).reshape(-1, 4)
            rows = summaries[inverse.reshape(-1)]
            out[:, 8 + 3 * c : 11 + 3 * c] = rows[:, :3]
            out[:, 17 + c] = rows[:, 3]
        return out

    # Persistence, so a restarted daemon keeps its history.
    def save(self, path: str | Path) -> None:
        data = {
            "recent": [[list(k), list(v)] for k, v in self.recent.items()],
            "runtimes": [[list(k), v] for k, v in self.runtimes.items()],
        }
        Path(path).write_text(json.dumps(data))

    @classmethod
    def load(cls, path: str | Path) -> RuntimeHistory:
        try:
            data = json.loads(Path(path).read_text())
            history = cls()
            for key, values in data["recent"]:
                history.recent[tuple(key)] = deque(values, maxlen=3)
            for key, values in data["runtimes"]:
                history.runtimes[tuple(key)] = sorted(values)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ModelError(
                f"cannot read the runtime history: {exc}", where=str(path), fix="delete it to start afresh"
            ) from exc
        return history


def local_time(submit: np.ndarray, header: dict[str, str]) -> np.ndarray:
    """Local wall-clock seconds of SWF submit times (``UnixStartTime`` + ``TimeZone``)."""

    def number(key: str) -> float:
        raw = str(header.get(key, "")).strip().split(" ")[0]
        try:
            return float(raw)
        except ValueError:
            return 0.0

    # Without a header, t = 0 is taken as Thursday 1970-01-01 00:00, an arbitrary origin.
    return np.asarray(submit, dtype=np.float64) + number("UnixStartTime") + number("TimeZone")
