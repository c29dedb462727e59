"""A starved head is reserved on limits: EASY's guarantee under predicted runtimes (issue 29).

EASY reserves its head at the shadow time computed from the running jobs' estimated ends and
backfills a job that ends by it (or fits in the extra processors). The head starts by that
time only if the estimates are upper bounds. With runtime predictions (rush-Q, EASY++, Gaussier
et al.) they are not: a backfilled job predicted to end before the shadow time runs on to its
request, its estimate is corrected, the shadow time moves later and the next pass backfills on
predictions again. Measured on CTC-SP2 (``sim/runtime_predictions/README.md``), jobs needing
nearly the whole machine waited 41-60 days, although the starvation threshold (200,000 s) had
put them first in the queue long before.

The rule, once for every shell: **when EASY's head has waited longer than the starvation
threshold, its shadow time and extra processors are computed from the running jobs' limits
(``RunningSet.limit_end``), and the backfill test reads each job's limit
(``PassJobs.limit``)** (the time limit, the divider for a killable false small: when the run is
surely over). Nothing started after it can then delay it, and the jobs running when it became
head are gone by their limits: its wait is bounded as under EASY on requests. Jobs that have not
starved are reserved on the estimates as before, so decisions change only in passes whose head
has starved, and never where estimates are the limits (the two are then equal).
"""

from __future__ import annotations

from numba import njit

from rush.core.pass_data import PassConfig, PassJobs, RunningSet


@njit(cache=True, inline="always")
def reserved_on_limits(config: PassConfig, jobs: PassJobs, head: int, now: float) -> bool:
    """Whether EASY's head ``head`` has starved (waited strictly more than the threshold, the
    queue order's own test), so that its reservation is computed on limits."""
    return config.threshold >= 0.0 and now - jobs.submit[head] > config.threshold


@njit(cache=True, inline="always")
def on_limits(running: RunningSet) -> RunningSet:
    """The running jobs as a reservation on limits reads them: by the end of their limits."""
    return RunningSet(
        running.limit_end, running.limit_procs, running.count, running.limit_end, running.limit_procs
    )
