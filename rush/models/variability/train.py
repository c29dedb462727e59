"""Training the variability model: model selection, feature elimination, the exported 3-class model.

The published method (Nichols et al., IPDPS 2022, Sections IV-A and VI-B), step by step, with
every cross-validation reported **both ways** (scikit-learn's ``model_selection`` and ``metrics``):

* **k-fold** (the paper's protocol, its "F1 score of 0.95 in cross-validation"): stratified
  k-fold over all applications (``StratifiedKFold`` on the binary label, shuffled with the seed),
  so every application is in every training fold: the figure for a scheduler that runs the
  applications it was trained on (ADAA, ADPA, WS, SS);
* **leave one application out** (``LeaveOneGroupOut``): train on every other application, test
  on the held-out one: the honest figure for an application the model never saw (PDPA). A
  held-out application with no positive run and none predicted scores F1 = 1 (nothing to find,
  nothing falsely flagged); the pooled F1 over all held-out predictions is reported beside the
  mean.

``selection`` (default ``kfold``, the paper's) says which of the two chooses; the other is
reported beside it.

1. **Model selection** on the binary label (runtime > mu + 1.5 sigma of its application):
   ExtraTrees, a random forest, k-nearest neighbours (in a Pipeline with imputation and
   scaling) and AdaBoost, compared by the mean F1 over the selection protocol's folds.
2. **Node scope** (reported, under the selection protocol): the chosen model with the job's-node
   features only, with all-node features only, and with both (probe, workload type and the job's
   own placement in each).
3. **Recursive feature elimination** over the whole feature set (``final_scope = best``, the
   default; ``all``, ``job`` or ``both`` restrict it to a scope): in each fold of the selection
   protocol the model ranks the features by dropping the least important ``rfe_step`` fraction
   at a time (tree importances; KNN has none, so ExtraTrees ranks for it), and the held-out F1
   is measured at every size on that path; the size with the best mean F1 wins (the smallest on
   ties) and the features are the top ones of a ranking on all data.
4. **Final model**: the chosen kind on the chosen features, fitted on the 3 classes
   (none / little / variation: mu + 1.2 sigma and mu + 1.5 sigma, as the paper), in a
   scikit-learn Pipeline whose first step imputes missing values (median of the training data;
   a feature never seen becomes 0), so what the live predictor feeds it is treated exactly as
   in training. The Pipeline is the feature transformation travelling with the model; the card
   lists its features in column order and is verified before the model file is loaded.
5. **The flag threshold, at the start decision.** The scheduler acts on one question: "start this
   job now, on these nodes?" Every campaign control run *is* one such decision: the features are
   those of the moment it was started (the window before its start, its own probe on its nodes as
   it started, its placement), and its label is what followed. So the threshold on
   P(variation) is chosen on **held-out start decisions**: each control run's probability comes
   from the 3-class model (final features) fitted on the folds of the selection protocol that did
   not contain it, and the threshold is the point of scikit-learn's precision-recall curve with
   the best F1. Not per question: in an experiment a held job is asked again at every pass, so
   per-question counts weigh a long-held job many times and a started one once; the campaign
   counts each start once, as the variation it causes is counted once. The F1, precision and
   recall at that threshold are reported for the selection protocol's held-out probabilities
   and for leave-one-application-out ones.
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
from rush.models.variability.features import feature_scope, is_placement

MODEL_KINDS: tuple[str, ...] = ("extra_trees", "random_forest", "knn", "adaboost")
FINAL_SCOPES: tuple[str, ...] = ("best", "all", "job", "both")  # best: RFE over the whole set
PROTOCOLS: tuple[str, ...] = ("kfold", "loao")
K_FOLDS = 5
MAX_ESTIMATORS = 2_000
MAX_SEED = 2**32 - 1
DEFAULT_FIX = "retrain: rush train variability DATASET --out models/variability.joblib"


@dataclass(frozen=True)
class TrainOptions:
    seed: int = 0
    models: tuple[str, ...] = MODEL_KINDS
    n_estimators: int = 100
    rfe_step: float = 0.1  # fraction of the features dropped per elimination step
    final_scope: str = "best"
    selection: str = "kfold"  # which cross-validation chooses: the paper's k-fold, or leave one app out
    k_folds: int = K_FOLDS
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
        if self.selection not in PROTOCOLS:
            raise ConfigError(
                f"unknown selection protocol {self.selection!r}",
                where="--selection",
                fix="kfold (the paper's) or loao (leave one application out)",
            )
        if isinstance(self.k_folds, bool) or not isinstance(self.k_folds, int) or not 2 <= self.k_folds <= 20:
            raise ConfigError(f"k-folds {self.k_folds!r} out of range", where="--folds", fix="2..20, e.g. 5")
        return TrainOptions(
            self.seed,
            models,
            self.n_estimators,
            float(self.rfe_step),
            self.final_scope,
            self.selection,
            self.k_folds,
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

Folds = list[tuple[str, np.ndarray, np.ndarray]]  # (fold name, train indices, test indices)


def out_of_fold_scores(
    make: Callable[[int], Any], X: np.ndarray, y_class: np.ndarray, splits: Folds, wanted: Sequence[int]
) -> np.ndarray | None:
    """Each run's P(``wanted`` classes) from the fold that did not train on it (None: a model
    without probabilities)."""
    score = np.zeros(len(y_class))
    for _, train, test in splits:
        model = fit(make, X[train], y_class[train])
        if not hasattr(model, "predict_proba"):
            return None
        proba = model.predict_proba(X[test])
        cols = [k for k, c in enumerate(model.classes_) if int(c) in wanted]
        score[test] = proba[:, cols].sum(axis=1) if cols else 0.0
    return score


def best_f1_threshold(positive: np.ndarray, score: np.ndarray) -> dict[str, float]:
    """The point of scikit-learn's precision-recall curve with the best F1."""
    from sklearn.metrics import precision_recall_curve

    precision, recall, thresholds = precision_recall_curve(positive, score)
    with np.errstate(divide="ignore", invalid="ignore"):
        f = np.where(precision + recall > 0, 2 * precision * recall / (precision + recall), 0.0)[:-1]
    best = int(np.argmax(f))
    return {
        "threshold": float(thresholds[best]),
        "held_out_f1": float(f[best]),
        "precision": float(precision[best]),
        "recall": float(recall[best]),
    }


