"""Who answers the shell's question "will this job vary if it starts now, there?".

* :class:`LearnedOracle` is RUSH: the daemon's learned predictor
  (:class:`rush.planner.variation.LearnedVariationPredictor`) on the trial's own feature store,
  with an MPI probe run on the job's tentative nodes just before the question (simulated from
  the link state, :mod:`rush.contention.probe`), as RUSH probes a job's nodes.
* :class:`PresentStateOracle` is a diagnostic, not a predictor: it knows the model's law and the
  present state and flags a job when, started now on its tentative nodes beside the running
  jobs and the current noise, its slowdown would exceed its application's threshold. It is the
  best case for a predictor of RUSH's kind (one that sees only the present).
* :class:`NoiseOracle` is the other diagnostic: it flags network jobs while the noise is
  loud (intensity above the middle of its range; with switching noise: while it is on).
* :class:`ClairvoyantOracle` is the third diagnostic, the upper bound of any policy of RUSH's
  kind (delay a job, never move it): it knows the future (the noise schedule, the running jobs'
  remaining work; not the jobs that will start later) and holds a job exactly when, started now,
  it would vary and some start within its delay budget on the same nodes would not.

:class:`Recorded` wraps a flagging oracle and logs each answer beside the present-state
oracle's for the same job, nodes and moment (the flag-agreement table).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from rush.contention.apps import APPS, scaled
from rush.contention.counterfactual import Timeline, delayed_slowdown
from rush.contention.counters import SAMPLE_INTERVAL
from rush.contention.noise import NoiseSpec
from rush.contention.probe import simulate_probe
from rush.contention.shell import JobSpec, Oracle, Present
from rush.contention.state import Running


class PresentStateOracle:
    def __init__(self, thresholds: dict[str, float]) -> None:
        self.thresholds = thresholds
        self.asked = 0
        self.flagged = 0

    def slowdown(self, present: Present, spec: JobSpec, nodes: np.ndarray) -> float:
        candidate = Running.of(spec.job_id, spec.app, nodes, present.fabric.machine, spec.scaling)
        return present.fabric.slowdown_if_started(present.running, present.noise_level, candidate)

    def __call__(self, present: Present, asked: Sequence[tuple[JobSpec, np.ndarray]]) -> list[bool]:
        flags = [self.slowdown(present, spec, nodes) > self.thresholds[spec.app] for spec, nodes in asked]
        self.asked += len(flags)
        self.flagged += sum(flags)
        return flags


class NoiseOracle:
    def __init__(self, spec: NoiseSpec) -> None:
        lo, hi = spec.intensity
        self.loud = 0.0 if spec.mode == "switching" else (lo + hi) / 2.0
        self.asked = 0
        self.flagged = 0

    def __call__(self, present: Present, asked: Sequence[tuple[JobSpec, np.ndarray]]) -> list[bool]:
        loud = present.noise_level > self.loud
        flags = [loud and APPS[spec.app].wtype == "network" for spec, _ in asked]
        self.asked += len(flags)
        self.flagged += sum(flags)
        return flags


DELAY_BUDGET = 300.0  # s: ten passes of the periodic 30 s interval (the README's assumption)
DELAY_STEP = 30.0  # candidate start moments: one per periodic pass


class ClairvoyantOracle:
    """Flags a job when it would vary started now (slowdown above its application's threshold,
    its own OS jitter included) and a later start within ``budget`` seconds of its first flag
    (every ``step`` seconds, on the same nodes) would not. The future it sees is
    :meth:`rush.contention.counterfactual.Timeline.project`'s: the running jobs finish under the
    noise schedule, nobody else starts; the candidate's own traffic is added to it."""

    def __init__(
        self, thresholds: dict[str, float], budget: float = DELAY_BUDGET, step: float = DELAY_STEP
    ) -> None:
        self.thresholds = thresholds
        self.budget = budget
        self.step = step
        self.asked = 0
        self.flagged = 0
        self._first: dict[int, float] = {}  # job -> when it was first held
        self._timeline: tuple[float, Timeline] | None = None

    def timeline(self, present: Present) -> Timeline:
        if self._timeline is None or self._timeline[0] != present.t:
            if present.schedule is None or len(present.work_left) != len(present.running):
                raise ValueError("the clairvoyant oracle needs the shell's work_left and noise schedule")
            longest = max(a.base for a in APPS.values()) * 4.0
            timeline = Timeline.project(
                present.fabric, present.schedule, present.t, present.running, present.work_left,
                self.budget + longest,
            )  # fmt: skip
            self._timeline = (present.t, timeline)
        return self._timeline[1]

    def best_delay(self, present: Present, spec: JobSpec, nodes: np.ndarray) -> tuple[float, float, float]:
        """(slowdown started now, the lowest within the budget left, its delay)."""
        timeline = self.timeline(present)
        job = Running.of(spec.job_id, spec.app, nodes, present.fabric.machine, spec.scaling)
        base = scaled(APPS[spec.app], spec.nodes, spec.scaling).base
        work = base * spec.jitter
        left = max(0.0, self._first.get(spec.job_id, present.t) + self.budget - present.t)
        now = delayed_slowdown(timeline, job, present.t, work, base)
        best, when = now, 0.0
        for k in range(1, int(left // self.step) + 1):
            s = delayed_slowdown(timeline, job, present.t + k * self.step, work, base)
            if s < best:
                best, when = s, k * self.step
        return now, best, when

    def __call__(self, present: Present, asked: Sequence[tuple[JobSpec, np.ndarray]]) -> list[bool]:
        flags = []
        for spec, nodes in asked:
            bar = self.thresholds[spec.app]
            now, best, _ = self.best_delay(present, spec, nodes)
            hold = now > bar and best <= bar
            if hold:
                self._first.setdefault(spec.job_id, present.t)
            flags.append(hold)
        self.asked += len(flags)
        self.flagged += sum(flags)
        return flags


class LearnedOracle:
    """RUSH's learned predictor with the core's flag rule (:mod:`rush.core.variation_flag`, the
    live predictor's): the probability of ``classes`` against the model card's flag threshold
    (chosen on held-out campaign data), or, with none, the most probable class.
    ``flag_by_size`` (RUSH-SIZE; the daemon's ``variation.flag_by_size = true``) gives the
    threshold of the job's size from the card's per-size table, or from ``size_table`` (the
    study's, computed as training computes it, for a card trained before cards carried one);
    without it the card's one threshold holds for every size (RUSH), whether or not the card has
    a per-size table.

    The counter window is read as the daemon's predictor reads it
    (:func:`rush.models.variability.features.window_features_for`, the function that built the
    training set: all-node, and the job-node window on the tentative nodes when the model reads
    job-node features) once per counter interval and node set: the store's readings are stamped
    on the 30 s grid, so the window's content changes only at ticks. The probe taken on the
    tentative nodes just before the question joins those features as the latest probe the
    predictor would read from the store, and the predictor's own model call decides
    (:meth:`~rush.planner.variation.LearnedVariationPredictor.predict_from`)."""

    def __init__(
        self,
        store: Any,
        model: Path,
        rng: np.random.Generator,
        classes: tuple[str, ...] = ("variation",),
        flag_by_size: bool = False,
        size_table: dict[str, float] | None = None,
    ) -> None:
        from rush.planner.variation import get_predictor

        self.store = store
        self.rng = rng
        self.predictor = get_predictor(
            "learned",
            source=store,
            model=str(model),
            classes=list(classes),
            flag_by_size=flag_by_size,
            size_table=size_table,
        )
        self.asked = 0
        self.flagged = 0
        self.unknown = 0
        self._cache: dict[tuple[int, tuple[int, ...] | None], dict[str, float]] = {}
        self._tick = -1
        self._all_nodes = any(f.startswith("all_") for f in self.predictor.features)
        self._quiet: tuple[int, np.ndarray] | None = None

    def _flag(self, features: dict[str, float], spec: JobSpec) -> bool:
        job = SimpleNamespace(job_id=spec.job_id, wtype=APPS[spec.app].wtype, nodes=spec.nodes)
        return bool(self.predictor.predict_from(features, [job])[0])

    def _window(self, present: Present, nodes: np.ndarray) -> dict[str, float]:
        """The counter features for a job on ``nodes`` now: all-node and, when the model reads
        them, job-node windows, by the function that built the training set."""
        from rush.models.variability.features import window_features_for

        tick = math.ceil(present.t / SAMPLE_INTERVAL - 1e-9)
        if tick != self._tick:
            self._cache.clear()
            self._tick = tick
        features: dict[str, float] = {}
        window = self.predictor.window
        if self._all_nodes:
            if (tick, None) not in self._cache:
                self._cache[(tick, None)] = window_features_for(
                    self.store, None, present.now, window, scope="all", with_probe=False
                )
            features |= self._cache[(tick, None)]  # type: ignore[operator]
        if self.predictor.uses_job_nodes:
            key = (tick, tuple(nodes.tolist()))
            if key not in self._cache:
                hosts = [present.fabric.machine.hostname(int(k)) for k in nodes]
                self._cache[key] = window_features_for(
                    self.store, hosts, present.now, window, scope="job", with_probe=False
                )
            features |= self._cache[key]  # type: ignore[operator]
        return features

    def quiet_leaves(self, present: Present) -> np.ndarray:
        """Per leaf switch (variability-aware placement): the predictor's own rule
        (:meth:`~rush.planner.variation.LearnedVariationPredictor.quiet_leaves`: a network job on
        the leaf's nodes is not flagged), on the store's window, once per counter interval (the
        window changes only at ticks). No probe runs on a leaf before a job is placed there, so
        the model's probe features are imputed; a probe inside one leaf would cross no uplink."""
        tick = math.ceil(present.t / SAMPLE_INTERVAL - 1e-9)
        if self._quiet is None or self._quiet[0] != tick:
            m = present.fabric.machine
            leaves = {leaf: m.leaf_hosts(leaf) for leaf in range(m.leaves)}
            answer = self.predictor.quiet_leaves(present.now, leaves)
            self._quiet = (tick, np.array([bool(answer.get(leaf, True)) for leaf in range(m.leaves)]))
        return self._quiet[1]

    def __call__(self, present: Present, asked: Sequence[tuple[JobSpec, np.ndarray]]) -> list[bool]:
        flags = []
        for spec, nodes in asked:
            window = self._window(present, nodes)
            probe = simulate_probe(present.fabric, present.util, nodes, self.rng)
            features = window | {f"probe_{name}": value for name, value in probe.items()}
            flags.append(self._flag(features, spec))
        self.asked += len(flags)
        self.flagged += sum(flags)
        return flags


class Recorded:
    """An oracle whose answers are logged beside the present-state oracle's."""

    def __init__(self, oracle: Oracle, reference: PresentStateOracle) -> None:
        self.oracle = oracle
        self.reference = reference
        self.events: list[dict[str, Any]] = []

    @property
    def asked(self) -> int:
        return getattr(self.oracle, "asked", 0)

    @property
    def flagged(self) -> int:
        return getattr(self.oracle, "flagged", 0)

    def __getattr__(self, name: str) -> Any:
        # quiet_leaves and the like: the wrapped oracle's (the shell looks them up by name).
        if name == "oracle":
            raise AttributeError(name)
        return getattr(self.oracle, name)

    def __call__(self, present: Present, asked: Sequence[tuple[JobSpec, np.ndarray]]) -> list[bool]:
        flags = self.oracle(present, asked)
        # The present-state oracle recorded against itself: its answers are the truth already.
        truth = flags if self.oracle is self.reference else [
            self.reference.slowdown(present, spec, nodes) > self.reference.thresholds[spec.app]
            for spec, nodes in asked
        ]  # fmt: skip
        for (spec, _), f, o in zip(asked, flags, truth, strict=True):
            self.events.append({"t": present.t, "job_id": spec.job_id, "app": spec.app, "flag": bool(f),
                                "oracle_flag": bool(o)})  # fmt: skip
        return flags
