"""Test helpers shared by the planner's column tests: a runtime predictor with set answers and
the latest queue row per job."""

from __future__ import annotations

from collections.abc import Sequence

from rush.core.snapshot import RuntimeQuantiles
from rush.planner.journal import QueueRow
from rush.rjms.base import RJMSJob


class SetRuntimes:
    """A runtime predictor with set answers: an estimate (or none) and quantiles (or none) per
    job id."""

    name = "set"

    def __init__(
        self,
        estimate: dict[int, float] | None = None,
        quantiles: dict[int, RuntimeQuantiles] | None = None,
    ) -> None:
        self.estimate = {} if estimate is None else estimate
        self.quantiles = {} if quantiles is None else quantiles

    def forget_except(self, live: set[int]) -> None:
        pass

    def predict_new(self, jobs: Sequence[RJMSJob]) -> int:
        return 0

    def estimates(self, jobs: Sequence[RJMSJob]) -> dict[int, tuple[float, str]]:
        return {j.job_id: (self.estimate[j.job_id], "set") for j in jobs if j.job_id in self.estimate}

    def runtime_quantiles(self, jobs: Sequence[RJMSJob]) -> dict[int, RuntimeQuantiles]:
        return {j.job_id: self.quantiles[j.job_id] for j in jobs if j.job_id in self.quantiles}


def keep_latest(rows: list[QueueRow], previous: dict[int, QueueRow]) -> None:
    """``previous`` updated to each job's latest row (a gone job dropped)."""
    for row in rows:
        if row.state == "gone":
            previous.pop(row.job_id, None)
        else:
            previous[row.job_id] = row
