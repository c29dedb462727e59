"""The deployable runtime-class model: one scikit-learn ``Pipeline`` holding its feature state.

``Pipeline([("features", RuntimeFeatures(...)), ("classifier", RuntimeClassifier(...))])``
takes *raw job columns* (:class:`~rush.models.history.JobColumns`: user key, procs,
requested time, submit as absolute Unix seconds) and predicts 0 small / 1 large. The
``features`` step owns everything a feature depends on: the divider, the site's clock (the
zone calendar features are read in) and the per-user history of finished jobs. joblib saves
it with the classifier, so the features the model was trained on and the features the
daemon computes come from one object and cannot drift.

One time base, offline and live: absolute Unix epoch seconds. A trace's times are converted
with its header (:class:`~rush.models.runtime_features.TimeBase`); calendar features are read
in the site's zone, which is part of the model: ``rush train --timezone ZONE``, else the
trace header's zone (SWF ``TimeZoneString``, else ``TimeZone``), else UTC. The daemon always
uses the model's zone, never the host's, so a job's hour is the same number in training and
live whatever host runs the daemon.

One user mapping (:mod:`rush.models.users`): names (Slurm, sacct) to ``crc32`` keys; SWF
traces keep their numbers, and the card says so (``user_key_kind``); the daemon then keeps the
trained history for replayed jobs tagged ``user=trace-N`` (keyed N,
:func:`rush.models.users.replay_user_key`) and says at load that live names cannot match it
(:class:`LiveRuntimeModel`) instead of mismatching silently.

``fit_transform`` is not ``fit().transform()`` (as scikit-learn's ``TargetEncoder``): fitting
gives each training job the features it had *at its submission* (history finished strictly
before it, or before its week with ``mode="weekly"``), so no label leaks into its own
features; ``transform`` afterwards reads the whole fitted history, as the daemon does for a
job submitted after the training window.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin, clone
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_is_fitted

from rush.errors import ModelError
from rush.models.history import JobColumns, RuntimeHistory
from rush.models.model_card import RuntimeClassCard
from rush.models.runtime_features import (
    FEATURES,
    N_STATIC,
    Clock,
    FinishedIndex,
    TimeBase,
    category_codes,
    history_features,
    local_day,
    static_features,
    submit_stream,
)
from rush.models.users import NAME, USER_KEY_KINDS, unmatched_users_note

WEEK = 7 * 86400
# (user, day) history is kept this long live: a job pending longer sees its day as unknown.
KEEP_DAYS = 14
MODES = ("weekly", "live")
FIX = "retrain: rush train runtime-class TRACE --out {path}"


def clip_runtime(runtime: np.ndarray, requested_time: np.ndarray) -> np.ndarray:
    """Runtime clipped at the requested time (the simulator kills there); what labels use."""
    runtime = np.asarray(runtime, dtype=np.float64)
    requested_time = np.asarray(requested_time, dtype=np.float64)
    return np.where(requested_time > 0, np.minimum(runtime, requested_time), runtime)


def runtime_labels(jobs: JobColumns, divider: float) -> np.ndarray:
    """0 small (clipped runtime <= divider), 1 large."""
    return np.where(clip_runtime(jobs.runtime, jobs.requested_time) <= divider, 0, 1)


class RuntimeFeatures(TransformerMixin, BaseEstimator):
    """Raw job columns to the :data:`FEATURES` matrix; keeps the per-user history it reads.

    ``divider`` None: the median clipped runtime of the training jobs. ``mode`` says when a
    training job's history is read (at its submission, or at its week's start). ``timezone``
    / ``utc_offset``: the site's clock. ``user_key_kind``: what the ``user`` column holds.
    """

    def __init__(
        self,
        divider: float | None = None,
        mode: str = "live",
        timezone: str | None = None,
        utc_offset: float = 0.0,
        user_key_kind: str = NAME,
    ) -> None:
        self.divider = divider
        self.mode = mode
        self.timezone = timezone
        self.utc_offset = utc_offset
        self.user_key_kind = user_key_kind

    def _fit(self, X: Any) -> tuple[JobColumns, np.ndarray]:
        if self.mode not in MODES:
            raise ValueError(f"mode {self.mode!r} is not one of {MODES}")
        if self.user_key_kind not in USER_KEY_KINDS:
            raise ValueError(f"user_key_kind {self.user_key_kind!r} is not one of {USER_KEY_KINDS}")
        jobs = JobColumns.of(X).checked(finished=True)
        if len(jobs) == 0:
            raise ValueError("no jobs to fit the runtime features on")
        runtime = clip_runtime(jobs.runtime, jobs.requested_time)
        divider = float(np.median(runtime)) if self.divider is None else float(self.divider)
        if not np.isfinite(divider) or divider <= 0:
            raise ValueError(f"the divider {divider!r} is not a positive number of seconds")
        self.clock_ = Clock.of(self.timezone, float(self.utc_offset))
        self.divider_ = divider
        history = RuntimeHistory(self.clock_, self.user_key_kind)
        history.observe_submitted(jobs.user, jobs.submit)
        for j in np.lexsort((np.arange(len(jobs)), jobs.end)):  # completion order
            history.observe_finished(
                int(jobs.user[j]),
                int(jobs.procs[j]),
                jobs.requested_time[j],
                jobs.submit[j],
                runtime[j],
                jobs.end[j],
            )
        self.history_ = history
        self.n_features_out_ = len(FEATURES)
        return jobs, runtime

    def fit(self, X: Any, y: Any = None) -> RuntimeFeatures:
        self._fit(X)
        return self

    def fit_transform(self, X: Any, y: Any = None, **fit_params: Any) -> np.ndarray:
        """Fit, and return each training job's features as of its submission (module doc)."""
        jobs, runtime = self._fit(X)
        n = len(jobs)
        local = self.clock_.local(jobs.submit)
        codes = category_codes(jobs.user, jobs.procs, jobs.requested_time, local_day(local))
        index = FinishedIndex(codes, jobs.end, runtime, jobs.requested_time, jobs.submit)
        if self.mode == "live":
            tau = jobs.submit
        else:
            origin = float(jobs.submit.min())
            tau = origin + WEEK * np.floor((jobs.submit - origin) / WEEK)
        rows = np.arange(n)
        out = np.empty((n, len(FEATURES)))
        out[:, :N_STATIC] = static_features(
            jobs.requested_time, jobs.procs, local, submit_stream(jobs.user, jobs.submit)
        )
        out[:, N_STATIC:] = history_features(
            index.lookup(rows, tau), rows, self.divider_, index.small_prefix(self.divider_)
        )
        return out

    def transform(self, X: Any) -> np.ndarray:
        """Features of jobs submitted after the fitted (and observed) history."""
        check_is_fitted(self, "history_")
        return self.history_.features(JobColumns.of(X).checked(), self.divider_)

    def observe_finished(
        self,
        user: int,
        procs: int,
        requested_time: float,
        submit: float,
        runtime: float,
        end: float | None = None,
    ) -> bool:
        """A job finished (live): its runtime enters the per-user history at once."""
        check_is_fitted(self, "history_")
        return self.history_.observe_finished(user, procs, requested_time, submit, runtime, end)

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        return np.asarray(FEATURES, dtype=object)


