"""Runtime predictions for the live shells: the configured predictor, its history, its answers.

``policy.runtime_prediction`` names a predictor of :data:`rush.models.runtime_predictors.PREDICTORS`
(the names ``rush simulate --runtime-prediction`` takes). The planner (the Slurm daemon and the
Flux module alike) gives it:

* **completions**: every job the RJMS reports finished (a run rush did not kill), with its
  runtime ``end - start``, in end order: the predictor's ``observe``; no future data. They are
  also kept in the journal's ``runtime_history`` table, at most :data:`PER_USER` per user (the
  newest), so a restarted daemon replays them into a fresh predictor: the history survives
  restarts without a file of its own. Gaussier et al.'s regression is refit on that history
  every ``retrain_every`` seconds (a week), as in the walk-forward.
* **predictions**: each job is predicted at the first pass that sees it (pending or running),
  as the simulator predicts at submission, and again, pending or running, after its user
  finishes another job (the history as of now: no later data; the simulator, which predicts
  only at submission, does not). The raw value is kept in memory for the job's life and put
  through the core's guard at every pass
  (:func:`rush.core.runtime_predictions.predicted_runtime`: NaN, infinite or <= 0 -> the
  request; capped by the current request), so no NaN or negative estimate is ever published.

Bad history (NaN, infinite or negative runtimes; runtimes over the limit; unreadable journal
rows) is dropped or clipped before the predictor sees it (the protocol's
:func:`~rush.models.runtime_predictors.protocol.usable_history`); a user with fewer than two
finished jobs gets the request from EASY++ (the documented fallback). Each job's source is
journaled with its model outputs: ``runtime_source`` is the predictor's name when its
prediction is below the request, ``request`` when the request stands (no shorter prediction,
or the fallback).

The quantile model is a file: it is loaded only through its verified model card
(:func:`rush.models.runtime_quantiles_pipeline.load_quantile_model`, which checks who may have
written it, :mod:`rush.models.trust`), never refit live (retrain it offline); its feature
history continues from the training trace with the live completions.

A replay submits every trace user's jobs as one account; a job submitted by the account rush
itself runs as may name the user it stands for in a ``user`` tag (Flux: ``system.rush.user``),
which keys its history instead. Another account's tag is ignored: users cannot borrow
someone else's history. On a quantile model trained on an SWF trace (card ``user_key_kind``
``trace-id``), a replay's ``trace-N`` tag is keyed N, as its trained history is
(:func:`rush.planner.snapshot_builder.model_user`, the rule the runtime-class model shares);
loading such a model notes that no other live user can match its history.
"""

from __future__ import annotations

import logging
import math
import operator
import sqlite3
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from itertools import repeat
from pathlib import Path
from typing import Any

import numpy as np

from rush.core.runtime_conformal import (
    CONFORMAL_JOBS,
    conformal_levels,
    pit_value,
    recalibrated_quantiles,
)
from rush.core.runtime_drift import (
    DRIFT_JOBS,
    drift_residual,
    drift_shift,
    drifted_quantiles,
    quantile_median,
)
from rush.core.runtime_predictions import predicted_runtimes
from rush.core.snapshot import RuntimeQuantiles
from rush.models.runtime_predictors import RuntimeJobs, RuntimePredictor, make_predictor, usable_history
from rush.models.users import NAME, unmatched_users_note
from rush.planner.snapshot_builder import UNLIMITED_SECONDS, model_user, own_accounts, user_id
from rush.rjms.base import RJMSJob

log = logging.getLogger("rush.daemon")

# Finished jobs kept per user (EASY++ reads two; the regressions' user features a few more).
PER_USER = 32
HISTORY_SCHEMA = """
CREATE TABLE IF NOT EXISTS runtime_history (
    job_id INTEGER NOT NULL, user INTEGER NOT NULL, submit REAL, procs INTEGER,
    requested_time REAL, runtime REAL, end REAL, PRIMARY KEY (job_id, end));
CREATE INDEX IF NOT EXISTS runtime_history_user ON runtime_history (user, end);
"""
SOURCE_REQUEST = "request"
# Revisions of the kept answers remembered for a reader that keeps answers by job (the snapshot
# builder asks once a cycle; a reader further behind gets every job's answers again).
REVISIONS_KEPT = 64


def history_user(job: RJMSJob, own: frozenset[str], kind: str = NAME) -> int:
    """The user key a job's runtime is learned and predicted under (module docstring), on a
    model whose card says ``kind``."""
    return model_user(job, kind, own, True)


@dataclass
class Finished:
    """One finished run, as the history keeps it."""

    job_id: int
    user: int
    submit: float
    procs: int
    requested_time: float
    runtime: float
    end: float


