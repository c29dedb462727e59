"""Synthetic node counters: the state's rates, averaged over each sampling interval, with noise.

Like the real collectors, which turn cumulative counters into rates between two readings,
each sample is the mean rate over the interval that ends at its timestamp (the state is
piecewise constant between events, so the mean is exact), times a lognormal measurement
noise (sigma ``COUNTER_NOISE``). Samples go to a rush FeatureStore with the real
collectors' source and metric names (``sysfs_ib``, ``lustre``, ``procfs``), so the dataset
builder, training and the learned predictor read simulated and real counters the same way.

With ``leaves`` (and ``pods``) given, every tick also records where each node hangs (source
``topology``, metrics ``leaf`` and ``pod``: no noise, they are the wiring), from which the
variability features derive how a job's placement spreads
(:func:`rush.models.variability.features.placement_features`).
"""

from __future__ import annotations

import numpy as np

from rush.collect.base import Sample
from rush.contention.state import METRIC_NAMES, METRICS
from rush.models.variability.features import TOPOLOGY_SOURCE

SAMPLE_INTERVAL = 30.0  # seconds between readings (LDMS-like; 10 readings per 5-minute window)
COUNTER_NOISE = 0.05
_SOURCE_OF = {m: s for s, ms in METRICS.items() for m in ms}


class CounterRecorder:
    """Integrates per-node rates over time and emits one reading per node and source per tick."""

    def __init__(
        self,
        rng: np.random.Generator,
        hosts: tuple[str, ...],
        interval: float = SAMPLE_INTERVAL,
        origin: float = 0.0,
        leaves: np.ndarray | None = None,
        pods: np.ndarray | None = None,
    ) -> None:
        self.rng = rng
        self.hosts = hosts
        self.topology: list[tuple[str, float, float]] = []
        if leaves is not None:
            pod_ids = np.zeros(len(hosts)) if pods is None else np.asarray(pods, dtype=float)
            if len(leaves) != len(hosts) or len(pod_ids) != len(hosts):
                raise ValueError("one leaf and one pod per host")
            self.topology = list(zip(hosts, map(float, leaves), pod_ids.tolist(), strict=True))
        self.interval = float(interval)
        self.origin = float(origin)  # simulated epoch of t = 0
        self.acc = np.zeros((len(hosts), len(METRIC_NAMES)))
        self.last = 0.0
        self.next_tick = self.interval

    def advance(self, rates: np.ndarray, t0: float, t1: float) -> None:
        """Accumulate ``rates`` (constant on [t0, t1))."""
        if t1 > t0:
            self.acc += rates * (t1 - t0)

    def tick(self, t: float) -> np.ndarray:
        """The noisy interval means at tick time t; resets the accumulators."""
        span = max(t - self.last, 1e-9)
        means = self.acc / span
        noisy = means * self.rng.lognormal(0.0, COUNTER_NOISE, size=means.shape)
        self.acc[:] = 0.0
        self.last = t
        self.next_tick = t + self.interval
        return noisy

    def samples(self, t: float, values: np.ndarray) -> list[Sample]:
        stamp = self.origin + t
        out = [
            Sample(stamp, host, _SOURCE_OF[metric], metric, float(v))
            for host, row in zip(self.hosts, values.tolist(), strict=True)
            for metric, v in zip(METRIC_NAMES, row, strict=True)
        ]
        for host, leaf, pod in self.topology:
            out += (
                Sample(stamp, host, TOPOLOGY_SOURCE, "leaf", leaf),
                Sample(stamp, host, TOPOLOGY_SOURCE, "pod", pod),
            )
        return out
