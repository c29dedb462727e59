"""The small/large runtime classifier, scikit-learn style.

``RuntimeClassifier(estimator=None, n_estimators=50, max_depth=12, min_samples_leaf=10,
max_samples=5000, random_state=0, n_jobs=1, threshold=None, idempotent_threshold=None)``: a
RandomForest by default; any
scikit-learn classifier (or a name from :data:`ESTIMATORS`) may be passed as ``estimator``.
``threshold``: predict the first class (0, small) when its probability is at least this
(binary problems; None: the estimator's own ``predict``); ``idempotent_threshold``: the
same for jobs rush may kill at the divider and requeue as large (:meth:`predict_for`), for
which a false "small" costs only that kill. The defaults of ``rush train`` and the
experiment (:data:`SMALL_THRESHOLD` 0.5, :data:`IDEMPOTENT_THRESHOLD` 0.1) were chosen on
development traces (``rush.models.decision_thresholds``).
``max_samples`` caps each tree's bootstrap sample, so weekly retraining on hundreds of
thousands of finished jobs stays fast: on KTH-SP2 these defaults classify as well as
50 unbounded-sample depth-16 trees (accuracy 0.831 vs 0.826, weekly walk-forward) at less than
half the cost; shallow trees also keep live prediction of 10,000 jobs within budget. Classes:
0 small (runtime <= divider), 1 large, in practice; as a scikit-learn classifier it takes any
labels (``classes_`` from :func:`~sklearn.utils.multiclass.unique_labels`), validates its input,
raises ``NotFittedError`` before ``fit`` and does not change during ``predict`` (it passes
``check_estimator``; tests/models/test_estimator_checks.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numba
import numpy as np
from numba import njit, prange
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.utils.multiclass import check_classification_targets, unique_labels
from sklearn.utils.validation import check_is_fitted

from rush.errors import ModelError

try:  # scikit-learn >= 1.6
    from sklearn.utils.validation import validate_data
except ImportError:  # pragma: no cover - older scikit-learn

    def validate_data(estimator, X, y="no_validation", reset=True, **kwargs):
        return estimator._validate_data(X, y, reset=reset, **kwargs)


SMALL, LARGE = 0, 1
# Where the decision thresholds are chosen, and why (re-exported for callers).
from rush.models.decision_thresholds import IDEMPOTENT_THRESHOLD, SMALL_THRESHOLD  # noqa: E402, F401


def _extra_trees(n_estimators: int, random_state: int | None) -> Any:
    from sklearn.ensemble import ExtraTreesClassifier

    return ExtraTreesClassifier(
        n_estimators=n_estimators, min_samples_leaf=2, random_state=random_state, n_jobs=1
    )


def _hist_gradient_boosting(n_estimators: int, random_state: int | None) -> Any:
    from sklearn.ensemble import HistGradientBoostingClassifier

    # scikit-learn's defaults (log loss: probabilities for the threshold), without early
    # stopping: its random validation split would make weekly refits depend on the draw.
    return HistGradientBoostingClassifier(
        max_iter=n_estimators, early_stopping=False, random_state=random_state
    )


def _logistic(n_estimators: int, random_state: int | None) -> Any:
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=500, random_state=random_state))


# ``--estimator`` names; "rf" is the RuntimeClassifier's own forest (with its caps).
ESTIMATORS: dict[str, Callable[[int, int | None], Any] | None] = {
    "rf": None,
    "extra-trees": _extra_trees,
    "hgb": _hist_gradient_boosting,
    "logreg": _logistic,
}


def make_estimator(name: str, n_estimators: int = 50, random_state: int | None = 0) -> Any:
    """A scikit-learn classifier by name, or None for the default forest."""
    if name not in ESTIMATORS:
        raise ModelError(
            f"unknown estimator {name!r}", where="--estimator", fix=f"use one of: {', '.join(ESTIMATORS)}"
        )
    factory = ESTIMATORS[name]
    return None if factory is None else factory(n_estimators, random_state)


class RuntimeClassifier(ClassifierMixin, BaseEstimator):
    def __init__(
        self,
        estimator: Any = None,
        n_estimators: int = 50,
        max_depth: int | None = 12,
        min_samples_leaf: int = 10,
        max_samples: int | None = 5_000,
        random_state: int | None = 0,
        n_jobs: int = 1,
        threshold: float | None = None,
        idempotent_threshold: float | None = None,
    ) -> None:
        self.estimator = estimator
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.min_samples_leaf = min_samples_leaf
        self.max_samples = max_samples
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.threshold = threshold
        self.idempotent_threshold = idempotent_threshold

    def _make(self, n_samples: int) -> Any:
        if isinstance(self.estimator, str):
            made = make_estimator(self.estimator, self.n_estimators, self.random_state)
            if made is not None:
                return made
        elif self.estimator is not None:
            return clone(self.estimator)
        from sklearn.ensemble import RandomForestClassifier

        cap = self.max_samples if self.max_samples and self.max_samples < n_samples else None
        return RandomForestClassifier(
            n_estimators=self.n_estimators,
            max_depth=self.max_depth,
            min_samples_leaf=self.min_samples_leaf,
            max_samples=cap,
            random_state=self.random_state,
            n_jobs=self.n_jobs,
        )

    def fit(self, X: np.ndarray, y: np.ndarray) -> RuntimeClassifier:
        for name in ("threshold", "idempotent_threshold"):
            value = getattr(self, name)
            if value is not None and not (0.0 < float(value) < 1.0):
                raise ValueError(f"{name} {value!r} is not a probability in (0, 1)")
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        self.classes_ = unique_labels(y)
        encoded = np.searchsorted(self.classes_, y)
        if len(self.classes_) < 2:
            # One class only (e.g. an early week): predict it, with certainty.
            self.model_ = None
        else:
            self.model_ = self._make(len(y)).fit(X, encoded)
        self._compile()
        return self

    def _compile(self) -> None:
        # Built at fit (and after unpickling), never during predict: predict changes nothing.
        thresholded = getattr(self, "threshold", None) is not None
        self.flat_ = FlatForest.of(self.model_) if self.model_ is not None and not thresholded else None
        self.flat_boosting_ = FlatBoosting.of(self.model_) if self.model_ is not None else None
        if self.flat_boosting_ is not None:
            self.flat_boosting_.warm()

    def _validated(self, X: np.ndarray) -> np.ndarray:
        check_is_fitted(self)
        return validate_data(self, X, reset=False, dtype=np.float64)

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        X = self._validated(X)
        n = len(X)
        if self.model_ is None:
            return np.ones((n, 1))
        if not hasattr(self.model_, "predict_proba"):
            proba = np.zeros((n, len(self.classes_)))
            proba[np.arange(n), self.model_.predict(X).astype(np.int64)] = 1.0
            return proba
        raw = self.model_.predict_proba(X)
        proba = np.zeros((n, len(self.classes_)))
        proba[:, np.asarray(self.model_.classes_, dtype=np.int64)] = raw
        return proba

    def predict(self, X: np.ndarray) -> np.ndarray:
        X = self._validated(X)
        if self.model_ is None:
            return np.full(len(X), self.classes_[0], dtype=self.classes_.dtype)
        if self.flat_ is not None:
            return self.classes_.take(self.flat_.predict(X))
        threshold = getattr(self, "threshold", None)  # models saved before it existed
        if threshold is not None and len(self.classes_) == 2 and hasattr(self.model_, "predict_proba"):
            # model_ was fitted on encoded labels: its column 0 is classes_[0]
            flat = getattr(self, "flat_boosting_", None)
            p_first = flat.proba_first(X) if flat is not None else self.model_.predict_proba(X)[:, 0]
            return self.classes_.take(np.where(p_first >= threshold, 0, 1))
        return self.classes_.take(np.asarray(self.model_.predict(X), dtype=np.int64))

    def predict_for(self, X: np.ndarray, idempotent: np.ndarray | None = None) -> np.ndarray:
        """:meth:`predict`, with each idempotent job judged at ``idempotent_threshold``: a
        false "small" costs such a job a kill at the divider and a requeue as large, not a
        large job in the small queue, so it may be called small on weaker evidence."""
        idem_threshold = getattr(self, "idempotent_threshold", None)  # models saved before it
        if idempotent is None or idem_threshold is None or not np.any(idempotent):
            return self.predict(X)
        X = self._validated(X)
        idempotent = np.asarray(idempotent, dtype=bool).reshape(-1)
        if len(idempotent) != len(X):
            raise ValueError(f"{len(idempotent)} idempotent flags for {len(X)} rows")
        if self.model_ is None or len(self.classes_) != 2 or not hasattr(self.model_, "predict_proba"):
            return self.predict(X)
        flat = getattr(self, "flat_boosting_", None)
        p_first = flat.proba_first(X) if flat is not None else self.model_.predict_proba(X)[:, 0]
        plain = getattr(self, "threshold", None)
        threshold = np.where(idempotent, float(idem_threshold), 0.5 if plain is None else float(plain))
        return self.classes_.take(np.where(p_first >= threshold, 0, 1))

    def __getstate__(self) -> dict:
        state = dict(super().__getstate__())
        state.pop("flat_", None)  # plain arrays, rebuilt on load: keeps the file half the size
        state.pop("flat_boosting_", None)
        return state

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        if "model_" in self.__dict__:
            self._compile()

    @property
    def feature_importances_(self) -> np.ndarray | None:
        """The fitted model's importances (None for a constant week or a model without them)."""
        model = getattr(self, "model_", None)
        return getattr(model, "feature_importances_", None)


