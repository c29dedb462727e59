"""The one compiled evaluator of scikit-learn's fitted tree ensembles.

``predict_proba`` of a forest, of histogram gradient boosting or of AdaBoost costs little in the
trees themselves; scikit-learn's per-call overhead (input validation per tree, thread dispatch
per tree) dominates at the daemon's sizes. :func:`compile_trees` flattens a fitted model into
arrays once, and a numba kernel sums every row's leaf values in scikit-learn's order, so the
probabilities are *bit-equal* to ``model.predict_proba`` (tests/models/test_trees.py checks this
for every supported type, with NaN inputs, on the scikit-learn range pinned in pyproject.toml).

Supported: ``RandomForestClassifier`` and ``ExtraTreesClassifier`` (the mean of each tree's
stored class fractions, float32 inputs as scikit-learn's trees take them),
``HistGradientBoostingClassifier`` without categorical splits (baseline plus leaf values,
float64 inputs, then the loss's inverse link), and SAMME ``AdaBoostClassifier`` over decision
trees (each leaf's weighted vote, then the softmax of Zhu et al., eq. 15). Anything else gives
None and callers use scikit-learn. treelite 4.8.1 (its GTIL predictor) was measured as the
alternative on 10,000 rows x 100 trees: equal probabilities for forests (boosting within 4.4e-16),
but 3-7x slower than this kernel and slower than scikit-learn itself for forests, and it has no
AdaBoost importer.

This reads scikit-learn's fitted internals (``tree_``, ``_predictors``, ``_loss``), which is why
the range is pinned and tested: re-run tests/models/test_trees.py before widening it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np
from numba import njit, prange

Finish = Callable[[np.ndarray], np.ndarray]

_BLOCK = 8  # rows descending a tree together: their independent load chains overlap
_CHUNK = 512  # rows per thread's share in the parallel kernel
PARALLEL_ROWS = 2_048  # fewer rows: the serial loop (starting the threads costs more than it saves)
# One parallel launch at a time: the fork-safe "workqueue" threading layer must not be entered
# by two threads at once; a caller that finds it busy takes the serial loop (same result).
PARALLEL = threading.Lock()
if numba.config.THREADING_LAYER == "default":
    # GNU OpenMP (numba's first choice when libgomp is found) kills a forked child that runs a
    # parallel kernel after its parent did; "forksafe" takes TBB or workqueue instead.
    numba.config.THREADING_LAYER = "forksafe"


# The columns of ``links`` (one row per node; a leaf's children are itself) and of ``trees``.
LEFT, RIGHT, MISSING, FEATURE = 0, 1, 2, 3  # x <= threshold: left; NaN: missing
ROOT, DEPTH, COLUMN = 0, 1, 2  # first node, steps to the deepest leaf, first sum added to


@dataclass(frozen=True)
class CompiledTrees:
    """Every tree's nodes in flat arrays. A leaf is its own child, so a row stops where its
    child is itself; ``value[leaf]`` (width w) is added to the row's sums ``column .. column +
    w - 1`` of its tree; ``finish`` turns those sums into probabilities."""

    trees: np.ndarray  # (trees, 3) int64: ROOT, DEPTH, COLUMN
    links: np.ndarray  # (nodes, 4) int64: LEFT, RIGHT, MISSING, FEATURE
    threshold: np.ndarray  # (nodes,) float64
    value: np.ndarray  # (nodes, w) float64: what a leaf adds
    start: np.ndarray  # (k,) each row's sums start here (boosting's baseline; zeros otherwise)
    dtype: type  # the input precision the model compares in
    finish: Finish  # sums -> probabilities
    decide: Finish  # sums -> the index of the class the model's own ``predict`` gives
    by_tree: bool = False  # trees outer (large forests), else blocks of rows outer
    allow_nan: bool = True  # False: NaN is refused, as the model itself does

    def raw(self, X: np.ndarray) -> np.ndarray:
        """Each row's leaf values summed in tree order, from ``start``: (rows, k)."""
        X = np.ascontiguousarray(X, dtype=self.dtype)
        if not self.allow_nan and np.isnan(X).any():
            raise ValueError("Input X contains NaN (the model does not accept missing values)")
        if len(X) >= PARALLEL_ROWS and PARALLEL.acquire(blocking=False):
            try:
                return _sum_parallel(
                    X, self.start, self.by_tree, self.trees, self.links, self.threshold, self.value
                ).T
            finally:
                PARALLEL.release()
        return _sum_serial(X, self.start, self.by_tree, self.trees, self.links, self.threshold, self.value).T

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        return self.finish(self.raw(X))

    def predict_index(self, X: np.ndarray) -> np.ndarray:
        """Index into ``model.classes_`` of ``model.predict(X)`` (each kind decides as
        scikit-learn does: not always the argmax of the rounded probabilities)."""
        return self.decide(self.raw(X))

    def warm(self) -> None:
        """Load (or compile) both kernels for this input type now, at fit or load, so the
        daemon's first pass does not pay for it."""
        one = np.zeros((1, int(self.links[:, FEATURE].max()) + 1), dtype=self.dtype)
        _sum_serial(one, self.start, self.by_tree, self.trees, self.links, self.threshold, self.value)
        if PARALLEL.acquire(blocking=False):
            try:
                _sum_parallel(
                    one, self.start, self.by_tree, self.trees, self.links, self.threshold, self.value
                )
            finally:
                PARALLEL.release()


