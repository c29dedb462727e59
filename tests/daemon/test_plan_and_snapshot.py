"""The daemon's pure steps: ClusterState -> Snapshot, and Decisions -> a rate-limited plan.

ClusterState/RJMSJob are plain data (what any backend returns); the core is the real one.
"""

from __future__ import annotations

import pytest

from rush.core import CoreConfig
from rush.core.schedule import schedule
from rush.core.snapshot import Decision, Decisions, RuntimeClass
from rush.planner.apply import plan_actions
from rush.planner.journal import JobRecord
from rush.planner.snapshot_builder import RuleClassPredictor, SnapshotBuilder
from rush.planner.variation import RuleVariationPredictor
from rush.rjms.base import ClusterState, RJMSJob

NOW = 1_000_000.0


def pending(job_id: int, limit: float = 600.0, **kw) -> RJMSJob:
    return RJMSJob(job_id, "PENDING", NOW - 100 + job_id, kw.pop("procs", 2), limit, user="alice", **kw)


def running(job_id: int, since: float, limit: float = 600.0, **kw) -> RJMSJob:
    return RJMSJob(job_id, "RUNNING", NOW - 500, 2, limit, start=NOW - since, user="bob", **kw)


def state(*jobs: RJMSJob, free: int = 0) -> ClusterState:
    return ClusterState(NOW, 8, free, tuple(jobs))


def test_classes_tags_journal_and_rule():
    builder = SnapshotBuilder(classifier=RuleClassPredictor(small_below=900))
    s = state(
        pending(1, 600),  # rule: small
        pending(2, 3600),  # rule: large
        pending(3, 600, tags={"class": "large"}),  # the tag wins over the rule
        running(4, 30, tags={"idempotent": "1"}),  # never seen pending: classified now
        running(5, 30, 600, tags={"requeues": "1"}),  # requeued by rush: large
        running(6, 30, 600),  # remembered as large while pending
    )
    records = {6: JobRecord(6, predicted_class=int(RuntimeClass.LARGE))}
    built = builder.build(s, records)
    classes = {j.job_id: j.runtime_class for j in built.snapshot.pending + built.snapshot.running}
    assert classes == {
        1: RuntimeClass.SMALL,
        2: RuntimeClass.LARGE,
        3: RuntimeClass.LARGE,
        4: RuntimeClass.SMALL,
        5: RuntimeClass.LARGE,
        6: RuntimeClass.LARGE,
    }
    assert built.outputs[3]["class_source"] == "tag" and built.outputs[1]["class_source"] == "rule"
    assert built.outputs[5]["class_source"] == "requeued" and built.outputs[6]["class_source"] == "journal"
    # Predictions to remember: the pending ones and the running job seen for the first time.
    assert built.predicted == {1: 0, 2: 1, 4: 0}
    run = {r.job_id: r for r in built.snapshot.running}
    assert run[4].idempotent and not run[6].idempotent and run[5].requeues == 1


def test_a_pending_job_is_classified_once_then_keeps_its_class():
    """Features are read once, near submission (as offline): later passes take the journal's
    class, so the classifier sees only jobs it never classified, even if it changed its mind."""

    class Counting(RuleClassPredictor):
        def __init__(self, small_below: float) -> None:
            super().__init__(small_below)
            self.seen: list[list[int]] = []

        def predict(self, jobs, killable=None):
            self.seen.append([j.job_id for j in jobs])
            return super().predict(jobs)

    classifier = Counting(small_below=900)
    builder = SnapshotBuilder(classifier=classifier)
    first = builder.build(state(pending(1, 600), pending(2, 3600)), {})
    assert first.predicted == {1: 0, 2: 1}
    records = {j: JobRecord(j, predicted_class=c) for j, c in first.predicted.items()}
    classifier.small_below = 10_000  # a retrained model would now call job 2 small
    second = builder.build(state(pending(1, 600), pending(2, 3600), pending(3, 3600)), records)
    assert classifier.seen == [[1, 2], [3]]
    classes = {p.job_id: p.runtime_class for p in second.snapshot.pending}
    assert classes == {1: RuntimeClass.SMALL, 2: RuntimeClass.LARGE, 3: RuntimeClass.SMALL}
    assert second.outputs[2]["class_source"] == "journal" and second.outputs[3]["class_source"] == "rule"
    assert second.predicted == {3: 0}


