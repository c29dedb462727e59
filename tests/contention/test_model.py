"""The contention model: laws monotone in load, the paper's machine and noise, probe and counters
follow the state."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rush.collect.probe import FEATURES
from rush.collect.store import FeatureStore
from rush.contention.apps import APP_NAMES, APPS, OTHER_FOUR, THREE_APPS, App, scaled
from rush.contention.counters import CounterRecorder
from rush.contention.machine import MULTIPOD, PAPER, Machine
from rush.contention.model import g_bw, h_lat, off_shares, uniform_off
from rush.contention.noise import SWITCHING, NoiseSchedule, NoiseSpec
from rush.contention.probe import simulate_probe
from rush.contention.state import COLUMN, METRIC_NAMES, Fabric, Running

FABRIC = Fabric(PAPER, NoiseSpec())
# A global all-to-all (the law the noise job follows; no application of the table does since step 4).
ALL_TO_ALL = App("A2A", 0.35, 0.55, 0.10, 0.0, 9.0, "alltoall", 1.0, 240.0)


def job(job_id: int, app: str, nodes, machine: Machine = PAPER) -> Running:
    return Running.of(job_id, app, np.asarray(nodes), machine)


def spanning(first_leaf: int, n: int = 16) -> np.ndarray:
    """n nodes split evenly over two leaves (their traffic crosses the leaves' uplinks)."""
    half = n // 2
    return np.concatenate([first_leaf * 32 + np.arange(half), (first_leaf + 1) * 32 + np.arange(half)])


def test_the_papers_set_up() -> None:
    assert APP_NAMES == ("SWFFT", "LBANN", "Laghos", "AMG", "Kripke", "PENNANT", "sw4lite")
    assert set(THREE_APPS) == {"Laghos", "LBANN", "PENNANT"}
    assert set(OTHER_FOUR) == {"AMG", "Kripke", "sw4lite", "SWFFT"}
    assert PAPER.nodes == 512 and PAPER.pods == 1 and PAPER.leaves == 16
    assert PAPER.leaf_uplink_gbs == pytest.approx(200.0)
    assert MULTIPOD.pods == 4 and MULTIPOD.pod_uplink_gbs == pytest.approx(400.0)
    noise = NoiseSpec().nodes(PAPER)
    assert len(noise) == 32 and len(set(PAPER.leaf_of[noise])) == 16  # 1/16, two per leaf
    # SWFFT's transposes are all-to-alls within process-grid rows and columns (calibration step 4).
    assert APPS["SWFFT"].pattern == "halo" and APPS["SWFFT"].locality == 0.5
    assert APPS["LBANN"].pattern == "ring"
    assert APPS["Laghos"].latency >= 0.3  # latency-bound collectives: variation-prone
    assert {APPS[a].wtype for a in ("SWFFT", "LBANN", "Laghos", "AMG", "Kripke")} == {"network"}


def test_laws_are_one_when_idle_and_monotone() -> None:
    u = np.linspace(0.0, 3.0, 301)
    for law in (g_bw, h_lat):
        values = law(u)
        assert values[0] == 1.0
        assert np.all(np.diff(values) >= 0)
        assert law(0.9) > law(0.5) > law(0.1) > 1.0
    assert math.isfinite(float(h_lat(10.0)))  # capped, never infinite


def test_off_leaf_shares_follow_the_pattern() -> None:
    inside = np.arange(16)
    for app in APP_NAMES:
        leaf, _ = off_shares(APPS[app], inside, PAPER)
        assert np.all(leaf == 0.0)
    leaf, _ = off_shares(ALL_TO_ALL, spanning(0), PAPER)
    assert np.allclose(leaf, 8 / 15)
    leaf, _ = off_shares(APPS["SWFFT"], spanning(0), PAPER)
    assert np.allclose(leaf, 0.5 * 8 / 15)
    leaf, _ = off_shares(APPS["Kripke"], spanning(0), PAPER)
    assert np.allclose(leaf, APPS["Kripke"].locality * 8 / 15)
    leaf, _ = off_shares(APPS["LBANN"], spanning(0), PAPER)  # ring: two edges cross the leaves
    assert leaf.sum() == 2
    assert np.allclose(uniform_off(np.array([0, 0, 1, 1]), 4), 2 / 3)


def test_network_slowdown_grows_with_noise_and_neighbours() -> None:
    victim = job(1, "SWFFT", spanning(0))
    levels = [FABRIC.slowdown_if_started([], level, victim) for level in (0.0, 0.25, 0.5, 0.75, 1.0)]
    assert levels == sorted(levels) and levels[0] < levels[-1]
    neighbour = job(2, "AMG", spanning(0) + 8)
    assert FABRIC.slowdown_if_started([neighbour], 0.0, victim) > levels[0]
    # A job inside one leaf never crosses an uplink: immune to the noise and to its neighbours.
    inside = job(3, "SWFFT", np.arange(16))
    assert FABRIC.slowdown_if_started([neighbour], 1.0, inside) == pytest.approx(1.0)
    # Latency-bound Laghos suffers more than compute-bound PENNANT on the same nodes.
    laghos = FABRIC.slowdown_if_started([], 1.0, job(4, "Laghos", spanning(4)))
    pennant = FABRIC.slowdown_if_started([], 1.0, job(5, "PENNANT", spanning(4)))
    assert laghos > pennant > 1.0


def test_pod_uplinks_in_the_multipod_variant() -> None:
    fabric = Fabric(MULTIPOD, NoiseSpec())
    across = np.concatenate([np.arange(8), 128 + np.arange(8)])  # two leaves in two pods
    within = np.concatenate([np.arange(8), 32 + np.arange(8)])  # two leaves of one pod
    _, pod = off_shares(ALL_TO_ALL, across, MULTIPOD)
    assert np.allclose(pod, 8 / 15)
    load = [job(9, "SWFFT", np.concatenate([np.arange(140, 148), 300 + np.arange(8)]), MULTIPOD)]
    # Another job's inter-pod traffic loads pod 1's uplink: only the job that leaves pod 0 sees it.
    s_across = fabric.slowdown_if_started(load, 0.0, job(1, "SWFFT", across, MULTIPOD))
    s_within = fabric.slowdown_if_started(load, 0.0, job(2, "SWFFT", within, MULTIPOD))
    assert s_across > s_within


def test_strong_scaling_shortens_runs() -> None:
    app = APPS["AMG"]
    assert scaled(app, 8, "weak").base == scaled(app, 32, "weak").base == app.base
    assert scaled(app, 32, "strong").base < app.base < scaled(app, 8, "strong").base


def test_counters_follow_the_state() -> None:
    running = [job(1, "SWFFT", spanning(0)), job(2, "LBANN", np.arange(100, 116))]
    state = FABRIC.evaluate(running, 0.0)
    swfft, lbann = running
    s1, s2 = state.slowdown[1], state.slowdown[2]
    xmit = state.rates[:, COLUMN["ib_xmit_bytes_per_s"]]
    assert np.allclose(xmit[swfft.nodes], swfft.net_gbs / s1 * 1e9)
    read = state.rates[:, COLUMN["lustre_read_bytes_per_s"]]
    assert np.allclose(read[lbann.nodes], lbann.io_gbs / s2 * APPS["LBANN"].read_share * 1e9)
    idle = np.setdiff1d(np.arange(512), np.concatenate([swfft.nodes, lbann.nodes, FABRIC.noise_nodes]))
    assert xmit[idle].max() < 0.01 * xmit[swfft.nodes].min()
    wait_off = FABRIC.evaluate(running, 0.0).rates[swfft.nodes, COLUMN["ib_port_xmit_wait_per_s"]].mean()
    wait_on = FABRIC.evaluate(running, 1.0).rates[swfft.nodes, COLUMN["ib_port_xmit_wait_per_s"]].mean()
    assert wait_on > wait_off


def test_probe_sees_the_uplinks_of_its_nodes() -> None:
    """The simulated probe: slower when the noise loads the uplinks its ring crosses, unaffected
    inside one leaf."""
    rng = np.random.default_rng(0)
    quiet = FABRIC.utilisation([], 0.0)
    loud = FABRIC.utilisation([], 1.0)

    def mean_of(util, nodes, name):
        return np.mean([simulate_probe(FABRIC, util, nodes, rng)[name] for _ in range(20)])

    assert set(simulate_probe(FABRIC, quiet, spanning(0), rng)) == set(FEATURES)
    for name, factor in (("send_max", 1.03), ("allreduce_mean", 1.08)):
        assert mean_of(loud, spanning(0), name) > factor * mean_of(quiet, spanning(0), name)
        assert mean_of(loud, np.arange(16), name) == pytest.approx(
            mean_of(quiet, np.arange(16), name), rel=0.05
        )


def test_recorder_averages_over_the_interval() -> None:
    rec = CounterRecorder(np.random.default_rng(0), PAPER.hosts, interval=30.0)
    a = np.ones((PAPER.nodes, len(METRIC_NAMES)))
    rec.advance(a, 0.0, 10.0)
    rec.advance(4 * a, 10.0, 30.0)
    values = rec.tick(30.0)
    assert np.median(values) == pytest.approx(3.0, rel=0.01)  # (1 x 10 + 4 x 20) / 30
    assert 0.02 < np.std(np.log(values / 3.0)) < 0.08
    assert rec.next_tick == 60.0


def test_noise_schedules() -> None:
    always = NoiseSchedule.random(NoiseSpec(), np.random.default_rng(3), 50_000.0)
    assert always.levels.min() >= 0.25 and always.levels.max() <= 1.0  # always on, varying
    assert len(always.times) > 100 and always.times[0] == 0.0
    t = float(always.times[5]) + 1.0
    assert always.level(t) == always.levels[5] and always.next_switch(t) == always.times[6]
    a, b = float(always.times[5]), float(always.times[7])
    expected = (always.levels[5] * (always.times[6] - a) + always.levels[6] * (b - always.times[6])) / (b - a)
    assert always.mean_level(a, b) == pytest.approx(expected)
    switching = NoiseSchedule.random(SWITCHING, np.random.default_rng(3), 50_000.0)
    assert switching.levels[0] == 0.0 and np.all(switching.levels[1::2] >= 0.25)


def test_noise_visible_in_the_feature_store(tmp_path) -> None:
    """Idle machine, noise loud on [300, 600): the store's window features show it, and only then."""
    rec = CounterRecorder(np.random.default_rng(1), PAPER.hosts, interval=30.0)
    noisy = [PAPER.hostname(int(k)) for k in FABRIC.noise_nodes]
    with FeatureStore(tmp_path / "s.db") as store:
        for t0 in np.arange(0.0, 900.0, 30.0):
            level = 0.8 if 300.0 <= t0 < 600.0 else 0.0
            rec.advance(FABRIC.evaluate([], level).rates, t0, t0 + 30.0)
            store.insert(rec.samples(t0 + 30.0, rec.tick(t0 + 30.0)))
        before = store.window_features(noisy, 0.0, 300.0)["mean_ib_xmit_bytes_per_s"]
        during = store.window_features(noisy, 330.0, 600.0)["mean_ib_xmit_bytes_per_s"]
    assert during > 100 * before
    assert during == pytest.approx(0.8 * 12.5e9, rel=0.1)
