"""Training the variability model: model selection, feature elimination, the exported 3-class model.

The published method (Nichols et al., IPDPS 2022), step by step:

1. **Model selection** on the binary label (runtime > mu + 1.5 sigma of its application):
   ExtraTrees, a random forest, k-nearest neighbours (in a Pipeline with imputation and
   scaling) and AdaBoost, compared by the mean F1 over leave-one-application-out folds
   (train on every other application, test on the held-out one). Each fold's F1 is reported
   with its application. Because each application's label is relative to its *own* mu and
   sigma, every application has about the same share of positives: the folds, fixed by the
   applications, are stratified by construction (each fold's positive rate is in the table).
   A held-out application with no positive run and none predicted scores F1 = 1 (nothing
   to find, nothing falsely flagged); the pooled F1 over all held-out predictions is
   reported beside the mean.
2. **Node scope**: the chosen model with the job's-node features only, with all-node
   features only, and with both (probe and workload type in each).
3. **Recursive feature elimination** (the scope kept for the model, see ``final_scope``): in
   each fold the model ranks the features by dropping the least important
   ``rfe_step`` fraction at a time (tree importances; KNN has none, so ExtraTrees ranks for
   it), and the held-out F1 is measured at every size on that path; the size with the best
   mean F1 wins (the smallest on ties) and the features are the top ones of a ranking on all
   data.
4. **Final model**: the chosen kind on the chosen features, fitted on the 3 classes
   (none / little / variation), in a scikit-learn Pipeline whose first step imputes missing
   values (median of the training data; a feature never seen becomes 0), so what the live
   predictor feeds it is treated exactly as in training.

``final_scope`` defaults to ``all``: a pending job has no nodes of its own yet. Since the
core decides placement (issue 20), the daemon and the contention simulator can read a job's
node window at its tentative placement (the core's nodes for it in this pass,
:mod:`rush.planner.variation_placement`), so ``job`` is usable live too; the scope comparison
says whether it is worth it (in the contention simulator it is not: a node's counters show
only its own traffic, and a job's nodes are idle before it starts; sim/variability/README.md).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rush.errors import ConfigError, ModelError
from rush.models.variability.dataset import CLASS_NAMES, Dataset, DatasetError
from rush.models.variability.features import feature_scope

MODEL_KINDS: tuple[str, ...] = ("extra_trees", "random_forest", "knn", "adaboost")
FINAL_SCOPES: tuple[str, ...] = ("all", "job", "both", "best")
MAX_ESTIMATORS = 2_000
MAX_SEED = 2**32 - 1
DEFAULT_FIX = "retrain: rush train variability DATASET --out models/variability.joblib"


@dataclass(frozen=True)
class TrainOptions:
    seed: int = 0
    models: tuple[str, ...] = MODEL_KINDS
    n_estimators: int = 100
    rfe_step: float = 0.1  # fraction of the features dropped per elimination step
    final_scope: str = "all"
    variation_classes: tuple[str, ...] = ("variation",)  # what the live predictor flags by default
    # Feature groups left out (``probe``: when no probe runs live, a model must not rely on it).
    exclude: tuple[str, ...] = ()

    def checked(self) -> TrainOptions:
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or not 0 <= self.seed <= MAX_SEED:
            raise ConfigError(f"seed {self.seed!r} out of range", where="--seed", fix=f"0..{MAX_SEED}")
        models = tuple(dict.fromkeys(self.models))
        unknown = [m for m in models if m not in MODEL_KINDS]
        if not models or unknown:
            raise ConfigError(
                f"unknown model kind(s) {unknown or models!r}",
                where="--models",
                fix=f"some of: {', '.join(MODEL_KINDS)}",
            )
        if not 1 <= self.n_estimators <= MAX_ESTIMATORS:
            raise ConfigError(
                f"{self.n_estimators} estimators out of range",
                where="--estimators",
                fix=f"1..{MAX_ESTIMATORS}",
            )
        if not (isinstance(self.rfe_step, float | int) and 0 < self.rfe_step < 1):  # NaN fails too
            raise ConfigError(f"rfe step {self.rfe_step!r} not in (0, 1)", where="--rfe-step", fix="e.g. 0.1")
        if self.final_scope not in FINAL_SCOPES:
            raise ConfigError(
                f"unknown scope {self.final_scope!r}",
                where="--final-scope",
                fix=f"one of: {', '.join(FINAL_SCOPES)}",
            )
        bad = [c for c in self.variation_classes if c not in CLASS_NAMES]
        if not self.variation_classes or bad:
            raise ConfigError(
                f"classes {list(self.variation_classes)!r} are not class names",
                where="--variation-classes",
                fix=f"some of: {', '.join(CLASS_NAMES[1:])}",
            )
        bad = [g for g in self.exclude if g not in ("probe", "wtype")]
        if bad:
            raise ConfigError(f"unknown feature group(s) {bad}", where="--exclude", fix="probe and/or wtype")
        return TrainOptions(
            self.seed,
            models,
            self.n_estimators,
            float(self.rfe_step),
            self.final_scope,
            tuple(self.variation_classes),
            tuple(self.exclude),
        )


@dataclass
class TrainedVariability:
    pipeline: Any
    features: list[str]
    model_kind: str
    card: dict[str, Any]
    cv_table: list[dict[str, Any]]
    rfe_curve: list[dict[str, Any]]
    scope_table: list[dict[str, Any]]
    seconds: float = 0.0
    saved: dict[str, Any] = field(default_factory=dict)

    def report(self) -> dict[str, Any]:
        """The tables for ``--json``."""
        return {
            "model": self.model_kind,
            "features": self.features,
            "cv_table": self.cv_table,
            "scope_table": self.scope_table,
            "rfe_curve": self.rfe_curve,
            "classes": list(CLASS_NAMES),
            "card": {
                k: v for k, v in (self.saved or self.card).items() if k not in ("cv_table", "rfe_curve")
            },
            "seconds": round(self.seconds, 3),
        }

    def save(self, path: str | Path) -> dict[str, Any]:
        """Write the model (joblib) and its card; return the card."""
        from rush.models.persistence import save_model
        from rush.models.variability.card import VariabilityCard

        self.saved = save_model(self.pipeline, path, self.card, card=VariabilityCard, fix=DEFAULT_FIX)
        return self.saved


# -------------------------------------------------------------------------------- estimators


def make_estimator(kind: str, seed: int, n_estimators: int, n_train: int = 10**6) -> Any:
    """A fresh Pipeline: imputer (median; an all-missing feature becomes 0), [scaler,] model."""
    from sklearn.ensemble import AdaBoostClassifier, ExtraTreesClassifier, RandomForestClassifier
    from sklearn.impute import SimpleImputer
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    imputer = ("impute", SimpleImputer(strategy="median", keep_empty_features=True))
    if kind == "knn":
        k = max(1, min(5, n_train))
        return Pipeline(
            [imputer, ("scale", StandardScaler()), ("model", KNeighborsClassifier(n_neighbors=k))]
        )
    if kind == "extra_trees":
        model = ExtraTreesClassifier(n_estimators=n_estimators, random_state=seed, n_jobs=1)
    elif kind == "random_forest":
        model = RandomForestClassifier(n_estimators=n_estimators, random_state=seed, n_jobs=1)
    elif kind == "adaboost":
        model = AdaBoostClassifier(n_estimators=n_estimators, random_state=seed)
    else:
        raise ConfigError(
            f"unknown model kind {kind!r}", where="model", fix=f"one of: {', '.join(MODEL_KINDS)}"
        )
    return Pipeline([imputer, ("model", model)])


def fit(make: Callable[[int], Any], X: np.ndarray, y: np.ndarray) -> Any:
    """The model fitted on a training fold; with one class only, scikit-learn's
    ``DummyClassifier`` predicting it (no estimator can learn a boundary; no importances)."""
    from sklearn.dummy import DummyClassifier

    if len(np.unique(y)) < 2:
        return DummyClassifier(strategy="most_frequent").fit(X, y)
    return make(len(y)).fit(X, y)


def importances(model: Any, n: int) -> np.ndarray:
    last = model[-1] if hasattr(model, "steps") else model
    values = getattr(last, "feature_importances_", None)
    if values is None or len(values) != n:
        return np.zeros(n)
    return np.nan_to_num(np.asarray(values, dtype=float))


def f1(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Binary F1 of class 1; 1.0 when there is no positive and none is predicted."""
    from sklearn.metrics import f1_score

    return float(f1_score(y_true, y_pred, pos_label=1, zero_division=1.0))


