"""The live per-user history for the daemon: completion events in, features out.

``RuntimeHistory`` keeps, per category (user, q), (user, p~), (user, submit day), the last
three finished runtimes and all finished runtimes in sorted order, so the lag classes and
the small fraction can be answered for *any* divider (a retrained model brings a new one).
It computes exactly what :mod:`rush.models.runtime_features` computes offline when fed the
same completions in the same order (a test checks it).

In the daemon: ``observe_finished`` on every completion event, ``predict(pending)`` before
every scheduling pass, ``save`` now and then so a restart keeps the history.
"""

from __future__ import annotations

import bisect
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rush.errors import ModelError
from rush.models.runtime_features import DAY, FEATURES, LAGS, N_STATIC, UNKNOWN, Clock, static_features

FORMAT_VERSION = 1
_KINDS = ("q", "p", "d")  # the three categories, in FEATURES order


@dataclass
class JobColumns:
    """Pending jobs as arrays (what :meth:`RuntimeHistory.features` needs)."""

    user: np.ndarray
    procs: np.ndarray
    requested_time: np.ndarray
    submit: np.ndarray

    @classmethod
    def of(cls, jobs: JobColumns | Sequence[Any]) -> JobColumns:
        """Accept columns or a sequence of objects with those attributes (e.g. ``PendingJob``)."""
        if isinstance(jobs, JobColumns):
            return jobs
        return cls(
            np.fromiter((j.user for j in jobs), np.int64, len(jobs)),
            np.fromiter((j.procs for j in jobs), np.int64, len(jobs)),
            np.fromiter((j.requested_time for j in jobs), np.float64, len(jobs)),
            np.fromiter((j.submit for j in jobs), np.float64, len(jobs)),
        )


