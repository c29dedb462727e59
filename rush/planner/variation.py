"""Variation predictors: which pending jobs would suffer performance variability if started now.

A predictor answers ``predict(jobs, now) -> list[bool]`` for jobs that carry a workload type
(``job.wtype``, or ``job.tags["wtype"]`` as the job_submit plugin records it). Flagged jobs
become ``PendingJob.variable``; the core then skips (the daemon holds) them, at most
``skip_limit`` times. Predictors are registered by name: the shipped ``rule`` and ``learned``
(:class:`LearnedVariationPredictor`, the model of ``rush train variability`` on the feature
store's current window; per-job class and probabilities go to the journal through
``job_outputs``).

:class:`RuleVariationPredictor` is the rule "flag jobs whose workload type is ``network``
while the mean of the named counter over the last 5 minutes exceeds X". It reads the
counter from the feature store (``FeatureStore.window_features(None, now - window, now)``:
the mean over nodes of each node's mean) or from any callable ``(start, end) -> mean``, so
tests and the simulator use the same rule. :func:`variable_intervals` turns a counter time
series into the (start, end) intervals during which the rule fires, for
``rush.simulator.engine.SimInputs.variable_intervals``.

Where a job would run (issue 20): a predictor may also answer for given nodes. The learned
one reads job-node windows at a job's tentative placement when its model uses job-node
features (``uses_job_nodes``; :mod:`rush.planner.variation_placement` asks the core where the
job would start, predicts there and reruns the pass). For variability-aware placement
(``placement = "variability"``) each predictor says which leaf switches (pods) are quiet
(:meth:`quiet_leaves`), documented rule: a pod is quiet when the learned model's prediction
for a job of the sensitive workload type placed on the pod's nodes is not a variation class,
or, for the rule, when the counter's mean over the pod's nodes in the window is at most the
threshold. No data on a pod means quiet (a silent collector must not steer jobs).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from rush.core.variation_flag import VariationFlagRule, variation_flags
from rush.errors import ConfigError

# (start, end) -> mean of the counter over [start, end), or None when there is no sample.
CounterMean = Callable[[float, float], float | None]


@runtime_checkable
class VariationPredictor(Protocol):
    name: str

    def predict(self, jobs: Sequence[Any], now: float) -> list[bool]:
        """One flag per job: True if it is predicted to suffer variability when started at ``now``."""
        ...


_PREDICTORS: dict[str, Callable[..., VariationPredictor]] = {}


def register_predictor(name: str) -> Callable[[type], type]:
    def decorate(cls: type) -> type:
        cls.name = name
        _PREDICTORS[name] = cls
        return cls

    return decorate


def predictor_names() -> list[str]:
    return sorted(_PREDICTORS)


def get_predictor(name: str, **options: Any) -> VariationPredictor:
    if name not in _PREDICTORS:
        raise ConfigError(
            f"unknown variation predictor {name!r}",
            where="variation.predictor",
            fix=f"use one of: {', '.join(predictor_names())}",
        )
    return _PREDICTORS[name](**options)


def workload_type(job: Any) -> str:
    """A job's workload type: ``job.wtype``, else its rush tag ``wtype``, else ""."""
    wtype = getattr(job, "wtype", None)
    if wtype is None:
        wtype = (getattr(job, "tags", None) or {}).get("wtype", "")
    return str(wtype)


def job_nodes(job: Any, hosts: Sequence[str] | None = None) -> int | None:
    """A job's size in nodes, for the per-size flag threshold: its ``nodes`` (the contention
    shell's jobs), else its request's node count, else the nodes of its tentative placement
    ``hosts``; None: unknown (a request for cores anywhere, not placed)."""
    nodes = getattr(job, "nodes", None)
    if isinstance(nodes, int) and not isinstance(nodes, bool) and nodes > 0:
        return nodes
    request = getattr(job, "request", None)
    if request is not None and getattr(request, "nodes", 0) > 0:
        return int(request.nodes)
    return len(hosts) if hosts else None


def store_counter(store_path: str | Path, counter: str) -> CounterMean:
    """Mean of ``counter`` over [start, end) from the feature store (all nodes)."""
    from rush.collect.store import FeatureStore

    def mean(start: float, end: float) -> float | None:
        with FeatureStore(store_path) as store:
            return store.window_features(None, start, end).get(f"mean_{counter}")

    return mean