# -------------------------------------------------------------------------------- CV


def flag_threshold(
    make: Callable[[int], Any],
    X: np.ndarray,
    y_class: np.ndarray,
    apps: np.ndarray,
    variation_classes: Sequence[str],
) -> dict[str, Any]:
    """The probability of the variation classes above which the live predictor flags a job.

    Every run's class probabilities come from the leave-one-application-out fold that did not
    train on its application (held-out data); the threshold is the one of scikit-learn's
    precision-recall curve with the best F1 of the binary label ("variation class or not").
    With no positive, or no probability, the rule stays "most probable class" (None)."""
    from sklearn.metrics import precision_recall_curve

    wanted = [CLASS_NAMES.index(c) for c in variation_classes]
    positive = np.isin(y_class, wanted).astype(int)
    score = np.zeros(len(y_class))
    for _, train, test in folds(apps):
        model = fit(make, X[train], y_class[train])
        if not hasattr(model, "predict_proba"):
            return {"threshold": None, "reason": "the model has no probabilities"}
        proba = model.predict_proba(X[test])
        cols = [k for k, c in enumerate(model.classes_) if int(c) in wanted]
        score[test] = proba[:, cols].sum(axis=1) if cols else 0.0
    if positive.sum() == 0:
        return {"threshold": None, "reason": "no run in the variation classes"}
    precision, recall, thresholds = precision_recall_curve(positive, score)
    with np.errstate(divide="ignore", invalid="ignore"):
        f = np.where(precision + recall > 0, 2 * precision * recall / (precision + recall), 0.0)[:-1]
    best = int(np.argmax(f))
    return {
        "threshold": float(thresholds[best]),
        "held_out_f1": float(f[best]),
        "precision": float(precision[best]),
        "recall": float(recall[best]),
        "argmax_f1": f1(positive, (score >= 0.5).astype(int)),
        "chosen_by": "best F1 of the leave-one-application-out probabilities (sklearn precision_recall_curve)",
    }


