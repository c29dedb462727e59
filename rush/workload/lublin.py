"""Lublin–Feitelson synthetic workload (Lublin & Feitelson, JPDC 63(11), 2003).

The model, with the published parameters of the authors' reference generator, for two job
types (interactive and batch) whose arrival streams interleave:

* **Size**: serial with probability ``serial_prob``; otherwise ``par`` is drawn from a
  two-stage uniform on log2(size) (``U(low, med)`` with probability ``uprob``, else
  ``U(med, hi)``); with probability ``pow2_prob`` it is rounded to an integer (a
  power-of-two size); size = round(2**par). ``hi`` = log2(machine size) for batch jobs
  and 1.5 less for interactive ones; ``med`` keeps the published distance below ``hi``.
* **Runtime**: log(runtime) follows a hyper-gamma: Gamma(a1, b1) with probability
  p = pa * size + pb (clipped to [0, 1]), else Gamma(a2, b2); draws above 12 (about two
  days) are redrawn. p falls with size, so runtime grows with size.
* **Arrivals**: log(inter-arrival time at rush hours) ~ Gamma(aarr * arar, barr); the day
  is cut into 48 half-hour buckets whose weights follow the Gamma(anum, bnum) density over
  hours 11..35 (cyclic), so a draw is "paid" bucket by bucket and arrivals thin out at night.
  Draws above 13 (about five days) are redrawn.
* **Requested times** (not part of the model; documented choice): the smallest of the
  round limits below that is at least runtime × m, m ~ log-uniform(1, 10) (users
  overestimate, Tsafrir et al. 2005); 10 % of jobs request the largest limit.

Deterministic under ``seed`` (numpy ``default_rng``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import gammainc

from rush.workload.model import Trace

BUCKETS = 48
SECONDS_IN_BUCKET = 86400 // BUCKETS
CYCLIC_DAY_START = 11
TOO_MUCH_TIME = 12.0
TOO_MUCH_ARRIVE_TIME = 13.0
REQUEST_LIMITS = np.array(
    [300, 600, 900, 1800, 3600, 7200, 14400, 28800, 43200, 64800, 86400, 129600, 172800], float
)
INTERACTIVE, BATCH = 0, 1


@dataclass(frozen=True)
class JobTypeParameters:
    serial_prob: float
    pow2_prob: float
    ulow: float
    umed_below_hi: float  # umed = uhi - this
    uhi_below_machine: float  # uhi = log2(machine) - this
    uprob: float
    a1: float
    b1: float
    a2: float
    b2: float
    pa: float
    pb: float
    aarr: float
    barr: float
    anum: float
    bnum: float
    arar: float


# The published batch and interactive parameters (reference generator m_lublin99).
BATCH_PARAMETERS = JobTypeParameters(
    0.2927,
    0.6686,
    1.2,
    2.0,
    0.0,
    0.875,
    6.57,
    0.823,
    639.1,
    0.0156,
    -0.003,
    0.6986,
    6.0415,
    0.8531,
    6.1271,
    5.2740,
    1.0519,
)
INTERACTIVE_PARAMETERS = JobTypeParameters(
    0.1541,
    0.625,
    1.0,
    2.5,
    1.5,
    0.705,
    3.8351,
    0.6605,
    7.073,
    0.6856,
    -0.0118,
    0.9156,
    6.5510,
    0.6621,
    8.9186,
    3.6680,
    0.9797,
)


def _bucket_weights(p: JobTypeParameters) -> np.ndarray:
    hours = np.arange(CYCLIC_DAY_START, BUCKETS + CYCLIC_DAY_START, dtype=float)
    mass = gammainc(p.anum, (hours + 0.5) / p.bnum) - gammainc(p.anum, (hours - 0.5) / p.bnum)
    weights = np.empty(BUCKETS)
    weights[(hours.astype(int) - 1) % BUCKETS] = mass
    return weights / weights.mean()


class _ArrivalStream:
    """One job type's arrival process (see module docstring)."""

    def __init__(self, p: JobTypeParameters, rng: np.random.Generator) -> None:
        self.p = p
        self.rng = rng
        self.weights = _bucket_weights(p)
        self.bucket = 0  # the simulation starts at midnight
        self.points = 0.0
        self.reminder = 0.0
        self.time = 0.0
        self.advance()

    def advance(self) -> None:
        gam = TOO_MUCH_ARRIVE_TIME + 1
        while gam > TOO_MUCH_ARRIVE_TIME:
            gam = self.rng.gamma(self.p.aarr * self.p.arar, self.p.barr)
        self.points += math.exp(gam) / SECONDS_IN_BUCKET
        elapsed = 0.0
        while self.points > self.weights[self.bucket]:
            self.points -= self.weights[self.bucket]
            self.bucket = (self.bucket + 1) % BUCKETS
            elapsed += SECONDS_IN_BUCKET
        new_reminder = self.points / self.weights[self.bucket]
        elapsed += SECONDS_IN_BUCKET * (new_reminder - self.reminder)
        self.reminder = new_reminder
        self.time += elapsed


