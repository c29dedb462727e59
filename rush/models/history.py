"""The live per-user history for the daemon: completion events in, features out.

``RuntimeHistory`` keeps, per category (user, q), (user, p~), (user, submit day), user, the
last three finished runtimes and all finished runtimes in sorted order, so the lag classes
and the small fraction can be answered for *any* divider (a retrained model brings a new
one); per user also the last finished job's request, the last :data:`RECENT_ENDS` end times
and the sum of requests (the user's recent runs, :data:`USER_RECENT`).
It computes exactly what :mod:`rush.models.runtime_features` computes offline when fed the
same completions in the same order (a test checks it).

It is the state of the :class:`~rush.models.runtime_pipeline.RuntimeFeatures` transformer,
so it is saved inside the model file (joblib) with the classifier: offline and live
features come from the same object. Times are absolute Unix seconds; the clock only says
in which zone calendar days are read. Users are :mod:`rush.models.users` keys.

In the daemon: ``observe_finished`` on every completion event, features (through the
model's pipeline) before every scheduling pass, ``save`` now and then so a restart keeps the
completions seen since the model was trained.
"""

from __future__ import annotations

import bisect
import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numba import njit

from rush.errors import ModelError
from rush.models.runtime_features import (
    DAY,
    FEATURES,
    N_HISTORY,
    N_STATIC,
    RECENT_ENDS,
    RECENT_WINDOW,
    STREAM_WINDOW,
    UNKNOWN,
    Clock,
    UserHistory,
    static_features,
    user_recent_values,
)
from rush.models.users import NAME, USER_KEY_KINDS
from rush.output_file import replace_file

FORMAT_VERSION = 3  # 2: Unix times, user key kind, model sha256; 3: the user category, recent runs
SUBMITS_KEPT = 512  # per user; a pending job older than its user's last 512 submissions is rare
MAX_HISTORY_BYTES = 512 << 20  # a saved history larger than this is refused, not read
_KINDS = ("q", "p", "d", "u")  # the four categories, in FEATURES order


RAW_COLUMNS = ("user", "procs", "requested_time", "submit")
FINISHED_COLUMNS = ("runtime", "end")
# Unix times the calendar can read (1970 to 3000); durations up to 100 years.
UNIX_RANGE = (0.0, 32_503_680_000.0)
DURATION_RANGE = (0.0, 100 * 365 * 86400.0)
_RANGES = {
    "submit": UNIX_RANGE,
    "end": UNIX_RANGE,
    "requested_time": DURATION_RANGE,
    "runtime": DURATION_RANGE,
    "procs": (0, 2**40),
}


class HistoryFormatError(ModelError):
    """A saved history written by another rush version (its times or keys mean other things)."""