def folds(apps: np.ndarray) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """Leave one application out (scikit-learn's ``LeaveOneGroupOut``, applications in sorted
    order): (held-out app, train indices, test indices)."""
    from sklearn.model_selection import LeaveOneGroupOut

    names = np.unique(apps)
    if len(names) < 2:
        raise DatasetError(
            f"the dataset has one application ({names[0] if len(names) else 'none'}): "
            "leave-one-application-out cross-validation needs at least 2",
            where="dataset apps",
            fix="run the campaign with two or more applications",
        )
    splits = LeaveOneGroupOut().split(np.zeros((len(apps), 1)), groups=apps)
    return [(str(app), train, test) for app, (train, test) in zip(names, splits, strict=True)]


def loao(make: Callable[[int], Any], X: np.ndarray, y: np.ndarray, apps: np.ndarray) -> dict[str, Any]:
    """Mean and per-application F1 of a model under leave-one-application-out."""
    per_app: dict[str, float] = {}
    predicted = np.zeros(len(y), dtype=int)
    for app, train, test in folds(apps):
        model = fit(make, X[train], y[train])
        predicted[test] = model.predict(X[test])
        per_app[app] = f1(y[test], predicted[test])
    return {
        "mean_f1": float(np.mean(list(per_app.values()))),
        "pooled_f1": f1(y, predicted),
        "per_app": per_app,
    }


def rfe_order(
    make: Callable[[int], Any],
    rank_make: Callable[[int], Any] | None,
    X: np.ndarray,
    y: np.ndarray,
    step: int,
) -> tuple[list[int], list[int]]:
    """(features most important first, sizes visited): drop the least important ``step`` at a time.

    Not scikit-learn's ``RFE``: its ``ranking_`` ties the features dropped in one step, while
    this order keeps them by importance, and the curve's refits and the model card's feature
    list take their columns in this order (RFE would change the committed study's figures);
    and a KNN model is ranked by ExtraTrees here, which ``RFECV`` (one estimator) cannot do."""
    remaining = list(range(X.shape[1]))
    eliminated: list[int] = []
    sizes = []
    ranker = rank_make or make
    while remaining:
        sizes.append(len(remaining))
        if len(remaining) == 1:
            break
        model = fit(ranker, X[:, remaining], y)
        imp = importances(model, len(remaining))
        k = min(step, len(remaining) - 1)
        drop = np.argsort(imp, kind="stable")[:k]  # least important first
        for i in sorted(drop.tolist(), key=lambda i: imp[i], reverse=True):
            eliminated.append(remaining[i])
        keep = np.ones(len(remaining), bool)
        keep[drop] = False
        remaining = [f for f, kept in zip(remaining, keep, strict=True) if kept]
    order = remaining + eliminated[::-1]
    return order, sizes


