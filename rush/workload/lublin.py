"""Lublin–Feitelson synthetic workload (Lublin & Feitelson, "The workload on parallel
supercomputers: modeling the characteristics of rigid jobs", JPDC 63(11), 2003).

The model with the published parameters of the authors' reference generator
(``m_lublin99.c``), which has one parameter set per job type. ``job_types="batch"`` (the
default) generates batch jobs only, ``"interactive"`` interactive jobs only, ``"both"``
interleaves the two arrival streams as the reference generator does (the next job is of
the type whose next arrival comes first), ``"whole"`` uses the reference generator's
typeless "whole sample" parameters (its ``INCLUDE_JOBS_TYPE 0`` mode, all jobs written as
type 0).

* **Size**: serial with probability ``serial_prob``; otherwise ``par`` is drawn from a
  two-stage uniform on log2(size) (``U(low, med)`` with probability ``uprob``, else
  ``U(med, hi)``); with probability ``pow2_prob`` it is rounded to an integer (a
  power-of-two size); size = round(2**par), at most the machine size. The reference
  values are for a 128-node machine (batch ``hi`` = 7, ``med`` = 5; interactive ``hi`` =
  5.5, ``med`` = 3); here ``hi`` = log2(machine size) for batch jobs and 1.5 less for
  interactive ones, and ``med`` keeps its published distance below ``hi``.
* **Runtime**: log(runtime) follows a hyper-gamma: Gamma(a1, b1) with probability
  p = pa * size + pb (clipped to [0, 1]), else Gamma(a2, b2); draws above 12 (about two
  days) are redrawn. pa < 0, so p falls with size and runtime grows with size.
* **Arrivals**: log(inter-arrival time at rush hours) ~ Gamma(aarr * arar, barr); the day
  is cut into 48 half-hour buckets weighted by the Gamma(anum, bnum) distribution over
  "hours" 11..58 moved cyclically (exactly as the reference code does), so a draw is "paid"
  bucket by bucket and arrivals thin out at night. Draws above 13 (about five days) are
  redrawn. The log starts at midnight.
* **Requested times** are not part of the model. Documented choice, after Tsafrir, Etsion
  and Feitelson ("Modeling user runtime estimates", JSSPP 2005: users overestimate and pick
  round values, and many ask for the maximum): with probability 0.1 a job requests the
  largest limit (48 h); otherwise it requests the smallest of 5, 15, 30 min, 1, 2, 4, 8,
  12, 24, 48 h that is at least runtime × m, m ~ log-uniform(1, 10). Runtimes are below
  exp(12) s < 48 h, so requested time >= runtime always.

Deterministic under ``seed`` (numpy ``default_rng``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rush.errors import RushError
from rush.workload.limits import MAX_PROCS, MAX_SYNTH_JOBS, check_seed
from rush.workload.model import Trace

BUCKETS = 48
SECONDS_IN_BUCKET = 86400 // BUCKETS
CYCLIC_DAY_START = 11
TOO_MUCH_TIME = 12.0
TOO_MUCH_ARRIVE_TIME = 13.0
REQUEST_LIMITS = np.array([300, 900, 1800, 3600, 7200, 14400, 28800, 43200, 86400, 172800], dtype=np.float64)
MAX_REQUEST_PROB = 0.10
OVERESTIMATE_MAX = 10.0
INTERACTIVE, BATCH = 0, 1  # the reference generator's type codes (SWF queue field)
WHOLE = 2  # typeless parameters; written as type 0, as the reference generator does
JOB_TYPES = {
    "batch": (BATCH,),
    "interactive": (INTERACTIVE,),
    "both": (INTERACTIVE, BATCH),
    "whole": (WHOLE,),
}


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


# m_lublin99.c: SERIAL_PROB_BATCH, POW2_PROB_BATCH, ULOW/UMED/UHI/UPROB_BATCH (1.2, 5, 7, 0.875),
# A1/B1/A2/B2/PA/PB_BATCH, AARR/BARR/ANUM/BNUM/ARAR_BATCH.
BATCH_PARAMETERS = JobTypeParameters(
    serial_prob=0.2927,
    pow2_prob=0.6686,
    ulow=1.2,
    umed_below_hi=2.0,
    uhi_below_machine=0.0,
    uprob=0.875,
    a1=6.57,
    b1=0.823,
    a2=639.1,
    b2=0.0156,
    pa=-0.003,
    pb=0.6986,
    aarr=6.0415,
    barr=0.8531,
    anum=6.1271,
    bnum=5.2740,
    arar=1.0519,
)
# The same for *_ACTIVE (ULOW/UMED/UHI/UPROB = 1, 3, 5.5, 0.705).
INTERACTIVE_PARAMETERS = JobTypeParameters(
    serial_prob=0.1541,
    pow2_prob=0.625,
    ulow=1.0,
    umed_below_hi=2.5,
    uhi_below_machine=1.5,
    uprob=0.705,
    a1=3.8351,
    b1=0.6605,
    a2=7.073,
    b2=0.6856,
    pa=-0.0118,
    pb=0.9156,
    aarr=6.5510,
    barr=0.6621,
    anum=8.9186,
    bnum=3.6680,
    arar=0.9797,
)
# The "whole sample" (typeless) set, used when INCLUDE_JOBS_TYPE is 0 (ULOW/UMED/UHI = 0.8, 4.5, 7).
WHOLE_PARAMETERS = JobTypeParameters(
    serial_prob=0.244,
    pow2_prob=0.576,
    ulow=0.8,
    umed_below_hi=2.5,
    uhi_below_machine=0.0,
    uprob=0.86,
    a1=4.2,
    b1=0.94,
    a2=312.0,
    b2=0.03,
    pa=-0.0054,
    pb=0.78,
    aarr=10.2303,
    barr=0.4871,
    anum=8.1737,
    bnum=3.9631,
    arar=1.0225,
)
PARAMETERS = {BATCH: BATCH_PARAMETERS, INTERACTIVE: INTERACTIVE_PARAMETERS, WHOLE: WHOLE_PARAMETERS}


def gamma_cdf(x: float, shape: float, scale: float) -> float:
    """Gamma(shape, scale) CDF: the regularised lower incomplete gamma by its power series."""
    z = x / scale
    if z <= 0:
        return 0.0
    term = total = 1.0 / shape
    n = 0
    while term > total * 1e-16 and n < 10_000:
        n += 1
        term *= z / (shape + n)
        total += term
    return min(1.0, total * math.exp(-z + shape * math.log(z) - math.lgamma(shape)))


def bucket_weights(p: JobTypeParameters) -> np.ndarray:
    """Relative arrival intensity of the 48 half-hour buckets of a day (mean 1)."""
    weights = np.empty(BUCKETS)
    for i in range(CYCLIC_DAY_START, BUCKETS + CYCLIC_DAY_START):
        mass = gamma_cdf(i + 0.5, p.anum, p.bnum) - gamma_cdf(i - 0.5, p.anum, p.bnum)
        weights[(i - 1) % BUCKETS] = mass
    return weights / weights.mean()


def _truncated_gamma(
    rng: np.random.Generator, shape: float, scale: float, n: int, limit: float
) -> np.ndarray:
    values = rng.gamma(shape, scale, size=n)
    while (bad := values > limit).any():
        values[bad] = rng.gamma(shape, scale, size=int(bad.sum()))
    return values


def arrival_times(p: JobTypeParameters, n: int, rng: np.random.Generator) -> np.ndarray:
    """Arrival times (s from midnight of day 0) of ``n`` jobs of one type."""
    weights = bucket_weights(p).tolist()
    gains = np.exp(_truncated_gamma(rng, p.aarr * p.arar, p.barr, n, TOO_MUCH_ARRIVE_TIME))
    gains = (gains / SECONDS_IN_BUCKET).tolist()
    times = np.empty(n)
    bucket, points, reminder, now = 0, 0.0, 0.0, 0.0
    for k, gain in enumerate(gains):
        # Pay points bucket by bucket: a low-weight (night) bucket is crossed faster.
        points += gain
        elapsed = 0.0
        while points > weights[bucket]:
            points -= weights[bucket]
            bucket = (bucket + 1) % BUCKETS
            elapsed += SECONDS_IN_BUCKET
        new_reminder = points / weights[bucket]
        elapsed += SECONDS_IN_BUCKET * (new_reminder - reminder)
        reminder = new_reminder
        now += elapsed
        times[k] = now
    return times


def job_sizes(p: JobTypeParameters, n: int, machine_procs: int, rng: np.random.Generator) -> np.ndarray:
    """Processors of ``n`` jobs: serial, power of two, or two-stage uniform on log2 size."""
    uhi = max(p.ulow, math.log2(machine_procs) - p.uhi_below_machine)
    umed = min(uhi, max(p.ulow, uhi - p.umed_below_hi))
    u = rng.random(n)
    first_stage = rng.random(n) <= p.uprob
    par = np.where(first_stage, rng.uniform(p.ulow, umed, n), rng.uniform(umed, uhi, n))
    pow2 = (u > p.serial_prob) & (u <= p.serial_prob + p.pow2_prob)
    par = np.where(pow2, np.floor(par + 0.5), par)
    size = np.where(u <= p.serial_prob, 1, np.floor(2.0**par + 0.5)).astype(np.int64)
    return np.minimum(size, machine_procs)


def runtimes(p: JobTypeParameters, size: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Runtimes (s) from the size-dependent hyper-gamma of log(runtime)."""
    prob = np.clip(p.pa * size + p.pb, 0.0, 1.0)
    log_runtime = np.full(len(size), np.inf)
    while (todo := log_runtime > TOO_MUCH_TIME).any():
        first = rng.random(int(todo.sum())) <= prob[todo]
        log_runtime[todo] = np.where(
            first,
            rng.gamma(p.a1, p.b1, size=len(first)),
            rng.gamma(p.a2, p.b2, size=len(first)),
        )
    return np.floor(np.exp(log_runtime))