def make_runtime_pipeline(
    features: RuntimeFeatures, estimator: Any = None, n_estimators: int = 50, random_state: int | None = 0
) -> Pipeline:
    from rush.models.runtime_class import RuntimeClassifier

    classifier = (
        clone(estimator)  # a configured classifier is a template: never fit the caller's object
        if isinstance(estimator, RuntimeClassifier)
        else RuntimeClassifier(estimator=estimator, n_estimators=n_estimators, random_state=random_state)
    )
    return Pipeline([("features", features), ("classifier", classifier)])


def job_table(
    submit: np.ndarray,
    user: np.ndarray,
    procs: np.ndarray,
    requested_time: np.ndarray,
    time_base: TimeBase,
    runtime: np.ndarray | None = None,
    end: np.ndarray | None = None,
) -> JobColumns:
    """A source's jobs on the one time base: times shifted by ``time_base.unix_start``."""
    shift = time_base.unix_start
    return JobColumns(
        np.asarray(user, dtype=np.int64),
        np.asarray(procs, dtype=np.int64),
        np.asarray(requested_time, dtype=np.float64),
        np.asarray(submit, dtype=np.float64) + shift,
        None if runtime is None else np.asarray(runtime, dtype=np.float64),
        None if end is None else np.asarray(end, dtype=np.float64) + shift,
    )


def load_runtime_model(path: str | Path) -> tuple[Pipeline, dict]:
    """A verified runtime-class pipeline and its validated card."""
    from rush.models.persistence import load_model
    from rush.models.runtime_class import RuntimeClassifier

    fix = FIX.format(path=path)
    model, card = load_model(path, expected_features=list(FEATURES), fix=fix, card=RuntimeClassCard)
    features, classifier = fitted_steps(
        model,
        (("features", RuntimeFeatures, "history_"), ("classifier", RuntimeClassifier, None)),
        "runtime-class",
        path,
        fix,
        hint="; models from rush before the pipeline must be retrained",
    )
    time_base = card["time_base"]
    try:  # the model's zone must exist in this host's time zone database
        Clock.of(time_base["timezone"], time_base["utc_offset"])
    except ModelError as exc:
        raise ModelError(exc.message, where=f"{path}.json: time_base.timezone", fix=exc.fix) from exc
    card_agrees(
        (
            ("divider", features.divider_, card["divider"]),
            ("user_key_kind", features.user_key_kind, card["user_key_kind"]),
            ("time_base.timezone", features.clock_.timezone, time_base["timezone"]),
            ("time_base.utc_offset", features.clock_.utc_offset, time_base["utc_offset"]),
            ("classes", classifier.classes_.tolist(), card["classes"]),
        ),
        path,
        fix,
    )
    return model, card