class _Unknown(Exception):
    """No prediction possible now (the reason is journaled; the job is not flagged)."""


@register_predictor("rule")
class RuleVariationPredictor:
    """Flag ``workload_type`` jobs while the counter's mean over the last ``window`` s exceeds ``threshold``.

    ``source`` is a feature-store path or a callable ``(start, end) -> mean | None``.
    No data in the window means no flag (a silent collector must not hold the queue).
    """

    name = "rule"

    def __init__(
        self,
        source: str | Path | CounterMean,
        counter: str = "ib_xmit_bytes_per_s",
        threshold: float = 0.0,
        window: float = 300.0,
        workload_type: str = "network",
    ) -> None:
        if window <= 0:
            raise ConfigError("window must be > 0 seconds", where="variation.window", fix="e.g. 300")
        self.counter = counter
        self.threshold = float(threshold)
        self.window = float(window)
        self.workload_type = workload_type
        self.mean: CounterMean = source if callable(source) else store_counter(source, counter)
        self.store_path: Path | None = None if callable(source) else Path(source)
        # The last reading, kept for the journal's model outputs.
        self.last_mean: float | None = None

    def busy(self, now: float) -> bool:
        self.last_mean = self.mean(now - self.window, now)
        return self.last_mean is not None and self.last_mean > self.threshold

    def predict(self, jobs: Sequence[Any], now: float) -> list[bool]:
        sensitive = [workload_type(j) == self.workload_type for j in jobs]
        if not any(sensitive):
            self.last_mean = None
            return [False] * len(jobs)
        busy = self.busy(now)
        return [busy and s for s in sensitive]

    def quiet_leaves(self, now: float, leaves: Mapping[int, Sequence[str]]) -> dict[int, bool]:
        """Per leaf: the counter's mean over its nodes in the window is at most the threshold.

        A callable source gives one machine-wide mean, so every leaf gets the same answer."""
        if self.store_path is None:
            busy = self.busy(now)
            return {leaf: not busy for leaf in leaves}
        if not self.store_path.is_file():  # no store, no data: every leaf quiet (none created)
            return dict.fromkeys(leaves, True)
        from rush.collect.store import FeatureStore

        key = f"mean_{self.counter}"
        out: dict[int, bool] = {}
        with FeatureStore(self.store_path) as store:
            for leaf, hosts in leaves.items():
                mean = store.window_features(list(hosts), now - self.window, now).get(key) if hosts else None
                out[leaf] = mean is None or not math.isfinite(mean) or mean <= self.threshold
        return out


