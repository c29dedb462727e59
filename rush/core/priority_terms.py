"""The terms a job's priority comes from, in words and numbers (``rush explain``).

The core orders by ``(group, key)`` (:mod:`rush.core.ordering`); this module says, for one job,
which group and why, the policy's inputs (p~, q, wait, r, fair-share), and for LINEAR and
LEARNED each term's weight and contribution to the key. It recomputes the key with the same
function the pass uses (:func:`rush.core.policies.priority_key`), so what it shows is what the
core used, not a second formula.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from rush.core.config import CoreConfig
from rush.core.names import LINEAR_FEATURES, NEUTRAL_FAIRSHARE
from rush.core.policies import expansion, priority_key, quantised_wait

# The interpreted versions of the very functions the pass compiles: rush explain computes one
# job's terms, and loading the compiled kernels from numba's cache would cost it about 0.35 s.
_key = priority_key.py_func
_quantised_wait = quantised_wait.py_func


@dataclass(frozen=True)
class JobInputs:
    """One pending job as the core saw it."""

    submit: float
    procs: int
    estimate: float  # the policy's p~ (the runtime estimate, else the limit)
    runtime_class: int = -1
    fairshare: float | None = None


@dataclass(frozen=True)
class Term:
    name: str
    value: float  # the feature's value
    weight: float | None = None  # LINEAR/LEARNED: its weight; None for a fixed formula
    contribution: float | None = None  # weight x value: its part of the key


@dataclass
class PriorityTerms:
    group: int
    group_reason: str
    key: float
    inputs: dict[str, float] = field(default_factory=dict)
    terms: list[Term] = field(default_factory=list)


def _group(config: CoreConfig, job: JobInputs, now: float) -> tuple[int, str]:
    wait = now - job.submit
    if config.threshold is not None and wait > config.threshold:
        return (
            0,
            f"starved: waited {wait:.0f} s > threshold {config.threshold:.0f} s, so first (submit order)",
        )
    if not config.use_classes:
        return 1, "not starved" + ("" if config.threshold is None else f" (waited {wait:.0f} s)")
    if job.runtime_class == 0:
        return 1, "predicted small: ahead of predicted-large and unknown jobs"
    return 2, "predicted large or unknown: behind predicted-small jobs"


def priority_terms(config: CoreConfig, job: JobInputs, now: float, time_origin: float) -> PriorityTerms:
    """The group, key and terms of ``job``'s priority at ``now`` (as a live pass computes them:
    time-dependent policies see the wait rounded to the ``wait_quantum`` grid)."""
    policy = config.policy
    group, why = _group(config, job, now)
    seen = now
    if config.wait_quantum > 0:
        seen = job.submit + _quantised_wait(max(now - job.submit, 0.0), config.wait_quantum)
    weights = policy.weight_array()
    key = float(_key(policy.code, weights, seen, time_origin, job.submit, job.procs, job.estimate))
    fairshare = NEUTRAL_FAIRSHARE if job.fairshare is None else float(job.fairshare)
    p = max(job.estimate, 1.0)
    q = float(job.procs)
    wait = max(seen - job.submit, 0.0)
    r = max(job.submit - time_origin, 1.0)
    out = PriorityTerms(
        group, why, key, {"p": job.estimate, "q": q, "wait": wait, "r": r, "fairshare": fairshare}
    )
    if group == 0:
        out.key = job.submit
        return out
    if policy.name == "LINEAR":
        values = {
            "q": q,
            "p": job.estimate,
            "wait": wait,
            "rho": job.estimate / q,
            "expansion": float(expansion(wait, p)),
            "area": job.estimate * q,
            "r": r,
            "fairshare": fairshare,
        }
        for name, w in zip(LINEAR_FEATURES, weights.tolist(), strict=True):
            if w != 0.0:
                out.terms.append(Term(name, values[name], w, w * values[name]))
        out.key = key + weights[LINEAR_FEATURES.index("fairshare")] * fairshare
    elif policy.name == "LEARNED":
        out.terms = _learned_terms(weights, p, q, r)
    return out


def _learned_terms(weights: np.ndarray, p: float, q: float, r: float) -> list[Term]:
    """Each monomial c * x^a y^b z^c of a LEARNED heuristic, on its scaled inputs."""
    x, y, z = p / weights[1], q / weights[2], r / weights[3]
    terms = []
    for k in range(int(weights[0])):
        b = 4 + 4 * k
        a, bb, c, coef = int(weights[b]), int(weights[b + 1]), int(weights[b + 2]), float(weights[b + 3])
        value = x**a * y**bb * z**c
        contribution = coef * value if math.isfinite(value) else math.inf
        terms.append(Term(f"p^{a} q^{bb} r^{c}", value, coef, contribution))
    return terms