def compile_trees(model: Any) -> CompiledTrees | None:
    """The compiled form of a supported fitted classifier, else None (use its own predict_proba)."""
    from sklearn.ensemble import (
        AdaBoostClassifier,
        ExtraTreesClassifier,
        HistGradientBoostingClassifier,
        RandomForestClassifier,
    )

    kind = type(model)
    if kind in (RandomForestClassifier, ExtraTreesClassifier):
        return _forest(model)
    if kind is HistGradientBoostingClassifier:
        return _boosting(model)
    if kind is AdaBoostClassifier:
        return _adaboost(model)
    return None


def pipeline_proba(pipeline: Any) -> Callable[[np.ndarray], np.ndarray] | None:
    """``pipeline.predict_proba`` with the final step compiled (its preprocessing is the
    pipeline's own ``transform``), or None when the final step is not supported."""
    steps = getattr(pipeline, "steps", None)
    final = compile_trees(pipeline[-1] if steps else pipeline)
    if final is None:
        return None
    if not steps or len(steps) == 1:
        return final.predict_proba
    prepare = pipeline[:-1]
    return lambda X: final.predict_proba(prepare.transform(X))


def verified_proba(
    pipeline: Any, n_features: int, reference_rows: np.ndarray | None = None, seed: int = 0
) -> Callable[[np.ndarray], np.ndarray]:
    """:func:`pipeline_proba` when it equals ``predict_proba`` on test rows of this loaded model
    (ordinary, large, NaN and the caller's rows), else ``predict_proba``: a guard at load for a
    model or library version the tests did not see."""
    compiled = pipeline_proba(pipeline)
    if compiled is None:
        return pipeline.predict_proba
    rng = np.random.default_rng(seed)
    rows = [rng.normal(size=(16, n_features)), rng.exponential(1e6, size=(16, n_features))]
    if reference_rows is not None and len(reference_rows):
        rows.append(np.asarray(reference_rows, dtype=float).reshape(-1, n_features))
    nan_rows = rng.normal(size=(4, n_features))
    nan_rows[:, ::2] = np.nan
    rows.append(nan_rows)
    X = np.vstack(rows)
    try:
        if np.array_equal(compiled(X), pipeline.predict_proba(X)):
            return compiled
    except Exception:  # an internal layout this version does not have: use the pipeline
        pass
    return pipeline.predict_proba


# ---------------------------------------------------------------------------- flattening


def _join(
    trees: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]],
    depths: list[int],
    columns: list[int],
) -> dict[str, np.ndarray]:
    """Per-tree (left, right, missing_left, feature, threshold, value) arrays, with left < 0
    at leaves, as the records and values of :class:`CompiledTrees` (leaves their own children)."""
    sizes = np.array([len(t[0]) for t in trees], dtype=np.int64)
    roots = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    offset = np.repeat(roots, sizes)
    left = np.concatenate([t[0] for t in trees]).astype(np.int64)
    leaf = left < 0
    index = np.arange(len(left), dtype=np.int64)
    links = np.zeros((len(left), 4), dtype=np.int64)
    links[:, LEFT] = np.where(leaf, index, left + offset)
    links[:, RIGHT] = np.where(leaf, index, np.concatenate([t[1] for t in trees]).astype(np.int64) + offset)
    missing_left = np.concatenate([t[2] for t in trees]).astype(bool)
    links[:, MISSING] = np.where(missing_left, links[:, LEFT], links[:, RIGHT])
    links[:, FEATURE] = np.where(leaf, 0, np.concatenate([t[3] for t in trees]))
    threshold = np.concatenate([t[4] for t in trees]).astype(np.float64)
    table = np.column_stack([roots, depths, columns]).astype(np.int64)
    value = np.ascontiguousarray(np.concatenate([t[5] for t in trees]), dtype=np.float64)
    return {"trees": table, "links": links, "threshold": threshold, "value": value}


def _tree_arrays(tree: Any, leaf_value: np.ndarray) -> tuple[np.ndarray, ...]:
    t = tree.tree_
    return (t.children_left, t.children_right, t.missing_go_to_left, t.feature, t.threshold, leaf_value)