def _columns(rows: Sequence[Finished]) -> RuntimeJobs:
    return RuntimeJobs.of(
        user=np.array([r.user for r in rows], dtype=np.int64),
        submit=np.array([r.submit for r in rows], dtype=np.float64),
        procs=np.array([r.procs for r in rows], dtype=np.int64),
        requested_time=np.array([r.requested_time for r in rows], dtype=np.float64),
        runtime=np.array([r.runtime for r in rows], dtype=np.float64),
        end=np.array([r.end for r in rows], dtype=np.float64),
        job_id=np.array([r.job_id for r in rows], dtype=np.int64),
    )


class RuntimeHistoryStore:
    """The bounded per-user history of finished runs, in the journal's database."""

    def __init__(self, db: sqlite3.Connection, per_user: int = PER_USER) -> None:
        self.db = db
        self.per_user = int(per_user)
        self.db.executescript(HISTORY_SCHEMA)

    def add(self, rows: Sequence[Finished]) -> None:
        for r in rows:
            self.db.execute(
                "INSERT OR REPLACE INTO runtime_history (job_id, user, submit, procs, requested_time,"
                " runtime, end) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (r.job_id, r.user, r.submit, r.procs, r.requested_time, r.runtime, r.end),
            )
        for user in {r.user for r in rows}:
            self.db.execute(
                "DELETE FROM runtime_history WHERE user = ? AND rowid NOT IN (SELECT rowid FROM "
                "runtime_history WHERE user = ? ORDER BY end DESC LIMIT ?)",
                (user, user, self.per_user),
            )

    def load(self) -> tuple[list[Finished], int]:
        """Every kept run in end order, and how many rows were unreadable (left out)."""
        rows, bad = [], 0
        for values in self.db.execute(
            "SELECT job_id, user, submit, procs, requested_time, runtime, end FROM runtime_history"
        ):
            try:
                row = Finished(
                    int(values[0]),
                    int(values[1]),
                    float(values[2]),
                    int(values[3]),
                    float(values[4]),
                    float(values[5]),
                    float(values[6]),
                )
            except (TypeError, ValueError):
                bad += 1
                continue
            if not math.isfinite(row.end):
                bad += 1
                continue
            rows.append(row)
        rows.sort(key=lambda r: (r.end, r.job_id))
        return rows, bad