@pytest.mark.parametrize("kill_false_small", [True, False])
def test_the_classifier_is_told_which_jobs_the_core_would_kill(kill_false_small):
    """An idempotent job is judged at the model's idempotent threshold only when false-small
    kills are on: otherwise a false "small" costs it what it costs any other job."""
    told = []

    class Recording(RuleClassPredictor):
        def predict(self, jobs, killable=None):
            told.append(list(killable))
            return super().predict(jobs)

    builder = SnapshotBuilder(Recording(small_below=900), kill_false_small=kill_false_small)
    builder.build(
        state(pending(1, tags={"idempotent": "1"}), pending(2), pending(3, tags={"idempotent": "no"})), {}
    )
    assert told == [[kill_false_small, False, False]]


def test_user_held_jobs_are_left_out_and_skips_come_from_the_journal():
    s = state(
        pending(1, tags={"wtype": "network"}),
        pending(2, held=True, reason="JobHeldUser"),
        pending(3, held=True, reason="JobHeldAdmin", tags={"wtype": "network"}),
    )
    rule = RuleVariationPredictor(lambda start, end: 10.0, threshold=1.0)
    records = {3: JobRecord(3, skips=4, held_by_rush=True)}
    built = SnapshotBuilder(variation=rule).build(s, records)
    by_id = {p.job_id: p for p in built.snapshot.pending}
    assert set(by_id) == {1, 3}  # job 2 is held by its user: not rush's to schedule
    assert by_id[1].variable and by_id[3].variable and by_id[3].skips == 4 and by_id[1].skips == 0
    assert built.outputs[1]["variation_last_mean"] == 10.0


def test_a_failing_model_is_reported_and_scheduling_goes_on():
    class Broken:
        name, version, divider = "runtime-class", "x", None

        def predict(self, jobs, killable=None):
            raise ValueError("feature mismatch")

    errors = []
    built = SnapshotBuilder(Broken(), on_model_error=lambda n, e: errors.append((n, str(e)))).build(
        state(pending(1)), {}
    )
    assert errors == [("runtime-class", "feature mismatch")]
    assert built.snapshot.pending[0].runtime_class == RuntimeClass.UNKNOWN


def plan(decisions: Decisions, s: ClusterState, records=None, **kw):
    options = {"max_actions_per_cycle": 100, "skip_limit": 3} | kw
    return plan_actions(decisions, s, records or {}, **options)


def test_priorities_only_when_changed_and_top_ranks_first():
    s = state(*(pending(i) for i in (1, 2, 3)))
    decisions = schedule(
        SnapshotBuilder().build(s, {}).snapshot, CoreConfig.from_names("FCFS", threshold=None)
    )
    v = decisions.priority
    assert v[1] > v[2] > v[3]
    p = plan(decisions, s, {2: JobRecord(2, last_site_factor=v[2])})
    assert [(a.kind, a.job_id, a.value) for a in p.actions] == [("priority", 1, v[1]), ("priority", 3, v[3])]
    # The rate limit defers the lowest ranks.
    p = plan(decisions, s, max_actions_per_cycle=2)
    assert [a.job_id for a in p.actions] == [1, 2] and p.deferred_jobs() == [("priority", 3)]


