"""Predictors of the study's diagnostics: they answer a learned policy's start questions in place of
its model, through ``run_trial``'s ``predictor`` (the contention shell's oracle interface:
``(present, [(spec, nodes)]) -> [bool]``, and ``quiet_leaves(present)`` under variability
placement). Neither reads the feature store, a probe or a model, and neither is a scheduling rule:
the policy they run under keeps its rules (skip limit, placement).

* :class:`FlagEvery` (POD-PACKING, with RUSH-MOVE's rules): every job asked about is flagged and
  every leaf is quiet, so every job gets a flagged job's pod rule and pod wait and no quiet-leaf
  choice.
* :class:`Placebo` (RUSH-PLACEBO, PRESENT-LABEL-PLACEBO, with RUSH's rules): each question is
  flagged by an independent coin at a given rate, from a seeded generator: the same share of
  questions flagged as a learned model's, placed at random.
* :class:`JobPlacebo` (RUSH-JOB-PLACEBO, with RUSH's rules): a job's first question flagged at
  one rate, its later ones (asked again because it was held) at another: a learned model's share
  of held jobs and their hold lengths, the jobs chosen at random.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rush.contention.experiment import SCENARIO_NAMES
from rush.contention.shell import JobSpec, Present

PLACEBO_SEED = 28  # the number: the placebo's generator is (28, scenario index, trial)


def trial_rng(scenario: str, trial: int) -> np.random.Generator:
    """A placebo's generator for one trial: seeded by (PLACEBO_SEED, scenario index, trial)."""
    return np.random.default_rng(
        np.random.SeedSequence([PLACEBO_SEED, SCENARIO_NAMES.index(scenario), int(trial)])
    )


def _share(name: str, value: float) -> float:
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"placebo {name} {value!r}: a share of questions, between 0 and 1")
    return value


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
        self.rate = _share("flag rate", rate)
        self.rng = rng
        self.asked = 0
        self.flagged = 0

    @classmethod
    def for_trial(cls, rate: float, scenario: str, trial: int) -> Placebo:
        """The trial's placebo: its generator seeded by (PLACEBO_SEED, scenario index, trial)."""
        return cls(rate, trial_rng(scenario, trial))

    def __call__(self, present: Present, asked: Sequence[tuple[JobSpec, np.ndarray]]) -> list[bool]:
        flags = [bool(f) for f in self.rng.random(len(asked)) < self.rate]
        self.asked += len(flags)
        self.flagged += sum(flags)
        return flags


class JobPlacebo:
    """A job's first question flagged with probability ``first``, each later one with ``again``."""

    def __init__(self, first: float, again: float, rng: np.random.Generator) -> None:
        self.first = _share("first-question rate", first)
        self.again = _share("later-question rate", again)
        self.rng = rng
        self.seen: set[int] = set()
        self.asked = 0
        self.flagged = 0

    @classmethod
    def for_trial(cls, first: float, again: float, scenario: str, trial: int) -> JobPlacebo:
        return cls(first, again, trial_rng(scenario, trial))

    def __call__(self, present: Present, asked: Sequence[tuple[JobSpec, np.ndarray]]) -> list[bool]:
        flags = []
        for spec, _ in asked:
            rate = self.again if spec.job_id in self.seen else self.first
            self.seen.add(spec.job_id)
            flags.append(bool(self.rng.random() < rate))
        self.asked += len(flags)
        self.flagged += sum(flags)
        return flags