def _fractions(tree: Any) -> np.ndarray:
    # As DecisionTreeClassifier.predict_proba: the leaf's stored class fractions, as they are
    # (scikit-learn >= 1.4 stores fractions and no longer renormalises them).
    return np.asarray(tree.tree_.value[:, 0, : tree.n_classes_], dtype=np.float64)


def _single_output_trees(model: Any) -> bool:
    from sklearn.tree import DecisionTreeClassifier

    return getattr(model, "n_outputs_", 1) == 1 and all(
        isinstance(e, DecisionTreeClassifier) and e.n_outputs_ == 1 for e in model.estimators_
    )


def _forest(model: Any) -> CompiledTrees | None:
    if not _single_output_trees(model):
        return None
    k, n_trees = len(model.classes_), len(model.estimators_)
    trees = [_tree_arrays(e, _fractions(e)) for e in model.estimators_]
    if any(t[5].shape[1] != k for t in trees):
        return None
    arrays = _join(trees, [e.tree_.max_depth for e in model.estimators_], [0] * n_trees)
    # The forest sums the trees' fractions from zeros, in tree order, then divides by their
    # count; it predicts the most probable class (ties to the first).
    return CompiledTrees(
        start=np.zeros(k),
        dtype=np.float32,
        finish=lambda raw: raw / n_trees,
        decide=lambda raw: np.argmax(raw / n_trees, axis=1),
        by_tree=True,
        **arrays,
    )


def _boosting_trees(model: Any, column: int | None = None) -> tuple[list, list[int], list[int]] | None:
    """A fitted histogram gradient boosting model's trees as :func:`_join` takes them, each
    adding to the sum of its class (``column`` None) or to ``column``; None with categorical
    splits (not read here)."""
    if getattr(model, "is_categorical_", None) is not None and np.any(model.is_categorical_):
        return None
    trees, columns, depth = [], [], []
    for predictors in model._predictors:
        for k, predictor in enumerate(predictors):
            nodes = predictor.nodes
            if nodes["is_categorical"].any():
                return None
            leaf = nodes["is_leaf"].astype(bool)
            left = np.where(leaf, -1, nodes["left"].astype(np.int64))
            trees.append(
                (left, nodes["right"], nodes["missing_go_to_left"], nodes["feature_idx"],
                 nodes["num_threshold"], nodes["value"].reshape(-1, 1))
            )  # fmt: skip
            columns.append(k if column is None else column)
            depth.append(int(nodes["depth"].max()))
    return trees, columns, depth


def compile_regressors(models: list) -> CompiledTrees | None:
    """Fitted single-output ``HistGradientBoostingRegressor`` models (identity link: the
    squared, absolute and quantile losses) as the columns of one :class:`CompiledTrees`:
    ``raw(X)[:, k]`` is bit-equal to ``models[k].predict(X)``. None for anything else."""
    from sklearn.ensemble import HistGradientBoostingRegressor

    trees, columns, depth = [], [], []
    for k, model in enumerate(models):
        if (
            type(model) is not HistGradientBoostingRegressor
            or model._loss.link.__class__.__name__ != "IdentityLink"
        ):
            return None
        parts = _boosting_trees(model, k)
        if parts is None:
            return None
        trees += parts[0]
        columns += parts[1]
        depth += parts[2]
    if not trees:
        return None
    baseline = np.array([float(np.asarray(m._baseline_prediction).ravel()[0]) for m in models])
    return CompiledTrees(
        start=baseline, dtype=np.float64, finish=_identity, decide=_identity, **_join(trees, depth, columns)
    )


def _identity(raw: np.ndarray) -> np.ndarray:
    return raw


def _boosting(model: Any) -> CompiledTrees | None:
    parts = _boosting_trees(model)
    if parts is None:
        return None
    trees, columns, depth = parts
    per_iteration = model.n_trees_per_iteration_
    baseline = np.asarray(model._baseline_prediction, dtype=np.float64).reshape(-1)
    loss = model._loss

    def finish(raw: np.ndarray) -> np.ndarray:
        return loss.predict_proba(raw.ravel() if per_iteration == 1 else np.ascontiguousarray(raw))

    def decide(raw: np.ndarray) -> np.ndarray:
        # As HistGradientBoostingClassifier.predict: binary on the raw score's sign (> 0).
        return (raw.ravel() > 0).astype(np.int64) if per_iteration == 1 else np.argmax(raw, axis=1)

    arrays = _join(trees, depth, columns)
    return CompiledTrees(
        start=baseline,
        dtype=np.float64,
        finish=finish,
        decide=decide,
        **arrays,
    )


