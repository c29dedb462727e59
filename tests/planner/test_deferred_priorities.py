"""The priorities a cycle's budget leaves unsent, kept as the core's columns
(rush.core.priority_explanations.DeferredPriorities) and counted by kind by the applier
(rush.planner.apply.Plan.deferred_counts): differential against main's path, which made a
(job id, value) tuple per deferred priority and a (kind, job id) pair per deferred action and
counted those, over random explanations, budgets and plans."""

from __future__ import annotations

import numpy as np
import pytest

from rush.core.priority_explanations import DeferredPriorities, PriorityExplanations
from rush.core.snapshot import Decisions
from rush.planner.apply import Action, Applier, Plan
from rush.planner.journal import Journal
from rush.planner.metrics import DaemonMetrics

KINDS = ("kill", "release", "hold", "priority")


def explanations(rng: np.random.Generator, n: int, integer: bool) -> PriorityExplanations:
    values = rng.integers(-5, 20, n) if integer else rng.integers(-5, 20, n) + rng.choice([0.0, 0.25], n)
    return PriorityExplanations(
        rng.permutation(np.arange(1, 3 * n + 1))[:n].astype(np.int64),
        rng.integers(0, 3, n).astype(np.int64),
        rng.uniform(0.0, 100.0, n),
        values.astype(np.int64 if integer else np.float64),  # many ties
        ("starved", "first", "second"),
        "FCFS",
        "submit",
    )


def mains_split(explained: PriorityExplanations, keep, words: int):
    """Main's split_where (274479d): every value through int(), the rest as a list of tuples."""
    ids, values = explained.job_id.tolist(), explained.value.tolist()
    kept = np.fromiter(keep(ids, list(map(int, values))), dtype=np.bool_, count=len(ids))
    by_value = np.argsort(-explained.value, kind="stable")
    ranks = by_value[kept[by_value]]
    rest = ranks[max(words, 0) :]
    return list(zip(explained.job_id[rest].tolist(), explained.value[rest].tolist(), strict=True))


@pytest.mark.parametrize("seed", range(40))
def test_deferred_priorities_are_mains_list(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 300))
    explained = explanations(rng, n, integer=seed % 4 != 3)
    keep_mask = rng.integers(0, 2, n).astype(bool)
    kept_ids = set(explained.job_id[keep_mask].tolist())
    asked: list[list] = []

    def keep(ids, values):  # what the daemon's changed test is given
        asked.append([(type(v), v) for v in values])
        return map(kept_ids.__contains__, ids)

    words = int(rng.integers(0, n + 2))
    decided = Decisions([])
    decided.explain_later([], explained, 0)
    _, later = decided.split_priorities_where(keep, words)
    want = mains_split(explained, lambda ids, values: map(kept_ids.__contains__, ids), words)
    assert asked == [[(type(v), v) for v in map(int, explained.value.tolist())]]
    assert isinstance(later, DeferredPriorities)
    assert later == want and want == later and list(later) == want and len(later) == len(want)
    assert [(type(i), type(v)) for i, v in later] == [(type(i), type(v)) for i, v in want]
    assert bool(later) == bool(want)
    for at in (0, len(want) // 2, -1):
        if want:
            assert later[at] == want[at] and type(later[at][1]) is type(want[at][1])
    assert later[1:-1] == want[1:-1]
    assert later != [*want, (0, 0)]


def mains_refused(plan: Plan) -> tuple[list[str], dict[str, int]]:
    """Main's rate-limit event and deferred counters (274479d), from a pair per deferred job."""
    deferred = plan.deferred_jobs()
    if not deferred:
        return [], {}
    kinds = sorted({kind for kind, _ in deferred})
    message = f"{len(deferred)} action(s) ({', '.join(kinds)}) deferred by daemon.max_actions_per_cycle"
    return [message], {kind: sum(k == kind for k, _ in deferred) for kind in kinds}


@pytest.mark.parametrize("seed", range(30))
def test_rate_limit_event_and_counters_are_mains(tmp_path, seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    journal = Journal(tmp_path / "journal.sqlite")
    metrics = DaemonMetrics()
    applier = Applier(backend=None, journal=journal, metrics=metrics)  # type: ignore[arg-type]
    want_events: list[str] = []
    want_counts: dict[str, int] = {}
    for cycle in range(1, 6):
        deferred = [
            Action(str(rng.choice(KINDS)), int(j), "why") for j in rng.integers(1, 500, rng.integers(0, 4))
        ]
        n = int(rng.integers(0, 3)) * int(rng.integers(0, 40))
        pairs = (
            DeferredPriorities(np.arange(1, n + 1, dtype=np.int64), rng.integers(0, 9, n).astype(np.int64))
            if rng.random() < 0.7
            else [(int(j), 1) for j in range(n)]
        )
        plan = Plan(deferred=deferred, deferred_priorities=pairs)
        events, counts = mains_refused(plan)
        want_events += events
        for kind, count in counts.items():
            want_counts[kind] = want_counts.get(kind, 0) + count
        applier.journal_only(cycle, plan, book=None)  # type: ignore[arg-type]  # no actions to book
    assert [e["message"] for e in journal.events("rate-limit")] == want_events
    for kind in KINDS:
        got = metrics.registry.get_sample_value("rush_decisions_total", {"kind": kind, "outcome": "deferred"})
        assert (got or 0) == want_counts.get(kind, 0)
    journal.close()