class FlatForest:
    """A fitted binary tree ensemble as flat arrays, evaluated by a compiled loop.

    Gives exactly scikit-learn's ``predict`` (same float32 inputs, float64 thresholds,
    per-tree normalised leaf values summed in tree order, mean, argmax with ties to class
    0). Leaves are their own children so every row takes ``max_depth`` branch-free steps,
    and rows descend a tree in blocks of eight; about 1.5x faster than scikit-learn's
    per-tree dispatch on 10,000 rows, without the GIL. A test checks the equality.
    """

    def __init__(self, roots, depth, child, feature, threshold, small) -> None:
        self.roots, self.depth, self.child = roots, depth, child
        self.feature, self.threshold, self.small = feature, threshold, small

    @classmethod
    def of(cls, model: Any) -> FlatForest | None:
        """Flatten a RandomForest/ExtraTrees over classes [0, 1]; None for anything else.

        ``predict`` returns the class *index* (0 or 1) per row, int8."""
        from sklearn.ensemble import ExtraTreesClassifier, RandomForestClassifier

        if type(model) not in (RandomForestClassifier, ExtraTreesClassifier):
            return None
        if list(model.classes_) != [SMALL, LARGE] or model.n_outputs_ != 1:
            return None
        roots, depth, child, feature, threshold, small = [], [], [], [], [], []
        offset = 0
        for tree in (e.tree_ for e in model.estimators_):
            value = tree.value[:, 0, :2].astype(np.float64)
            total = value.sum(axis=1)
            total[total == 0.0] = 1.0
            leaf = tree.children_left == -1
            nodes = np.arange(tree.node_count) + offset
            # A leaf is its own child: every row descends exactly ``max_depth`` steps, branch-free.
            pairs = np.column_stack([tree.children_left + offset, tree.children_right + offset])
            pairs[leaf] = nodes[leaf, None]
            roots.append(offset)
            depth.append(tree.max_depth)
            child.append(pairs)
            feature.append(np.where(leaf, 0, tree.feature))
            threshold.append(tree.threshold)
            small.append(np.column_stack([value[:, 0] / total, value[:, 1] / total]))
            offset += tree.node_count
        return cls(
            np.array(roots, dtype=np.int64),
            np.array(depth, dtype=np.int64),
            np.ascontiguousarray(np.concatenate(child), dtype=np.int32),
            np.concatenate(feature).astype(np.int32),
            np.concatenate(threshold).astype(np.float64),
            np.ascontiguousarray(np.concatenate(small)),
        )

    def predict(self, X: np.ndarray) -> np.ndarray:
        X32 = np.ascontiguousarray(X, dtype=np.float32)
        return _forest_predict(
            X32, self.roots, self.depth, self.child, self.feature, self.threshold, self.small
        )