def at_threshold(positive: np.ndarray, score: np.ndarray, threshold: float) -> dict[str, float]:
    """F1, precision and recall of flagging ``score >= threshold``."""
    from sklearn.metrics import precision_score, recall_score

    flagged = (score >= threshold).astype(int)
    return {
        "f1": f1(positive, flagged),
        "precision": float(precision_score(positive, flagged, zero_division=0.0)),
        "recall": float(recall_score(positive, flagged, zero_division=0.0)),
        "flagged_share": float(flagged.mean()),
    }


def flag_threshold(
    make: Callable[[int], Any],
    X: np.ndarray,
    y_class: np.ndarray,
    splits: Folds,
    variation_classes: Sequence[str],
    protocol: str = "kfold",
    other: Folds | None = None,
    sizes: np.ndarray | None = None,
) -> dict[str, Any]:
    """The probability of the variation classes above which the live predictor flags a job,
    chosen on held-out start decisions (see the module doc, step 5).

    Every run's class probabilities come from the fold of ``splits`` that did not train on it;
    the threshold is the one of scikit-learn's precision-recall curve with the best F1 of the
    binary label ("variation class or not"). ``other`` (the other protocol's folds) adds the F1
    at that threshold on its held-out probabilities. ``sizes`` (each run's node count) adds
    ``by_size`` (:func:`size_thresholds`). With no positive, or no probability, the rule stays
    "most probable class" (None)."""
    wanted = [CLASS_NAMES.index(c) for c in variation_classes]
    positive = np.isin(y_class, wanted).astype(int)
    if positive.sum() == 0:
        return {"threshold": None, "reason": "no run in the variation classes"}
    score = out_of_fold_scores(make, X, y_class, splits, wanted)
    if score is None:
        return {"threshold": None, "reason": "the model has no probabilities"}
    best = best_f1_threshold(positive, score)
    table: dict[str, Any] = {
        **best,
        "argmax_f1": f1(positive, (score >= 0.5).astype(int)),
        "protocol": protocol,
        "decisions": len(positive),
        "chosen_by": f"best F1 of the held-out ({protocol}) probabilities of the campaign's control runs, "
        "each a start decision (sklearn precision_recall_curve)",
    }
    if other is not None:
        other_score = out_of_fold_scores(make, X, y_class, other, wanted)
        if other_score is not None:
            table["other_protocol"] = at_threshold(positive, other_score, best["threshold"])
    if sizes is not None:
        table["by_size"] = size_thresholds(positive, score, sizes, best["threshold"])
    return table