def fitted_steps(
    model: Any,
    steps: tuple[tuple[str, type, str | None], ...],
    kind: str,
    path: str | Path,
    fix: str,
    hint: str = "",
) -> list:
    """The steps of a loaded pipeline when it is the ``steps`` (name, class, an attribute its
    fit sets, None: scikit-learn's own check) and fitted, else ModelError naming the file."""
    names = [name for name, _, _ in steps]
    if not (
        isinstance(model, Pipeline)
        and [name for name, _ in model.steps] == names
        and all(isinstance(step, cls) for (_, step), (_, cls, _) in zip(model.steps, steps, strict=True))
    ):
        raise ModelError(
            f"the file holds a {type(model).__name__}, not a {kind} pipeline ({', '.join(names)}){hint}",
            where=str(path),
            fix=fix,
        )
    try:
        for (_, step), (_, _, attribute) in zip(model.steps, steps, strict=True):
            check_is_fitted(step, attribute)
    except Exception as exc:
        raise ModelError("the pipeline in the file was never fitted", where=str(path), fix=fix) from exc
    return [step for _, step in model.steps]


def card_agrees(pairs: tuple[tuple[str, Any, Any], ...], path: str | Path, fix: str) -> None:
    """ModelError naming the first card key whose (key, pipeline's value, card's value) differ."""
    disagree = [key for key, ours, theirs in pairs if ours != theirs]
    if disagree:
        raise ModelError(
            f"the model card and the pipeline disagree on {', '.join(disagree)}",
            where=f"{path}.json: {disagree[0]}",
            fix=fix,
        )


class LiveRuntimeModel:
    """The daemon's runtime-class model: the verified pipeline, its live history, notes.

    ``notes`` says what a log should tell the administrator: a model trained on SWF trace
    ids keeps its trained history, which only replayed ``trace-N`` jobs can match (live names
    cannot); a saved history of another model is not used.
    """

    def __init__(self, model_path: str | Path, history_path: str | Path | None = None) -> None:
        self.pipeline, self.card = load_runtime_model(model_path)
        self.features: RuntimeFeatures = self.pipeline.named_steps["features"]
        self.history_path = Path(history_path) if history_path else None
        self.divider = float(self.card["divider"])
        self.notes: list[str] = []
        saved = self._saved_history()
        if saved is not None:
            self.features.history_ = saved
        note = unmatched_users_note(str(self.card["user_key_kind"]))
        if note is not None:
            self.notes.append(note)

    def _saved_history(self) -> RuntimeHistory | None:
        """The live history a previous run saved, when it can continue with this model.

        A history of another model (or clock), of an earlier rush, or damaged, is not mixed
        in: it is set aside as ``PATH.unused`` (nothing lost), the model's own history is
        used, and a note says so. (A model trained on trace ids keeps its trained history,
        which replayed ``trace-N`` jobs meet: an earlier model's is not continued over it.)"""
        path = self.history_path
        if path is None or not path.exists():
            return None
        try:
            saved, sha = RuntimeHistory.load(path)
            kind = self.card["user_key_kind"]
            compatible = saved.clock == self.features.clock_ and saved.user_key_kind == kind
            why = None
        except ModelError as exc:  # an earlier rush's format, or a damaged file
            saved, sha, compatible, why = None, None, False, exc.message
        if compatible and sha == self.card["sha256"]:
            return saved
        aside = path.with_name(path.name + ".unused")
        try:
            os.replace(path, aside)
            where = f"moved to {aside}"
        except OSError as exc:
            where = f"left in place ({exc.strerror}), replaced at the next save"
        self.notes.append(
            f"the saved history {path} is not used ({why or 'it continues another model or clock'}); {where}"
        )
        return None

    @property
    def history(self) -> RuntimeHistory:
        return self.features.history_

    def features_of(self, jobs: JobColumns) -> np.ndarray:
        self.history.observe_submitted(jobs.user, jobs.submit)
        return self.features.transform(jobs)

    def predict(self, jobs: JobColumns, idempotent: np.ndarray | None = None) -> np.ndarray:
        """Classes of pending jobs; their submissions enter the user's submission stream first
        (as every submission is among the training jobs offline). ``idempotent``: per job,
        whether rush may kill and requeue it (the classifier's idempotent threshold then
        applies, :meth:`RuntimeClassifier.predict_for`)."""
        if len(jobs) == 0:
            return np.zeros(0, dtype=np.int8)
        self.history.observe_submitted(jobs.user, jobs.submit)
        classifier = self.pipeline.named_steps["classifier"]
        return np.asarray(classifier.predict_for(self.features.transform(jobs), idempotent), dtype=np.int8)

    def observe_finished(
        self,
        user: int,
        procs: int,
        requested_time: float,
        submit: float,
        runtime: float,
        end: float | None = None,
    ) -> bool:
        return self.features.observe_finished(user, procs, requested_time, submit, runtime, end)

    def save(self, now: float | None = None) -> None:
        """Drop (user, day) categories of days no pending job can still have been submitted
        on (:data:`KEEP_DAYS`), then write the history where the next start finds it."""
        self.history.forget_days_before((time.time() if now is None else now) - KEEP_DAYS * 86400)
        if self.history_path is not None:
            self.history.save(self.history_path, model_sha256=self.card["sha256"])
