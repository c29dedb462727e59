"""The simulator's event loop. Scheduling decisions come from rush.core (see kernels).

API (stable; implementation in progress by the lead):

    simulate(workload: Workload, config: CoreConfig, inputs: SimInputs | None = None,
             progress: bool = False) -> SimResult
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class SimInputs:
    """Per-job inputs from models, aligned with the workload (submit order).

    * ``estimate``: runtime predictions replacing p~ for scheduling (kills stay at p~).
    * ``runtime_class``: predicted class per job (0 small, 1 large); used with
      ``CoreConfig.use_classes`` and ``kill_false_small``.
    * ``idempotent``: opt-in mask for false-small kills (default: every job opted in).
    * ``sensitive``: jobs the variation predictor watches (skip-with-limit).
    * ``variable_intervals``: (k, 2) sorted [start, end) times during which sensitive jobs are
      predicted to suffer variability.
    """

    estimate: np.ndarray | None = None
    runtime_class: np.ndarray | None = None
    idempotent: np.ndarray | None = None
    sensitive: np.ndarray | None = None
    variable_intervals: np.ndarray | None = None
