"""The runtime predictor's answers kept by row (issue 31 item 3, round 30, lever Q in
docs/research.md): a builder that keeps each pending job's answers while the predictor has not
revised them and the job's request is the same builds, cycle after cycle, the snapshot, the
columns and the journal outputs of a builder that asks the predictor for every job's answers
each cycle (today's path, kept as the reference by hiding the predictor's revisions)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from rush.planner.journal import JobRecord
from rush.planner.runtime_prediction import REVISIONS_KEPT, LiveRuntimePredictor
from rush.planner.snapshot_builder import SnapshotBuilder
from rush.rjms.base import ClusterState, RJMSJob

LEVELS = (0.1, 0.25, 0.5, 0.75, 0.9)
BAD = (math.nan, math.inf, -5.0, 0.0)


class Model:
    """A quantile model whose answers follow each job and each user's completions so far (a
    re-prediction after a completion gives other answers), with bad values among them; it can
    be told to fail."""

    retrain_every = None

    def __init__(self) -> None:
        self.done: dict[int, int] = {}
        self.fail = False

    def observe(self, done) -> None:
        for user in np.asarray(done.user).tolist():
            self.done[user] = self.done.get(user, 0) + 1

    def predict(self, jobs) -> np.ndarray:
        return self.predict_with_quantiles(jobs)[0]

    def predict_with_quantiles(self, jobs):
        if self.fail:
            raise RuntimeError("model down")
        ids = np.asarray(jobs.job_id)
        request = np.asarray(jobs.requested_time, dtype=np.float64)
        bump = np.array([self.done.get(u, 0) for u in np.asarray(jobs.user).tolist()], dtype=np.float64)
        mean = request * (0.05 + ((ids * 7 + bump * 3) % 11) / 8.0)
        mean[ids % 13 == 0] = BAD[0]
        mean[ids % 17 == 0] = BAD[2]
        fractions = np.array([0.05, 0.15, 0.3, 0.6, 0.9])
        q = request[:, None] * fractions[None, :] * (0.5 + (bump % 3)[:, None] / 2.0)
        q[ids % 19 == 0, 2] = BAD[1]
        return mean, LEVELS, q


class AskEveryJob(LiveRuntimePredictor):
    """The same predictor without its revisions: the builder asks it for every job's answers
    every cycle (the path before lever Q)."""

    answers_token = None


def _shown(value) -> str:
    """A value compared by its repr (NaN quantiles equal to themselves)."""
    return repr(value)


def _columns(built) -> dict[str, str]:
    columns = built.snapshot.pending.columns
    return {f.name: _shown(getattr(columns, f.name)) for f in dataclasses.fields(columns)}


def _built_view(built) -> tuple:
    outputs = [(k, list(v.items())) for k, v in built.outputs.items()]
    return (
        _shown(list(built.snapshot.pending)),
        _shown(built.snapshot.running),
        _columns(built),
        _shown(outputs),
        sorted(built.predicted.items()),
        built.dropped,
    )


class Queue:
    """A random live queue: arrivals, starts, ends (completions the predictors learn from),
    changed limits and other changed fields; read as the same objects (the Flux module) or as
    fresh equal ones (a daemon)."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.now = 10_000.0
        self.next_id = 1
        self.jobs: dict[int, RJMSJob] = {}
        self.arrive(120)

    def arrive(self, count: int) -> None:
        for _ in range(count):
            k = self.next_id
            self.next_id += 1
            tags = {"class": "small"} if self.rng.random() < 0.05 else {}
            self.jobs[k] = RJMSJob(
                k,
                "PENDING",
                self.now - float(self.rng.integers(0, 500)),
                int(self.rng.integers(1, 64)),
                float(self.rng.choice([600.0, 3600.0, 7200.0, 86400.0, math.inf])),
                user=f"u{int(self.rng.integers(0, 6))}",
                tags=tags,
            )

    def step(self) -> list[tuple[RJMSJob, float]]:
        """One cycle's events; the completions."""
        rng, finished = self.rng, []
        self.now += 60.0
        pending = [j for j in self.jobs.values() if j.state == "PENDING"]
        running = [j for j in self.jobs.values() if j.state == "RUNNING"]
        for j in running:
            if rng.random() < 0.15:
                finished.append((j, self.now))
                del self.jobs[j.job_id]
        for j in pending:
            roll = rng.random()
            if roll < 0.05:  # started
                self.jobs[j.job_id] = dataclasses.replace(j, state="RUNNING", start=self.now)
            elif roll < 0.08:  # its limit changed (scontrol update)
                self.jobs[j.job_id] = dataclasses.replace(
                    j, requested_time=float(rng.choice([300.0, 5400.0]))
                )
            elif roll < 0.12:  # another field changed (its RJMS priority)
                self.jobs[j.job_id] = dataclasses.replace(j, priority=float(rng.integers(0, 1000)))
            elif roll < 0.14:  # cancelled
                del self.jobs[j.job_id]
        self.arrive(int(rng.integers(0, 8)))
        return finished

    def state(self, fresh: bool) -> ClusterState:
        jobs = tuple(dataclasses.replace(j) if fresh else j for j in self.jobs.values())
        return ClusterState(self.now, 4096, 1024, jobs)


class Counter:
    """A variation predictor that flags no job and whose outputs every job shares (its counter)
    change now and then: the shared part of every job's inputs changes with them."""

    name = "counter"

    def __init__(self) -> None:
        self.counter = 0

    def predict(self, jobs, now: float) -> list[bool]:
        return [False] * len(jobs)


