"""Priority scores: the pure index policies, WFP3, UNICEF, F1-F4, Lin and linear weights.

Every policy maps a job to a key; **smaller keys run first**. "Largest first" policies
are negated here so the kernels only ever sort ascending. Ties go to the earlier submit,
then the smaller job index (which is (submit, job_id) order).

Notation: q = processors, p~ = runtime estimate (requested time unless a predictor
replaced it), w = wait = now - submit, r = submit - time origin (guarded at r >= 1).

========  =============================================  ==========
policy    key                                            run first
========  =============================================  ==========
FCFS      submit                                         smallest
LCFS      submit                                         largest
SPF/LPF   p~                                             small/large
SQF/LQF   q                                              small/large
SAF/LAF   p~ * q                                         small/large
SRF/LRF   rho = p~ / q                                   small/large
SEXP/LEXP expansion = (w + p~) / p~                      small/large
WFP3      (w / p~)^3 * q                                 largest
UNICEF    w / (log2(q) * p~), log2(1) guarded to 1       largest
F1        log10(p~) * q + 870 * log10(r)                 smallest
F2        sqrt(p~) * q + 2.56e4 * log10(r)               smallest
F3        p~ * q + 6.86e6 * log10(r)                     smallest
F4        p~ * sqrt(q) + 5.31e5 * log10(r)               smallest
LIN       3.24e-2 + 1.15e-7 p~ + 2.61e-5 q - 1.57e-7 r   smallest
LINEAR    sum of weights over (q, p~, w, rho, expansion, area, r)   smallest
LEARNED   sum_k c_k (p~/s_p)^a_k (q/s_q)^b_k (r/s_r)^c_k  smallest
========  =============================================  ==========

An unlimited request (p~ = inf, Slurm's UNLIMITED) gets an orderable key under every policy:
its expansion is 1 (the quotient's limit), LINEAR sums only the terms the site weighted, and a sum
or LEARNED polynomial that would be inf - inf orders last (inf), never NaN, which no sort orders.

F1-F4 are from Carastan-Santos & de Camargo (SC'17); WFP3 and UNICEF from Tang et al.
(IPDPS'09). The learned polynomial heuristics of ``rush.models`` plug in as LINEAR
weights over the same feature vector; the regression-obtained heuristics of ``rush.models.policies.regression``
as ``LEARNED:path`` (file format in :mod:`rush.core.learned`; its terms travel in ``weights``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numba import njit

# The names and codes are plain data in rush.core.names: the command line lists them without numba.
from rush.core.learned import Heuristic
from rush.core.names import DYNAMIC_CODES, LINEAR_FEATURES, POLICY_CODES
from rush.errors import PolicyError


@dataclass(frozen=True)
class Policy:
    """A priority policy by name, with weights for ``LINEAR`` or the encoded terms of ``LEARNED``."""

    name: str
    weights: tuple[float, ...] = field(default=(0.0,) * len(LINEAR_FEATURES))
    source: str = field(default="", compare=False)  # LEARNED: the heuristic file

    def __post_init__(self) -> None:
        # The compiled pass reads LINEAR's weights by feature index, without bounds checks.
        if self.name == "LINEAR" and len(self.weights) != len(LINEAR_FEATURES):
            raise PolicyError(
                f"LINEAR has {len(self.weights)} weights, not one per feature ({len(LINEAR_FEATURES)})",
                where="policy",
                fix=f"give weights over {', '.join(LINEAR_FEATURES)} (parse_policy does)",
            )

    @property
    def code(self) -> int:
        return POLICY_CODES[self.name]

    @property
    def dynamic(self) -> bool:
        if self.name == "LINEAR":
            # The wait and expansion terms change with time, and so does fair-share (usage).
            return self.weights[2] != 0.0 or self.weights[4] != 0.0 or self.weights[7] != 0.0
        return self.code in DYNAMIC_CODES

    def weight_array(self) -> np.ndarray:
        return np.asarray(self.weights, dtype=np.float64)


def learned_policy(heuristic: Heuristic, source: str) -> Policy:
    """The LEARNED policy of a validated heuristic (its terms travel in ``weights``)."""
    return Policy("LEARNED", heuristic.encode(), source=source)


def parse_policy(text: str) -> Policy:
    """Parse ``FCFS``, ``wfp3`` or ``LINEAR:q=1,p=0.5,wait=-2`` into a :class:`Policy`."""
    raw = text.strip()
    name, _, args = raw.partition(":")
    name = name.strip().upper()
    if name not in POLICY_CODES:
        known = ", ".join(POLICY_CODES)
        raise PolicyError(f"unknown policy {text!r}", where="--policy", fix=f"use one of: {known}")
    if name == "LEARNED":
        # The core reads no files: the shells read LEARNED:path first (parse_policy_text).
        raise PolicyError(
            f"{raw!r}: a LEARNED policy is read from its file before the core sees it",
            where="--policy",
            fix="call rush.models.policies.heuristic_file.parse_policy_text (or learned_policy)",
        )
    if name != "LINEAR":
        if args:
            raise PolicyError(
                f"policy {name} takes no parameters", where="--policy", fix=f"write just {name}"
            )
        return Policy(name)
    weights = dict.fromkeys(LINEAR_FEATURES, 0.0)
    for part in filter(None, (p.strip() for p in args.split(","))):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or key not in weights:
            raise PolicyError(
                f"bad LINEAR term {part!r}",
                where="--policy",
                fix=f"write LINEAR:feature=weight,... with features {', '.join(LINEAR_FEATURES)}",
            )
        try:
            weight = float(value)
        except ValueError:
            raise PolicyError(f"weight {value!r} for {key} is not a number", where="--policy") from None
        if not math.isfinite(weight):
            raise PolicyError(
                f"weight {value.strip()!r} for {key} is not a finite number",
                where="--policy",
                fix="give finite weights, e.g. LINEAR:q=1,p=0.5",
            )
        weights[key] = weight
    if not any(weights.values()):
        raise PolicyError(
            "LINEAR needs at least one non-zero weight (all zero orders nothing)",
            where="--policy",
            fix=f"e.g. LINEAR:p=1 (features {', '.join(LINEAR_FEATURES)})",
        )
    return Policy("LINEAR", tuple(weights[f] for f in LINEAR_FEATURES))


@njit(cache=True, inline="always")
def quantised_wait(wait: float, quantum: float) -> float:
    """A wait rounded down to the grid 0, Q, 2Q, 4Q, 8Q, ... (``quantum`` = Q > 0).

    Live, time-dependent scores (SEXP, LEXP, WFP3, UNICEF, LINEAR with wait or expansion
    weights) are computed from this wait, so a job's priority value changes only when its
    wait crosses a grid point: about log2(wait / Q) times in its life, not every cycle.
    """
    if wait < quantum:
        return 0.0
    return quantum * 2.0 ** np.floor(np.log2(wait / quantum))


@njit(cache=True, inline="always")
def _guarded_r(submit: float, time_origin: float) -> float:
    r = submit - time_origin
    return r if r >= 1.0 else 1.0


@njit(cache=True, inline="always")
def expansion(w: float, p: float) -> float:
    """(w + p~) / p~ with p~ >= 1; 1 for an unlimited request (p~ = inf), whose expansion tends
    to 1, where the quotient is inf / inf, an unorderable NaN."""
    return (w + p) / p if p < np.inf else 1.0


@njit(cache=True)
def _linear_key(weights: np.ndarray, q: float, estimate: float, p: float, w: float, r: float) -> float:
    """LINEAR over (q, p~, wait, rho, expansion, area, r): only the terms the site weighted
    (0 x inf, an unlimited request under a zero weight, would be NaN, not 0)."""
    values = (q, estimate, w, estimate / q, expansion(w, p), estimate * q, r)
    total = 0.0
    for k in range(7):
        if weights[k] != 0.0:
            total += weights[k] * values[k]
    if total != total:  # inf - inf between weighted terms: last, not an unorderable NaN
        return np.inf
    return total


@njit(cache=True)
def _learned_key(weights: np.ndarray, p: float, q: float, r: float) -> float:
    """LEARNED: weights = (n, s_p, s_q, s_r, then a, b, c, coefficient per term)."""
    x, y, z = p / weights[1], q / weights[2], r / weights[3]
    total = 0.0
    for k in range(int(weights[0])):
        b = 4 + 4 * k
        total += weights[b + 3] * x ** int(weights[b]) * y ** int(weights[b + 1]) * z ** int(weights[b + 2])
    if total != total:  # inf - inf from overflowing terms: last, not an unorderable NaN
        return np.inf
    return total


@njit(cache=True)
def priority_key(
    code: int,
    weights: np.ndarray,
    now: float,
    time_origin: float,
    submit: float,
    procs: int,
    estimate: float,
) -> float:
    """The key of one job under policy ``code``; smaller runs first."""
    q = float(procs)
    p = estimate if estimate > 1.0 else 1.0  # guard divisions and logs for zero-length jobs
    w = now - submit
    if w < 0.0:
        w = 0.0
    if code == 0:
        return submit
    if code == 1:
        return -submit
    if code == 2:
        return estimate
    if code == 3:
        return -estimate
    if code == 4:
        return q
    if code == 5:
        return -q
    if code == 6:
        return estimate * q
    if code == 7:
        return -estimate * q
    if code == 8:
        return estimate / q
    if code == 9:
        return -estimate / q
    if code == 10:
        return expansion(w, p)
    if code == 11:
        return -expansion(w, p)
    if code == 12:
        return -((w / p) ** 3) * q
    if code == 13:
        lg = np.log2(q) if q > 1.0 else 1.0
        return -w / (lg * p)
    r = _guarded_r(submit, time_origin)
    if code == 20:
        return _learned_key(weights, p, q, r)
    if code == 14:
        return np.log10(p) * q + 870.0 * np.log10(r)
    if code == 15:
        return np.sqrt(p) * q + 2.56e4 * np.log10(r)
    if code == 16:
        return p * q + 6.86e6 * np.log10(r)
    if code == 17:
        return p * np.sqrt(q) + 5.31e5 * np.log10(r)
    if code == 18:
        return 3.24e-2 + 1.15e-7 * p + 2.61e-5 * q - 1.57e-7 * r
    # LINEAR; the fair-share term is per job and added by rush.core.ordering (it is not a
    # function of these inputs).
    return _linear_key(weights, q, estimate, p, w, r)


@njit(cache=True)
def priority_keys(
    code: int,
    weights: np.ndarray,
    now: float,
    time_origin: float,
    jobs: np.ndarray,
    submit: np.ndarray,
    procs: np.ndarray,
    estimate: np.ndarray,
) -> np.ndarray:
    """Keys for the jobs with indices ``jobs``."""
    out = np.empty(len(jobs), dtype=np.float64)
    for k in range(len(jobs)):
        j = jobs[k]
        out[k] = priority_key(code, weights, now, time_origin, submit[j], procs[j], estimate[j])
    return out