@dataclass
class JobColumns:
    """Jobs as arrays: what the runtime-class pipeline takes as ``X``.

    ``user`` holds :mod:`rush.models.users` keys, ``submit`` absolute Unix seconds. Training
    jobs also carry ``runtime`` (seconds) and ``end`` (Unix seconds, when they finished).
    """

    user: np.ndarray
    procs: np.ndarray
    requested_time: np.ndarray
    submit: np.ndarray
    runtime: np.ndarray | None = None
    end: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.user)

    @classmethod
    def of(cls, jobs: Any) -> JobColumns:
        """Columns, a mapping of column name to array, or a sequence of objects with those
        attributes (e.g. ``PendingJob``)."""
        if isinstance(jobs, JobColumns):
            return jobs
        if isinstance(jobs, dict):
            missing = [c for c in RAW_COLUMNS if c not in jobs]
            if missing:
                raise ValueError(f"job columns {missing} are missing; the pipeline needs {RAW_COLUMNS}")
            cols = {c: np.asarray(jobs[c]) for c in RAW_COLUMNS + FINISHED_COLUMNS if c in jobs}
            return cls(**cols)
        if isinstance(jobs, np.ndarray):
            raise ValueError(
                "the runtime-class pipeline takes job columns (user, procs, requested_time, submit), "
                "not a feature matrix"
            )
        return cls(
            np.fromiter((j.user for j in jobs), np.int64, len(jobs)),
            np.fromiter((j.procs for j in jobs), np.int64, len(jobs)),
            np.fromiter((j.requested_time for j in jobs), np.float64, len(jobs)),
            np.fromiter((j.submit for j in jobs), np.float64, len(jobs)),
        )

    def subset(self, rows: np.ndarray) -> JobColumns:
        def pick(a):
            return None if a is None else np.asarray(a)[rows]

        return JobColumns(*(pick(getattr(self, c)) for c in RAW_COLUMNS + FINISHED_COLUMNS))

    def valid_rows(self) -> np.ndarray:
        """Rows whose raw columns are finite and in range (live jobs: the others stay unknown)."""
        ok = np.ones(len(self), dtype=bool)
        for name in RAW_COLUMNS:
            arr = np.asarray(getattr(self, name), dtype=np.float64)
            low, high = _RANGES.get(name, (-np.inf, np.inf))
            ok &= np.isfinite(arr) & (arr >= low) & (arr <= high)
        return ok

    def checked(self, finished: bool = False) -> JobColumns:
        """Equal lengths, integer users and procs, finite times (ValueError naming the column)."""
        names = RAW_COLUMNS + (FINISHED_COLUMNS if finished else ())
        n = len(np.asarray(self.user))
        out = {}
        for name in names:
            value = getattr(self, name)
            if value is None:
                raise ValueError(f"job column {name!r} is missing (training jobs need runtime and end)")
            integer = name in ("user", "procs")
            try:
                arr = np.asarray(value, dtype=np.int64 if integer else np.float64).reshape(-1)
            except (TypeError, ValueError, OverflowError) as exc:
                raise ValueError(f"job column {name!r} is not numeric: {exc}") from exc
            if len(arr) != n:
                raise ValueError(f"job column {name!r} has {len(arr)} values, 'user' has {n}")
            if not integer and not np.isfinite(arr).all():
                raise ValueError(f"job column {name!r} holds NaN or infinite values")
            low, high = _RANGES.get(name, (-np.inf, np.inf))
            if len(arr) and (arr.min() < low or arr.max() > high):
                raise ValueError(f"job column {name!r} has values outside [{low:g}, {high:g}]")
            out[name] = arr
        return JobColumns(**out)


