"""How much variation was avoidable: each run with variation's causes and whether a delay avoids it.

For a finished run (every job's nodes, start and end, and the noise schedule), each run whose
slowdown exceeds its application's threshold is re-evaluated by
:func:`rush.contention.counterfactual.attribute` with one cause removed at a time: the noise on
the uplinks it crossed, the other jobs' traffic, its own traffic, the file system's load. A
cause is *decisive* when removing it alone brings the run under its threshold; the *main* cause
is the one whose removal lowers the slowdown most, ``jitter`` when even removing all four leaves
it above (its OS noise alone). Then the run is restarted on the same nodes ``step``, 2 ``step``..
up to ``budget`` seconds later, the others' run as it was
(:func:`~rush.contention.counterfactual.delayed_slowdown`): it was *avoidable by delay* when one
of those starts stays under the threshold.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rush.contention.apps import APPS, scaled
from rush.contention.counterfactual import CAUSES, Timeline, attribute, delayed_slowdown
from rush.contention.noise import NoiseSchedule
from rush.contention.shell import JobResult, JobSpec
from rush.contention.state import Fabric, Running


def attribute_runs(
    results: Sequence[JobResult],
    specs: Sequence[JobSpec],
    fabric: Fabric,
    noise: NoiseSchedule,
    thresholds: dict[str, float],
    budget: float,
    step: float,
) -> dict[int, dict[str, object]]:
    """job id -> the attribution of each run with variation (runs without are left out)."""
    m = fabric.machine
    index = {h: k for k, h in enumerate(m.hosts)}
    by_id = {s.job_id: s for s in specs}
    jobs = [
        (Running.of(r.job_id, r.app, np.array([index[h] for h in r.hosts]), m, r.scaling), r.start, r.end)
        for r in results
    ]
    timeline: Timeline | None = None
    out: dict[int, dict[str, object]] = {}
    for (job, start, end), r in zip(jobs, results, strict=True):
        bar = thresholds[r.app]
        if not r.runtime / r.base > bar:
            continue
        if timeline is None:
            timeline = Timeline.of_results(fabric, noise, jobs)
        a = attribute(timeline, job, start, end, r.base)
        decisive = [c for c in CAUSES if a.without[c] <= bar]
        main = "jitter" if a.without["all"] > bar else min(CAUSES, key=lambda c: a.without[c])
        spec = by_id[r.job_id]
        base = scaled(APPS[r.app], r.size, r.scaling).base
        work = base * spec.jitter
        best, when = np.inf, None
        for k in range(1, int(budget // step) + 1):
            s = delayed_slowdown(timeline, job, start + k * step, work, base)
            if s < best:
                best, when = s, k * step
        out[r.job_id] = {
            "cause": main,
            "decisive": "+".join(decisive) or "none",
            **{f"without_{c}": a.without[c] for c in (*CAUSES, "all")},
            "best_delayed": float(best),
            "best_delay": when,
            "avoidable": bool(best <= bar),
        }
    return out