def _adaboost(model: Any) -> CompiledTrees | None:
    if getattr(model, "algorithm", "SAMME") not in ("SAMME", "deprecated") or not _single_output_trees(model):
        return None
    classes = model.classes_
    k = len(classes)
    if k < 2:
        return None
    trees = []
    for tree, w in zip(model.estimators_, model.estimator_weights_, strict=False):
        # Each leaf votes for its predicted class with the tree's weight, against the others.
        predicted = tree.classes_.take(np.argmax(tree.tree_.value[:, 0, : tree.n_classes_], axis=1))
        votes = np.where((predicted == classes[:, None]).T, w, -1 / (k - 1) * w)
        trees.append(_tree_arrays(tree, votes))
    weight_sum = model.estimator_weights_.sum()

    def decision(votes: np.ndarray) -> np.ndarray:  # AdaBoostClassifier.decision_function
        votes = votes / weight_sum
        if k == 2:
            votes[:, 0] *= -1
            return votes.sum(axis=1)
        return votes

    def finish(votes: np.ndarray) -> np.ndarray:  # AdaBoostClassifier.predict_proba
        from sklearn.utils.extmath import softmax

        d = decision(votes)
        d = np.vstack([-d, d]).T / 2 if k == 2 else d / (k - 1)
        return softmax(d, copy=False)

    def decide(votes: np.ndarray) -> np.ndarray:  # AdaBoostClassifier.predict
        d = decision(votes)
        return (d > 0).astype(np.int64) if k == 2 else np.argmax(d, axis=1)

    arrays = _join(trees, [e.tree_.max_depth for e in model.estimators_], [0] * len(trees))
    return CompiledTrees(
        start=np.zeros(k),
        dtype=np.float32,
        finish=finish,
        decide=decide,
        allow_nan=False,
        **arrays,
    )


# ---------------------------------------------------------------------------- the kernel


@njit(nogil=True)
def _block(X, trees, links, threshold, value, raw, at):  # pragma: no cover - compiled
    # The rows of ``X`` (at most _BLOCK: a view) through ``trees`` in order; ``raw`` is the view
    # of their sums, ``at`` their current nodes. The rows step down a tree together
    # (interleaved: fewer branch misses than a per-row loop) until none moved (leaves are their
    # own children). ``m`` known <= _BLOCK here lets the compiler unroll the row loops.
    m = min(_BLOCK, X.shape[0])
    for t in range(trees.shape[0]):
        for b in range(m):
            at[b] = trees[t, ROOT]
        for _ in range(trees[t, DEPTH]):
            moved = False
            for b in range(m):
                node = at[b]
                x = X[b, links[node, FEATURE]]
                if np.isnan(x):
                    step = links[node, MISSING]
                else:
                    step = links[node, RIGHT if x > threshold[node] else LEFT]
                moved |= step != node
                at[b] = step
            if not moved:
                break
        col = trees[t, COLUMN]
        for j in range(value.shape[1]):
            for b in range(m):  # raw is (k, rows): a block's sums are contiguous
                raw[col + j, b] += value[at[b], j]


@njit(nogil=True)
def _rows(X, by_tree, trees, links, threshold, value, raw):  # pragma: no cover - compiled
    # Every row of ``X`` through every tree. ``by_tree``: trees outer, so one tree's nodes stay
    # in cache for all these rows (large forests); else blocks of rows outer, so a block and its
    # sums stay in cache through every tree (small boosted trees). Either way each row's
    # additions keep tree order, whatever thread runs it: the sums are scikit-learn's, bit for bit.
    at = np.empty(_BLOCK, dtype=np.int64)
    n = X.shape[0]
    if by_tree:
        for t in range(trees.shape[0]):
            for i in range(0, n, _BLOCK):
                _block(
                    X[i : i + _BLOCK], trees[t : t + 1], links, threshold, value, raw[:, i : i + _BLOCK], at
                )
    else:
        for i in range(0, n, _BLOCK):
            _block(X[i : i + _BLOCK], trees, links, threshold, value, raw[:, i : i + _BLOCK], at)


@njit(cache=True, nogil=True)
def _started(n, start):  # pragma: no cover - compiled
    raw = np.empty((start.shape[0], n))
    for j in range(start.shape[0]):
        raw[j, :] = start[j]
    return raw


@njit(cache=True, nogil=True)
def _sum_serial(X, start, by_tree, trees, links, threshold, value):  # pragma: no cover - compiled
    raw = _started(X.shape[0], start)
    _rows(X, by_tree, trees, links, threshold, value, raw)
    return raw


@njit(cache=True, nogil=True, parallel=True)
def _sum_parallel(X, start, by_tree, trees, links, threshold, value):  # pragma: no cover - compiled
    # Row chunks split between the threads; each chunk writes only its own rows of ``raw``.
    raw = _started(X.shape[0], start)
    for c in prange((X.shape[0] + _CHUNK - 1) // _CHUNK):
        rows = slice(c * _CHUNK, (c + 1) * _CHUNK)
        _rows(X[rows], by_tree, trees, links, threshold, value, raw[:, rows])
    return raw