class RuntimeHistory:
    """Per-category finished-job history; answers features and predictions for pending jobs."""

    def __init__(self, clock: Clock | None = None, model: Any = None, divider: float | None = None) -> None:
        self.clock = clock or Clock.unix()
        self.model = model
        self.divider = divider
        self.recent: dict[tuple, list[float]] = {}  # last three finished runtimes, oldest first
        self.runtimes: dict[tuple, list[float]] = {}  # all finished runtimes, sorted
        self.observed = 0
        self._cache: dict[tuple, tuple[float, float, float, float]] = {}
        self._cache_divider: float | None = None

    def attach(self, model: Any, divider: float) -> None:
        """Use a (re)trained classifier and its divider from now on."""
        self.model, self.divider = model, float(divider)
        self._cache = {}

    @classmethod
    def from_model(cls, model_path: str | Path, history_path: str | Path | None = None) -> RuntimeHistory:
        """The daemon's start: a verified model, and the saved history when there is one."""
        from rush.models.runtime_class import load_runtime_classifier

        model, meta = load_runtime_classifier(model_path)
        history = cls.load(history_path) if history_path and Path(history_path).exists() else cls()
        history.attach(model, meta["divider"])
        return history

    @staticmethod
    def _keys(user: int, procs: int, requested_time: float, day: int) -> tuple[tuple, tuple, tuple]:
        return (("q", user, procs), ("p", user, requested_time), ("d", user, day))

    def observe_finished(
        self, user: int, procs: int, requested_time: float, submit: float, runtime: float
    ) -> None:
        """A job finished. ``submit`` in the clock's time base; runtime clipped at p~ (the kill)."""
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
        self.observed += 1

    def _summary(self, key: tuple, divider: float) -> tuple[float, float, float, float]:
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        recent = self.recent.get(key)
        if not recent:
            value = (UNKNOWN, UNKNOWN, UNKNOWN, UNKNOWN)
        else:
            lags = [0.0 if r <= divider else 1.0 for r in reversed(recent)]
            lags += [UNKNOWN] * (len(LAGS) - len(lags))
            runtimes = self.runtimes[key]
            value = (lags[0], lags[1], lags[2], bisect.bisect_right(runtimes, divider) / len(runtimes))
        self._cache[key] = value
        return value

    def features(self, jobs: JobColumns | Sequence[Any], divider: float | None = None) -> np.ndarray:
        """The :data:`FEATURES` matrix for pending jobs under ``divider`` (default: the model's)."""
        jobs = JobColumns.of(jobs)
        divider = self.divider if divider is None else float(divider)
        n = len(jobs.user)
        local = self.clock.local(jobs.submit)
        out = np.empty((n, len(FEATURES)), dtype=np.float64)
        out[:, :N_STATIC] = static_features(jobs.requested_time, jobs.procs, local)
        if divider is None or not np.isfinite(divider):
            out[:, N_STATIC:] = UNKNOWN
            return out
        if self._cache_divider != divider:
            self._cache, self._cache_divider = {}, divider
        # The daemon's hot path (10,000 pending jobs per pass): plain dict hits, no calls.
        get, summary = self._cache.get, self._summary
        days = (local // DAY).astype(np.int64).tolist()
        users = np.asarray(jobs.user, dtype=np.int64).tolist()
        procs = np.asarray(jobs.procs, dtype=np.int64).tolist()
        reqs = np.asarray(jobs.requested_time, dtype=np.float64).tolist()
        flat: list[float] = []
        extend = flat.extend
        for u, q, p, d in zip(users, procs, reqs, days, strict=True):
            kq, kp, kd = ("q", u, q), ("p", u, p), ("d", u, d)
            extend(get(kq) or summary(kq, divider))
            extend(get(kp) or summary(kp, divider))
            extend(get(kd) or summary(kd, divider))
        block = np.array(flat, dtype=np.float64).reshape(n, 12)
        # rows hold (lag1, lag2, lag3, frac) per category; FEATURES wants all lags, then fracs.
        out[:, N_STATIC : N_STATIC + 9] = block[:, [0, 1, 2, 4, 5, 6, 8, 9, 10]]
        out[:, N_STATIC + 9 :] = block[:, [3, 7, 11]]
        return out

    def predict(self, jobs: JobColumns | Sequence[Any]) -> np.ndarray:
        """Predicted class per pending job (0 small, 1 large), int8."""
        if self.model is None or self.divider is None:
            raise ModelError(
                "no runtime classifier attached to the history",
                where="RuntimeHistory.predict",
                fix="load one: RuntimeHistory.from_model(MODEL) or history.attach(model, divider)",
            )
        X = self.features(jobs)
        if len(X) == 0:
            return np.zeros(0, dtype=np.int8)
        return np.asarray(self.model.predict(X), dtype=np.int8)

    def forget_days_before(self, submit: float) -> int:
        """Drop (user, day) categories older than ``submit``'s local day; returns how many."""
        cutoff = int(self.clock.local_scalar(submit) // DAY)
        old = [k for k in self.recent if k[0] == "d" and k[2] < cutoff]
        for key in old:
            del self.recent[key], self.runtimes[key]
            self._cache.pop(key, None)
        return len(old)

    # Persistence (JSON, written atomically) so a restarted daemon keeps its history.
    def save(self, path: str | Path) -> None:
        data = {
            "format": FORMAT_VERSION,
            "clock": self.clock.to_dict(),
            "observed": self.observed,
            "categories": [[list(k), self.recent[k], self.runtimes[k]] for k in self.recent],
        }
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(data))
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: str | Path) -> RuntimeHistory:
        fix = "delete the file to start with an empty history (it refills from completions)"
        try:
            data = json.loads(Path(path).read_text())
            if data.get("format") != FORMAT_VERSION:
                raise ModelError(
                    f"runtime history format {data.get('format')!r}, expected {FORMAT_VERSION}",
                    where=str(path),
                    fix=fix,
                )
            history = cls(clock=Clock.from_dict(data["clock"]))
            history.observed = int(data["observed"])
            for key, recent, runtimes in data["categories"]:
                kind, user, value = key
                if kind not in _KINDS:
                    raise ValueError(f"unknown category kind {kind!r}")
                key = (kind, int(user), float(value) if kind == "p" else int(value))
                history.recent[key] = [float(r) for r in recent][-3:]
                history.runtimes[key] = sorted(float(r) for r in runtimes)
        except ModelError:
            raise
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ModelError(f"cannot read the runtime history: {exc}", where=str(path), fix=fix) from exc
        return history