class FlatBoosting:
    """A fitted binary ``HistGradientBoostingClassifier`` as flat arrays, evaluated by a
    compiled loop: exactly scikit-learn's ``predict_proba`` (baseline, then each tree's leaf
    value added in tree order in float64, ``x <= threshold`` goes left, the loss's inverse
    link), without its per-tree thread dispatch. As :class:`FlatForest`, leaves are their
    own children (a row stops where its child is itself). A missing value (NaN: e.g. no
    finished run of the user yet) follows the node's ``missing_go_to_left``, as in
    scikit-learn; categorical splits are not flattened (``of`` returns None). A test checks
    the equality, with and without missing values."""

    def __init__(self, model, roots, depth, child, feature, threshold, value, missing_child) -> None:
        self.model = model
        self.roots, self.depth, self.child = roots, depth, child
        self.feature, self.threshold, self.value = feature, threshold, value
        self.missing_child = missing_child

    @classmethod
    def of(cls, model: Any) -> FlatBoosting | None:
        from sklearn.ensemble import HistGradientBoostingClassifier

        if type(model) is not HistGradientBoostingClassifier or model.n_trees_per_iteration_ != 1:
            return None
        if getattr(model, "is_categorical_", None) is not None and np.any(model.is_categorical_):
            return None
        nodes = [predictors[0].nodes for predictors in model._predictors]
        if any(n["is_categorical"].any() for n in nodes):
            return None
        sizes = np.array([len(n) for n in nodes], dtype=np.int64)
        roots = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        offset = np.repeat(roots, sizes)
        every = np.concatenate(nodes)
        leaf = every["is_leaf"].astype(bool)
        index = np.arange(len(every), dtype=np.int64)
        child = np.column_stack(
            [every["left"].astype(np.int64) + offset, every["right"].astype(np.int64) + offset]
        )
        child[leaf] = index[leaf, None]  # a leaf is its own child
        missing_child = np.where(every["missing_go_to_left"].astype(bool), child[:, 0], child[:, 1])
        return cls(
            model,
            roots,
            np.array([int(n["depth"].max()) for n in nodes], dtype=np.int64),
            np.ascontiguousarray(child),
            np.where(leaf, 0, every["feature_idx"]).astype(np.int64),
            every["num_threshold"].astype(np.float64),
            every["value"].astype(np.float64),
            np.ascontiguousarray(missing_child),
        )

    def _tree(self) -> tuple[np.ndarray, ...]:
        return (
            self.roots,
            self.depth,
            self.child,
            self.missing_child,
            self.feature,
            self.threshold,
            self.value,
        )

    def proba_first(self, X: np.ndarray) -> np.ndarray:
        """P(class index 0) per row, as ``model.predict_proba(X)[:, 0]``."""
        X = np.ascontiguousarray(X, dtype=np.float64)
        baseline = float(np.asarray(self.model._baseline_prediction).reshape(-1)[0])
        raw = boosting_raw(X, baseline, *self._tree())
        return 1 - self.model._loss.link.inverse(raw)

    def warm(self) -> None:
        """Load (or compile) both kernels and start the threads now, at fit or load, so the
        daemon's first pass does not pay for it."""
        one = np.zeros((1, int(self.feature.max()) + 1))
        _boosting_raw(one, 0.0, *self._tree())
        if _PARALLEL.acquire(blocking=False):
            try:
                _boosting_raw_parallel(one, 0.0, *self._tree())
            finally:
                _PARALLEL.release()