def size_thresholds(
    positive: np.ndarray, score: np.ndarray, sizes: np.ndarray, fallback: float
) -> dict[str, dict[str, Any]]:
    """Per job size (node count): the flag threshold of that size's held-out start decisions,
    capped so that it flags no larger share of them than vary (the size's base rate).

    Why the cap (fixed before any scheduling run with it, sim/variability/README.md): every flag
    holds a job for at least one pass and counts against its skip limit; a predictor that flags
    more starts of a size than vary holds jobs that would not have varied and reaches the limit
    with them. So the threshold is the larger of the size's best-F1 point and the score above
    which only the base rate's share of its decisions lies. A size with no run with variation
    keeps ``fallback`` (the all-size threshold)."""
    out: dict[str, dict[str, Any]] = {}
    for size in np.unique(sizes[np.isfinite(sizes)]):
        here = sizes == size
        pos, sc = positive[here], score[here]
        rate = float(pos.mean())
        if pos.sum() == 0:
            row: dict[str, Any] = {
                "threshold": float(fallback),
                "reason": "no run with variation at this size",
            }
        else:
            best = best_f1_threshold(pos, sc)
            cap = float(np.quantile(sc, 1.0 - rate, method="higher"))
            row = {
                "threshold": max(best["threshold"], cap),
                "best_f1_threshold": best["threshold"],
                "cap": cap,
            }
        row |= {"decisions": int(here.sum()), "base_rate": rate, **at_threshold(pos, sc, row["threshold"])}
        out[str(int(size))] = row
    return out


def size_threshold_table(
    dataset: Dataset, card: dict[str, Any], k: int = K_FOLDS
) -> dict[str, dict[str, Any]]:
    """:func:`size_thresholds` for a trained model (its card's estimator, features, seed and
    variation classes) on the dataset it was trained on, by the k-fold start decisions of step 5:
    for models trained before the per-size table existed."""
    if "job_nodes" not in dataset.feature_names:
        raise DatasetError("the dataset has no job_nodes column", where="dataset", fix="rebuild the dataset")
    cols = [dataset.feature_names.index(f) for f in card["features"]]
    seed, n_est = int(card["seed"]), int(card.get("n_estimators", 100))
    table = flag_threshold(
        lambda n: make_estimator(card["estimator"], seed, n_est, n),
        dataset.X[:, cols],
        dataset.y_class,
        kfolds(dataset.y_binary, k, seed),
        card["variation_classes"],
        sizes=dataset.X[:, dataset.feature_names.index("job_nodes")],
    )
    return table.get("by_size", {})


def folds(apps: np.ndarray) -> Folds:
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


def kfolds(y: np.ndarray, k: int = K_FOLDS, seed: int = 0) -> Folds:
    """Stratified k-fold over all runs (scikit-learn's ``StratifiedKFold`` on the binary label,
    shuffled with ``seed``): ("fold<i>", train indices, test indices). ``k`` shrinks to the
    number of positive (or negative) runs when there are fewer, so every fold holds one."""
    from sklearn.model_selection import StratifiedKFold

    smallest = int(min(np.sum(y == 1), np.sum(y == 0)))
    k = max(2, min(k, smallest))
    splitter = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed % 2**32)
    return [
        (f"fold{i}", train, test) for i, (train, test) in enumerate(splitter.split(np.zeros((len(y), 1)), y))
    ]


def cross_validate(make: Callable[[int], Any], X: np.ndarray, y: np.ndarray, splits: Folds) -> dict[str, Any]:
    """Mean F1 over the folds, per fold, and the pooled F1 of all held-out predictions."""
    per: dict[str, float] = {}
    predicted = np.zeros(len(y), dtype=int)
    for name, train, test in splits:
        model = fit(make, X[train], y[train])
        predicted[test] = model.predict(X[test])
        per[name] = f1(y[test], predicted[test])
    return {"mean_f1": float(np.mean(list(per.values()))), "pooled_f1": f1(y, predicted), "per_fold": per}


def loao(make: Callable[[int], Any], X: np.ndarray, y: np.ndarray, apps: np.ndarray) -> dict[str, Any]:
    """Mean and per-application F1 of a model under leave-one-application-out."""
    result = cross_validate(make, X, y, folds(apps))
    return {"mean_f1": result["mean_f1"], "pooled_f1": result["pooled_f1"], "per_app": result["per_fold"]}


