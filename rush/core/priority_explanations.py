"""The pass's ``priority`` decisions, one per pending job, kept as its arrays until read.

A live queue of 10 000 pending jobs gets 10 000 explanations per cycle ("rank 12 of 10000:
not starved, FCFS key ... by FCFS"), yet a shell reads few of them: the daemon journals and
sends only the priorities whose value changed (:func:`rush.planner.apply.plan_actions`).
Writing every one in words cost more than the compiled pass (about 20 ms a cycle), so the
pass keeps the ranked job ids, groups, keys and values here, and a decision is put in words
when something reads it: :meth:`where` for some, :meth:`decisions` for all (what
:attr:`rush.core.snapshot.Decisions.decisions` gives back, word for word as before).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from rush.core.snapshot import Decision, KeepMany


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

    def decisions(self) -> list[Decision]:
        """Every decision, in rank order."""
        return self._decisions(np.arange(len(self)))

    def where(self, keep: Callable[[int, int], bool]) -> list[Decision]:
        """The decisions whose (job id, value) ``keep`` holds, by value (largest first; equal
        values in rank order); only those put in words."""
        return self.split_where(lambda ids, values: map(keep, ids, values))[0]

    def split_where(
        self, keep: KeepMany, words: int | None = None
    ) -> tuple[list[Decision], list[tuple[int, int]]]:
        """As :meth:`where`, with ``keep`` asked once for every job (job ids and values as two
        lists, in rank order), the first ``words`` of them in words (None: all) and the rest as
        (job id, value): a reader that acts on a few (the daemon's per-cycle action budget)
        leaves the others unwritten."""
        ids, values = self.job_id.tolist(), self.value.tolist()
        kept = np.fromiter(keep(ids, list(map(int, values))), dtype=np.bool_, count=len(ids))
        by_value = np.argsort(-self.value, kind="stable")
        ranks = by_value[kept[by_value]]
        cut = len(ranks) if words is None else max(words, 0)
        rest = ranks[cut:]
        return self._decisions(ranks[:cut].tolist()), list(
            zip(self.job_id[rest].tolist(), self.value[rest].tolist(), strict=True)
        )

    def _decisions(self, ranks) -> list[Decision]:
        """The decisions at ``ranks``, in that order: one loop writing the words inline (a
        method call per decision cost as much as the words at 10 000 a cycle)."""
        at = np.asarray(ranks, dtype=np.intp)  # only these rows read (a few of 10 000 a cycle)
        ids, groups, keys, values = (
            column[at].tolist() for column in (self.job_id, self.group, self.key, self.value)
        )
        count, tail = len(self), f" by {self.order_words}"
        # Per group, the words between "rank r of n" and the key.
        words = [f": {w}, {self.policy} key " for w in self.group_words]
        return [
            Decision(i, "priority", f"rank {r + 1} of {count}{words[g]}{k:.6g}{tail}", v)
            for r, i, g, k, v in zip(at.tolist(), ids, groups, keys, values, strict=True)
        ]