def _predictor(kind: type[LiveRuntimePredictor]) -> LiveRuntimePredictor:
    return kind("quantiles", Model(), None, own=frozenset())


def _records(rng: np.random.Generator, queue: Queue) -> dict[int, JobRecord]:
    """A few journal records (the builder's general path)."""
    out = {}
    for k in queue.jobs:
        if k % 9 == 0:
            out[k] = JobRecord(k, skips=int(rng.integers(0, 3)), predicted_class=int(rng.integers(-1, 2)))
    return out


def _errors(sink: list):
    return lambda name, exc: sink.append((name, str(exc)))


@pytest.mark.parametrize("seed", range(8))
def test_kept_answers_build_what_asking_every_job_builds(seed):
    queue = Queue(seed)
    rng = np.random.default_rng(1000 + seed)
    kept_errors: list = []
    every_errors: list = []
    kept = SnapshotBuilder(
        runtime=_predictor(LiveRuntimePredictor), on_model_error=_errors(kept_errors), variation=Counter()
    )
    every = SnapshotBuilder(
        runtime=_predictor(AskEveryJob), on_model_error=_errors(every_errors), variation=Counter()
    )
    asked_fewer = 0
    for cycle in range(40):
        fresh = cycle % 3 != 0  # a daemon's fresh read, or the Flux module's kept objects
        for builder in (kept, every):
            live = builder.runtime
            if cycle == 12:
                live.drift = True
            if cycle == 18:
                live.conformal = True
            if cycle == 24:
                live.drift_length = True
            if cycle == 30:
                live.drift = live.conformal = live.drift_length = False
            live.predictor.fail = cycle in (7, 8)
            if cycle % 5 == 4:  # the shared inputs change (cycle 14: back to an earlier value)
                builder.variation.counter = {14: 1}.get(cycle, cycle)
        if cycle == 21:  # one step failing alone: estimates, then quantiles
            for builder in (kept, every):
                builder.runtime.estimates = _failing(builder.runtime.estimates)
        if cycle == 22:
            for builder in (kept, every):
                del builder.runtime.estimates
                builder.runtime.runtime_quantiles = _failing(builder.runtime.runtime_quantiles)
        if cycle == 23:
            for builder in (kept, every):
                del builder.runtime.runtime_quantiles
        records = _records(rng, queue)
        state = queue.state(fresh)
        calls = _count_asked(kept.runtime)
        got = kept.build(state, records)
        want = every.build(state, records)
        assert _built_view(got) == _built_view(want), f"cycle {cycle}"
        assert kept_errors == every_errors
        if calls["jobs"] < len(state.jobs):
            asked_fewer += 1
        finished = queue.step()
        kept.runtime.observe_finished(finished)
        every.runtime.observe_finished(finished)
    # Most cycles asked the predictor for fewer jobs than the read holds (the lever acted).
    assert asked_fewer >= 20


def _failing(method):
    def fail(*args, **kwargs):
        raise RuntimeError("step down")

    return fail


def _count_asked(live: LiveRuntimePredictor) -> dict[str, int]:
    """How many jobs the next build asks ``live``'s estimates for (one call per build)."""
    calls = {"jobs": 0}
    estimates = live.estimates

    def counted(jobs):
        calls["jobs"] += len(jobs)
        del live.estimates  # one build's call counted; later ones go to the class's method
        return estimates(jobs)

    if "estimates" not in vars(live):
        live.estimates = counted
    return calls


def test_revisions_name_the_jobs_whose_answers_changed():
    live = _predictor(LiveRuntimePredictor)
    jobs = [RJMSJob(k, "PENDING", 100.0, 4, 3600.0, user=f"u{k % 2}") for k in range(1, 7)]
    live.predict_new(jobs)
    token = live.answers_token()
    assert live.revised_since(token) == frozenset()
    live.predict_new([*jobs, RJMSJob(9, "PENDING", 100.0, 4, 3600.0, user="u0")])
    assert live.revised_since(token) == {9}
    running = dataclasses.replace(jobs[0], state="RUNNING", start=200.0)
    live.observe_finished([(running, 500.0)])  # u1 finished: its jobs are predicted again
    assert live.revised_since(token) == {9, 1}
    live.predict_new(jobs)
    assert live.revised_since(token) == {9, 1, 3, 5}
    live.conformal = True  # another rule: nothing can be told
    assert live.revised_since(token) is None
    live.conformal = False
    for _ in range(REVISIONS_KEPT):
        live.observe_finished([(running, 600.0)])
    assert live.revised_since(token) is None  # older than the revisions remembered
    now = live.answers_token()
    assert live.revised_since(now) == frozenset()


def test_forgetting_deletes_the_gone_jobs_and_keeps_the_rest_in_order():
    live = _predictor(LiveRuntimePredictor)
    jobs = [RJMSJob(k, "PENDING", 100.0, 4, 3600.0, user="u0") for k in range(1, 41)]
    live.drift = live.conformal = True
    live.predict_new(jobs)
    keep = {k for k in range(1, 41) if k % 3}
    want = {
        name: {k: v for k, v in getattr(live, name).items() if k in keep}
        for name in ("raw", "user_of", "quantiles", "shift", "level_map")
    }
    live.forget_except(keep)
    for name, kept in want.items():
        assert list(getattr(live, name).items()) == list(kept.items())