def both_ways(
    make: Callable[[int], Any], X: np.ndarray, y: np.ndarray, apps: np.ndarray, k_split: Folds
) -> dict[str, Any]:
    """A model's row of the CV tables: leave one application out (``mean_f1``, ``pooled_f1``,
    ``per_app``) and stratified k-fold (``kfold_mean_f1``, ``kfold_pooled_f1``, ``per_fold``)."""
    k = cross_validate(make, X, y, k_split)
    return {
        **loao(make, X, y, apps),
        "kfold_mean_f1": k["mean_f1"],
        "kfold_pooled_f1": k["pooled_f1"],
        "per_fold": k["per_fold"],
    }


def selection_key(protocol: str) -> str:
    """The CV table's column the ``protocol`` selects by."""
    return "kfold_mean_f1" if protocol == "kfold" else "mean_f1"


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
    list take their columns in this order; and a KNN model is ranked by ExtraTrees here, which
    ``RFECV`` (one estimator) cannot do."""
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
    splits: Folds,
    step: int,
) -> tuple[list[dict[str, Any]], int]:
    """Held-out mean F1 at each size of the elimination path over ``splits``; (curve, best size)."""
    scores: dict[int, dict[str, float]] = {}
    for name, train, test in splits:
        order, sizes = rfe_order(make, rank_make, X[train], y[train], step)
        for size in sizes:
            cols = order[:size]
            model = fit(make, X[train][:, cols], y[train])
            scores.setdefault(size, {})[name] = f1(y[test], model.predict(X[test][:, cols]))
    curve = [
        {"features": size, "mean_f1": float(np.mean(list(s.values()))), "per_fold": s}
        for size, s in sorted(scores.items(), reverse=True)
        if len(s) == len(splits)  # sizes every fold visited (they coincide: same step, same count)
    ]
    best = max(curve, key=lambda c: (round(c["mean_f1"], 12), -c["features"]))
    return curve, int(best["features"])


# -------------------------------------------------------------------------------- train


def _scope_columns(names: Sequence[str], scope: str) -> list[int]:
    """Columns of a node scope (``job``, ``all``, ``both``; ``best``: every column) plus probe,
    workload type and the job's own placement (what the job brings, in every scope)."""
    if scope == "best":
        return list(range(len(names)))
    keep = {"job": {"job"}, "all": {"all"}, "both": {"job", "all"}}[scope] | {"probe", "wtype"}
    return [i for i, n in enumerate(names) if feature_scope(n) in keep or is_placement(n)]