def requested_times(runtime: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Round user estimates (module docstring): runtime × log-uniform(1, 10), rounded up."""
    n = len(runtime)
    wanted = np.maximum(runtime, 1.0) * np.exp(rng.uniform(0.0, math.log(OVERESTIMATE_MAX), n))
    k = np.minimum(np.searchsorted(REQUEST_LIMITS, wanted), len(REQUEST_LIMITS) - 1)
    requested = REQUEST_LIMITS[k]
    return np.where(rng.random(n) < MAX_REQUEST_PROB, REQUEST_LIMITS[-1], requested)


def lublin_generate(n_jobs: int, machine_procs: int = 256, seed: int = 0, job_types: str = "batch") -> Trace:
    """``n_jobs`` jobs of the Lublin–Feitelson model on a ``machine_procs`` machine."""
    if not (0 <= n_jobs <= MAX_SYNTH_JOBS and 1 <= machine_procs <= MAX_PROCS):
        raise RushError(
            f"bad synthetic workload size: {n_jobs} jobs on {machine_procs} processors",
            where="lublin",
            fix=f"0 <= jobs <= {MAX_SYNTH_JOBS} and 1 <= processors <= {MAX_PROCS}",
        )
    check_seed(seed, where="lublin seed")
    if job_types not in JOB_TYPES:
        raise RushError(
            f"unknown job types {job_types!r}", where="job_types", fix=f"one of {', '.join(JOB_TYPES)}"
        )
    rng = np.random.default_rng(seed)
    kinds = JOB_TYPES[job_types]
    # Each type's stream for n jobs, merged; ties go to interactive as in the reference code.
    times = np.concatenate([arrival_times(PARAMETERS[t], n_jobs, rng) for t in kinds])
    kind = np.repeat(np.array(kinds, dtype=np.int64), n_jobs)
    order = np.lexsort((kind, times))[:n_jobs]
    submit, kind = np.floor(times[order]), kind[order]
    procs = np.empty(n_jobs, dtype=np.int64)
    runtime = np.empty(n_jobs)
    for t in kinds:
        mine = kind == t
        procs[mine] = job_sizes(PARAMETERS[t], int(mine.sum()), machine_procs, rng)
        runtime[mine] = runtimes(PARAMETERS[t], procs[mine], rng)
    trace = Trace.from_columns(
        n_jobs,
        job_id=np.arange(1, n_jobs + 1),
        submit=submit,
        runtime=runtime,
        alloc_procs=procs,
        req_procs=procs,
        req_time=requested_times(runtime, rng),
        status=np.ones(n_jobs, dtype=np.int64),
        queue=np.where(
            kind == WHOLE, INTERACTIVE, kind
        ),  # 0 interactive, 1 batch, as the reference writes it
    )
    trace.header.update(
        {
            "Version": "2.2",
            "Computer": "synthetic",
            "Note": (
                f"Lublin-Feitelson (JPDC 2003) model, {job_types} jobs, generated by rush with seed {seed}; "
                "requested times from a documented estimate model"
            ),
            "MaxJobs": str(n_jobs),
            "MaxRecords": str(n_jobs),
            "MaxProcs": str(machine_procs),
            "MaxNodes": str(machine_procs),
            "MaxRuntime": str(int(math.exp(TOO_MUCH_TIME))),
            "UnixStartTime": "0",
        }
    )
    trace.name = f"lublin-{n_jobs}-{machine_procs}-{seed}" + ("" if job_types == "batch" else f"-{job_types}")
    return trace