class LiveRuntimePredictor:
    """A runtime predictor fed by the RJMS's completions, predicting each job once."""

    def __init__(
        self,
        name: str,
        predictor: RuntimePredictor,
        store: RuntimeHistoryStore | None,
        version: str = "",
        own: frozenset[str] | None = None,
        drift: bool = False,
        user_key_kind: str = NAME,
    ) -> None:
        self.name = name
        self.user_key_kind = user_key_kind  # the model card's: how its trained history keys users
        self.predictor = predictor
        self.store = store
        self.version = version or name
        self.own = own if own is not None else own_accounts()
        self.retrain_every = getattr(predictor, "retrain_every", None)
        self.last_fit: float | None = None
        # job id -> its raw prediction (guarded at every use) and the user key it was made for
        self.raw: dict[int, float] = {}
        # job id -> its predicted runtime quantiles (quantile models only), kept from its start on
        self.quantiles: dict[int, RuntimeQuantiles] = {}
        self.user_of: dict[int, int] = {}
        # Rule D (rush.core.runtime_drift; refuted in round 14, so off unless asked for): each
        # user's last residuals (completed jobs that had quantiles, end order) and each job's
        # shift as of its latest prediction (a running job's as of its start), kept and applied
        # to the quantiles it publishes only when ``drift`` (from the first job it sees on).
        self.drift = drift
        # Rule D2 (round 15, post hoc; off by default, needs ``drift``): a pending job's shift
        # scales its projection length (RuntimeQuantiles.projection_shift) instead of its quantiles.
        self.drift_length = False
        self.residuals: dict[int, list[float]] = {}
        self.shift: dict[int, float] = {}
        # Rule C (rush.core.runtime_conformal; round 16, off unless asked for): the PITs of the
        # last completed jobs that had quantiles (all users, end order) and each job's level map
        # as of its latest prediction (a running job's as of its start), applied to the quantiles
        # it publishes only when ``conformal`` (with ``drift`` too, D's shift on top).
        self.conformal = False
        self.pits: list[float] = []
        self.level_map: dict[int, tuple[float, ...]] = {}
        # Users with a completion since their jobs were last predicted.
        self.changed: set[int] = set()
        # The kept answers' revisions: (revision, the job ids whose raw value, quantiles, shift or
        # level map it may have changed), the last REVISIONS_KEPT, for revised_since.
        self.revision = 0
        self._revisions: deque[tuple[int, frozenset[int]]] = deque(maxlen=REVISIONS_KEPT)
        self.notes: list[str] = []
        self.dropped = self.clipped = 0
        if store is not None:
            rows, bad = store.load()
            if bad:
                self.notes.append(f"{bad} unreadable runtime_history row(s) in the journal left out")
            if rows:
                self._learn(rows, rows[-1].end)
                self.notes.append(f"runtime history: {len(rows)} finished job(s) replayed from the journal")

    # -- learning -------------------------------------------------------------------------
    def _learn(self, rows: Sequence[Finished], now: float) -> None:
        kept, dropped, clipped = usable_history(_columns(rows))
        self.dropped += dropped
        self.clipped += clipped
        if len(kept):
            self.predictor.observe(kept)
        self._maybe_fit(now)

    def _maybe_fit(self, now: float) -> None:
        if self.retrain_every is None or self.store is None:
            return
        if self.last_fit is not None and now - self.last_fit < self.retrain_every:
            return
        rows, _ = self.store.load()
        kept = usable_history(_columns(rows))[0]
        if len(kept):
            self.predictor.fit(kept)
            self.last_fit = now

    def observe_finished(self, finished: Sequence[tuple[RJMSJob, float]]) -> None:
        """Runs that ended (job, end time): into the history and the predictor, in end order."""
        rows = [
            Finished(
                j.job_id,
                history_user(j, self.own, self.user_key_kind),
                float(j.submit),
                int(j.procs),
                min(float(j.requested_time), UNLIMITED_SECONDS),
                float(end) - float(j.start),
                float(end),
            )
            for j, end in finished
            if j.start is not None
        ]
        rows.sort(key=lambda r: (r.end, r.job_id))
        if not rows:
            return
        self._revise(r.job_id for r in rows)  # their answers dropped below
        if self.store is not None:
            good = [r for r in rows if math.isfinite(r.runtime) and math.isfinite(r.end)]
            self.store.add(good)
        self._learn(rows, rows[-1].end)
        self.changed.update(r.user for r in rows)
        for r in rows:
            self.raw.pop(r.job_id, None)
            self.shift.pop(r.job_id, None)
            self.level_map.pop(r.job_id, None)
            q = self.quantiles.pop(r.job_id, None)
            if q is not None and self.conformal:  # rule C's record: where the runtime fell
                pit = pit_value(q.levels, q.seconds, r.runtime, r.requested_time)
                if math.isfinite(pit):
                    self.pits.append(pit)
                    del self.pits[:-CONFORMAL_JOBS]
            if q is not None and self.drift:  # rule D's record: how wrong the model was for this user
                residual = drift_residual(r.runtime, quantile_median(q.levels, q.seconds), r.requested_time)
                if math.isfinite(residual):
                    kept = self.residuals.setdefault(r.user, [])
                    kept.append(residual)
                    del kept[:-DRIFT_JOBS]

    def seed_residuals(self, record: dict[int, Sequence[float]]) -> None:
        """Rule D2's seed: each user's residuals from before the first completion seen here (the
        model's training data, rush.core.runtime_drift.seeded_records), kept ahead of those the
        completions add; non-finite ones dropped, the last DRIFT_JOBS kept."""
        for user, residuals in record.items():
            kept = [float(r) for r in residuals if math.isfinite(r)] + self.residuals.get(user, [])
            if kept:
                self.residuals[int(user)] = kept[-DRIFT_JOBS:]

    # -- predicting -----------------------------------------------------------------------
    def predict_new(self, jobs: Sequence[RJMSJob]) -> int:
        """Predict the jobs not predicted yet, and again those whose user has finished a job
        since (the history as of now, no later data); returns how many were."""
        changed, self.changed = self.changed, set()
        new = [
            j for j in jobs if j.job_id not in self.raw or (changed and self.user_of.get(j.job_id) in changed)
        ]
        if not new:
            return 0
        ids = list(map(operator.attrgetter("job_id"), new))
        columns = RuntimeJobs.of(
            user=np.array([history_user(j, self.own, self.user_key_kind) for j in new], dtype=np.int64),
            submit=np.array([j.submit for j in new], dtype=np.float64),
            procs=np.array([j.procs for j in new], dtype=np.int64),
            requested_time=np.array(
                [min(j.requested_time, UNLIMITED_SECONDS) for j in new], dtype=np.float64
            ),
            job_id=np.array(ids, dtype=np.int64),
        )
        quantiles = None
        if hasattr(self.predictor, "predict_with_quantiles"):  # rush's quantile model
            values, levels, quantiles = self.predictor.predict_with_quantiles(columns)
        else:
            values = self.predictor.predict(columns)
        values = np.asarray(values, dtype=np.float64).reshape(-1)
        if len(values) != len(new):
            raise ValueError(f"the {self.name} predictor gave {len(values)} predictions for {len(new)} jobs")
        if quantiles is not None:  # checked before anything is kept: the jobs are predicted again
            quantiles = np.asarray(quantiles, dtype=np.float64)
            if quantiles.ndim != 2 or len(quantiles) != len(new):
                raise ValueError(
                    f"the {self.name} predictor gave quantiles of shape {quantiles.shape} for {len(new)} jobs"
                )
        self._revise(ids)  # before any answer changes: a step failing below leaves them revised
        self.raw.update(zip(ids, values.tolist(), strict=True))
        self.user_of.update(zip(ids, columns.user.tolist(), strict=True))
        if quantiles is not None:
            self._keep_quantiles(new, tuple(np.asarray(levels, dtype=np.float64).tolist()), quantiles)
        return len(new)

    def warm_up(self, now: float) -> None:
        """Predict one made-up job on a copy of the predictor, so the first pass that sees real
        jobs does not pay for loading and compiling the feature code (a live replay's first
        daemon cycle took 218 s for it on a loaded host, and held the replay's submits back).
        The copy keeps the made-up submission out of the real feature history."""
        import copy

        columns = RuntimeJobs.of(
            user=np.array([user_id("rush-warm-up")], dtype=np.int64),
            submit=np.array([now], dtype=np.float64),
            procs=np.array([1], dtype=np.int64),
            requested_time=np.array([3600.0], dtype=np.float64),
            job_id=np.array([-1], dtype=np.int64),
        )
        copy.deepcopy(self.predictor).predict(columns)

    def _keep_quantiles(self, jobs: Sequence[RJMSJob], levels: tuple[float, ...], quantiles) -> None:
        """Each job's predicted quantiles, as of its start: a pending job's follow its latest
        prediction, a running job keeps those it started with (the offline study predicts once,
        at submission; here the last prediction before the start). Raw values: the core checks
        them (rush.core.remaining_runtime.quantiles_refused) and says why it refuses any."""
        rows = np.asarray(quantiles, dtype=np.float64)  # (jobs, levels), checked by predict_new
        for j, row in zip(jobs, rows, strict=True):
            if j.state != "PENDING" and j.job_id in self.quantiles:
                continue
            self.quantiles[j.job_id] = RuntimeQuantiles(levels, tuple(row.tolist()))
            if self.drift:
                self.shift[j.job_id] = drift_shift(self.residuals.get(self.user_of.get(j.job_id, -1), ()))
            if self.conformal:
                self.level_map[j.job_id] = tuple(conformal_levels(self.pits, levels).tolist())

    def model_quantiles(self, jobs: Sequence[RJMSJob]) -> dict[int, RuntimeQuantiles]:
        """The model's own predicted quantiles of the jobs that have them, by job id."""
        kept = self.quantiles
        return {k: kept[k] for k in map(operator.attrgetter("job_id"), jobs) if k in kept}

    def runtime_quantiles(self, jobs: Sequence[RJMSJob]) -> dict[int, RuntimeQuantiles]:
        """The predicted quantiles the start estimates read, by job id: the model's own, shifted
        by their user's drift (rule D) when ``drift`` is on, at their recalibrated levels (rule C)
        when ``conformal`` is on."""
        if not self.drift and not self.conformal:
            return self.model_quantiles(jobs)
        out = {}
        for j in jobs:
            if j.job_id not in self.quantiles:
                continue
            q, s = self.quantiles[j.job_id], self.shift.get(j.job_id, 0.0)
            if self.conformal and j.job_id in self.level_map:
                q = recalibrated_quantiles(
                    q, self.level_map[j.job_id], min(j.requested_time, UNLIMITED_SECONDS)
                )
            if not self.drift:
                out[j.job_id] = q
                continue
            if self.drift_length and j.state == "PENDING":  # rule D2: the length, not the quantiles
                out[j.job_id] = replace(q, projection_shift=s if math.isfinite(s) else 0.0)
            else:
                out[j.job_id] = drifted_quantiles(q, s)
        return out

    def estimates(self, jobs: Sequence[RJMSJob]) -> dict[int, tuple[float, str]]:
        """Each job's guarded prediction (seconds) and its source (the predictor, or the
        request), by job id; a job never predicted gets its request."""
        n = len(jobs)
        ids = list(map(operator.attrgetter("job_id"), jobs))
        raw = np.fromiter(map(self.raw.get, ids, repeat(math.nan)), dtype=np.float64, count=n)
        limit = np.fromiter(map(operator.attrgetter("requested_time"), jobs), dtype=np.float64, count=n)
        values = predicted_runtimes(raw, limit)
        sources = (SOURCE_REQUEST, self.name)  # by whether the prediction is below the request
        shorter = (values < limit).tolist()
        return dict(
            zip(ids, zip(values.tolist(), map(sources.__getitem__, shorter), strict=True), strict=True)
        )

    def forget_except(self, live: set[int]) -> None:
        """Drop the predictions of jobs no longer in the queue (each kept dict's gone keys
        deleted, one C-level set difference: a cycle follows the jobs that left)."""
        if len(self.raw) > len(live):
            _forget(self.raw, live)
            _forget(self.user_of, live)
        if len(self.quantiles) > len(live):
            _forget(self.quantiles, live)
        if len(self.shift) > len(live):
            _forget(self.shift, live)
        if len(self.level_map) > len(live):
            _forget(self.level_map, live)

    # -- revisions, for a reader that keeps answers by job ------------------------------------
    def _revise(self, job_ids: Iterable[int]) -> None:
        self.revision += 1
        self._revisions.append((self.revision, frozenset(job_ids)))

    def answers_token(self) -> tuple:
        """Where the kept answers stand now: the revision, and the rules the answers are read
        with (name, drift, drift_length, conformal)."""
        return (self.revision, self.name, self.drift, self.drift_length, self.conformal)

    def revised_since(self, token: tuple) -> frozenset[int] | None:
        """The job ids whose answers (``estimates``, ``runtime_quantiles``) may differ from those
        given when ``token`` (:meth:`answers_token`) was taken, for jobs read the same (the same
        request, still pending or still running); None when that cannot be told (another rule
        since, or a revision no longer remembered): every job's answers may differ."""
        revision = token[0]
        if token[1:] != self.answers_token()[1:] or revision > self.revision:
            return None
        if revision == self.revision:
            return frozenset()
        if not self._revisions or self._revisions[0][0] > revision + 1:
            return None
        return frozenset().union(*(ids for at, ids in self._revisions if at > revision))


