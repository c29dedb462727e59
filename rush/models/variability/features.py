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
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rush.collect.probe import FEATURES as PROBE_NAMES
from rush.collect.probe import SOURCE as PROBE_SOURCE
from rush.errors import ConfigError

SCOPES: tuple[str, ...] = ("job", "all")
STATS: tuple[str, ...] = ("min", "max", "mean")
WTYPES: tuple[str, ...] = ("compute", "network", "io")
PROBE_FEATURES: tuple[str, ...] = tuple(f"probe_{name}" for name in PROBE_NAMES)
WTYPE_FEATURES: tuple[str, ...] = tuple(f"wtype_{w}" for w in WTYPES)
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
    """``job``, ``all``, ``probe`` or ``wtype``: which group a feature belongs to."""
    return name.split("_", 1)[0]


def counter_sources(store: Any) -> list[str]:
    """The store's sources except the probe's (a probe is a feature of its own, not a counter)."""
    rows = store.db.execute("SELECT name FROM sources ORDER BY name").fetchall()
    return [name for (name,) in rows if name != PROBE_SOURCE]


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
    """Counter features of ``scope`` (default: ``job`` with hosts, ``all`` without) and probe features.

    ``probe`` (a record's probe result) wins over the store's probes; ``with_probe=False``
    leaves the probe out (the second scope of a dataset row)."""
    window = check_window(window, "window")
    if not math.isfinite(start):
        raise ConfigError(f"start {start!r} is not a finite time", where="window start")
    scope = scope or ("all" if hosts is None else "job")
    if scope not in SCOPES:
        raise ConfigError(f"unknown scope {scope!r}", where="scope", fix=f"use one of: {', '.join(SCOPES)}")
    features = counter_features(store, hosts, start, window, scope)
    if with_probe:
        features |= record_probe_features(probe) or probe_features(store, hosts, start, window)
    return features


def vector(names: Sequence[str], features: Mapping[str, float]) -> np.ndarray:
    """The model's input row: ``features`` in ``names`` order, NaN where a feature has no value."""
    return np.fromiter((features.get(n, math.nan) for n in names), np.float64, len(names))