class RuntimeHistory:
    """Per-category finished-job history; answers features and predictions for pending jobs."""

    def __init__(self, clock: Clock | None = None, user_key_kind: str = NAME) -> None:
        self.clock = clock or Clock()
        self.user_key_kind = user_key_kind
        self.recent: dict[tuple, list[float]] = {}  # last three finished runtimes, oldest first
        self.runtimes: dict[tuple, list[float]] = {}  # all finished runtimes, sorted
        # user -> [last finished job's request, last RECENT_ENDS end times (sorted), sum of requests]
        self.users: dict[int, list] = {}
        # user -> the last SUBMITS_KEPT distinct submission times, sorted (the submission stream)
        self.submits: dict[int, np.ndarray] = {}
        self.observed = 0
        self._cache: dict[tuple, tuple[float, float, float, float]] = {}
        self._cache_divider: float | None = None

    def __getstate__(self) -> dict:
        # The summary cache is rebuilt on demand: do not pickle it into the model file.
        state = dict(self.__dict__)
        state["_cache"], state["_cache_divider"] = {}, None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        _Segments.warm()  # loaded by the daemon: compile (or load) the search now, not in its first pass

    def empty_copy(self, user_key_kind: str = NAME) -> RuntimeHistory:
        """A history on the same clock with nothing observed (live users cannot match)."""
        return RuntimeHistory(self.clock, user_key_kind)

    @staticmethod
    def _keys(user: int, procs: int, requested_time: float, day: int) -> tuple[tuple, ...]:
        return (("q", user, procs), ("p", user, requested_time), ("d", user, day), ("u", user))

    def observe_submitted(self, users: Any, submits: Any) -> None:
        """Submissions seen (training jobs, pending jobs each pass, finished jobs): their
        distinct times enter the user's submission stream; a time seen again is ignored."""
        users = np.asarray(users, dtype=np.float64).reshape(-1)
        submits = np.asarray(submits, dtype=np.float64).reshape(-1)
        ok = np.isfinite(users) & (np.abs(users) < 2.0**62)
        ok &= (submits >= UNIX_RANGE[0]) & (submits <= UNIX_RANGE[1])  # NaN fails too
        if not ok.all():
            users, submits = users[ok], submits[ok]
        if not len(users):
            return
        groups = _UserGroups(users.astype(np.int64), submits)
        # Each pass re-sends the pending jobs already recorded: only users with a new time merge.
        kept = [self.submits.get(user) for user in groups.users.tolist()]
        known = _Segments(kept).holds(groups.inverse, groups.submit)
        fresh = np.bincount(groups.inverse[~known], minlength=len(kept)) > 0
        for k in np.flatnonzero(fresh).tolist():
            user, times = groups.user_times(k)
            old = kept[k]
            merged = np.unique(times) if old is None else np.union1d(old, times)
            if old is None or len(merged) != len(old):
                self.submits[user] = merged[-SUBMITS_KEPT:]

    def observe_finished(
        self,
        user: int,
        procs: int,
        requested_time: float,
        submit: float,
        runtime: float,
        end: float | None = None,
    ) -> bool:
        """A job finished. ``submit`` and ``end`` in Unix seconds (``end`` None: submit +
        runtime); runtime clipped at p~ (the kill).

        A completion with an unreadable value (NaN, out of range) is skipped (False): it must
        not poison the sorted runtimes nor stop the other completions of the cycle."""
        if (
            end is None
            and isinstance(submit, int | float | np.number)
            and isinstance(runtime, int | float | np.number)
        ):
            end = float(submit) + float(runtime)
        values = {
            "submit": submit,
            "requested_time": requested_time,
            "runtime": runtime,
            "procs": procs,
            "end": end,
        }
        for name, value in values.items():
            low, high = _RANGES[name]
            if not (isinstance(value, int | float | np.number) and low <= value <= high):  # NaN fails too
                return False
        if requested_time > 0:
            runtime = min(float(runtime), float(requested_time))
        day = int(self.clock.local_scalar(submit) // DAY)
        for key in self._keys(int(user), int(procs), float(requested_time), day):
            recent = self.recent.setdefault(key, [])
            recent.append(float(runtime))
            if len(recent) > 3:
                del recent[0]
            bisect.insort(self.runtimes.setdefault(key, []), float(runtime))
            self._cache.pop(key, None)
        state = self.users.setdefault(int(user), [0.0, [], 0.0])
        state[0] = float(requested_time)
        bisect.insort(state[1], float(end))
        if len(state[1]) > RECENT_ENDS:
            del state[1][0]
        state[2] += float(requested_time)
        self.observe_submitted([user], [submit])
        self.observed += 1
        return True

    def _summaries(self, keys: list[tuple], divider: float, fresh: bool = False) -> np.ndarray:
        """(len(keys), 4) summaries (lag1, lag2, lag3, small fraction), cached per key;
        ``fresh``: none of these distinct keys is cached (no lookup)."""
        cache, recent_of, runtimes_of = self._cache, self.recent.get, self.runtimes
        get = cache.get
        rows = []
        for key in keys:
            value = None if fresh else get(key)
            if value is None:
                recent = recent_of(key)
                if not recent:
                    value = (UNKNOWN, UNKNOWN, UNKNOWN, UNKNOWN)
                else:
                    # the last three finished runtimes, most recent first, as classes
                    n = len(recent)
                    runtimes = runtimes_of[key]
                    value = (
                        0.0 if recent[-1] <= divider else 1.0,
                        (0.0 if recent[-2] <= divider else 1.0) if n > 1 else UNKNOWN,
                        (0.0 if recent[-3] <= divider else 1.0) if n > 2 else UNKNOWN,
                        bisect.bisect_right(runtimes, divider) / len(runtimes),
                    )
                cache[key] = value
            rows.append(value)
        return np.array(rows, dtype=np.float64).reshape(-1, 4)

    def _category(
        self, kind: str, groups: _UserGroups, values: np.ndarray, divider: float, fresh: bool
    ) -> np.ndarray:
        """(n, 4) summaries of the jobs' (user, value) categories: one per distinct pair."""
        user_code, value, inverse = _distinct_pairs(groups.inverse, len(groups.users), values)
        keys = [(kind, u, v) for u, v in zip(groups.users[user_code].tolist(), value.tolist(), strict=True)]
        return self._summaries(keys, divider, fresh)[inverse]

    def features(self, jobs: JobColumns | Sequence[Any], divider: float | None) -> np.ndarray:
        """The :data:`FEATURES` matrix for pending jobs under ``divider`` (None: no history)."""
        jobs = JobColumns.of(jobs)
        divider = None if divider is None else float(divider)
        n = len(jobs.user)
        local = self.clock.local(jobs.submit)
        out = np.empty((n, len(FEATURES)), dtype=np.float64)
        groups = _UserGroups(jobs.user, jobs.submit)
        out[:, :N_STATIC] = static_features(jobs.requested_time, jobs.procs, local, self._stream(groups))
        if divider is None or not np.isfinite(divider):
            out[:, N_STATIC:] = UNKNOWN
            return out
        if self._cache_divider != divider:
            self._cache, self._cache_divider = {}, divider
        fresh = not self._cache  # each kind's keys are distinct: none of them can be cached yet
        # The daemon's hot path (10,000 pending jobs per pass, a few thousand distinct
        # categories): one summary per distinct category, spread to its jobs by numpy.
        procs = np.asarray(jobs.procs, dtype=np.int64).reshape(-1)
        requests = np.asarray(jobs.requested_time, dtype=np.float64).reshape(-1)
        blocks = (
            self._category("q", groups, procs, divider, fresh),
            self._category("p", groups, requests, divider, fresh),
            self._category("d", groups, (local // DAY).astype(np.int64).reshape(-1), divider, fresh),
            # The user category depends on the user alone: once per distinct user.
            self._summaries([("u", u) for u in groups.users.tolist()], divider, fresh)[groups.inverse],
        )
        # rows hold (lag1, lag2, lag3, frac) per category; FEATURES wants all lags, then fracs.
        for c, block in enumerate(blocks):
            out[:, N_STATIC + 3 * c : N_STATIC + 3 * c + 3] = block[:, :3]
            out[:, N_STATIC + 12 + c] = block[:, 3]
        # The user's recent runs: one row per distinct user, spread to its jobs.
        rows = [self._user_row(user) for user in groups.users.tolist()]
        per_user = np.array([row[:6] for row in rows], dtype=np.float64).reshape(-1, 6)[groups.inverse]
        ends = _Segments.of_lists([row[6] for row in rows])
        submit = groups.submit
        hour = ends.count_before(groups.inverse, submit) - ends.count_before(
            groups.inverse, submit - RECENT_WINDOW
        )
        history = UserHistory(
            per_user[:, 0],
            per_user[:, 1],
            per_user[:, 2],
            per_user[:, 3],
            hour.astype(np.float64),
            per_user[:, 4],
            per_user[:, 5],
        )
        out[:, N_STATIC + N_HISTORY :] = user_recent_values(
            history,
            np.asarray(jobs.submit, dtype=np.float64),
            np.asarray(jobs.requested_time, dtype=np.float64),
        )
        return out

    def _stream(self, groups: _UserGroups) -> np.ndarray:
        """:data:`STREAM` of pending jobs from the recorded submissions (``observe_submitted``)."""
        out = np.empty((groups.n, 2), dtype=np.float64)
        kept = _Segments([self.submits.get(user) for user in groups.users.tolist()])
        submit = groups.submit
        i = kept.count_before(groups.inverse, submit)
        out[:, 0] = UNKNOWN
        if len(kept.flat):
            previous = kept.flat[np.clip(kept.start[groups.inverse] + i - 1, 0, len(kept.flat) - 1)]
            out[:, 0] = np.where(i > 0, submit - previous, UNKNOWN)
        out[:, 1] = np.minimum(i - kept.count_before(groups.inverse, submit - STREAM_WINDOW), RECENT_ENDS)
        return out

    def _user_row(self, user: int) -> tuple:
        """(r1, r2, last request, last end, sum of requests, count, ends) of a user's history."""
        nan = float("nan")
        recent = self.recent.get(("u", user))
        if not recent:
            return (nan, nan, 0.0, 0.0, 0.0, 0, [])
        request, ends, total = self.users[user]
        return (
            recent[-1],
            recent[-2] if len(recent) > 1 else nan,
            request,
            ends[-1],
            total,
            len(self.runtimes[("u", user)]),
            ends,
        )

    def forget_days_before(self, submit: float) -> int:
        """Drop (user, day) categories older than ``submit``'s local day; returns how many."""
        cutoff = int(self.clock.local_scalar(submit) // DAY)
        old = [k for k in self.recent if k[0] == "d" and k[2] < cutoff]  # user keys stay
        for key in old:
            del self.recent[key], self.runtimes[key]
            self._cache.pop(key, None)
        return len(old)

    # Persistence (JSON, written atomically) so a restarted daemon keeps its history.
    def save(self, path: str | Path, model_sha256: str | None = None) -> None:
        """Write the history; ``model_sha256`` names the model it continues."""
        data = {
            "format": FORMAT_VERSION,
            "clock": self.clock.to_dict(),
            "user_key_kind": self.user_key_kind,
            "model_sha256": model_sha256,
            "observed": self.observed,
            "categories": [[list(k), self.recent[k], self.runtimes[k]] for k in self.recent],
            "users": [[u, state[0], state[1], state[2]] for u, state in self.users.items()],
            "submits": [[u, times.tolist()] for u, times in self.submits.items()],
        }
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(data))
        replace_file(tmp, path)

    @classmethod
    def load(cls, path: str | Path) -> tuple[RuntimeHistory, str | None]:
        """(history, the sha256 of the model it continues); ModelError for any bad file."""
        fix = "delete the file to start from the model's history (it refills from completions)"
        path = Path(path)
        try:
            if not path.is_file():
                raise ValueError("not a regular file")
            if path.stat().st_size > MAX_HISTORY_BYTES:
                raise ValueError(f"larger than {MAX_HISTORY_BYTES >> 20} MiB")
            data = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
            if data.get("format") != FORMAT_VERSION:
                raise HistoryFormatError(
                    f"runtime history format {data.get('format')!r}, expected {FORMAT_VERSION}",
                    where=str(path),
                    fix=fix,
                )
            kind = data.get("user_key_kind")
            if kind not in USER_KEY_KINDS:
                raise ValueError(f"user_key_kind {kind!r} is not one of {USER_KEY_KINDS}")
            sha = data.get("model_sha256")
            if sha is not None and not isinstance(sha, str):
                raise ValueError("model_sha256 is not a string")
            history = cls(clock=Clock.from_dict(data["clock"]), user_key_kind=kind)
            history.observed = int(data["observed"])
            for key, recent, runtimes in data["categories"]:
                kind_, user, *value = key
                if kind_ not in _KINDS or len(value) != (0 if kind_ == "u" else 1):
                    raise ValueError(f"bad category key {key!r}")
                key = (
                    (kind_, int(user))
                    if kind_ == "u"
                    else (kind_, int(user), float(value[0]) if kind_ == "p" else int(value[0]))
                )
                history.recent[key] = [float(r) for r in recent][-3:]
                history.runtimes[key] = sorted(float(r) for r in runtimes)
                if not history.recent[key] or not history.runtimes[key]:
                    raise ValueError(f"category {key} has no runtimes")
            for user, request, ends, total in data["users"]:
                ends = sorted(float(e) for e in ends)[-RECENT_ENDS:]
                history.users[int(user)] = [float(request), ends, float(total)]
            for user, times in data["submits"]:
                history.submits[int(user)] = np.array(sorted({float(t) for t in times})[-SUBMITS_KEPT:])
            missing = {k[1] for k in history.recent if k[0] == "u"} - set(history.users)
            if missing or any(not state[1] for state in history.users.values()):
                raise ValueError("the per-user recent runs do not match the user categories")
        except ModelError as exc:
            if exc.where == str(path):
                raise
            # e.g. the clock's zone: name this file, not the clock's key alone
            raise ModelError(
                f"cannot read the runtime history: {exc.where}: {exc.message}", where=str(path), fix=fix
            ) from exc
        except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
            raise ModelError(f"cannot read the runtime history: {exc}", where=str(path), fix=fix) from exc
        return history, sha


class _UserGroups:
    """A batch of jobs grouped by user: iterate (user, row indices, their submit times)."""

    def __init__(self, user: Any, submit: Any) -> None:
        users = np.asarray(user, dtype=np.int64).reshape(-1)
        self.n = len(users)
        self.submit = np.asarray(submit, dtype=np.float64).reshape(-1)
        # One stable sort gives the distinct users, each job's user index and each user's rows;
        # user keys within 65,536 of each other sort as uint16 (numpy's radix sort, 5x faster).
        low = int(users.min()) if self.n else 0
        narrow = self.n and int(users.max()) - low < 1 << 16  # Python ints: no overflow
        self.order = np.argsort((users - low).astype(np.uint16) if narrow else users, kind="stable")
        ordered = users[self.order]
        first = np.ones(self.n, dtype=bool)
        first[1:] = ordered[1:] != ordered[:-1]
        self.users = ordered[first]
        self.inverse = np.empty(self.n, dtype=np.int64)
        self.inverse[self.order] = np.cumsum(first) - 1
        self.bounds = np.append(np.flatnonzero(first), self.n)

    def user_times(self, k: int) -> tuple[int, np.ndarray]:
        """The ``k``-th distinct user and its jobs' submit times."""
        return int(self.users[k]), self.submit[self.order[self.bounds[k] : self.bounds[k + 1]]]


def _distinct_pairs(
    user_code: np.ndarray, n_users: int, values: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct (user code, value) pairs of the jobs, sorted: (their user codes, their
    values, each job's pair index). Values (or, not integers, their ranks) of a small range
    are slotted into a (user, value) table, without a sort of the pairs."""
    distinct = None  # when set, ``values`` are ranks in it
    if values.dtype.kind != "i":
        distinct, values = np.unique(values, return_inverse=True)
        values = values.reshape(-1)
    low = int(values.min()) if len(values) else 0
    span = int(values.max()) - low + 1 if len(values) else 1  # Python ints: no overflow
    if n_users * span <= 4 * len(values) + 1024:
        key = user_code * span + (values - low)
        present = np.zeros(n_users * span, dtype=bool)
        present[key] = True
        pairs = np.flatnonzero(present)
        inverse = (np.cumsum(present) - 1)[key]
    else:
        if distinct is None:  # integers of a wide range: rank them first
            distinct, values = np.unique(values, return_inverse=True)
            values = values.reshape(-1)
            low, span = 0, len(distinct)
        pairs, inverse = np.unique(user_code * span + (values - low), return_inverse=True)
        inverse = inverse.reshape(-1)
    value = pairs % span + low
    return pairs // span, value if distinct is None else distinct[value], inverse


class _Segments:
    """Sorted per-user arrays (None: nothing) laid end to end, searched for all jobs at once."""

    def __init__(self, arrays: list[np.ndarray | None]) -> None:
        lengths = np.array([0 if a is None else len(a) for a in arrays], dtype=np.int64)
        present = [a for a in arrays if a is not None and len(a)]
        self.flat = np.concatenate(present).astype(np.float64) if present else np.zeros(0)
        self.stop = np.cumsum(lengths)
        self.start = self.stop - lengths

    @classmethod
    def of_lists(cls, lists: list[list[float]]) -> _Segments:
        """From sorted lists of floats (empty: nothing), without an array per list."""
        segments = cls([])
        lengths = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
        segments.stop = np.cumsum(lengths)
        segments.start = segments.stop - lengths
        total = int(segments.stop[-1]) if len(lists) else 0
        segments.flat = np.fromiter(itertools.chain.from_iterable(lists), dtype=np.float64, count=total)
        return segments

    @staticmethod
    def warm() -> None:
        one = np.zeros(1, dtype=np.int64)
        _segment_searchsorted(np.zeros(1), one, one + 1, one, np.zeros(1))

    def count_before(self, owner: np.ndarray, values: np.ndarray) -> np.ndarray:
        """Per job, how many of its user's values are < its value (``searchsorted`` left)."""
        return _segment_searchsorted(self.flat, self.start, self.stop, owner, values)

    def holds(self, owner: np.ndarray, values: np.ndarray) -> np.ndarray:
        """Per job, whether its value is among its user's values."""
        if not len(self.flat):
            return np.zeros(len(values), dtype=bool)
        at = self.start[owner] + self.count_before(owner, values)
        return (at < self.stop[owner]) & (self.flat[np.minimum(at, len(self.flat) - 1)] == values)


@njit(cache=True, nogil=True)
def _segment_searchsorted(flat, start, stop, owner, values):  # pragma: no cover - compiled
    # np.searchsorted(flat[start[c]:stop[c]], v, "left") for each (c, v): a binary search per
    # job instead of numpy calls per user (NaN sorts last, as in numpy).
    out = np.empty(values.shape[0], dtype=np.int64)
    for j in range(values.shape[0]):
        lo, hi, v = start[owner[j]], stop[owner[j]], values[j]
        out[j] = hi - lo if v != v else np.searchsorted(flat[lo:hi], v)
    return out