def _forget(kept: dict[int, Any], live: set[int]) -> None:
    """``kept``'s entries of jobs not in ``live`` deleted (the others, and their order, kept)."""
    for job_id in kept.keys() - live:
        del kept[job_id]


def load_runtime_predictor(
    name: str, quantile_model: Path | None, db: sqlite3.Connection | None
) -> LiveRuntimePredictor | None:
    """The configured predictor (None for "none"); a ModelError for an unusable model file."""
    if name == "none":
        return None
    store = RuntimeHistoryStore(db) if db is not None else None
    if name == "runtime-quantiles":
        predictor, version, kind = _quantile_predictor(quantile_model)
        live = LiveRuntimePredictor(name, predictor, store, version, user_key_kind=kind)
        note = unmatched_users_note(kind)
        if note is not None:  # as the runtime-class model's: logged here, journaled by the planner
            log.warning("runtime-quantile model %s: %s", quantile_model, note)
            live.notes.append(note)
        return live
    return LiveRuntimePredictor(name, make_predictor(name), store)


def _quantile_predictor(path: Path | None) -> tuple[Any, str, str]:
    """rush's quantile model from its verified file, behind the predictor protocol, not refit
    live; its version and its card's ``user_key_kind``."""
    from rush.errors import ModelError
    from rush.models.runtime_quantiles_pipeline import load_quantile_model
    from rush.models.runtime_quantiles_predictor import RuntimeQuantilePredictor

    if path is None or not Path(path).exists():
        raise ModelError(
            "runtime-quantile model file not found",
            where=str(path),
            fix="train one (rush train runtime-quantiles TRACE --out FILE) or change policy.runtime_prediction",
        )
    # Live jobs carry no app or queue field: a model trained with them is refused.
    model, card = load_quantile_model(path, fields=[])
    features, regressor = model.named_steps["features"], model.named_steps["regressor"]
    predictor = RuntimeQuantilePredictor(
        regressor=regressor, timezone=features.clock_.timezone, feature_set=features.feature_set
    )
    predictor.clock = features.clock_
    predictor.history_ = features.history_
    predictor.model_ = regressor
    predictor.retrain_every = None  # retrained offline, with its card
    return predictor, f"{card['created']} sha256:{card['sha256'][:12]}", str(card["user_key_kind"])