def _size(p: JobTypeParameters, uhi: float, rng: np.random.Generator) -> int:
    u = rng.random()
    if u <= p.serial_prob:
        return 1
    umed = max(p.ulow, uhi - p.umed_below_hi)
    par = rng.uniform(p.ulow, umed) if rng.random() <= p.uprob else rng.uniform(umed, uhi)
    if u <= p.serial_prob + p.pow2_prob:
        par = float(int(par + 0.5))
    return int(2.0**par + 0.5)


def _runtime(p: JobTypeParameters, size: int, rng: np.random.Generator) -> float:
    prob = min(1.0, max(0.0, p.pa * size + p.pb))
    hg = TOO_MUCH_TIME + 1
    while hg > TOO_MUCH_TIME:
        hg = rng.gamma(p.a1, p.b1) if rng.random() <= prob else rng.gamma(p.a2, p.b2)
    return float(int(math.exp(hg)))


def _requested_time(runtime: float, rng: np.random.Generator) -> float:
    if rng.random() < 0.10:
        return float(REQUEST_LIMITS[-1])
    wanted = max(runtime, 1.0) * math.exp(rng.uniform(0.0, math.log(10.0)))
    k = int(np.searchsorted(REQUEST_LIMITS, wanted))
    return float(REQUEST_LIMITS[min(k, len(REQUEST_LIMITS) - 1)])


def lublin_generate(n_jobs: int, machine_procs: int = 256, seed: int = 0) -> Trace:
    """``n_jobs`` jobs of the Lublin–Feitelson model on a ``machine_procs`` machine."""
    if n_jobs < 0 or machine_procs < 1:
        raise ValueError("n_jobs must be >= 0 and machine_procs >= 1")
    rng = np.random.default_rng(seed)
    params = {INTERACTIVE: INTERACTIVE_PARAMETERS, BATCH: BATCH_PARAMETERS}
    streams = {t: _ArrivalStream(p, rng) for t, p in params.items()}
    log2_machine = math.log2(machine_procs)
    submit = np.empty(n_jobs)
    procs = np.empty(n_jobs, dtype=np.int64)
    runtime = np.empty(n_jobs)
    requested = np.empty(n_jobs)
    job_type = np.empty(n_jobs, dtype=np.int64)
    for k in range(n_jobs):
        kind = INTERACTIVE if streams[INTERACTIVE].time <= streams[BATCH].time else BATCH
        stream = streams[kind]
        p = params[kind]
        submit[k] = float(int(stream.time))
        uhi = max(p.ulow, log2_machine - p.uhi_below_machine)
        procs[k] = min(_size(p, uhi, rng), machine_procs)
        runtime[k] = _runtime(p, int(procs[k]), rng)
        requested[k] = _requested_time(runtime[k], rng)
        job_type[k] = kind
        stream.advance()
    trace = Trace.from_columns(
        n_jobs,
        job_id=np.arange(1, n_jobs + 1),
        submit=submit,
        runtime=runtime,
        alloc_procs=procs,
        req_procs=procs,
        req_time=requested,
        status=np.ones(n_jobs, dtype=np.int64),
        queue=job_type,  # 0 interactive, 1 batch, as the reference generator writes it
    )
    trace.header.update(
        {
            "Version": "2.2",
            "Computer": "synthetic",
            "Note": f"Lublin-Feitelson (JPDC 2003) model generated by rush, seed {seed}",
            "MaxJobs": str(n_jobs),
            "MaxRecords": str(n_jobs),
            "MaxProcs": str(machine_procs),
            "MaxNodes": str(machine_procs),
            "UnixStartTime": "0",
        }
    )
    trace.name = f"lublin-{n_jobs}-{machine_procs}-{seed}"
    return trace
