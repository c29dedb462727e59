"""Skip-with-limit (the RUSH paper's delay rule), one semantics for every shell.

In a scheduling pass, a job that the pass *would start now* (in priority order, or by
backfilling) and that the variation predictor flags is skipped instead: not started and not
reserved in this pass. Each pass that skips it counts one skip
(:func:`rush.core.scheduling_pass.scheduling_pass` does the counting); once it has been
skipped ``skip_limit`` times it is started like any other job. A flagged job that does not
fit now is not skipped: it is ordered, and reserved when it is the EASY head or gets a
conservative reservation, like any other job. Live, a pass is one daemon cycle: the daemon
holds the jobs the core skipped in this cycle and releases the ones it no longer skips.
"""

from __future__ import annotations

from numba import njit


@njit(cache=True, inline="always")
def should_skip(variable: bool, skips: int, skip_limit: int) -> bool:
    """Skip a job the pass would start now, when it is flagged and below the limit."""
    return variable and skips < skip_limit