def rfe_curve(
    make: Callable[[int], Any],
    rank_make: Callable[[int], Any] | None,
    X: np.ndarray,
    y: np.ndarray,
    apps: np.ndarray,
    step: int,
) -> tuple[list[dict[str, Any]], int]:
    """Held-out mean F1 at each size of the elimination path; (curve, best size)."""
    scores: dict[int, dict[str, float]] = {}
    for app, train, test in folds(apps):
        order, sizes = rfe_order(make, rank_make, X[train], y[train], step)
        for size in sizes:
            cols = order[:size]
            model = fit(make, X[train][:, cols], y[train])
            scores.setdefault(size, {})[app] = f1(y[test], model.predict(X[test][:, cols]))
    n_apps = len(set(apps.tolist()))
    curve = [
        {"features": size, "mean_f1": float(np.mean(list(s.values()))), "per_app": s}
        for size, s in sorted(scores.items(), reverse=True)
        if len(s) == n_apps  # sizes every fold visited (they coincide: same step, same count)
    ]
    best = max(curve, key=lambda c: (round(c["mean_f1"], 12), -c["features"]))
    return curve, int(best["features"])


# -------------------------------------------------------------------------------- train


def _scope_columns(names: Sequence[str], scope: str) -> list[int]:
    """Columns of a node scope (``job``, ``all``, ``both``) plus probe and workload type."""
    keep = {"job": {"job"}, "all": {"all"}, "both": {"job", "all"}}[scope] | {"probe", "wtype"}
    return [i for i, n in enumerate(names) if feature_scope(n) in keep]


