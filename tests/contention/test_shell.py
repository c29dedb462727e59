"""The shell around the core: its starts are the core's decisions; skips follow the core's limit."""

from __future__ import annotations

import numpy as np
import pytest

from rush.contention.model import APP_NAMES, NODES
from rush.contention.noise import NoiseSchedule
from rush.contention.shell import JobSpec, Simulation, place
from rush.contention.state import NOISE
from rush.core.config import CoreConfig
from rush.core.schedule import schedule


def jobs(n: int, seed: int = 0, sizes=(16,)) -> list[JobSpec]:
    rng = np.random.default_rng(seed)
    return [
        JobSpec(
            k + 1, APP_NAMES[k % 7], int(rng.choice(sizes)), float(rng.uniform(0, 600)) if k >= 8 else 0.0
        )
        for k in range(n)
    ]


def test_starts_equal_the_cores_decisions() -> None:
    """Every pass: the shell started exactly what schedule() decides on the same snapshot."""
    rng = np.random.default_rng(0)
    sim = Simulation(
        jobs(80, sizes=(8, 16, 32, 64)),
        CoreConfig.from_names("FCFS", "easy"),
        rng,
        NoiseSchedule.random(rng, 10_000.0),
        keep_log=True,
    )
    results = sim.run()
    assert len(results) == 80
    started = 0
    for entry in sim.log:
        again = schedule(entry.snapshot, sim.config, explain_priorities=False)
        expected = [d.job_id for d in again.decisions if d.action in ("start", "backfill")]
        assert entry.shell_starts == expected == entry.core_starts
        started += len(entry.shell_starts)
    assert started == 80
    # Backfilling happened (the workload mixes sizes) and no job ran before it was submitted.
    assert any(d.action == "backfill" for e in sim.log for d in schedule(e.snapshot, sim.config).decisions)
    by_start = {r.job_id: r.start for r in results}
    for entry in sim.log:
        for j in entry.shell_starts:
            assert by_start[j] == entry.now
    assert all(r.start >= r.submit and r.end > r.start for r in results)
    # Nodes: never the noise job's, never two jobs on one node at once.
    for r in results:
        nodes = {int(h[1:]) for h in r.hosts}
        assert len(nodes) == r.size and not nodes & set(NOISE.tolist())
    events = sorted(
        [(r.start, 1, r) for r in results] + [(r.end, 0, r) for r in results], key=lambda e: (e[0], e[1])
    )
    busy: set[int] = set()
    for _, kind, r in events:
        nodes = {int(h[1:]) for h in r.hosts}
        if kind:
            assert not busy & nodes
            busy |= nodes
        else:
            busy -= nodes


def test_flagged_jobs_are_skipped_up_to_the_limit_then_start() -> None:
    """An oracle that flags every network job: each is skipped skip_limit times, then starts.

    The oracle here stands in for the learned model (tested end to end in test_cli.py); the
    skip counting and the limit are the core's.
    """
    asked: list[int] = []

    def flag_network(now, pairs):
        asked.extend(spec.job_id for spec, _ in pairs)
        return [spec.app in ("AMG", "Kripke", "MILC") for spec, _ in pairs]

    specs = jobs(14)
    rng = np.random.default_rng(1)
    config = CoreConfig.from_names("FCFS", "easy", skip_limit=3)
    sim = Simulation(specs, config, rng, NoiseSchedule.off(), oracle=flag_network, keep_log=True)
    results = {r.job_id: r for r in sim.run()}
    for spec in specs:
        r = results[spec.job_id]
        if spec.app in ("AMG", "Kripke", "MILC"):
            assert r.skips == 3
            assert r.wait > 0
        else:
            assert r.skips == 0
    # The shell skipped exactly the core's skips.
    for entry in sim.log:
        again = schedule(entry.snapshot, config, explain_priorities=False)
        assert entry.skips == again.job_ids("skip")
    assert sim.predictions == len(asked) > 0


def test_baseline_is_deterministic_and_noise_slows_network_runs() -> None:
    def run(noise: NoiseSchedule):
        rng = np.random.default_rng(5)
        return Simulation(jobs(60, seed=3), CoreConfig.from_names("FCFS", "easy"), rng, noise).run()

    quiet = run(NoiseSchedule.off())
    again = run(NoiseSchedule.off())
    assert [(r.start, r.end) for r in quiet] == [(r.start, r.end) for r in again]
    loud = run(NoiseSchedule(np.array([0.0]), np.array([1e6]), np.array([1.0])))
    slow = lambda rs, apps: np.mean([r.runtime / r.base for r in rs if r.app in apps])  # noqa: E731
    assert slow(loud, ("AMG", "Kripke", "MILC")) > slow(quiet, ("AMG", "Kripke", "MILC"))
    assert all(not r.noise for r in quiet) and all(r.noise for r in loud)


def test_place_takes_the_lowest_free_nodes() -> None:
    free = np.ones(NODES, dtype=bool)
    free[NOISE] = False
    free[:5] = False
    assert list(place(free, 3)) == [5, 6, 7]
    with pytest.raises(RuntimeError):
        place(np.zeros(NODES, dtype=bool), 1)


@pytest.mark.parametrize(
    "spec",
    [
        JobSpec(0, "AMG", 16, 0.0),
        JobSpec(1, "nope", 16, 0.0),
        JobSpec(1, "AMG", 0, 0.0),
        JobSpec(1, "AMG", 10**6, 0.0),
    ],
)
def test_bad_job_specs_are_refused(spec: JobSpec) -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError):
        Simulation([spec], CoreConfig.from_names("FCFS", "easy"), rng, NoiseSchedule.off()).run()