def _kept_scope(features: Sequence[str]) -> str:
    """The node scope of the counters a feature list reads (``all`` when it reads none)."""
    scopes = {feature_scope(f) for f in features if not is_placement(f)} & {"job", "all"}
    return "both" if scopes == {"job", "all"} else next(iter(scopes), "all")


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
    readings = [i for i, n in enumerate(names) if not n.startswith("wtype_") and not is_placement(n)]
    if not readings or np.isnan(X[:, readings]).all():
        raise DatasetError(
            "every counter and probe feature is missing (all-NaN windows): nothing to learn from",
            where="dataset features",
            fix="check that the collectors wrote the store during the campaign and the window covers job starts",
        )
    seed, n_est = options.seed, options.n_estimators
    k_split = kfolds(y, options.k_folds, seed)
    splits = k_split if options.selection == "kfold" else fold_list
    other = fold_list if options.selection == "kfold" else k_split
    key = selection_key(options.selection)

    def maker(kind: str) -> Callable[[int], Any]:
        return lambda n_train: make_estimator(kind, seed, n_est, n_train)

    # 1. model selection on every feature, both ways.
    cv_table = []
    positives = {a: float(y[test].mean()) for a, _, test in fold_list}
    for kind in options.models:
        result = both_ways(maker(kind), X, y, apps, k_split)
        cv_table.append({"model": kind, **result, "positive_rate": positives, "selected_by": key})
    chosen = max(cv_table, key=lambda r: (round(r[key], 12), r["pooled_f1"]))["model"]
    # 2. node scopes, with the chosen model (reported; RFE below reads final_scope).
    scope_table = []
    for scope in ("job", "all", "both"):
        cols = _scope_columns(names, scope)
        if not any(feature_scope(names[c]) in ("job", "all") and not is_placement(names[c]) for c in cols):
            continue  # the dataset was built without this scope
        # The selection protocol only (a report under final_scope best; the runtime stays as it was).
        result = cross_validate(maker(chosen), X[:, cols], y, splits)
        scope_table.append({"scope": scope, "features": len(cols), "protocol": options.selection, **result})
    final_scope = options.final_scope
    available = [r["scope"] for r in scope_table]
    if final_scope != "best" and final_scope not in available:
        final_scope = available[0] if available else "best"
    cols = _scope_columns(names, final_scope)
    # 3. recursive feature elimination within that scope (best: the whole set).
    rank_make = maker("extra_trees") if chosen == "knn" else None
    step = max(1, math.ceil(options.rfe_step * len(cols)))
    Xs = X[:, cols]
    curve, best = rfe_curve(maker(chosen), rank_make, Xs, y, splits, step)
    order, _ = rfe_order(maker(chosen), rank_make, Xs, y, step)
    features = [names[cols[i]] for i in order[:best]]
    # 4. the exported 3-class model on the chosen features.
    final_cols = [names.index(f) for f in features]
    y_class = dataset.y_class
    if len(np.unique(y_class)) < 2:
        raise DatasetError("one class only in the 3-class labels", where="dataset labels")
    pipeline = make_estimator(chosen, seed, n_est, len(y_class)).fit(X[:, final_cols], y_class)
    pipeline.rush_features_ = list(features)  # pickled with it: the card must list the same
    # 5. the flag threshold, on held-out start decisions (each control run predicted by a fold without it).
    flag = flag_threshold(
        lambda n: make_estimator(chosen, seed, n_est, n),
        X[:, final_cols],
        y_class,
        splits,
        options.variation_classes,
        options.selection,
        other,
        dataset.X[:, dataset.feature_names.index("job_nodes")]
        if "job_nodes" in dataset.feature_names
        else None,
    )
    seconds = time.perf_counter() - started
    description = dataset.description
    present_classes = [int(c) for c in pipeline.classes_]
    scope = _kept_scope(features) if final_scope == "best" else final_scope
    card = {
        "model": "variability",
        "estimator": chosen,
        "features": features,
        "classes": present_classes,
        "class_names": [CLASS_NAMES[c] for c in present_classes],
        "variation_classes": list(options.variation_classes),
        "flag_threshold": flag["threshold"],
        "flag_threshold_table": flag,
        # Per job size (policy RUSH-SIZE in the contention study); absent: no job_nodes column.
        "flag_threshold_by_size": {k: v["threshold"] for k, v in flag.get("by_size", {}).items()},
        "thresholds": {
            "binary": "runtime > mu + 1.5 sigma of the application (ddof 0)",
            "classes": "none < mu + 1.2 sigma <= little <= mu + 1.5 sigma < variation",
            "per_app": description.get("labels", {}).get("per_app", {}),
        },
        "window": float(description.get("window", 300.0)),
        "scope": scope,
        "scope_reason": "RFE over the whole feature set kept these counters"
        if final_scope == "best"
        else f"chosen: {options.final_scope}",
        "selection": options.selection,
        "k_folds": len(k_split),
        "cv_table": cv_table,
        "scope_table": scope_table,
        "rfe_curve": curve,
        "rfe_step": options.rfe_step,
        "excluded_groups": list(options.exclude),
        "chosen_by": f"mean F1 of the binary label under {options.selection} cross-validation "
        f"({'stratified k-fold over all applications' if options.selection == 'kfold' else 'leave one application out'})",
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
        # What y learned: "variation" (did the run vary) or "present-state" (rush.contention.labels).
        "label": description.get("label", "variation"),
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
    fitted = getattr(model, "rush_features_", None)
    if fitted is not None and list(fitted) != list(card["features"]):
        raise ModelError(
            f"the card lists features {list(card['features'])[:5]}... but the model was fitted on "
            f"{list(fitted)[:5]}... (in that order): the card does not describe this model",
            where=f"{path}.json: features",
            fix=DEFAULT_FIX,
        )
    if getattr(model, "n_features_in_", len(card["features"])) != len(card["features"]):
        raise ModelError(
            f"the card lists {len(card['features'])} features, the model takes {model.n_features_in_}",
            where=f"{path}.json: features",
            fix=DEFAULT_FIX,
        )
    return model, card
