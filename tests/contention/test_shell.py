"""The shell around the core: its starts are the core's decisions on the core's nodes; skips
follow the core's limit; the oracle is asked on the core's tentative placement."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from rush.contention.apps import APP_NAMES, APPS
from rush.contention.machine import PAPER
from rush.contention.noise import NoiseSchedule, NoiseSpec
from rush.contention.oracles import NoiseOracle, PresentStateOracle, Recorded
from rush.contention.shell import JobSpec, Simulation
from rush.contention.state import Fabric
from rush.core.config import CoreConfig
from rush.core.schedule import schedule
from rush.core.skip_with_limit import counts_skips

FABRIC = Fabric(PAPER, NoiseSpec())
NOISE = FABRIC.noise_nodes
LEAF_SIZE = PAPER.leaf_size
LEAVES = PAPER.leaves
NETWORK = tuple(a for a in APP_NAMES if APPS[a].wtype == "network")


def varying(seed: int = 0) -> NoiseSchedule:
    return NoiseSchedule.random(NoiseSpec(), np.random.default_rng(seed), 50_000.0)


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
        varying(),
        FABRIC,
        keep_log=True,
    )
    results = sim.run()
    assert len(results) == 80
    by_id = {r.job_id: r for r in results}
    started = 0
    for entry in sim.log:
        again = schedule(entry.snapshot, sim.config, explain_priorities=False)
        expected = [d.job_id for d in again.decisions if d.action in ("start", "backfill")]
        assert entry.shell_starts == expected == entry.core_starts
        started += len(entry.shell_starts)
        # ... on the core's nodes.
        for d in again.decisions:
            if d.action in ("start", "backfill"):
                assert list(d.nodes) == by_id[d.job_id].hosts
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

    def flag_network(present, pairs):
        asked.extend(spec.job_id for spec, _ in pairs)
        return [spec.app in NETWORK for spec, _ in pairs]

    specs = jobs(14)
    rng = np.random.default_rng(1)
    config = CoreConfig.from_names("FCFS", "easy", skip_limit=3)
    sim = Simulation(specs, config, rng, NoiseSchedule.off(), FABRIC, oracle=flag_network, keep_log=True)
    results = {r.job_id: r for r in sim.run()}
    for spec in specs:
        r = results[spec.job_id]
        if spec.app in NETWORK:
            assert r.skips == 3 and r.limit_hit  # started because it reached the limit
            assert r.wait > 0
        else:
            assert r.skips == 0 and not r.limit_hit
    # The shell skipped exactly the core's skips.
    for entry in sim.log:
        again = schedule(entry.snapshot, config, explain_priorities=False)
        assert entry.skips == again.job_ids("skip")
    assert sim.predictions == len(asked) > 0


def test_baseline_is_deterministic_and_noise_slows_network_runs() -> None:
    def run(noise: NoiseSchedule):
        rng = np.random.default_rng(5)
        return Simulation(jobs(60, seed=3), CoreConfig.from_names("FCFS", "easy"), rng, noise, FABRIC).run()

    quiet = run(NoiseSchedule.off())
    again = run(NoiseSchedule.off())
    assert [(r.start, r.end) for r in quiet] == [(r.start, r.end) for r in again]
    loud = run(NoiseSchedule.constant(1.0))
    slow = lambda rs, apps: np.mean([r.runtime / r.base for r in rs if r.app in apps])  # noqa: E731
    assert slow(loud, NETWORK) > slow(quiet, NETWORK)
    assert all(r.noise_level == 0.0 for r in quiet) and all(r.noise_level == 1.0 for r in loud)


def test_the_oracle_is_asked_on_the_cores_placement() -> None:
    """The nodes an oracle gets for a job are the ones the core gives it in that pass."""
    seen: list[tuple[float, int, list[str]]] = []

    def record(present, pairs):
        seen.extend((present.now, spec.job_id, [f"n{k:03d}" for k in nodes]) for spec, nodes in pairs)
        return [False] * len(pairs)

    rng = np.random.default_rng(2)
    sim = Simulation(jobs(40, sizes=(8, 16, 32)), CoreConfig.from_names("FCFS", "easy"), rng,
                     NoiseSchedule.off(), FABRIC, oracle=record)  # fmt: skip
    results = {r.job_id: r for r in sim.run()}
    # Nothing is flagged, so the first answer's placement is where the job really started.
    assert len(seen) == 40
    for _, job_id, hosts in seen:
        assert hosts == results[job_id].hosts


@pytest.mark.parametrize("placement", ["first-fit", "topology"])
def test_placements_reach_the_shell(placement: str) -> None:
    """Topology packing keeps every job that fits in a leaf inside one leaf; first fit does not."""
    rng = np.random.default_rng(4)
    config = replace(CoreConfig.from_names("FCFS", "easy"), placement=placement)
    results = Simulation(jobs(60, seed=4, sizes=(8, 16)), config, rng, NoiseSchedule.off(), FABRIC).run()
    leaves = [len({int(h[1:]) // LEAF_SIZE for h in r.hosts}) for r in results]
    one_leaf = sum(n == 1 for n in leaves)
    if placement == "topology":
        assert one_leaf == len(results)  # 8 and 16 nodes always fit in a 30-node leaf's free room
    else:
        assert one_leaf < len(results)  # lowest free nodes straddle leaves


def test_variability_placement_sends_flagged_jobs_to_quiet_leaves() -> None:
    """Flagged network jobs start on quiet leaves only (3 and 9 here) or wait; unflagged ones go
    anywhere; no flagged job is skipped while a quiet placement exists."""
    quiet = np.zeros(LEAVES, dtype=bool)
    quiet[[3, 9]] = True

    class Oracle:
        def __call__(self, present, pairs):
            return [spec.app in NETWORK for spec, _ in pairs]

        def quiet_leaves(self, present):
            return quiet

    rng = np.random.default_rng(6)
    config = replace(CoreConfig.from_names("FCFS", "easy", skip_limit=1000), placement="variability")
    specs = jobs(50, seed=6, sizes=(8, 16))
    sim = Simulation(specs, config, rng, NoiseSchedule.off(), FABRIC, oracle=Oracle(), keep_log=True)
    results = sim.run()
    network = [r for r in results if r.app in NETWORK]
    assert network and len(results) == 50
    for r in network:
        assert {int(h[1:]) // LEAF_SIZE for h in r.hosts} <= {3, 9}
    others = {int(h[1:]) // LEAF_SIZE for r in results if r not in network for h in r.hosts}
    assert others - {3, 9}
    for entry in sim.log:
        for node in entry.snapshot.nodes:
            assert node.quiet == bool(quiet[node.leaf])


def test_on_tapered_pods_flagged_jobs_stay_inside_one_quiet_pod() -> None:
    """The multipod machine (pods of 4 leaves): quiet leaves 3 (pod 0), 4 and 5 (pod 1). A flagged
    32-node job spans two leaves (30 free nodes each beside the noise); it starts on leaves 4 and
    5, never across the pods' tapered links (leaf 3 with 4 or 5), or waits for them."""
    from rush.contention.machine import MULTIPOD

    fabric = Fabric(MULTIPOD, NoiseSpec())
    quiet = np.zeros(MULTIPOD.leaves, dtype=bool)
    quiet[[3, 4, 5]] = True

    class Oracle:
        def __call__(self, present, pairs):
            return [spec.app in NETWORK for spec, _ in pairs]

        def quiet_leaves(self, present):
            return quiet

    config = replace(CoreConfig.from_names("FCFS", "easy", skip_limit=1000), placement="variability")
    specs = jobs(24, seed=3, sizes=(32,))
    sim = Simulation(specs, config, np.random.default_rng(3), NoiseSchedule.off(), fabric, oracle=Oracle())
    results = sim.run()
    network = [r for r in results if r.app in NETWORK]
    assert network and len(results) == 24
    for r in network:
        leaves = {int(h[1:]) // MULTIPOD.leaf_size for h in r.hosts}
        assert leaves <= {4, 5}, (r.job_id, leaves)


def test_present_state_oracle_flags_exactly_the_jobs_that_would_exceed_their_threshold() -> None:
    """The diagnostic: its flag is the model's slowdown of the job started now, there, against
    its app's threshold; RUSH's answers are logged beside it."""
    thresholds = dict.fromkeys(APP_NAMES, 1.02)
    oracle = PresentStateOracle(thresholds)
    always = lambda present, pairs: [True] * len(pairs)  # noqa: E731
    recorded = Recorded(always, oracle)
    rng = np.random.default_rng(8)
    sim = Simulation(jobs(40, seed=8), CoreConfig.from_names("FCFS", "easy", skip_limit=2), rng,
                     NoiseSchedule.constant(1.0), FABRIC, oracle=recorded)  # fmt: skip
    sim.run()
    events = recorded.events
    assert events and all(e["flag"] for e in events)
    truth = [e["oracle_flag"] for e in events]
    assert any(truth) and not all(truth)  # some placements cross a loud uplink, some stay in a leaf
    # Inside one leaf nothing contends: never flagged; across two leaves under full noise: flagged.
    spec = JobSpec(1, "SWFFT", 16, 0.0)
    from rush.contention.shell import Present

    present = Present(0.0, FABRIC, [], 1.0, FABRIC.utilisation([], 1.0))
    inside, across = np.arange(16), np.r_[np.arange(8), np.arange(32, 40)]
    assert oracle(present, [(spec, inside), (spec, across)]) == [False, True]


def test_noise_oracle_flags_network_jobs_while_the_noise_is_loud() -> None:
    from rush.contention.shell import Present

    oracle = NoiseOracle(NoiseSpec())  # loud above 0.625, the middle of [0.25, 1]
    pairs = [(JobSpec(1, "SWFFT", 16, 0.0), np.arange(16)), (JobSpec(2, "PENNANT", 16, 0.0), np.arange(16))]
    quiet = Present(0.0, FABRIC, [], 0.5, FABRIC.utilisation([], 0.5))
    loud = Present(0.0, FABRIC, [], 0.9, FABRIC.utilisation([], 0.9))
    assert oracle(quiet, pairs) == [False, False]
    assert oracle(loud, pairs) == [True, False]


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
        Simulation([spec], CoreConfig.from_names("FCFS", "easy"), rng, NoiseSchedule.off(), FABRIC).run()


def test_an_idle_machine_held_by_flagged_jobs_is_released() -> None:
    """An unlimited skip limit under an oracle that flags everything for ever: with
    ``idle_release`` the jobs start after that long on an idle machine (limit hits); without it
    the run would never drain."""
    specs = jobs(6, seed=9)
    rng = np.random.default_rng(9)
    config = CoreConfig.from_names("FCFS", "easy", skip_limit=2**31 - 1)
    always = lambda present, pairs: [True] * len(pairs)  # noqa: E731
    sim = Simulation(specs, config, rng, NoiseSchedule.off(), FABRIC, oracle=always, idle_release=600.0)
    results = sim.run()
    assert len(results) == 6 and all(r.limit_hit for r in results)
    first = min(r.start for r in results)
    assert first >= 600.0 and sim.idle_releases == 6


def test_only_event_passes_count_skips() -> None:
    """Arrivals and ends are the RJMS's events (Fluxion's loop runs on them); the 30 s timer's
    passes skip a flagged job without counting it, unless no job with a limit runs (then no
    event can come). Each job's final count is exactly its counted skips in the pass log."""

    def flag_network(present, pairs):
        return [spec.app in NETWORK for spec, _ in pairs]

    config = CoreConfig.from_names("FCFS", "easy", skip_limit=4)
    sim = Simulation(
        jobs(30, seed=2),
        config,
        np.random.default_rng(3),
        NoiseSchedule.off(),
        FABRIC,
        oracle=flag_network,
        keep_log=True,
    )
    results = {r.job_id: r for r in sim.run()}
    counted: dict[int, int] = {}
    uncounted = 0
    for entry in sim.log:
        limits = np.array([r.requested_time for r in entry.snapshot.running])
        counts = counts_skips(entry.snapshot.trigger, limits)
        for j in entry.skips:
            counted[j] = counted.get(j, 0) + counts
            uncounted += not counts
    assert uncounted > 0  # periodic passes did skip flagged jobs without counting them
    assert {e.snapshot.trigger for e in sim.log} == {"event", "periodic"}
    for job_id, r in results.items():
        assert r.skips == counted.get(job_id, 0)
        if results[job_id].app in NETWORK:
            assert r.skips == 4 and r.limit_hit
