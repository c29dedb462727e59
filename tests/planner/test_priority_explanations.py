"""The pass's priority explanations, kept as arrays and put in words when read
(rush.core.priority_explanations), against the words written out in full from what the pass
publishes (its order, values, groups and keys), over random cycle sequences: arrivals, ends,
starts, changed jobs, RJMS priority and class changes, time-dependent priorities and starvation.
Once on the core alone, once through a real planner as each shell runs it: the daemon's journal
gets exactly the changed priorities, in the order and words of a full recomputation."""

from __future__ import annotations

import dataclasses
from dataclasses import replace

import numpy as np
import pytest

from rush.core import CoreConfig
from rush.core.ordering import PRIMARY_STRIDE
from rush.core.policies import Policy
from rush.core.priority_explanations import PriorityExplanations
from rush.core.priority_values import LOWEST_VALUE
from rush.core.schedule import schedule
from rush.core.snapshot import Decision, Decisions
from rush.planner.config import parse_config
from rush.planner.plan import Planner
from tests.planner.live_cycles import KeptObjects, event_sequence, rjms_state
from tests.queue_backend import Queue

CONFIGS = (
    CoreConfig(backfill="easy"),
    CoreConfig(backfill="conservative", policy=Policy("WFP3"), threshold=900.0, use_classes=True),
    CoreConfig(backfill="easy", policy=Policy("SPF"), rjms_priority_first=True, priority_weight=10_000),
)
RELEASED = "released to the RJMS at the lowest priority"
GROUP_WORDS = {0: "starved (waited > threshold)", 1: "predicted small", 2: "predicted large or unknown"}


def written_out(decided: Decisions, config: CoreConfig) -> list[Decision]:
    """Every priority decision in words, from the published order, values, groups and keys."""
    terms = [f"starvation (> {config.threshold:.0f} s waits first)"] if config.threshold is not None else []
    terms += ["runtime class (small first)"] if config.use_classes else []
    by = ", then ".join([*terms, config.policy.name])
    n = len(decided.order)
    out = []
    for rank, job_id in enumerate(decided.order):
        group = decided.priority_group[job_id] % PRIMARY_STRIDE  # under a primary rank (rjms first)
        words = GROUP_WORDS[group] if group == 0 or config.use_classes else "not starved"
        key = decided.priority_key[job_id]
        reason = f"rank {rank + 1} of {n}: {words}, {config.policy.name} key {key:.6g} by {by}"
        out.append(Decision(job_id, "priority", reason, decided.priority[job_id]))
    return out


