"""The noise job: all-to-all traffic of variable intensity on 1/16 of the nodes.

As in the paper, a noise job runs for the whole experiment on 1/16 of the nodes (32 of 512)
and sends all-to-all traffic among them. Its nodes are spread over the machine, an equal
number on every leaf (the last ones of each leaf: 2 of 32), so every leaf's uplinks carry some
of its traffic; a noise job packed into one leaf would load no uplink and disturb nobody.

``mode = "always"`` (the paper's): the noise is always on and its intensity varies: it holds a
level drawn uniformly from ``intensity`` (a fraction of the link rate) for an exponential time
of mean ``change_every`` seconds, then draws the next (the program cycles through message sizes
and pauses). ``mode = "switching"`` (the variant): off periods of mean ``mean_off`` alternate with
on periods of mean ``mean_on``, each on period at one drawn level.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rush.contention.machine import Machine

MODES = ("always", "switching")


@dataclass(frozen=True)
class NoiseSpec:
    fraction: float = 1.0 / 16.0
    mode: str = "always"
    intensity: tuple[float, float] = (0.25, 1.0)
    change_every: float = 180.0
    mean_on: float = 300.0
    mean_off: float = 600.0

    def __post_init__(self) -> None:
        lo, hi = self.intensity
        ok = (
            0.0 < self.fraction <= 0.5
            and self.mode in MODES
            and all(math.isfinite(x) for x in (lo, hi, self.change_every, self.mean_on, self.mean_off))
            and 0.0 <= lo <= hi <= 1.0
            and min(self.change_every, self.mean_on, self.mean_off) > 0
        )
        if not ok:
            raise ValueError(f"inconsistent noise spec {self}")

    def nodes(self, machine: Machine) -> np.ndarray:
        """The noise job's nodes: the last ``round(fraction x leaf_size)`` of every leaf (at least one)."""
        per_leaf = max(1, round(self.fraction * machine.leaf_size))
        leaves = np.arange(machine.leaves) * machine.leaf_size
        return np.sort(np.concatenate([leaves + machine.leaf_size - k for k in range(1, per_leaf + 1)]))


SWITCHING = NoiseSpec(mode="switching")


@dataclass(frozen=True)
class NoiseSchedule:
    """Piecewise-constant intensity: ``levels[k]`` on ``[times[k], times[k + 1])`` (fraction of link rate)."""

    times: np.ndarray  # change points, times[0] == 0
    levels: np.ndarray

    @classmethod
    def random(cls, spec: NoiseSpec, rng: np.random.Generator, horizon: float) -> NoiseSchedule:
        times, levels, t = [], [], 0.0
        while t < horizon:
            if spec.mode == "always":
                times.append(t)
                levels.append(rng.uniform(*spec.intensity))
                t += rng.exponential(spec.change_every)
            else:
                times.append(t)
                levels.append(0.0)
                t += rng.exponential(spec.mean_off)
                times.append(t)
                levels.append(rng.uniform(*spec.intensity))
                t += rng.exponential(spec.mean_on)
        return cls(np.asarray(times, dtype=float), np.asarray(levels, dtype=float))

    @classmethod
    def constant(cls, level: float) -> NoiseSchedule:
        return cls(np.zeros(1), np.array([float(level)]))

    @classmethod
    def off(cls) -> NoiseSchedule:
        return cls.constant(0.0)

    def level(self, t: float) -> float:
        k = int(np.searchsorted(self.times, t, side="right")) - 1
        return float(self.levels[max(k, 0)])

    def next_switch(self, t: float) -> float:
        """The first change strictly after t (inf when none)."""
        k = int(np.searchsorted(self.times, t, side="right"))
        return float(self.times[k]) if k < len(self.times) else math.inf

    def mean_level(self, start: float, end: float) -> float:
        """Mean intensity over [start, end) (a record's ground truth, never a feature)."""
        if end <= start:
            return self.level(start)
        edges = np.concatenate([[start], self.times[(self.times > start) & (self.times < end)], [end]])
        levels = [self.level(a) for a in edges[:-1]]
        return float(np.dot(levels, np.diff(edges)) / (end - start))

    def episodes(self, horizon: float) -> int:
        """How many intensity periods start before ``horizon``."""
        return int(np.searchsorted(self.times, horizon, side="left"))
