"""The predictor's quantiles kept as arrays (D1 in docs/research.md): the builder fed by a live
predictor whose quantiles are kept as the model's rows (rule L2's columns written from them, an
object made only when read) against the same builder and predictor on the per-job path (one
``RuntimeQuantiles`` per job, as before), over several cycles of a mixed queue: plain arrivals,
tagged and journaled jobs, completions that make users' jobs be predicted again, leaving and
starting jobs. The pass's columns, the core jobs, the journal's outputs (runtime fields
included), the running jobs, the predictor's quantiles and the pass's decisions and start
estimates are the same. C2 (round 23): the journal's outputs of predicted-only jobs made when
read, kept in their entries: the same dicts, in the same order, the same object across reads and
cycles while a job's entry is kept, whether or not a cycle read them."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from rush.core.config import CoreConfig
from rush.core.policies import parse_policy
from rush.core.schedule import schedule
from rush.planner.journal import JobRecord
from rush.planner.kept_quantiles import KeptQuantiles
from rush.planner.runtime_prediction import LiveRuntimePredictor
from rush.planner.snapshot_builder import SnapshotBuilder
from rush.rjms.base import ClusterState, RJMSJob
from tests.planner.test_live_predictor_bulk import Answers

CONFIG = CoreConfig(policy=parse_policy("FCFS"), threshold=None, backfill="easy")


def _per_job(seed: int) -> LiveRuntimePredictor:
    """The reference: the same predictor keeping one object per job (a plain dict)."""
    live = LiveRuntimePredictor("quantiles", Answers(seed), None, own=frozenset())
    live.quantiles = {}
    return live


def _shown(value) -> str:
    """A value's repr (NaN equal to NaN, the fields' order and types included)."""
    return repr(value)


def _columns(built) -> dict[str, str]:
    columns = built.snapshot.pending.columns
    return {
        f.name: _shown(
            getattr(columns, f.name).tolist()
            if isinstance(getattr(columns, f.name), np.ndarray)
            else getattr(columns, f.name)
        )
        for f in dataclasses.fields(columns)
        if f.name != "runtime_quantiles"  # None where the rows were written from arrays (no reader)
    }


def _decided(built) -> str:
    d = schedule(built.snapshot, CONFIG, explain_priorities=False)
    return _shown(
        (
            [(x.job_id, x.action, x.reason, x.value, x.nodes) for x in d.decisions],
            d.order,
            d.estimated_start,
            d.estimate_basis,
            d.estimate_notes,
        )
    )


def _job(rng: np.random.Generator, k: int, now: float) -> RJMSJob:
    tags = {"x": "y"} if rng.random() < 0.15 else {"class": "small"} if rng.random() < 0.05 else {}
    return RJMSJob(
        k,
        "PENDING",
        now - float(rng.integers(1, 500)),
        int(rng.integers(1, 64)),
        float(rng.choice([60.0, 3600.0, 86400.0, math.inf])),
        user=f"u{int(rng.integers(0, 6))}",
        tags=tags,
    )


def _cycles(seed: int):
    """The queues and journal records of six cycles, and the runs that ended before each (jobs
    arrive, are cancelled, start, end, and have their limit changed while pending)."""
    rng = np.random.default_rng(seed)
    now, next_id = 5000.0, 1
    jobs: dict[int, RJMSJob] = {}
    for _ in range(6):
        ended = []
        for j in list(jobs.values()):
            if j.state != "PENDING" and rng.random() < 0.3:
                ended.append((j, now - 1.0))
                del jobs[j.job_id]
            elif j.state == "PENDING" and rng.random() < 0.1:
                del jobs[j.job_id]  # cancelled
            elif j.state == "PENDING" and rng.random() < 0.1:
                jobs[j.job_id] = dataclasses.replace(j, state="RUNNING", start=now - 5.0)
            elif j.state == "PENDING" and rng.random() < 0.05:  # its limit changed (scontrol update)
                jobs[j.job_id] = dataclasses.replace(j, requested_time=float(rng.choice([120.0, 7200.0])))
        for _ in range(int(rng.integers(40, 120))):
            jobs[next_id] = _job(rng, next_id, now)
            next_id += 1
        listed = tuple(jobs.values())
        records = {
            j.job_id: JobRecord(j.job_id, skips=int(rng.integers(0, 3)), reserved_at=now + 100.0)
            for j in listed
            if rng.random() < 0.1
        }
        yield ClusterState(now, 1024, 256, listed), records, ended
        now += 60.0


def _run(live: LiveRuntimePredictor, seed: int, fresh: bool = False, lazy: bool = False) -> list[dict]:
    """Six cycles; ``fresh``: each cycle reads new objects equal to the last (a daemon's read);
    ``lazy``: the outputs read at every other cycle only (else at each), and which jobs' outputs
    are the same object as at the last read."""
    builder = SnapshotBuilder(runtime=live)
    out = []
    last: dict = {}
    for cycle, (state, records, ended) in enumerate(_cycles(seed)):
        live.observe_finished(ended)
        if fresh:
            state = dataclasses.replace(state, jobs=tuple(dataclasses.replace(j) for j in state.jobs))
        built = builder.build(state, records)
        if lazy and cycle % 2:
            continue
        read = {k: built.outputs[k] for k in built.outputs}  # (every job's, as the queue rows do)
        assert all(built.outputs.get(k) is v for k, v in read.items())  # the same object again
        same, last = sorted(k for k, v in read.items() if last.get(k) is v), read
        out.append(
            {
                "columns": _columns(built),
                "jobs": _shown(list(built.snapshot.pending)),
                "outputs": _shown([(k, list(v.items())) for k, v in built.outputs.items()]),
                "running": _shown(built.snapshot.running),
                "decided": _decided(built),
                "quantiles": _shown(list(live.quantiles.items())),
                "kept": _shown(sorted(built.kept_jobs)),
                "same outputs": _shown(same),
                "outputs as dict": _shown(list(dict(built.outputs).items())),
            }
        )
    return out


@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize("fresh", [False, True])
@pytest.mark.parametrize("compact", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_rows_kept_as_arrays_equal_the_per_job_path(seed, compact, fresh, lazy, monkeypatch):
    if compact:  # the store compacted at every cycle (new tokens for the kept rows)
        monkeypatch.setattr("rush.planner.kept_quantiles._SLACK", 0)
    bulk = LiveRuntimePredictor("quantiles", Answers(seed), None, own=frozenset())
    assert isinstance(bulk.quantiles, KeptQuantiles)
    got, want = _run(bulk, seed, fresh, lazy), _run(_per_job(seed), seed, fresh, lazy)
    assert len(got) == len(want) == (3 if lazy else 6)
    for cycle, (g, w) in enumerate(zip(got, want, strict=True)):
        for part in w:
            if part in ("kept", "same outputs") and compact:  # (new tokens rewrite rows: none kept)
                continue
            assert g[part] == w[part], (cycle, part)


def test_predicted_jobs_hold_tokens_until_read():
    """The bulk path does run: a newly predicted pending job holds a token, not an object, until
    something reads it; then the same object on every read."""
    live = LiveRuntimePredictor("quantiles", Answers(0), None, own=frozenset())
    jobs = [RJMSJob(k, "PENDING", 1000.0 + k, 2, 3600.0, user="u1") for k in range(1, 50)]
    SnapshotBuilder(runtime=live).build(ClusterState(5000.0, 64, 64, tuple(jobs)), {})
    assert all(type(t) is int for t in live.quantile_tokens(jobs))
    first = live.quantiles[3]
    assert live.quantiles[3] is first and live.quantile_made(live.quantile_tokens(jobs)[2]) is first


def test_predicted_only_arrivals_take_the_blank_entry_and_keep_it():
    """C1b's bulk path does run (docs/research.md, "C1 built"): a first cycle of arrivals with
    nothing of their own but the predictor's answers gives them the shared blank row, their
    token as inputs and no estimate tuple; the same read again keeps every row; their columns
    equal the per-job path's."""
    jobs = tuple(
        RJMSJob(k, "PENDING", 1000.0 + k, 2, 3600.0 * (1 + k % 3), user=f"u{k % 4}") for k in range(1, 60)
    )
    state = ClusterState(5000.0, 64, 64, jobs)
    live = LiveRuntimePredictor("quantiles", Answers(1), None, own=frozenset())
    builder = SnapshotBuilder(runtime=live)
    built = builder.build(state, {})
    entries = list(builder._pending_cache.values())
    assert all(type(e[1]) is int for e in entries)
    assert len({id(e[2]) for e in entries}) == 1  # one shared row
    reference = SnapshotBuilder(runtime=_per_job(1)).build(state, {})
    assert _columns(built) == _columns(reference)
    assert _shown(list(built.snapshot.pending)) == _shown(list(reference.snapshot.pending))
    assert _shown([(k, list(v.items())) for k, v in built.outputs.items()]) == _shown(
        [(k, list(v.items())) for k, v in reference.outputs.items()]
    )
    builder.build(state, {})
    assert builder.rows_read == 0


def test_outputs_made_when_read_are_a_dict_of_the_same_values():
    """C2: a first cycle of predicted-only arrivals holds no outputs dict until one is read;
    ``Built.outputs`` then reads as the per-job path's dict (same keys, order and values, ``==``),
    ``get`` gives the default for a job it does not list, a job's value set again keeps its
    place; a fresh equal read keeps every entry (no row written) and gives the same dicts."""
    jobs = tuple(
        RJMSJob(k, "PENDING", 1000.0 + k, 2, 3600.0 * (1 + k % 3), user=f"u{k % 4}") for k in range(1, 40)
    )
    running = RJMSJob(99, "RUNNING", 900.0, 2, 3600.0, start=4000.0, user="u1")
    state = ClusterState(5000.0, 64, 64, (*jobs, running))
    builder = SnapshotBuilder(runtime=LiveRuntimePredictor("quantiles", Answers(2), None, own=frozenset()))
    built = builder.build(state, {})
    assert all(e[3] is None for e in builder._pending_cache.values())  # nothing made yet
    reference = SnapshotBuilder(runtime=_per_job(2)).build(state, {})
    assert built.outputs == reference.outputs and len(built.outputs) == len(reference.outputs) == 40
    assert list(built.outputs) == list(reference.outputs)
    assert (
        built.outputs.get(12345, "absent") == "absent" and 12345 not in built.outputs and 7 in built.outputs
    )
    made = {k: built.outputs[k] for k in built.outputs}
    built.outputs[5] = {"changed": True}
    assert list(built.outputs) == list(reference.outputs) and built.outputs[5] == {"changed": True}
    fresh = dataclasses.replace(state, jobs=tuple(dataclasses.replace(j) for j in state.jobs))
    again = builder.build(fresh, {})
    assert builder.rows_read == 0 and sorted(again.kept_jobs) == [j.job_id for j in jobs]
    assert all(again.outputs[k] is made[k] for k in made if k != 99)
