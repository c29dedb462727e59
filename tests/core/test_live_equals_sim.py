"""One skip semantics: a daemon-like loop around ``schedule()`` reproduces the simulator.

The loop below does what the daemon does with the core's decisions (start what it starts,
count one skip per ``skip`` decision, carry the count into the next snapshot), on exact
runtimes. It must give the simulator's start times and skip counts job by job.
"""

from __future__ import annotations

import numpy as np
import pytest

from rush.core import CoreConfig
from rush.simulator.engine import SimInputs, simulate
from tests.core.drive import VARIABLE_UNTIL, drive
from tests.core.helpers import workload


@pytest.mark.parametrize("policy", ["FCFS", "SPF", "WFP3"])
@pytest.mark.parametrize("backfill", ["easy", "none"])
def test_daemon_like_loop_gives_the_simulators_starts_and_skips(policy, backfill):
    rng = np.random.default_rng(11)
    n = 60
    submit = np.sort(rng.integers(0, 300, n)).astype(float)
    procs = rng.integers(1, 7, n)
    runtime = rng.integers(5, 200, n).astype(float)
    req = runtime * rng.uniform(1.0, 2.5, n)
    w = workload(12, list(zip(submit, procs, runtime, req, strict=True)))
    sensitive = rng.random(n) < 0.3
    config = CoreConfig.from_names(policy, backfill, skip_limit=3)
    sim = simulate(
        w, config, SimInputs(sensitive=sensitive, variable_intervals=np.array([[-1.0, VARIABLE_UNTIL]]))
    )
    start, skips = drive(w, config, sensitive)
    np.testing.assert_array_equal(start, sim.start)
    np.testing.assert_array_equal(skips, sim.skips)
    # The scenario exercises the rule: some jobs were skipped, some up to the limit.
    assert skips.sum() > 0 and skips.max() == 3
    assert np.all(skips[~sensitive] == 0)
