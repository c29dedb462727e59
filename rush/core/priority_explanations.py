"""The pass's ``priority`` decisions, one per pending job, kept as its arrays until read.

A live queue of 10 000 pending jobs gets 10 000 explanations per cycle ("rank 12 of 10000:
not starved, FCFS key ... by FCFS"), yet a shell reads few of them: the daemon journals and
sends only the priorities whose value changed (:func:`rush.planner.apply.plan_actions`).
Writing every one in words cost more than the compiled pass (about 20 ms a cycle), so the
pass keeps the ranked job ids, groups, keys and values here, and a decision is put in words
when something reads it: :meth:`reason` for one rank, :meth:`decisions` for all (what
:attr:`rush.core.snapshot.Decisions.decisions` gives back, word for word as before).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from rush.core.snapshot import Decision


@dataclass(frozen=True)
class PriorityExplanations:
    # Pending job ids in rank order (the pass's ``order``), each job's ordering group (0
    # starved, 1, 2 predicted large), the policy's key and the priority value.
    job_id: np.ndarray
    group: np.ndarray
    key: np.ndarray
    value: np.ndarray
    # Words: per group (0, 1, 2), the policy's name, and the order's terms.
    group_words: tuple[str, str, str]
    policy: str
    order_words: str

    def __len__(self) -> int:
        return len(self.job_id)

    def reason(self, rank: int) -> str:
        """The words of the decision at ``rank`` (0: the first in priority order)."""
        return self._words(rank, int(self.group[rank]), float(self.key[rank]))

    def _words(self, rank: int, group: int, key: float) -> str:
        return (
            f"rank {rank + 1} of {len(self)}: {self.group_words[group]}, {self.policy} key {key:.6g} "
            f"by {self.order_words}"
        )

    def decisions(self) -> list[Decision]:
        """Every decision, in rank order."""
        return [
            Decision(job_id, "priority", self._words(rank, g, k), v)
            for rank, (job_id, g, k, v) in enumerate(
                zip(
                    self.job_id.tolist(),
                    self.group.tolist(),
                    self.key.tolist(),
                    self.value.tolist(),
                    strict=True,
                )
            )
        ]

    def where(self, keep: Callable[[int, int], bool]) -> list[Decision]:
        """The decisions whose (job id, value) ``keep`` holds, by value (largest first; equal
        values in rank order), only those put in words."""
        by_value = np.argsort(-self.value, kind="stable").tolist()
        ids, values = self.job_id.tolist(), self.value.tolist()
        return [
            Decision(ids[rank], "priority", self.reason(rank), values[rank])
            for rank in by_value
            if keep(ids[rank], int(values[rank]))
        ]