def counted(decisions: list[Decision]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for d in decisions:
        counts[d.action] = counts.get(d.action, 0) + 1
    return counts


def differs(last: dict[int, int]):
    """A random subset of the jobs, as the plan's "value changed since last sent"."""
    return lambda job_id, value: last[job_id] != value % 3


@pytest.mark.parametrize("config", CONFIGS, ids=["fcfs", "wfp3-starved-classes", "spf-rjms-first"])
@pytest.mark.parametrize("seed", range(10))
def test_explanations_read_later_are_the_full_words(seed: int, config: CoreConfig) -> None:
    rng = np.random.default_rng(seed)
    infeasible = 0
    for snapshot in event_sequence(seed, 8, on_nodes=seed % 2 == 0, priority_changes=True):
        decided = schedule(snapshot, config)
        full = written_out(decided, config)
        # Read without putting them in words: the other decisions, counts, changed priorities.
        others = decided.among(("kill", "infeasible", "reserve", "start", "backfill", "skip"))
        counts = decided.counts()
        last = {job_id: int(rng.integers(0, 3)) for job_id in decided.order}  # a value last sent
        changed = decided.priorities_where(differs(last))
        # Then every decision in words, as every reader saw them before.
        every = decided.decisions
        # Where they always stood: after kills and infeasible jobs, before the pass's own.
        first = [d for d in others if d.action in ("kill", "infeasible")]
        assert every == first + full + others[len(first) :]
        assert list(counts.items()) == list(counted(every).items())
        infeasible += len(first)
        by_value = sorted(full, key=lambda d: -(d.value or 0))  # the plan's order: value, then rank
        assert changed == [d for d in by_value if last[d.job_id] != int(d.value) % 3]
        assert decided.priorities_where(differs(last)) == changed
        assert decided == dataclasses.replace(decided, decisions=list(every))
    assert infeasible > 0 or seed % 2  # on nodes, jobs larger than the machine came


def journaled_priorities(planner: Planner, cycle: int) -> list[tuple[int, str, float]]:
    rows = planner.journal.decisions(action="priority")
    return [(r["job_id"], r["reason"], r["value"]) for r in rows if r["cycle"] == cycle]


@pytest.mark.parametrize("budget", [10**6, 7], ids=["every-action", "seven-actions"])
@pytest.mark.parametrize("shell", ["daemon", "flux-module"])
@pytest.mark.parametrize("seed", range(6))
def test_planner_journals_the_changed_priorities_in_full_words(
    tmp_path, seed: int, shell: str, budget: int
) -> None:
    """With a budget of RJMS calls smaller than the changes, the first ``budget`` changed
    priorities (the highest values) are journaled in full words and the rest deferred unsent,
    as when every changed one was put in words before the budget cut them."""
    raw = {
        "daemon": {
            "journal": str(tmp_path / "journal.sqlite"),
            "dry_run": True,
            "max_actions_per_cycle": budget,
        },
        "policy": {"policy": "WFP3", "backfill": "easy" if seed % 2 else "conservative", "threshold": 900.0},
    }
    backend = KeptObjects() if shell == "flux-module" else Queue()
    planner = Planner(parse_config(raw), backend=backend)
    objects: dict = {}
    sent: dict[int, int] = {}  # the value last journaled per job (dry run: as if sent)
    moved = cut = releases = 0
    for snapshot in event_sequence(seed, 8, on_nodes=seed % 3 != 0, priority_changes=True):
        backend.state = rjms_state(snapshot, fresh=shell == "daemon", kept=objects)
        report = planner.run_cycle()
        assert report.ok, report.error
        cycle, built, decisions = planner.last
        counts = decisions.counts()
        # A full recomputation of the same pass, every decision in words at once.
        sets = shell == "daemon"  # a shell that starts jobs asks for no priorities
        again = schedule(replace(built.snapshot, columns=None), planner.core_config, explain_priorities=sets)
        full = again.of("priority")
        assert list(counts.items()) == list(counted(decisions.decisions).items())
        assert counts == report.decisions
        if shell == "flux-module":  # a shell that starts jobs sends no priorities
            assert journaled_priorities(planner, cycle) == [] and "priority" not in counts
            assert decisions.decisions == again.decisions
            continue
        assert decisions.decisions == again.decisions
        pending = {p.job_id for p in built.snapshot.pending}
        # Jobs read as infeasible first, released at the lowest value (once: while it stands).
        released = [
            Decision(d.job_id, "priority", f"rush reads it as infeasible: {d.reason}; {RELEASED}", d.value)
            for d in again.of("infeasible")
            if sent.get(d.job_id) != d.value
        ]
        assert all(d.value == LOWEST_VALUE for d in released)
        releases += len(released)
        ranked = [d for d in sorted(full, key=lambda d: -(d.value or 0)) if sent.get(d.job_id) != d.value]
        changed = released + ranked
        due, later = changed[:budget], changed[budget:]
        assert journaled_priorities(planner, cycle) == [(d.job_id, d.reason, d.value) for d in due]
        assert {d.job_id for d in changed} <= pending
        deferred = [e["message"] for e in planner.journal.events("rate-limit") if e["cycle"] == cycle]
        assert deferred == (
            [f"{len(later)} action(s) (priority) deferred by daemon.max_actions_per_cycle"] if later else []
        )
        cut += len(later)
        moved += sum(d.job_id in sent for d in due)
        sent.update((d.job_id, int(d.value)) for d in due)
    if shell == "daemon" and budget > 100:  # the sequence moved some priorities after they were first sent
        assert moved > 0 and cut == 0
        assert releases > 0 or seed % 3 == 0  # on nodes, jobs larger than the machine came
    elif shell == "daemon":  # the small budget deferred some
        assert cut > 0


@pytest.mark.parametrize("seed", range(6))
def test_split_where_equals_the_rule_job_by_job(seed: int) -> None:
    # The daemon's budgeted words (Decisions.split_priorities_where): the kept priorities by
    # value (largest first, equal values in rank order), the first ``words`` in words, the rest
    # as (job id, value) in the same order; against every decision in words, sorted and cut.
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    explained = PriorityExplanations(
        rng.permutation(np.arange(1, 3 * n + 1))[:n].astype(np.int64),
        rng.integers(0, 3, n).astype(np.int64),
        rng.uniform(0.0, 100.0, n),
        rng.integers(0, 20, n).astype(np.int64),  # many ties
        ("starved", "first", "second"),
        "FCFS",
        "submit",
    )
    keep = rng.integers(0, 2, n).astype(bool)
    kept_ids = set(explained.job_id[keep].tolist())
    words = int(rng.integers(0, n + 2))
    ranked = sorted(explained.decisions(), key=lambda d: -d.value)  # stable: rank order on ties
    want = [d for d in ranked if d.job_id in kept_ids]
    decided = Decisions([])
    decided.explain_later([], explained, 0)
    sent, later = decided.split_priorities_where(lambda ids, values: map(kept_ids.__contains__, ids), words)
    assert sent == want[:words]
    assert later == [(d.job_id, d.value) for d in want[words:]]
    assert all(type(i) is int and type(v) is int for i, v in later)
