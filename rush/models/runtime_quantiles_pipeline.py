"""The deployable runtime-quantile model: a Pipeline with its feature state, and its card.

``Pipeline([("features", QuantileFeatures(...)), ("regressor", RuntimeQuantileRegressor(...))])``
takes raw job columns (:class:`~rush.models.runtime_quantiles_features.QuantileJobs`) and
predicts runtime quantiles. ``features`` holds the site's clock and the history of finished
jobs (:class:`QuantileHistory`), so training and live features come from one object.
``fit_transform`` gives each training job its features as of its own submission (nothing
of its own runtime leaks in); ``transform`` afterwards answers jobs submitted after the
history, as a live shell does.

The model card (:class:`RuntimeQuantilesCard`) says what the file holds: features,
quantile levels, the divider of the training history, the time base, the kind of user keys,
the trace's optional fields (``app``, ``queue``) the features read. :func:`load_quantile_model`
checks the card (trusted, valid, sha256), then that the pipeline inside agrees with it, and
that a trace (or shell) about to use it has the fields it was trained with.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field, field_validator
from sklearn.base import BaseEstimator, TransformerMixin, clone
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_is_fitted

from rush.errors import ModelError
from rush.models.model_card import ModelCard, Name, TimeBaseCard, _finite
from rush.models.runtime_features import Clock, TimeBase
from rush.models.runtime_mean_bands import MeanBands
from rush.models.runtime_pipeline import card_agrees, fitted_steps
from rush.models.runtime_quantiles import RuntimeQuantileRegressor
from rush.models.runtime_quantiles_features import (
    DEFAULT_FEATURE_SET,
    FEATURE_SETS,
    REQUEST_COLUMN,
    QuantileHistory,
    QuantileJobs,
    clipped,
    feature_names,
    offline_features,
    usable_history,
)
from rush.models.training_cut import TrainingCut
from rush.models.users import NAME, USER_KEY_KINDS, trace_user_keys
from rush.workload.model import Workload

FIX = "retrain: rush train runtime-quantiles TRACE --out {path}"
OPTIONAL_FIELDS = ("app", "queue")


class RuntimeQuantilesCard(ModelCard):
    model: Literal["runtime-quantiles"]
    quantiles: list[float] = Field(min_length=1, max_length=99)
    divider: float = Field(gt=0)
    time_base: TimeBaseCard
    user_key_kind: Literal["name", "trace-id"]
    fields: list[Literal["app", "queue"]] = Field(max_length=2)
    estimator: Name
    # Which columns the features step computes (FEATURE_SETS); a card written before feature
    # sets existed is the base set's.
    feature_set: Literal["base", "t23"] = "base"
    # Where the classes' P(small) comes from (CLASS_HEADS); a card written before heads existed
    # reads it off the quantiles.
    class_head: Literal["quantiles", "head", "blend"] = "quantiles"
    # The queued mean's factors per band of itself (rush.models.runtime_mean_bands); a card
    # written before bands existed has none: factor 1 (the plain mean).
    mean_bands: dict | None = None

    _finite_divider = field_validator("divider")(_finite)


class QuantileFeatures(TransformerMixin, BaseEstimator):
    """Raw job columns to the :data:`FEATURES` matrix; keeps the finished history it reads."""

    def __init__(
        self,
        timezone: str | None = None,
        utc_offset: float = 0.0,
        user_key_kind: str = NAME,
        feature_set: str = DEFAULT_FEATURE_SET,
    ) -> None:
        self.timezone = timezone
        self.utc_offset = utc_offset
        self.user_key_kind = user_key_kind
        self.feature_set = feature_set

    def __setstate__(self, state: dict) -> None:
        state.setdefault("feature_set", "base")  # pickled before feature sets existed
        super().__setstate__(state)

    def _fit(self, X: Any) -> tuple[QuantileJobs, np.ndarray]:
        if self.user_key_kind not in USER_KEY_KINDS:
            raise ValueError(f"user_key_kind {self.user_key_kind!r} is not one of {USER_KEY_KINDS}")
        names = feature_names(self.feature_set)
        jobs = QuantileJobs.of(X).checked(finished=True)
        if len(jobs) == 0:
            raise ValueError("no jobs to fit the runtime features on")
        self.clock_ = Clock.of(self.timezone, float(self.utc_offset))
        history = QuantileHistory(self.clock_, self.feature_set)
        history.observe_submitted(jobs.user, jobs.submit)
        order = np.lexsort((np.arange(len(jobs)), jobs.end))  # completion order
        history.observe_finished(jobs.subset(order))
        self.history_ = history
        self.n_features_out_ = len(names)
        return jobs, offline_features(jobs, self.clock_, feature_set=self.feature_set)

    def fit(self, X: Any, y: Any = None) -> QuantileFeatures:
        self._fit(X)
        return self

    def fit_transform(self, X: Any, y: Any = None, **fit_params: Any) -> np.ndarray:
        return self._fit(X)[1]

    def transform(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "history_")
        return self.history_.features(QuantileJobs.of(X))

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        return np.asarray(feature_names(self.feature_set), dtype=object)


def make_quantile_pipeline(features: QuantileFeatures, regressor: RuntimeQuantileRegressor | None = None):
    return Pipeline(
        [("features", features), ("regressor", clone(regressor) if regressor else RuntimeQuantileRegressor())]
    )


def present_fields(workload: Workload) -> list[str]:
    """The optional fields a trace really has (some value other than -1)."""
    return [f for f in OPTIONAL_FIELDS if f in workload.extra and np.any(np.asarray(workload.extra[f]) >= 0)]


def fit_quantiles_on_history(
    workload: Workload,
    trace_header: dict[str, str] | None,
    regressor: RuntimeQuantileRegressor | None = None,
    *,
    user_names: dict[int, str] | None = None,
    timezone: str | None = None,
    max_train_jobs: int | None = None,
    feature_set: str = DEFAULT_FEATURE_SET,
    cut: TrainingCut | None = None,
) -> tuple[Pipeline, dict]:
    """The deployable pipeline fitted on a whole trace (``cut``: only the jobs finished before
    a moment, on a replay's time scale; rush.models.training_cut), and its card's metadata."""
    from rush.models.runtime_quantiles_walkforward import trace_jobs

    cut = cut or TrainingCut()
    workload = cut.apply(workload)
    if len(workload) == 0:
        raise ModelError("the trace has no jobs to train on", where=workload.name or "trace")
    time_base = TimeBase.from_header(trace_header, timezone)
    users, kind = trace_user_keys(workload.user, user_names)
    jobs = trace_jobs(workload, time_base)
    jobs.user = users
    fields = present_fields(workload)
    for name in OPTIONAL_FIELDS:  # a field the trace does not have is unknown everywhere
        if name not in fields:
            setattr(jobs, name, None)
    usable = usable_history(jobs.runtime, jobs.requested_time, jobs.end)
    if not usable.any():
        raise ModelError(
            "no job of the trace has a usable runtime (finite, >= 0)",
            where=workload.name or "trace",
            fix="check the trace's runtime column (rush trace info TRACE)",
        )
    runtime = clipped(jobs.runtime, jobs.requested_time)
    divider = float(np.median(runtime[usable]))
    if not divider > 0:
        divider = 1.0  # every usable runtime 0: any positive boundary calls them all small
    if feature_set not in FEATURE_SETS:
        raise ModelError(
            f"unknown feature set {feature_set!r}",
            where="feature_set",
            fix=f"use one of {sorted(FEATURE_SETS)}",
        )
    features = QuantileFeatures(time_base.clock.timezone, time_base.clock.utc_offset, kind, feature_set)
    model = make_quantile_pipeline(features, regressor)
    model.set_params(regressor__divider=divider)
    try:
        X = model.named_steps["features"].fit_transform(jobs)
        train = np.flatnonzero(usable)
        if max_train_jobs is not None:
            train = train[np.argsort(jobs.end[train], kind="stable")][-max_train_jobs:]
        model.named_steps["regressor"].fit(X[train], runtime[train])
        model.named_steps["regressor"].calibrate_mean(
            cross_fitted_means(model, X, train, jobs.end, runtime), runtime[train]
        )
    except ValueError as exc:
        raise ModelError(
            f"cannot train on this trace: {exc}",
            where=workload.name or "trace",
            fix="check the trace's times and sizes (rush trace info TRACE)",
        ) from exc
    regressor_ = model.named_steps["regressor"]
    metadata = {
        "model": "runtime-quantiles",
        "features": list(feature_names(feature_set)),
        "feature_set": feature_set,
        "classes": [0, 1],
        "quantiles": [float(q) for q in regressor_.levels_],
        "divider": divider,
        "class_head": regressor_.class_head,
        "mean_bands": regressor_.mean_bands_.to_card(),
        "time_base": time_base.to_dict(),
        "user_key_kind": kind,
        "fields": fields,
        # the boosting size on the card: which model a site runs is read off the card, not the code
        "estimator": (
            f"HistGradientBoostingRegressor(loss=quantile, max_iter={regressor_.max_iter}, "
            f"learning_rate={regressor_.learning_rate:g}, max_leaf_nodes={regressor_.max_leaf_nodes})"
            if regressor_.models_
            else "constant"
        ),
        "training_window": {
            "trace": workload.name or "trace",
            "jobs": int(len(workload)),
            "first_submit": float(jobs.submit[0]),
            "last_submit": float(jobs.submit[-1]),
            "usable_runtimes": int(usable.sum()),
            **cut.card(),
        },
    }
    return model, metadata


def cross_fitted_means(
    model: Pipeline, X: np.ndarray, train: np.ndarray, end: np.ndarray, runtime: np.ndarray
) -> np.ndarray:
    """Out-of-sample predicted means of the training rows ``train`` (halves by ``end``), for the
    mean's bands: a model of the same hyperparameters fitted on the earlier half predicts the
    later half and one fitted on the later half the earlier (a retrain has no walk-forward's
    earlier models at hand; two half-size fits cost about one full fit)."""
    from rush.models.runtime_quantiles import mean_of_quantiles

    regressor = model.named_steps["regressor"]
    order = np.argsort(end[train], kind="stable")
    halves = np.array_split(order, 2)  # positions in ``train``
    mean = np.full(len(train), np.nan)
    for i, half in enumerate(halves):
        other = train[halves[1 - i]]
        if len(other) and len(half):
            fold = clone(regressor).set_params(class_head="quantiles").fit(X[other], runtime[other])
            rows = X[train[half]]
            log_q = fold.predict_log_quantiles(rows)
            mean[half] = mean_of_quantiles(log_q, fold.levels_, rows[:, REQUEST_COLUMN])
    return mean


def save_quantile_model(model: Pipeline, metadata: dict, path: str | Path) -> dict:
    from rush.models.persistence import save_model

    return save_model(model, path, metadata, card=RuntimeQuantilesCard, fix=FIX.format(path=path))


def load_quantile_model(path: str | Path, fields: list[str] | None = None) -> tuple[Pipeline, dict]:
    """A verified runtime-quantile pipeline and its card. ``fields``: the optional fields the
    caller's jobs carry; a model trained with a field they lack is refused (its features
    would all be unknown, a silent drift), ModelError naming the card key."""
    from rush.models.persistence import load_model, read_card

    fix = FIX.format(path=path)
    # The card names its feature set; its features must be that set's in this rush (checked
    # before anything is unpickled), and the pipeline's features step must compute that set.
    feature_set = read_card(Path(path), RuntimeQuantilesCard, fix).get("feature_set", "base")
    model, card = load_model(
        path, expected_features=list(feature_names(feature_set)), fix=fix, card=RuntimeQuantilesCard
    )
    features, regressor = fitted_steps(
        model,
        (("features", QuantileFeatures, "history_"), ("regressor", RuntimeQuantileRegressor, "levels_")),
        "runtime-quantile",
        path,
        fix,
    )
    time_base = card["time_base"]
    card_agrees(
        (
            ("quantiles", [float(q) for q in regressor.levels_], card["quantiles"]),
            ("divider", regressor.divider, card["divider"]),
            ("user_key_kind", features.user_key_kind, card["user_key_kind"]),
            ("feature_set", features.feature_set, feature_set),
            ("feature_set", features.history_.feature_set, feature_set),
            ("class_head", regressor.class_head, card.get("class_head", "quantiles")),
            (
                "mean_bands",
                getattr(regressor, "mean_bands_", None),
                MeanBands.from_card(card.get("mean_bands"), f"{path}.json: mean_bands"),
            ),
            (
                "class_head (fitted)",
                getattr(regressor, "head_", None) is not None,
                regressor.class_head != "quantiles",
            ),
            ("features", regressor.n_features_in_, len(card["features"])),
            ("time_base.timezone", features.clock_.timezone, time_base["timezone"]),
            ("time_base.utc_offset", features.clock_.utc_offset, time_base["utc_offset"]),
        ),
        path,
        fix,
    )
    if fields is not None:
        missing = [f for f in card["fields"] if f not in fields]
        if missing:
            raise ModelError(
                f"the model was trained with the job fields {missing}, which these jobs do not have",
                where=f"{path}.json: fields",
                fix=fix.replace("TRACE", "a trace with the same fields"),
            )
    return model, card
