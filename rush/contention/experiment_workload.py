"""Experiment-like bursts of jobs: the workload of the paper's experiments and of the campaign's blocks.

20 % of the jobs are submitted at the burst's start and the rest uniformly over the next 20
minutes; applications are dealt evenly (a shuffled deck); each run gets its OS-jitter factor.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rush.contention.model import JITTER
from rush.contention.shell import JobSpec

ARRIVAL_SPAN = 1200.0
AT_ZERO = 0.2


def burst(
    rng: np.random.Generator,
    apps: Sequence[str],
    sizes: Sequence[int],
    scaling: str,
    start: float = 0.0,
    first_id: int = 1,
) -> list[JobSpec]:
    """``len(sizes)`` jobs of ``apps`` (dealt evenly, shuffled) with the given sizes."""
    n = len(sizes)
    deck = np.resize(np.array(apps), n)
    rng.shuffle(deck)
    at_zero = round(AT_ZERO * n)
    submit = np.concatenate([np.zeros(at_zero), rng.uniform(0.0, ARRIVAL_SPAN, n - at_zero)])
    jitter = rng.lognormal(0.0, JITTER, n)
    return [
        JobSpec(
            first_id + k, str(deck[k]), int(sizes[k]), start + float(submit[k]), scaling, float(jitter[k])
        )
        for k in range(n)
    ]