def variable_intervals(
    times: np.ndarray, values: np.ndarray, threshold: float, window: float = 300.0
) -> np.ndarray:
    """The (k, 2) sorted, disjoint [start, end) intervals where the rule fires.

    At time t the rule averages the samples with ``t - window <= ts < t`` (the feature
    store's window) and fires when that mean exceeds ``threshold``. Which samples are in
    the window changes only at a sample time or a sample time plus ``window``, so the
    rule is evaluated once between consecutive breakpoints (exact, not sampled on a grid).
    """
    times = np.asarray(times, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    if times.shape != values.shape or times.ndim != 1:
        raise ValueError("times and values must be 1-d arrays of the same length")
    if window <= 0:
        raise ValueError("window must be > 0")
    if len(times) == 0:
        return np.zeros((0, 2))
    order = np.argsort(times, kind="stable")
    times, values = times[order], values[order]
    cumulative = np.concatenate(([0.0], np.cumsum(values)))
    breaks = np.unique(np.concatenate((times, times + window)))
    # Membership is constant on (b_k, b_k+1]; evaluate inside each piece.
    probe = (breaks[:-1] + breaks[1:]) / 2.0
    lo = np.searchsorted(times, probe - window, side="left")
    hi = np.searchsorted(times, probe, side="left")
    count = hi - lo
    mean = np.divide(
        cumulative[hi] - cumulative[lo], count, out=np.full(len(probe), -np.inf), where=count > 0
    )
    fire = mean > threshold
    if not fire.any():
        return np.zeros((0, 2))
    # Merge consecutive firing pieces into intervals.
    edges = np.diff(np.concatenate(([False], fire, [False])).astype(np.int8))
    starts = np.flatnonzero(edges == 1)
    ends = np.flatnonzero(edges == -1)
    return np.column_stack((breaks[starts], breaks[ends]))


# A feature store, or its path (opened at each prediction; the collector service writes it).
StoreSource = Any


@register_predictor("learned")
class LearnedVariationPredictor:
    """The trained variability model (``rush train variability``) on the current window.

    At each prediction (one per daemon cycle) the all-node features of
    ``[now - window, now)`` (``window`` from the model card: what the model was trained on)
    and the latest probe come from :func:`rush.models.variability.features.window_features_for`,
    the function that built the training set; each pending job adds its workload type
    one-hot. A job is flagged when the probability of ``classes`` (default: the card's
    ``variation_classes``, e.g. ``["variation"]``; configurable in ``variation.classes``) reaches
    the card's flag threshold (chosen on held-out campaign data by ``rush train variability``):
    its ``flag_threshold`` for every job, or, with ``flag_by_size`` (the setting
    ``variation.flag_by_size``), the threshold of the job's size in the card's
    ``flag_threshold_by_size`` (``size_table`` stands in for the table of a card trained before
    cards carried one: the contention study's); a card without a threshold, or classes other
    than the card's, flag on the most probable class. The rule is the core's
    (:mod:`rush.core.variation_flag`), which the contention simulator's learned oracle applies
    too (its RUSH-SIZE is ``flag_by_size``, its RUSH the default). A job's size is :func:`job_nodes`. The journal's model outputs carry the class, the probabilities,
    the rule, the scope and the window of every prediction.

    Scope: a pending job has no nodes yet, so :meth:`predict` reads all-node features; a
    model trained on job-node features (``uses_job_nodes``) is then fed the all-node values
    under the job-node names. :meth:`predict_on` reads the job-node window on the nodes the
    core would give the job (its tentative placement), as in training; the planner calls it
    for the jobs a pass would start (:mod:`rush.planner.variation_placement`). The window is
    read once for all of a call's placements and kept while the store's window content is the
    same (:class:`rush.models.variability.features.WindowReader`: the planner's reruns of a
    pass and instants between two counter ticks), and the model is called once per call.

    Missing data never holds a job: the store absent, a model feature whose metric the store
    has never held (a model from another machine), no sample of any model feature in the
    window, or an unknown workload type make the prediction "unknown", the job is not
    flagged, and the reason is in the journal's model outputs. A feature without a sample
    while others have some is imputed as in training (the pipeline's median); the count is
    journaled. A tampered model file or card is refused when the predictor is built.
    """

    name = "learned"

    def __init__(
        self,
        source: StoreSource = None,
        model: str | Path | None = None,
        classes: Sequence[str] | None = None,
        flag_by_size: bool = False,
        size_table: Mapping[str, float] | Mapping[int, float] | None = None,
    ) -> None:
        from rush.models.variability.features import (
            PLACEMENT_FEATURES,
            PROBE_FEATURES,
            WTYPE_FEATURES,
            WTYPES,
        )
        from rush.models.variability.train import load_variability_model

        if model is None:
            raise ConfigError(
                "the learned variation predictor needs a model file",
                where="variation.model",
                fix="set variation.model to a file written by rush train variability",
            )
        if source is None:
            raise ConfigError(
                "the learned variation predictor reads the feature store",
                where="variation.store",
                fix="set variation.store to the collector's feature store",
            )
        from rush.models.trees import verified_proba

        self.pipeline, self.card = load_variability_model(model)
        # The trees compiled, checked equal to predict_proba now (see rush.models.trees).
        self._proba = verified_proba(self.pipeline, len(self.card["features"]))
        self.model_path = str(model)
        self.features: list[str] = list(self.card["features"])
        self.window = float(self.card["window"])
        self.class_names: list[str] = list(self.card["class_names"])
        wanted = list(classes) if classes else list(self.card["variation_classes"])
        unknown = [c for c in wanted if c not in ("none", "little", "variation")]
        if unknown:
            raise ConfigError(
                f"unknown variation class(es) {unknown}",
                where="variation.classes",
                fix="some of: little, variation",
            )
        self.classes = wanted
        # The card's flag threshold (P(variation classes) chosen on held-out data) applies to the
        # classes it was chosen for; other configured classes fall back to the most probable class.
        threshold = self.card.get("flag_threshold")
        same = sorted(wanted) == sorted(self.card["variation_classes"])
        self.flag_threshold: float | None = float(threshold) if threshold is not None and same else None
        # The card's per-size table, like its one threshold, holds for the classes it was chosen for.
        table = (size_table or self.card.get("flag_threshold_by_size")) if flag_by_size and same else None
        self.flag_rule = VariationFlagRule.of(self.flag_threshold, table)
        self._class_columns = [k for k, c in enumerate(self.class_names) if c in wanted]
        self._provenance = {"variation_scope": self.card["scope"], "variation_window_s": self.window}
        self.source = source
        self._wtype_features = set(WTYPE_FEATURES)
        # What the job brings (its type, its placement) is no reading of the store: a prediction
        # needs at least one counter or probe value, as before.
        self._not_readings = self._wtype_features | set(PLACEMENT_FEATURES)
        self._wtypes = frozenset(WTYPES)
        self._probe_features = set(PROBE_FEATURES)
        # Counter metrics the model reads: ``<scope>_<stat>_<metric>`` -> metric.
        self._metrics = sorted(
            {
                f.split("_", 2)[2]
                for f in self.features
                if f.startswith(("job_", "all_")) and f.count("_") >= 2
            }
        )
        # The model reads job-node features: predictions need the job's tentative placement.
        self.uses_job_nodes = any(f.startswith("job_") for f in self.features)
        self._uses_all_nodes = any(f.startswith("all_") for f in self.features)
        self._uses_probe = any(f in self._probe_features for f in self.features)
        self.last_reason: str | None = None
        self.last_imputed = 0
        self._outputs: dict[Any, dict[str, Any]] = {}
        self._store: Any = None  # kept open between cycles (opening and closing cost ~40 ms)
        self._reader: Any = None  # the last window read (WindowReader), reused while it serves

    # -- the window ------------------------------------------------------------------------
    def _open(self) -> Any:
        from rush.collect.store import FeatureStore

        if hasattr(self.source, "window_features"):
            return self.source
        path = Path(self.source)
        if not path.is_file():  # FeatureStore() would create an empty store
            self.close()
            raise _Unknown(f"feature store absent: {path}")
        if self._store is None:
            try:
                self._store = FeatureStore(path)
            except Exception as exc:  # a corrupt or foreign file: no prediction, not a crash
                raise _Unknown(f"feature store unusable: {str(exc).splitlines()[0][:200]}") from None
        return self._store

    def close(self) -> None:
        self._reader = None
        if self._store is not None:
            self._store.close()
            self._store = None

    def _window(self, now: float) -> Any:
        """The window reader for ``now``: the last one while the store's window content is the
        same (see WindowReader.serves), else a new one (raises _Unknown without a store)."""
        from rush.models.variability.features import WindowReader

        store = self._open()
        if self._reader is None or not self._reader.serves(store, now, self.window):
            self._reader = WindowReader(store, now, self.window)
        return self._reader

    def current_features(self, now: float) -> dict[str, float]:
        """The model's features shared by every job at ``now`` (raises _Unknown with the reason)."""
        from rush.models.variability.features import store_metrics

        store = self._open()
        absent = [m for m in self._metrics if m not in store_metrics(store)]
        if absent:
            raise _Unknown(
                f"model features not in the store's schema: {', '.join(absent[:5])}"
                + (f" (+{len(absent) - 5})" if len(absent) > 5 else "")
                + " (a model trained on another machine's counters?)"
            )
        features = self._window(now).all_nodes("all", with_probe=self._uses_probe)
        # Job-node features live: the job's nodes are unknown while it is pending (see class doc).
        for name in self.features:
            if name.startswith("job_"):
                alias = "all_" + name[4:]
                if alias in features:
                    features[name] = features[alias]
        readings = [f for f in self.features if f not in self._not_readings]
        if readings and not any(f in features and math.isfinite(features[f]) for f in readings):
            raise _Unknown(f"no sample of the model's features in [{now - self.window:.0f}, {now:.0f})")
        self.last_imputed = sum(1 for f in readings if f not in features)
        return features

    def features_on(self, now: float, hosts: Sequence[str] | None) -> dict[str, float]:
        """The model's window features for a job placed on ``hosts`` (None: not placed, the
        all-node window of :meth:`current_features`); raises _Unknown with the reason."""
        if hosts is None or not self.uses_job_nodes:
            return self.current_features(now)
        features = self.current_features(now) if self._uses_all_nodes else {}
        for name in [f for f in features if f.startswith("job_")]:
            del features[name]  # the aliases of current_features: the real ones follow
        features |= self._window(now).table([list(hosts)], "job", with_probe=self._uses_probe).row(0)
        readings = [f for f in self.features if f not in self._not_readings]
        if readings and not any(f in features and math.isfinite(features[f]) for f in readings):
            raise _Unknown(
                f"no sample of the model's features on the job's nodes in [{now - self.window:.0f}, {now:.0f})"
            )
        self.last_imputed = sum(1 for f in readings if f not in features)
        return features

    def predict_on(
        self, jobs: Sequence[Any], now: float, hosts: Sequence[Sequence[str] | None]
    ) -> list[bool]:
        """Flags for ``jobs`` each placed on its ``hosts`` (job-node windows at the tentative
        placement; a job with None is predicted on the all-node window).

        The answers of :meth:`features_on` then :meth:`predict_from` per distinct placement,
        computed at once: the window is read once for all placements' nodes, each placement's
        row is assembled from the table, and the model is called once for every (placement,
        workload type) row (tests/planner/test_variation_batch.py asserts equality)."""
        groups: dict[tuple[str, ...] | None, list[int]] = {}
        for k, h in enumerate(hosts):
            groups.setdefault(None if h is None or not self.uses_job_nodes else tuple(h), []).append(k)
        rows, failed = self._placement_rows(list(groups), now)
        types = [workload_type(j) for j in jobs]
        # One model row per (placement, known workload type).
        wanted: dict[tuple[int, str], int] = {}
        for g, members in enumerate(groups.values()):
            if g not in failed:
                for k in members:
                    if types[k] in self._wtypes:
                        wanted.setdefault((g, types[k]), len(wanted))
        nodes = [{} if key is None else {"variation_nodes": _short_hosts(key)} for key in groups]
        answers = self._answers(rows, wanted, nodes)
        outputs: dict[Any, dict[str, Any]] = {}
        flags: list[bool] = [False] * len(jobs)
        asked: list[tuple[int, int]] = []  # (job, its model row)
        reason = None
        for g, members in enumerate(groups.values()):
            if g in failed:
                reason = failed[g]
                out = {"variation_class": "unknown", "variation_reason": reason} | nodes[g]
                for k in members:
                    outputs[getattr(jobs[k], "job_id", id(jobs[k]))] = dict(out)
                continue
            self.last_imputed = int(rows.imputed[g])
            for k in members:
                w = types[k]
                if (g, w) in wanted:
                    asked.append((k, wanted[g, w]))
                    out = answers.outputs[wanted[g, w]]
                else:
                    out = {
                        "variation_class": "unknown",
                        "variation_reason": f"workload type {w[:40]!r} unknown to the model",
                    } | nodes[g]
                outputs[getattr(jobs[k], "job_id", id(jobs[k]))] = out
        if asked:
            who, row = (list(c) for c in zip(*asked, strict=True))
            sizes = [job_nodes(jobs[k], hosts[k]) for k in who]
            for k, flag in zip(who, self._flags(answers.names[row], answers.proba[row], sizes), strict=True):
                flags[k] = flag
            self._journal_thresholds(outputs, [jobs[k] for k in who], sizes)
        self._outputs = outputs
        self.last_reason = reason
        return flags

    def _placement_rows(
        self, keys: Sequence[tuple[str, ...] | None], now: float
    ) -> tuple[_Rows, dict[int, str]]:
        """The model's feature row of each placement (None: the all-node window) as
        :meth:`features_on` gives it, and the placements without a prediction (index -> reason)."""
        from rush.models.variability.features import vector

        rows = _Rows(np.full((len(keys), len(self.features)), np.nan), np.zeros(len(keys), dtype=np.int64))
        failed: dict[int, str] = {}
        shared: dict[str, float] = {}
        shared_error = None
        if None in keys or self._uses_all_nodes:
            try:
                shared = self.current_features(now)
            except _Unknown as exc:  # no store, a foreign schema or an empty all-node window
                shared_error = str(exc)
        readings = [m for m, f in enumerate(self.features) if f not in self._not_readings]
        if None in keys:
            if shared_error is not None:
                failed[keys.index(None)] = shared_error
            else:
                rows.values[keys.index(None)] = vector(self.features, shared)
                rows.imputed[keys.index(None)] = self.last_imputed
        placed = [g for g, key in enumerate(keys) if key is not None]
        if not placed:
            return rows, failed
        try:
            if self._uses_all_nodes and shared_error is not None:
                raise _Unknown(shared_error)
            reader = self._window(now)
        except _Unknown as exc:
            return rows, failed | dict.fromkeys(placed, str(exc))
        # As features_on: the job-node window over the all-node features (without their job_ aliases).
        if self._uses_all_nodes:
            base = vector(self.features, {f: v for f, v in shared.items() if not f.startswith("job_")})
        else:
            base = np.full(len(self.features), np.nan)
        table = reader.table([keys[g] for g in placed], "job", with_probe=self._uses_probe)
        column = {name: c for c, name in enumerate(table.names)}
        take = [(m, column[f]) for m, f in enumerate(self.features) if f in column]
        values = np.repeat(base[None, :], len(placed), axis=0)
        if take:
            model_cols, table_cols = (list(c) for c in zip(*take, strict=True))
            found = table.values[:, table_cols]
            values[:, model_cols] = np.where(np.isnan(found), values[:, model_cols], found)
        held = ~np.isnan(values[:, readings])
        usable = (
            (held & np.isfinite(values[:, readings])).any(axis=1) if readings else np.ones(len(placed), bool)
        )
        rows.values[placed] = values
        rows.imputed[placed] = len(readings) - held.sum(axis=1)
        window = f"[{now - self.window:.0f}, {now:.0f})"
        for g, ok in zip(placed, usable, strict=True):
            if not ok:
                failed[g] = f"no sample of the model's features on the job's nodes in {window}"
        return rows, failed

    def _answers(
        self, rows: _Rows, wanted: Mapping[tuple[int, str], int], nodes: Sequence[dict[str, str]]
    ) -> _Answers:
        """The class probabilities and journal output of each wanted (placement, workload type)
        row, in one model call; ``nodes[placement]`` is added to its outputs."""
        from rush.models.variability.features import WTYPES

        if not wanted:
            return _Answers(np.zeros((0, len(self.class_names))), np.zeros(0, dtype=object), [])
        pairs = list(wanted)
        X = rows.values[[g for g, _ in pairs]]
        for w in WTYPES:  # the one-hot, as wtype_features gives it
            if f"wtype_{w}" in self.features:
                X[:, self.features.index(f"wtype_{w}")] = [1.0 if wt == w else 0.0 for _, wt in pairs]
        proba = self._proba(X)
        names = np.asarray(self.class_names, dtype=object)[proba.argmax(axis=1)]
        imputed = rows.imputed.tolist()
        outputs = []
        digits = [4] * len(self.class_names)
        for (g, _), name, p in zip(pairs, names, proba.tolist(), strict=True):
            out: dict[str, Any] = {
                "variation_class": str(name),
                "variation_p": dict(zip(self.class_names, map(round, p, digits), strict=True)),
                **self._provenance,
            }
            if imputed[g]:
                out["variation_imputed"] = imputed[g]
            outputs.append(out | nodes[g])
        return _Answers(proba, names, outputs)

    def _journal_thresholds(
        self, outputs: dict[Any, dict[str, Any]], asked: Sequence[Any], sizes: Sequence[int | None]
    ) -> None:
        """Each asked job's output gets what decided it: the threshold applied to its size (and the
        table's size it came from), not the card's whole table."""
        said = {n: self.flag_rule.journal(self.classes, n) for n in set(sizes)}
        for job, n in zip(asked, sizes, strict=True):
            key = getattr(job, "job_id", id(job))
            outputs[key] = outputs[key] | said[n]  # a copy: rows are shared by jobs alike

    def _flags(self, names: np.ndarray, proba: np.ndarray, sizes: Sequence[int | None]) -> list[bool]:
        """The core's flag rule (:func:`rush.core.variation_flag.variation_flags`) for model rows of
        jobs of ``sizes`` nodes (None: unknown)."""
        p_variation = proba[:, self._class_columns].sum(axis=1)
        return variation_flags(self.flag_rule, p_variation, np.isin(names, self.classes), sizes)

    def quiet_leaves(
        self, now: float, leaves: Mapping[int, Sequence[str]], wtype: str = "network"
    ) -> dict[int, bool]:
        """Per leaf: a ``wtype`` job placed on its nodes is not predicted in a variation class.

        With an all-node model every leaf gets the same answer; no prediction means quiet."""
        from types import SimpleNamespace

        probe = [SimpleNamespace(job_id=("leaf", leaf), wtype=wtype) for leaf in leaves]
        saved = self._outputs
        try:
            flags = self.predict_on(probe, now, [list(h) for h in leaves.values()])
        finally:
            self._outputs = saved
        return {leaf: not f for leaf, f in zip(leaves, flags, strict=True)}

    def classify(self, features: dict[str, float], wtypes: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(predicted class names, class probabilities (n, classes)) for one row per workload type."""
        from rush.models.variability.features import vector, wtype_features

        X = np.vstack([vector(self.features, features | wtype_features(w)) for w in wtypes])
        proba = self._proba(X)
        return np.asarray(self.class_names, dtype=object)[proba.argmax(axis=1)], proba

    # -- the predictor interface --------------------------------------------------------------
    def predict(self, jobs: Sequence[Any], now: float) -> list[bool]:
        self._outputs = {}
        self.last_reason = None
        if not jobs:
            return []
        try:
            features = self.current_features(now)
        except _Unknown as exc:
            self.last_reason = str(exc)
            for j in jobs:
                self._outputs[getattr(j, "job_id", id(j))] = {
                    "variation_class": "unknown",
                    "variation_reason": str(exc),
                }
            return [False] * len(jobs)
        return self.predict_from(features, jobs)

    def predict_from(self, features: dict[str, float], jobs: Sequence[Any]) -> list[bool]:
        """Flags for ``jobs`` given this cycle's window features (one model row per workload type;
        each job's flag by its size, :func:`job_nodes`)."""
        self._outputs = {}
        types = [workload_type(j) for j in jobs]
        known = sorted({w for w in types if w in self._wtypes})
        outputs_by_type: dict[str, dict[str, Any]] = {}
        flags = [False] * len(jobs)
        asked: list[int] = []
        sizes: list[int | None] = []
        if known:
            names, proba = self.classify(features, known)
            row = {w: k for k, w in enumerate(known)}
            asked = [k for k, w in enumerate(types) if w in row]
            take = [row[types[k]] for k in asked]
            sizes = [job_nodes(jobs[k]) for k in asked]
            for k, flag in zip(asked, self._flags(names[take], proba[take], sizes), strict=True):
                flags[k] = flag
            for k, w in enumerate(known):
                out = {
                    "variation_class": str(names[k]),
                    "variation_p": {
                        c: round(float(p), 4) for c, p in zip(self.class_names, proba[k], strict=True)
                    },
                    **self._provenance,
                }
                if self.last_imputed:
                    out["variation_imputed"] = self.last_imputed
                outputs_by_type[w] = out
        for j, w in zip(jobs, types, strict=True):
            out = outputs_by_type.get(w) or {
                "variation_class": "unknown",
                "variation_reason": f"workload type {w[:40]!r} unknown to the model",
            }
            self._outputs[getattr(j, "job_id", id(j))] = out
        self._journal_thresholds(self._outputs, [jobs[k] for k in asked], sizes)
        return flags

    def job_outputs(self, job_id: Any) -> dict[str, Any]:
        """The last prediction for a job (class, probabilities or the unknown reason), for the journal."""
        return self._outputs.get(job_id, {})


@dataclass(frozen=True)
class _Answers:
    """One model call's rows: class probabilities, most probable class and journal output."""

    proba: np.ndarray  # (rows, classes)
    names: np.ndarray  # (rows,) class names
    outputs: list[dict[str, Any]]


@dataclass(frozen=True)
class _Rows:
    """The model's feature rows of a pass's placements (NaN: no value) and, per row, how many
    counter and probe features had no value (imputed by the pipeline, journaled)."""

    values: np.ndarray  # (placements, model features)
    imputed: np.ndarray  # (placements,) int


def _short_hosts(hosts: Sequence[str]) -> str:
    return ",".join(hosts) if len(hosts) <= 8 else ",".join(hosts[:8]) + f",... ({len(hosts)} nodes)"
