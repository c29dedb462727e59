"""The noise job: variable all-to-all traffic on 1/16 of the nodes, switched on and off at random.

It holds 32 nodes for the whole run, two per pod (the last two of each pod): an RJMS places a
long-running 32-node job across the machine, and all-to-all between pods is what loads the
tapered uplinks. Its schedule alternates off and on periods with exponential durations
(means ``MEAN_OFF`` = 600 s and ``MEAN_ON`` = 300 s, so it is on about a third of the time,
starting off); during each on period every noise node injects ``intensity x LINK_GBS`` with
the intensity drawn uniformly from [0.5, 1.0] (the "variable" traffic), all of it between
pods but the 1/31 that stays in the node's own pod.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rush.contention.model import NODES, POD_SIZE

MEAN_OFF = 600.0
MEAN_ON = 300.0
INTENSITY = (0.5, 1.0)
PER_POD = 2
NOISE_NODES_COUNT = PER_POD * NODES // POD_SIZE  # 32 = 1/16 of the machine


def noise_nodes() -> np.ndarray:
    """The 32 nodes of the noise job: the last two of every pod."""
    pods = np.arange(NODES // POD_SIZE)
    return np.sort(np.concatenate([pods * POD_SIZE + POD_SIZE - k for k in range(1, PER_POD + 1)]))


@dataclass(frozen=True)
class NoiseSchedule:
    """On periods ``[starts[k], ends[k])`` with per-period intensity in [0.5, 1] of line rate."""

    starts: np.ndarray
    ends: np.ndarray
    intensity: np.ndarray

    @classmethod
    def random(cls, rng: np.random.Generator, horizon: float, enabled: bool = True) -> NoiseSchedule:
        starts, ends, level = [], [], []
        t = 0.0
        while enabled and t < horizon:
            t += rng.exponential(MEAN_OFF)
            on = rng.exponential(MEAN_ON)
            starts.append(t)
            ends.append(t + on)
            level.append(rng.uniform(*INTENSITY))
            t += on
        return cls(np.array(starts), np.array(ends), np.array(level))

    @classmethod
    def off(cls) -> NoiseSchedule:
        return cls(np.zeros(0), np.zeros(0), np.zeros(0))

    def __post_init__(self) -> None:
        object.__setattr__(self, "_switches", np.sort(np.concatenate([self.starts, self.ends])))

    def level(self, t: float) -> float:
        """Intensity at time t (0 when off)."""
        k = int(np.searchsorted(self.starts, t, side="right")) - 1
        if k >= 0 and t < self.ends[k]:
            return float(self.intensity[k])
        return 0.0

    def next_switch(self, t: float) -> float:
        """The first switch time strictly after t (inf when none)."""
        times = self._switches  # type: ignore[attr-defined]
        k = int(np.searchsorted(times, t, side="right"))
        return float(times[k]) if k < len(times) else float("inf")

    def active_during(self, start: float, end: float) -> bool:
        """Whether the noise was on at any time in [start, end) (the records' ground truth)."""
        return bool(np.any((self.starts < end) & (self.ends > start)))
