"""The feature window of the variability model: one function for training and live prediction.

``window_features_for(store, hosts, start, window)`` returns, for every counter in the
feature store, ``<scope>_<stat>_<metric>`` over ``[start - window, start)`` (scope ``job``
when ``hosts`` are given, ``all`` when None; stat min/max/mean over the per-node means, see
:meth:`rush.collect.store.FeatureStore.window_features`) and the nine probe features
``probe_<op>_<stat>``. The dataset builder calls it for each campaign run, the live
predictor for the current window, so the two cannot drift apart.

Probe features come from the caller (a campaign record's probe, measured on the job's nodes
as it started) or else from the latest probe in the store on ``hosts`` (all nodes when
None) with a start time in ``[start - window, start + PROBE_GRACE)``: the probe runs inside
the allocation right after the job starts, so a record's probe is stamped a little after
its start. Live, nothing is stamped in the future, so the grace changes nothing there.

Counters exclude the probe's own source (``mpi_probe``): probes are features of their own.
A feature without data is absent from the dict (the caller makes it NaN), never invented.

**What the job itself brings** (job scope only, :func:`placement_features`): the probe and the
counters see the load already on the fabric, not the load the job will add. So a job placed on
``hosts`` also gets its node count ``job_nodes`` and how the placement spreads over the fabric's
leaf switches (and pods): ``job_leaves`` (leaves spanned), ``job_leafshare`` (largest share of
its nodes on one leaf), ``job_offleaf`` (the share of an all-to-all's traffic that leaves the
leaf: (N - sum n_leaf^2 / N) / (N - 1)), ``job_ringoff`` (the share of a ring's edges, in the
job's node order, that cross leaves), ``job_pods`` and ``job_offpod`` (the same for pods). The
scheduler knows the job's workload type, not its communication pattern, so both pattern-free
fractions are given and the model weighs them with the type one-hot. Where each node hangs is
read from the store (source ``topology``, metrics ``leaf`` and ``pod``, written beside the
counters), within the probe's window; a node without a reading leaves the leaf and pod features
out (``job_nodes`` stays).

:class:`WindowReader` is the same function for many node sets of one window (a scheduling
pass's tentative placements): one store query for all their hosts, every set's row equal to
``window_features_for`` on it (tests/planner/test_variation_batch.py), reused while the store's
window content is unchanged (benchmarks/bench_variability_predict.py prints the figures).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np

from rush.collect.probe import FEATURES as PROBE_NAMES
from rush.collect.probe import SOURCE as PROBE_SOURCE
from rush.collect.store import per_node, reduce_nodes
from rush.errors import ConfigError

SCOPES: tuple[str, ...] = ("job", "all")
STATS: tuple[str, ...] = ("min", "max", "mean")
WTYPES: tuple[str, ...] = ("compute", "network", "io")
PROBE_FEATURES: tuple[str, ...] = tuple(f"probe_{name}" for name in PROBE_NAMES)
WTYPE_FEATURES: tuple[str, ...] = tuple(f"wtype_{w}" for w in WTYPES)
TOPOLOGY_SOURCE = "topology"  # where each node hangs: metrics "leaf" and "pod" (ids, static)
TOPOLOGY_METRICS: tuple[str, ...] = ("leaf", "pod")
PLACEMENT_FEATURES: tuple[str, ...] = (
    "job_nodes", "job_leaves", "job_leafshare", "job_offleaf", "job_ringoff", "job_pods", "job_offpod",
)  # fmt: skip
NOT_COUNTERS = frozenset((PROBE_SOURCE, TOPOLOGY_SOURCE))
PROBE_GRACE = 120.0  # seconds after the start during which a run's own probe is taken
MAX_WINDOW = 30 * 86400.0


def check_window(window: float, where: str = "--window") -> float:
    """A window length in seconds: finite, > 0 and at most 30 days."""
    if isinstance(window, bool) or not isinstance(window, int | float) or not 0 < window <= MAX_WINDOW:
        raise ConfigError(
            f"window {window!r} is not a number of seconds in (0, {MAX_WINDOW:.0f}]",
            where=where,
            fix="e.g. 300 (the published 5 minutes)",
        )
    return float(window)


def feature_scope(name: str) -> str:
    """``job``, ``all``, ``probe`` or ``wtype``: which group a feature belongs to (the placement
    features describe the job's nodes: ``job``)."""
    return name.split("_", 1)[0]


_COUNTER_NAME = re.compile(r"^(job|all)_(min|max|mean)_[A-Za-z0-9_.:-]+$")


def known_feature(name: str) -> bool:
    """Whether this feature code makes a feature of this name: a counter of the job's or all
    nodes (``<scope>_<stat>_<metric>``), the job's placement, the probe or the workload type."""
    return (
        name in PLACEMENT_FEATURES
        or name in PROBE_FEATURES
        or name in WTYPE_FEATURES
        or bool(_COUNTER_NAME.match(name))
    )


def is_placement(name: str) -> bool:
    """A feature of the job's placement (not a reading of the store's counters or probe)."""
    return name in PLACEMENT_FEATURES


def counter_sources(store: Any) -> list[str]:
    """The store's sources except the probe's and the topology's (not counters)."""
    rows = store.db.execute("SELECT name FROM sources ORDER BY name").fetchall()
    return [name for (name,) in rows if name not in NOT_COUNTERS]


def topology_of(store: Any, hosts: Sequence[str] | None, start: float, window: float) -> dict[str, tuple]:
    """``{host: (leaf, pod)}`` from the topology readings in the probe's window: their mean per host
    (the wiring does not change within a window, so the mean is its value; pod 0 when absent)."""
    names, metrics, sums, counts = store.node_sums(
        hosts, start - window, start + PROBE_GRACE, [TOPOLOGY_SOURCE]
    )
    if "leaf" not in metrics:
        return {}
    leaf = metrics.index("leaf")
    pod = metrics.index("pod") if "pod" in metrics else None
    out = {}
    for k, host in enumerate(names):
        if counts[k, leaf] > 0:
            has_pod = pod is not None and counts[k, pod] > 0
            out[host] = (sums[k, leaf] / counts[k, leaf], sums[k, pod] / counts[k, pod] if has_pod else 0.0)
    return out


def spread_rows(groups: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per row of ``groups`` (sets, nodes: each node's leaf or pod): (distinct groups, largest
    share, all-to-all off-group share, ring off-group share)."""
    sets, n = groups.shape
    same = groups[:, :, None] == groups[:, None, :]  # node i and j on one group
    per_node = same.sum(axis=2)  # how many of the set share each node's group (itself included)
    distinct = (1.0 / per_node).sum(axis=1)
    share = per_node.max(axis=1) / n
    if n < 2:
        return np.round(distinct), share, np.zeros(sets), np.zeros(sets)
    a2a = (n - per_node.sum(axis=1) / n) / (n - 1)  # sum of n_group^2 over n
    ring = (groups != np.roll(groups, -1, axis=1)).mean(axis=1)
    return np.round(distinct), share, a2a, ring


def _spread(groups: np.ndarray) -> tuple[float, float, float, float]:
    """:func:`spread_rows` of one node set."""
    return tuple(float(v[0]) for v in spread_rows(np.asarray(groups, dtype=np.float64)[None, :]))  # type: ignore[return-value]


def placement_features(hosts: Sequence[str], where: Mapping[str, tuple]) -> dict[str, float]:
    """The job's own features on ``hosts`` (distinct, in order): see the module doc."""
    hosts = list(dict.fromkeys(hosts))
    if not hosts:
        return {}
    out = {"job_nodes": float(len(hosts))}
    if not all(h in where for h in hosts):
        return out
    leaves, share, offleaf, ringoff = _spread(np.array([where[h][0] for h in hosts]))
    pods, _, offpod, _ = _spread(np.array([where[h][1] for h in hosts]))
    return out | {
        "job_leaves": leaves,
        "job_leafshare": share,
        "job_offleaf": offleaf,
        "job_ringoff": ringoff,
        "job_pods": pods,
        "job_offpod": offpod,
    }


def store_metrics(store: Any) -> set[str]:
    """Every metric name the store has ever held (its schema, not the current window)."""
    return {name for (name,) in store.db.execute("SELECT name FROM metrics")}


def counter_features(
    store: Any, hosts: Sequence[str] | None, start: float, window: float, scope: str
) -> dict[str, float]:
    """``<scope>_<stat>_<metric>`` over ``[start - window, start)``; no data gives ``{}``."""
    sources = counter_sources(store)
    if not sources or (hosts is not None and not hosts):
        return {}
    raw = store.window_features(hosts, start - window, start, sources)
    return {f"{scope}_{key}": value for key, value in raw.items() if math.isfinite(value)}


def probe_features(store: Any, hosts: Sequence[str] | None, start: float, window: float) -> dict[str, float]:
    """The latest probe on ``hosts`` (any node when None) in ``[start - window, start + PROBE_GRACE)``.

    A probe writes the same nine values to each of its hosts; the values of its latest time
    are averaged over those hosts (equal unless two probes share the instant)."""
    samples = store.samples(hosts, start - window, start + PROBE_GRACE, sources=[PROBE_SOURCE])
    if not samples:
        return {}
    latest = max(s.timestamp for s in samples)
    values: dict[str, list[float]] = {}
    for s in samples:
        if s.timestamp == latest and s.metric in PROBE_NAMES:
            values.setdefault(s.metric, []).append(s.value)
    return {f"probe_{name}": float(np.mean(v)) for name, v in values.items()}


def record_probe_features(probe: Mapping[str, float] | None) -> dict[str, float]:
    """A campaign record's probe (already validated) as ``probe_<name>`` features."""
    if not probe:
        return {}
    return {f"probe_{name}": float(probe[name]) for name in PROBE_NAMES if name in probe}


def wtype_features(wtype: str) -> dict[str, float]:
    """The workload type one-hot (all zero for a type outside WTYPES)."""
    return {f"wtype_{w}": 1.0 if wtype == w else 0.0 for w in WTYPES}


def window_features_for(
    store: Any,
    hosts: Sequence[str] | None,
    start: float,
    window: float = 300.0,
    *,
    scope: str | None = None,
    probe: Mapping[str, float] | None = None,
    with_probe: bool = True,
) -> dict[str, float]:
    """Counter features of ``scope`` (default: ``job`` with hosts, ``all`` without), the job's
    placement features (``job`` scope) and probe features.

    ``probe`` (a record's probe result) wins over the store's probes; ``with_probe=False``
    leaves the probe out (the second scope of a dataset row)."""
    window = check_window(window, "window")
    if not math.isfinite(start):
        raise ConfigError(f"start {start!r} is not a finite time", where="window start")
    scope = scope or ("all" if hosts is None else "job")
    if scope not in SCOPES:
        raise ConfigError(f"unknown scope {scope!r}", where="scope", fix=f"use one of: {', '.join(SCOPES)}")
    features = counter_features(store, hosts, start, window, scope)
    if scope == "job" and hosts is not None:
        features |= placement_features(hosts, topology_of(store, hosts, start, window))
    if with_probe:
        features |= record_probe_features(probe) or probe_features(store, hosts, start, window)
    return features


@dataclass(frozen=True)
class FeatureTable:
    """Features of many node sets of one window: ``values[k]`` is set k's row in ``names``
    order, NaN where the feature has no value (a present feature is never NaN)."""

    names: list[str]
    values: np.ndarray  # (sets, names) float64

    def row(self, k: int) -> dict[str, float]:
        """Set k's features as window_features_for returns them."""
        return {n: float(v) for n, v in zip(self.names, self.values[k], strict=True) if not math.isnan(v)}


@dataclass
class _ProbeIndex:
    """Per host row of a WindowReader: its latest probe time in the probe window (-inf: none),
    the position of that probe's first sample in the window's sample order (unique per host),
    its (position, metric, value) samples, and which distinct reading they are (-1: more than
    one value of a metric, averaged by the general path)."""

    latest: np.ndarray
    first: np.ndarray
    reading: np.ndarray
    items: list[list[tuple[int, str, float]]]
    readings: list[tuple[tuple[str, float], ...]]


class WindowReader:
    """The window ``[start - window, start)`` of one store, read once for many node sets.

    :meth:`table` gives, for each node set, what ``window_features_for(store, hosts, start,
    window, scope=scope, with_probe=with_probe)`` gives (tests/planner/test_variation_batch.py
    asserts equality), but reads the store once for the union of the sets' hosts, keeps every
    node's sums, and aggregates all sets of one size at once: a scheduling pass asks about
    hundreds of tentative placements in one window, and the planner reruns the pass at the same
    instant. :meth:`serves` says whether the reader still answers for another start: the store
    unchanged since it was read (``FeatureStore.version``) and no value between the old and the
    new window edges, so the window's content is the same (counters arrive on a tick grid:
    every instant between two ticks sees one window).
    """

    def __init__(self, store: Any, start: float, window: float) -> None:
        self.window = check_window(window, "window")
        if not math.isfinite(start):
            raise ConfigError(f"start {start!r} is not a finite time", where="window start")
        self.store = store
        self.start = float(start)
        self.version = store.version()
        self._sources = counter_sources(store)
        # One row per host the store knows, in id order (window_features' node order).
        ids = store.host_ids()
        self._hosts = sorted(ids, key=ids.__getitem__)
        self._row_of = {h: k for k, h in enumerate(self._hosts)}
        self._loaded = np.zeros(len(self._hosts), bool)
        self._column: dict[str, int] = {}  # counter -> column of _sums/_counts
        self._sums = np.zeros((len(self._hosts), 0))
        self._counts = np.zeros((len(self._hosts), 0))
        self._probe: _ProbeIndex | None = None
        self._probe_rows: dict[tuple[int, int], np.ndarray] = {}
        self._all: dict[tuple[str, bool], dict[str, float]] = {}
        self._where: dict[str, tuple] | None = None  # topology_of every host, read once
        self._leaf_pod = np.zeros((0, 2))  # per host row: (leaf, pod), NaN without a reading

    def serves(self, store: Any, start: float, window: float) -> bool:
        """Whether this reader's answers are those of ``store`` for ``start`` (then it moves there)."""
        if store is not self.store or float(window) != self.window or not math.isfinite(start):
            return False
        if store.version() != self.version:
            return False
        if start != self.start:
            edges = (-self.window, 0.0, PROBE_GRACE)  # the counter window's and the probes' edges
            bands = [(min(self.start, start) + e, max(self.start, start) + e) for e in edges]
            if store.readings_between(bands):
                return False
            self.start = float(start)
        return True

    # -- node sets --------------------------------------------------------------------------
    def _groups(self, host_sets: Sequence[Sequence[str]]) -> list[tuple[np.ndarray, np.ndarray]]:
        """(set indices, rows (sets, nodes)) per node count: each set's known hosts, once each,
        in id order. Sets without a known host are in none."""
        by_length: dict[int, list[int]] = {}
        for k, hosts in enumerate(host_sets):
            by_length.setdefault(len(hosts), []).append(k)
        sets: dict[int, list[np.ndarray]] = {}
        rows: dict[int, list[np.ndarray]] = {}

        def add(members: np.ndarray, member_rows: np.ndarray) -> None:
            sets.setdefault(member_rows.shape[1], []).append(members)
            rows.setdefault(member_rows.shape[1], []).append(member_rows)

        for length, members in by_length.items():
            if length == 0:
                continue
            names = chain.from_iterable(host_sets[k] for k in members)
            try:
                flat = np.fromiter(map(self._row_of.__getitem__, names), np.int64, len(members) * length)
            except KeyError:  # an unknown host: -1, handled below
                flat = np.array([self._row_of.get(h, -1) for k in members for h in host_sets[k]], np.int64)
            grid = np.sort(flat.reshape(len(members), length), axis=1)
            clean = (grid[:, 0] >= 0) & (np.diff(grid, axis=1) > 0).all(axis=1)
            if clean.any():
                add(np.array(members)[clean], grid[clean])
            for k in np.array(members)[~clean].tolist():  # duplicates or unknown hosts
                known = sorted({self._row_of[h] for h in host_sets[k] if h in self._row_of})
                if known:
                    add(np.array([k]), np.array([known], np.int64))
        return [(np.concatenate(sets[n]), np.concatenate(rows[n])) for n in sets if n]

    # -- counters ---------------------------------------------------------------------------
    def _load(self, rows: np.ndarray) -> None:
        """Per-node sums and counts of the hosts of ``rows`` not read yet (one store query)."""
        missing = np.unique(rows[~self._loaded[rows]])
        if not len(missing) or not self._sources:
            return
        everyone = len(missing) == len(self._hosts)  # no host filter: the same rows, faster
        hosts = None if everyone else [self._hosts[k] for k in missing.tolist()]
        found, metrics, sums, counts = self.store.node_sums(
            hosts, self.start - self.window, self.start, self._sources
        )
        new = [m for m in metrics if m not in self._column]
        if new:
            for metric in new:
                self._column[metric] = len(self._column)
            pad = np.zeros((len(self._hosts), len(new)))
            self._sums, self._counts = np.hstack((self._sums, pad)), np.hstack((self._counts, pad))
        # A host written since this reader was made is not ours (the next serves() says so).
        kept = [k for k, h in enumerate(found) if h in self._row_of]
        at = np.array([self._row_of[found[k]] for k in kept], np.int64)
        columns = np.array([self._column[m] for m in metrics], np.int64)
        if len(at) and len(columns):
            self._sums[np.ix_(at, columns)] = sums[kept]
            self._counts[np.ix_(at, columns)] = counts[kept]
        self._loaded[missing] = True

    def _counters(self, n_sets: int, groups: list[tuple[np.ndarray, np.ndarray]], scope: str) -> FeatureTable:
        """``<scope>_<stat>_<metric>`` of each node set (see :func:`counter_features`)."""
        for _, rows in groups:
            self._load(rows.ravel())
        metrics = sorted(self._column)
        names = [f"{scope}_{stat}_{m}" for m in metrics for stat in STATS]
        values = np.full((n_sets, len(names)), np.nan)
        if not metrics:
            return FeatureTable(names, values)
        order = [self._column[m] for m in metrics]
        # The elementwise step once per node, then each set gathers its nodes' rows.
        nodes = per_node(self._sums[:, order], self._counts[:, order])
        for members, rows in groups:
            reported, lo, hi, mean = reduce_nodes(*(np.take(a, rows, axis=0) for a in nodes))
            stats = np.stack((lo, hi, mean), axis=2).reshape(len(members), -1)  # STATS order
            ok = np.repeat(reported > 0, len(STATS), axis=1) & np.isfinite(stats)
            values[members] = np.where(ok, stats, np.nan)
        return FeatureTable(names, values)

    # -- probes -----------------------------------------------------------------------------
    def _probe_index(self) -> _ProbeIndex:
        """Each host's latest probe in the probe window (see :class:`_ProbeIndex`)."""
        if self._probe is None:
            samples = self.store.samples(
                None, self.start - self.window, self.start + PROBE_GRACE, sources=[PROBE_SOURCE]
            )
            index = _ProbeIndex(
                np.full(len(self._hosts), -np.inf),
                np.full(len(self._hosts), -1, np.int64),
                np.full(len(self._hosts), -1, np.int64),
                [[] for _ in self._hosts],
                [],
            )
            for k, s in enumerate(samples):  # oldest first: a later probe replaces the host's
                row = self._row_of.get(s.host)
                if row is None:
                    continue
                if s.timestamp > index.latest[row]:
                    index.latest[row], index.first[row], index.items[row] = s.timestamp, k, []
                if s.metric in PROBE_NAMES:
                    index.items[row].append((k, s.metric, s.value))
            readings: dict[tuple[tuple[str, float], ...], int] = {}
            for row, held in enumerate(index.items):
                metrics = [metric for _, metric, _ in held]
                if held and len(set(metrics)) == len(metrics):  # one value per metric: one probe
                    values = tuple((metric, value) for _, metric, value in held)
                    index.reading[row] = readings.setdefault(values, len(readings))
            index.readings = list(readings)
            self._probe = index
        return self._probe

    def _probes(self, n_sets: int, groups: list[tuple[np.ndarray, np.ndarray]]) -> FeatureTable:
        """The probe features of each node set (see :func:`probe_features`): the latest probe on
        the set's hosts, each value averaged over the hosts it was taken on at that time."""
        index = self._probe_index()
        values = np.full((n_sets, len(PROBE_FEATURES)), np.nan)
        for members, rows in groups:
            times = index.latest[rows]
            newest = times.max(axis=1)
            taken = (times == newest[:, None]) & np.isfinite(newest)[:, None]
            hosts = taken.sum(axis=1)
            # Usually every host taking part holds the same values (one probe wrote them): the
            # mean of k copies, computed once per (values, k).
            reading = np.where(taken, index.reading[rows], -1)
            same = (reading.max(axis=1) == np.where(taken, reading, np.iinfo(np.int64).max).min(axis=1)) & (
                reading.max(axis=1) >= 0
            )
            if same.any():
                pairs, which = np.unique(
                    np.column_stack((reading.max(axis=1)[same], hosts[same])), axis=0, return_inverse=True
                )
                means = np.vstack([self._copies_mean(r, n) for r, n in pairs.tolist()])
                values[members[same]] = means[which.ravel()]
            for k, row_mask, set_rows in zip(members[~same].tolist(), taken[~same], rows[~same], strict=True):
                if row_mask.any():
                    values[k] = self._probe_mean(set_rows[row_mask])
        return FeatureTable(list(PROBE_FEATURES), values)

    def _copies_mean(self, reading: int, hosts: int) -> np.ndarray:
        """The probe row of one reading's values on ``hosts`` hosts (np.mean as probe_features)."""
        key = (reading, hosts)
        if key not in self._probe_rows:
            row = np.full(len(PROBE_FEATURES), np.nan)
            for metric, value in self._probe_index().readings[reading]:
                row[PROBE_NAMES.index(metric)] = float(np.mean([value] * hosts))
            self._probe_rows[key] = row
        return self._probe_rows[key]

    def _probe_mean(self, rows: np.ndarray) -> np.ndarray:
        """The probe row of the latest samples of ``rows``, in the window's sample order."""
        index = self._probe_index()
        per_metric: dict[str, list[float]] = {}
        for _, metric, value in sorted(item for r in rows.tolist() for item in index.items[r]):
            per_metric.setdefault(metric, []).append(value)
        row = np.full(len(PROBE_FEATURES), np.nan)
        for metric, vals in per_metric.items():
            row[PROBE_NAMES.index(metric)] = float(np.mean(vals))
        return row

    # -- the job's own placement -------------------------------------------------------------
    def _placements(self, host_sets: Sequence[Sequence[str]]) -> FeatureTable:
        """:func:`placement_features` of each node set: the topology read once for all nodes, the
        sets of one size mapped to it and computed at once (:func:`spread_rows`); a set with a
        repeated or unknown host takes the general path."""
        if self._where is None:
            self._where = topology_of(self.store, None, self.start, self.window)
            self._leaf_pod = np.full((len(self._hosts), 2), np.nan)
            for host, (leaf, pod) in self._where.items():
                if host in self._row_of:
                    self._leaf_pod[self._row_of[host]] = (leaf, pod)
        values = np.full((len(host_sets), len(PLACEMENT_FEATURES)), np.nan)
        by_length: dict[int, list[int]] = {}
        for k, hosts in enumerate(host_sets):
            by_length.setdefault(len(hosts), []).append(k)
        for length, members in by_length.items():
            if length == 0:
                continue
            sets = np.array(members)
            names = chain.from_iterable(host_sets[k] for k in members)
            try:
                grid = np.fromiter(map(self._row_of.__getitem__, names), np.int64, len(members) * length)
                grid = grid.reshape(len(members), length)
                clean = (np.diff(np.sort(grid, axis=1), axis=1) > 0).all(axis=1)
            except KeyError:  # an unknown host in one of them: each takes the general path
                grid, clean = np.zeros((len(members), length), np.int64), np.zeros(len(members), bool)
            for k in sets[~clean].tolist():
                for name, value in placement_features(host_sets[k], self._where).items():
                    values[k, PLACEMENT_FEATURES.index(name)] = value
            if not clean.any():
                continue
            values[sets[clean], 0] = length  # job_nodes
            where = self._leaf_pod[grid[clean]]  # (sets, nodes, leaf and pod)
            known = ~np.isnan(where).any(axis=(1, 2))
            if known.any():
                placed = sets[clean][known]
                leaves = spread_rows(where[known, :, 0])
                pods = spread_rows(where[known, :, 1])
                values[placed, 1:5] = np.column_stack(leaves)
                values[placed, 5] = pods[0]
                values[placed, 6] = pods[2]
        return FeatureTable(list(PLACEMENT_FEATURES), values)

    # -- both -------------------------------------------------------------------------------
    def table(
        self, host_sets: Sequence[Sequence[str]], scope: str = "job", with_probe: bool = True
    ) -> FeatureTable:
        """Counter features of ``scope`` and (``with_probe``) probe features of each node set."""
        if scope not in SCOPES:
            raise ConfigError(
                f"unknown scope {scope!r}", where="scope", fix=f"use one of: {', '.join(SCOPES)}"
            )
        groups = self._groups(host_sets)
        counters = self._counters(len(host_sets), groups, scope)
        if scope == "job":
            placed = self._placements(host_sets)
            counters = FeatureTable(
                counters.names + placed.names, np.hstack((counters.values, placed.values))
            )
        if not with_probe:
            return counters
        probes = self._probes(len(host_sets), groups)
        return FeatureTable(counters.names + probes.names, np.hstack((counters.values, probes.values)))

    def all_nodes(self, scope: str = "all", with_probe: bool = True) -> dict[str, float]:
        """window_features_for over every node (hosts None), read once per window."""
        key = (scope, with_probe)
        if key not in self._all:
            # Every node the store knows (one without a value in the window adds nothing).
            row = self.table([self._hosts], scope, with_probe).row(0)
            # window_features_for(hosts=None) has no placement: every node is no job's placement.
            self._all[key] = {f: v for f, v in row.items() if not is_placement(f)}
        return dict(self._all[key])


def vector(names: Sequence[str], features: Mapping[str, float]) -> np.ndarray:
    """The model's input row: ``features`` in ``names`` order, NaN where a feature has no value."""
    return np.fromiter((features.get(n, math.nan) for n in names), np.float64, len(names))