def train_variability(dataset: Dataset, options: TrainOptions | None = None) -> TrainedVariability:
    """Select, eliminate and fit (see the module doc); raises DatasetError when it cannot learn."""
    options = (options or TrainOptions()).checked()
    started = time.perf_counter()
    kept = [i for i, n in enumerate(dataset.feature_names) if feature_scope(n) not in options.exclude]
    X, y, apps = dataset.X[:, kept], dataset.y_binary, dataset.apps
    names = [dataset.feature_names[i] for i in kept]
    if len(y) < 4:
        raise DatasetError(
            f"{len(y)} runs are too few to train on", where="dataset", fix="run a longer campaign"
        )
    if X.shape != (len(y), len(names)):
        raise DatasetError("X does not match the feature names", where="dataset")
    if np.isinf(X).any():
        raise DatasetError("the features hold infinite values", where="dataset", fix="rebuild the dataset")
    fold_list = folds(apps)  # refuses a single application first
    if y.sum() == 0:
        raise DatasetError(
            "no run is above mu + 1.5 sigma of its application: there is no variation to learn",
            where="dataset labels",
            fix="run the campaign with the noise generator on",
        )
    readings = [i for i, n in enumerate(names) if not n.startswith("wtype_")]
    if not readings or np.isnan(X[:, readings]).all():
        raise DatasetError(
            "every counter and probe feature is missing (all-NaN windows): nothing to learn from",
            where="dataset features",
            fix="check that the collectors wrote the store during the campaign and the window covers job starts",
        )
    seed, n_est = options.seed, options.n_estimators

    def maker(kind: str) -> Callable[[int], Any]:
        return lambda n_train: make_estimator(kind, seed, n_est, n_train)

    # 1. model selection on every feature.
    cv_table = []
    positives = {a: float(y[test].mean()) for a, _, test in fold_list}
    for kind in options.models:
        result = loao(maker(kind), X, y, apps)
        cv_table.append({"model": kind, **result, "positive_rate": positives})
    chosen = max(cv_table, key=lambda r: (round(r["mean_f1"], 12), r["pooled_f1"]))["model"]
    # 2. node scopes, with the chosen model.
    scope_table = []
    for scope in ("job", "all", "both"):
        cols = _scope_columns(names, scope)
        if not any(feature_scope(names[c]) in ("job", "all") for c in cols):
            continue  # the dataset was built without this scope
        result = loao(maker(chosen), X[:, cols], y, apps)
        scope_table.append({"scope": scope, "features": len(cols), **result})
    final_scope = options.final_scope
    available = [r["scope"] for r in scope_table]
    if final_scope == "best":
        final_scope = max(scope_table, key=lambda r: r["mean_f1"])["scope"] if scope_table else "both"
    elif final_scope not in available:
        final_scope = available[0] if available else "both"
    cols = _scope_columns(names, final_scope)
    # 3. recursive feature elimination within that scope.
    rank_make = maker("extra_trees") if chosen == "knn" else None
    step = max(1, math.ceil(options.rfe_step * len(cols)))
    Xs = X[:, cols]
    curve, best = rfe_curve(maker(chosen), rank_make, Xs, y, apps, step)
    order, _ = rfe_order(maker(chosen), rank_make, Xs, y, step)
    features = [names[cols[i]] for i in order[:best]]
    # 4. the exported 3-class model on the chosen features.
    final_cols = [names.index(f) for f in features]
    y_class = dataset.y_class
    if len(np.unique(y_class)) < 2:
        raise DatasetError("one class only in the 3-class labels", where="dataset labels")
    pipeline = make_estimator(chosen, seed, n_est, len(y_class)).fit(X[:, final_cols], y_class)
    # 5. the flag threshold, on held-out data (each run predicted by the fold without its app).
    flag = flag_threshold(
        lambda n: make_estimator(chosen, seed, n_est, n),
        X[:, final_cols],
        y_class,
        apps,
        options.variation_classes,
    )
    seconds = time.perf_counter() - started
    description = dataset.description
    present_classes = [int(c) for c in pipeline.classes_]
    card = {
        "model": "variability",
        "estimator": chosen,
        "features": features,
        "classes": present_classes,
        "class_names": [CLASS_NAMES[c] for c in present_classes],
        "variation_classes": list(options.variation_classes),
        "flag_threshold": flag["threshold"],
        "flag_threshold_table": flag,
        "thresholds": {
            "binary": "runtime > mu + 1.5 sigma of the application (ddof 0)",
            "classes": "none < mu + 1.2 sigma <= little <= mu + 1.5 sigma < variation",
            "per_app": description.get("labels", {}).get("per_app", {}),
        },
        "window": float(description.get("window", 300.0)),
        "scope": final_scope,
        "scope_reason": "the default: a job's nodes are unknown before it starts unless the core's "
        "tentative placement is read; all-node features need no placement"
        if final_scope == "all"
        else f"chosen: {options.final_scope}",
        "cv_table": cv_table,
        "scope_table": scope_table,
        "rfe_curve": curve,
        "rfe_step": options.rfe_step,
        "excluded_groups": list(options.exclude),
        "chosen_by": "mean F1 of the binary label under leave-one-application-out cross-validation",
        "training_window": {
            "trace": str(description.get("records", "dataset"))[:4000],
            "jobs": len(y),
            "first_submit": float(np.min(dataset.starts)) if len(dataset.starts) else 0.0,
            "last_submit": float(np.max(dataset.starts)) if len(dataset.starts) else 0.0,
        },
        "data_sha256": description.get("csv_sha256") or description.get("records_sha256") or "0" * 64,
        "records_sha256": description.get("records_sha256"),
        "generator": description.get("generator", {}),
        "campaign": description.get("campaign", {}),
        "counters": description.get("counters", {}),
        "apps": sorted(set(apps.tolist())),
        "seed": seed,
        "n_estimators": n_est,
        "rows": len(y),
        "variation_runs": int(y.sum()),
    }
    return TrainedVariability(
        pipeline=pipeline,
        features=features,
        model_kind=chosen,
        card=card,
        cv_table=cv_table,
        rfe_curve=curve,
        scope_table=scope_table,
        seconds=seconds,
    )


def load_variability_model(path: str | Path) -> tuple[Any, dict[str, Any]]:
    """Verify the card (keys, sha256, scikit-learn version) and load the model."""
    from rush.models.persistence import load_model
    from rush.models.variability.card import VariabilityCard

    model, card = load_model(path, fix=DEFAULT_FIX, card=VariabilityCard)
    classes = getattr(model, "classes_", None)
    if classes is None or [int(c) for c in classes] != list(card["classes"]):
        raise ModelError("the model's classes differ from its card's", where=str(path), fix=DEFAULT_FIX)
    return model, card