def test_one_arrival_in_a_long_queue_costs_one_priority_update():
    jobs = [
        RJMSJob(i, "PENDING", NOW - 5000 + i, 1 + i % 7, 60.0 * (1 + i % 50), user="u")
        for i in range(1, 1001)
    ]
    config = CoreConfig.from_names("SPF")
    first = schedule(SnapshotBuilder().build(state(*jobs), {}).snapshot, config)
    applied = {j: JobRecord(j, last_site_factor=v) for j, v in first.priority.items()}
    # A new job that goes to the top of the order (shortest request) arrives.
    arrival = RJMSJob(5000, "PENDING", NOW, 1, 30.0, user="u")
    second = schedule(SnapshotBuilder().build(state(*jobs, arrival), {}).snapshot, config)
    assert second.order[0] == 5000
    p = plan(second, state(*jobs, arrival), applied, max_actions_per_cycle=10_000)
    assert [(a.kind, a.job_id) for a in p.actions] == [("priority", 5000)]


def test_kills_first_and_never_beyond_the_requeue_limit():
    # The journal remembers job 2's requeue; the builder gives that count to the core, whose
    # rule alone (is_killable, max_requeues) decides: job 2 is not killed again.
    tags = {"idempotent": "1", "class": "small"}
    s = state(running(1, 100, tags=dict(tags)), running(2, 100, tags=dict(tags)), pending(3))
    records = {2: JobRecord(2, requeues=1)}
    built = SnapshotBuilder(classifier=RuleClassPredictor(small_below=900)).build(s, records)
    config = CoreConfig(kill_false_small=True, divider=50.0, max_requeues=1)
    decisions = schedule(built.snapshot, config)
    assert decisions.job_ids("kill") == [1]
    p = plan(decisions, s, records, max_actions_per_cycle=1)
    assert [(a.kind, a.job_id) for a in p.actions] == [("kill", 1)]
    assert p.actions[0].requeues == 1 and p.refused == []
    # The killed job is back in the core's queue at once (as in the simulator): it gets its
    # priority value with the pending job, both deferred by the one-action budget.
    assert sorted(p.deferred_jobs()) == [("priority", 1), ("priority", 3)]


def test_hold_then_count_then_release_at_the_limit():
    s = state(pending(1, tags={"wtype": "network"}), pending(2, held=True, reason="JobHeldUser"))
    skip = Decisions(NOW, decisions=[Decision(1, "skip", "variable", 1)])
    assert [a.kind for a in plan(skip, s).actions] == ["hold"]
    held = {1: JobRecord(1, skips=1, held_by_rush=True)}
    assert [a.kind for a in plan(skip, s, held).actions] == ["skip"]
    # The core stops skipping at the limit: release, saying why.
    at_limit = {1: JobRecord(1, skips=3, held_by_rush=True)}
    p = plan(Decisions(NOW), s, at_limit)
    assert [(a.kind, a.job_id) for a in p.actions] == [("release", 1)] and "limit" in p.actions[0].reason
    # A job held by its user (no held_by_rush record) is never released by rush.
    assert plan(Decisions(NOW), s, {2: JobRecord(2)}).actions == []


def test_jobs_the_core_cannot_use_are_left_out_and_named():
    import math

    s = state(
        pending(1),
        pending(2, procs=0),
        RJMSJob(3, "PENDING", math.nan, 2, 600.0, user="x"),
        RJMSJob(4, "PENDING", NOW, 2, math.nan, user="x"),
        RJMSJob(5, "PENDING", NOW, 2, math.inf, user="x"),  # unlimited: kept
        pending(1),  # listed twice
        RJMSJob(6, "RUNNING", NOW, 2, 600.0, start=math.inf, user="x"),
    )
    built = SnapshotBuilder().build(s, {})
    assert sorted(j.job_id for j in built.snapshot.pending) == [1, 5]
    assert sorted(job_id for job_id, _ in built.dropped) == [1, 2, 3, 4, 6]
    # The core accepts what is left.
    assert schedule(built.snapshot, CoreConfig()).order == [1, 5]