_BLOCK = 8  # rows descending a tree together: their independent load chains overlap
_PARALLEL_ROWS = 2_048  # fewer rows: the serial loop (starting the threads costs more than it saves)
# One parallel launch at a time: the fork-safe "workqueue" threading layer must not be entered
# by two threads at once; a caller that finds it busy takes the serial loop (same result).
_PARALLEL = threading.Lock()
if numba.config.THREADING_LAYER == "default":
    # GNU OpenMP (numba's first choice when libgomp is found) kills a forked child that runs a
    # parallel kernel after its parent did; "forksafe" takes TBB or workqueue instead.
    numba.config.THREADING_LAYER = "forksafe"


def boosting_raw(X: np.ndarray, baseline: float, *tree: np.ndarray) -> np.ndarray:
    """The raw score of every row of ``X`` (float64, C order): the rows split between the
    cores when there are many and no other thread is in the parallel kernel."""
    if len(X) >= _PARALLEL_ROWS and _PARALLEL.acquire(blocking=False):
        try:
            return _boosting_raw_parallel(X, baseline, *tree)
        finally:
            _PARALLEL.release()
    return _boosting_raw(X, baseline, *tree)


@njit(cache=True, nogil=True)
def _boosting_block(
    X, i0, raw, roots, depth, child, missing_child, feature, threshold, value
):  # pragma: no cover - compiled
    # Rows i0 .. i0 + _BLOCK - 1 through every tree, trees in order: each row's additions keep
    # scikit-learn's order, whatever block or thread handles it. The block steps down a tree
    # together (interleaved rows: fewer branch misses than a per-row "until leaf" loop) and
    # stops when no row moved (leaves are their own children), not always at the tree's depth.
    m = min(_BLOCK, X.shape[0] - i0)
    nodes = np.empty(_BLOCK, dtype=np.int64)
    for t in range(roots.shape[0]):
        root = roots[t]
        for b in range(m):
            nodes[b] = root
        for _ in range(depth[t]):
            moved = False
            for b in range(m):
                node = nodes[b]
                x = X[i0 + b, feature[node]]
                if np.isnan(x):
                    step = missing_child[node]
                else:
                    step = child[node, 1 if x > threshold[node] else 0]
                moved |= step != node
                nodes[b] = step
            if not moved:
                break
        for b in range(m):
            raw[i0 + b] += value[nodes[b]]


