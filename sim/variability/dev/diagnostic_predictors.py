"""Predictors of the study's diagnostics: they answer a learned policy's start questions in place of
its model, through ``run_trial``'s ``predictor`` (the contention shell's oracle interface:
``(present, [(spec, nodes)]) -> [bool]``, and ``quiet_leaves(present)`` under variability
placement). Neither reads the feature store, a probe or a model, and neither is a scheduling rule:
the policy they run under keeps its rules (skip limit, placement).

* :class:`FlagEvery` (POD-PACKING, with RUSH-MOVE's rules): every job asked about is flagged and
  every leaf is quiet, so every job gets a flagged job's pod rule and pod wait and no quiet-leaf
  choice.
* :class:`Placebo` (RUSH-PLACEBO, PRESENT-LABEL-PLACEBO, with RUSH's rules): each question is
  flagged by an independent coin at a given rate, from a seeded generator: the same amount of
  holding as a learned model's, placed at random.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rush.contention.experiment import SCENARIO_NAMES
from rush.contention.shell import JobSpec, Present

PLACEBO_SEED = 28  # the number: the placebo's generator is (28, scenario index, trial)


class FlagEvery:
    """Every job flagged, every leaf quiet."""

    def __init__(self) -> None:
        self.asked = 0
        self.flagged = 0

    def __call__(self, present: Present, asked: Sequence[tuple[JobSpec, np.ndarray]]) -> list[bool]:
        self.asked += len(asked)
        self.flagged += len(asked)
        return [True] * len(asked)

    def quiet_leaves(self, present: Present) -> np.ndarray:
        return np.ones(present.fabric.machine.leaves, dtype=bool)


class Placebo:
    """Each question flagged with probability ``rate``, independently, by ``rng``."""

    def __init__(self, rate: float, rng: np.random.Generator) -> None:
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"placebo flag rate {rate!r}: a share of questions, between 0 and 1")
        self.rate = rate
        self.rng = rng
        self.asked = 0
        self.flagged = 0

    @classmethod
    def for_trial(cls, rate: float, scenario: str, trial: int) -> Placebo:
        """The trial's placebo: its generator seeded by (PLACEBO_SEED, scenario index, trial)."""
        seed = np.random.SeedSequence([PLACEBO_SEED, SCENARIO_NAMES.index(scenario), int(trial)])
        return cls(rate, np.random.default_rng(seed))

    def __call__(self, present: Present, asked: Sequence[tuple[JobSpec, np.ndarray]]) -> list[bool]:
        flags = [bool(f) for f in self.rng.random(len(asked)) < self.rate]
        self.asked += len(flags)
        self.flagged += sum(flags)
        return flags
