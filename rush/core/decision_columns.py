"""A pass's per-job decisions as columns: one row per pending job of the pass, aligned with the
pass's pending columns (``job_id``: each row's job).

:class:`rush.core.snapshot.Decisions` gives the same values by job id in dictionaries (priority,
its group and key, estimated start, why, the job waited behind); a shell that compares a pass's
decisions with the last pass's (the planner's journal rows) reads these columns instead, so that a
pass where few decisions moved costs array operations, not one lookup per job and field.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from rush.core.snapshot import Decisions

# Where a column has no value for a job: ``group`` and ``behind`` (job ids are not negative).
NONE = -1


@dataclass(frozen=True)
class DecisionColumns:
    """Row ``k`` is pending job ``job_id[k]`` (the pass's pending columns' order, killed jobs
    requeued after them). Each value is the one ``Decisions`` holds for the job, with a mask where
    it may hold none:

    - ``priority`` (int64) where ``has_priority``: ``Decisions.priority``;
    - ``group`` (int64, :data:`NONE` unranked) and ``key`` (float64, NaN unranked):
      ``Decisions.priority_group`` and ``priority_key``;
    - ``estimated_start`` (float64, inf: not in sight) and ``basis`` (str objects), None when the
      pass made no estimates: ``Decisions.estimated_start`` and ``estimate_basis``;
    - ``behind`` (int64, :data:`NONE`: none): ``Decisions.waits_behind``.
    """

    job_id: np.ndarray
    priority: np.ndarray
    has_priority: np.ndarray
    group: np.ndarray
    key: np.ndarray
    estimated_start: np.ndarray | None = None
    basis: np.ndarray | None = None
    behind: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.job_id)

    @staticmethod
    def of(decisions: Decisions) -> DecisionColumns:
        """The columns of ``decisions`` made from its dictionaries (decisions made without
        columns: by hand, or by an older core), one row per job any of them names."""
        d = decisions
        ids = list(dict.fromkeys([*d.priority, *d.priority_group, *d.estimated_start, *d.estimate_basis]))
        n = len(ids)
        estimates = bool(d.estimated_start or d.estimate_basis)
        return DecisionColumns(
            np.array(ids, dtype=np.int64),
            np.array([d.priority.get(j, 0) for j in ids], dtype=np.int64),
            np.array([j in d.priority for j in ids], dtype=np.bool_),
            np.array([d.priority_group.get(j, NONE) for j in ids], dtype=np.int64).reshape(n),
            np.array([d.priority_key.get(j, math.nan) for j in ids], dtype=np.float64).reshape(n),
            np.array([d.estimated_start.get(j, math.nan) for j in ids], dtype=np.float64).reshape(n)
            if estimates
            else None,
            np.array([d.estimate_basis.get(j) for j in ids] + [None], dtype=object)[:n]
            if estimates
            else None,
            np.array([d.waits_behind.get(j, NONE) for j in ids], dtype=np.int64).reshape(n)
            if estimates
            else None,
        )

    def rows_of(self, job_ids: np.ndarray) -> np.ndarray:
        """The row of each of ``job_ids`` in these columns (:data:`NONE`: not a row)."""
        return rows_of(self.job_id, job_ids)


def rows_of(ids: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """The position of each of ``wanted`` in ``ids`` (unique int64 ids), :data:`NONE` where it is
    not there; by sorting, no per-id lookup."""
    wanted = np.asarray(wanted, dtype=np.int64)
    if len(ids) == 0:
        return np.full(len(wanted), NONE, dtype=np.int64)
    order = np.argsort(ids, kind="stable")
    at = np.searchsorted(ids[order], wanted)
    at[at >= len(ids)] = 0
    found = order[at]
    return np.where(ids[found] == wanted, found, NONE)