@njit(cache=True, nogil=True)
def _boosting_raw(
    X, baseline, roots, depth, child, missing_child, feature, threshold, value
):  # pragma: no cover - compiled
    raw = np.full(X.shape[0], baseline)
    for i0 in range(0, X.shape[0], _BLOCK):
        _boosting_block(X, i0, raw, roots, depth, child, missing_child, feature, threshold, value)
    return raw


@njit(cache=True, nogil=True, parallel=True)
def _boosting_raw_parallel(
    X, baseline, roots, depth, child, missing_child, feature, threshold, value
):  # pragma: no cover - compiled
    # Row blocks split between the threads; each block writes only its own rows of ``raw``.
    raw = np.full(X.shape[0], baseline)
    for k in prange((X.shape[0] + _BLOCK - 1) // _BLOCK):
        _boosting_block(X, k * _BLOCK, raw, roots, depth, child, missing_child, feature, threshold, value)
    return raw


@njit(cache=True, nogil=True)
def _forest_predict(X, roots, depth, child, feature, threshold, small):  # pragma: no cover - compiled
    # Trees outer, rows inner: one tree's nodes stay in cache while all rows descend it.
    n = X.shape[0]
    n_trees = roots.shape[0]
    p_small = np.zeros(n)
    p_large = np.zeros(n)
    nodes = np.empty(_BLOCK, dtype=np.int64)
    for t in range(n_trees):
        root = roots[t]
        for i0 in range(0, n, _BLOCK):
            m = min(_BLOCK, n - i0)
            for b in range(m):
                nodes[b] = root
            for _ in range(depth[t]):
                for b in range(m):
                    node = nodes[b]
                    nodes[b] = child[node, 1 if X[i0 + b, feature[node]] > threshold[node] else 0]
            for b in range(m):
                p_small[i0 + b] += small[nodes[b], 0]
                p_large[i0 + b] += small[nodes[b], 1]
    out = np.empty(n, dtype=np.int8)
    for i in range(n):
        out[i] = 0 if p_small[i] / n_trees >= p_large[i] / n_trees else 1
    return out
