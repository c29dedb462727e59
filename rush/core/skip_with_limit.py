"""Skip-with-limit (the RUSH paper's delay rule), one semantics for every shell.

In a scheduling pass, a job that the pass *would start now* (in priority order, or by
backfilling) and that the variation predictor flags is skipped instead: not started and not
reserved in this pass. Each pass that skips it counts one skip
(:func:`rush.core.scheduling_pass.scheduling_pass` does the counting); once it has been
skipped ``skip_limit`` times it is started like any other job. A flagged job that does not
fit now is not skipped: it is ordered, and reserved when it is the EASY head or gets a
conservative reservation, like any other job. Live, a pass is one daemon cycle: the daemon
holds the jobs the core skipped in this cycle and releases the ones it no longer skips.

**Which passes count a skip.** RUSH's skip count grows when Fluxion's scheduling loop
considers the job, and that loop runs on RJMS events: a job submitted, a job ended, resources
changed (Nichols et al., IPDPS'22, Sec. V-B: the model is asked "when jobs are about to be
run"). A pass triggered by such an event (``Snapshot.trigger == "event"``) counts one skip
per skipped job. A *periodic* pass (rush's own addition: the contention shell's and the Flux
module's timer, a daemon cycle in which the queue did not change) applies the same rule, so it
starts a job the model has stopped flagging or one already at its limit, but a job it skips
keeps its count: otherwise the limit would be a number of timer ticks (10 passes of 30 s are
five minutes whatever happens in the queue) instead of a number of scheduling opportunities.
One exception keeps a flagged job from waiting for ever: when no running job has a finite
time limit (nothing runs, or only a job without one, like the contention simulator's noise
job), no event can come, and a periodic pass counts after all.
Every shell uses this one rule (:func:`counts_skips`): the simulator's passes are all event
passes; the contention shell and the Flux module mark their timer passes; the daemon marks a
cycle periodic when its read shows no arrival, end or node change since the last cycle.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from rush.errors import RushError


@njit(cache=True, inline="always")
def should_skip(variable: bool, skips: int, skip_limit: int) -> bool:
    """Skip a job the pass would start now, when it is flagged and below the limit."""
    return variable and skips < skip_limit


TRIGGERS = ("event", "periodic")


def counts_skips(trigger: str, running_limits: np.ndarray) -> bool:
    """Whether a pass adds one skip to each job it skips: an event pass does; a periodic one
    only when no running job has a finite limit (``running_limits``, seconds), so that no
    event can come (module docstring)."""
    if trigger not in TRIGGERS:
        raise RushError(
            f"unknown pass trigger {trigger!r}", where="Snapshot.trigger", fix=f"one of {', '.join(TRIGGERS)}"
        )
    return trigger == "event" or not bool(np.isfinite(running_limits).any())
