"""The contention model: slowdown monotone in load, counters follow the state, noise visible."""

from __future__ import annotations

import numpy as np
import pytest

from rush.collect.store import FeatureStore
from rush.contention.counters import HOSTS, CounterRecorder
from rush.contention.model import APPS, KAPPA_NET, NODES, POD_SIZE, g, off_pod_share, scaled
from rush.contention.noise import NoiseSchedule, noise_nodes
from rush.contention.state import METRIC_NAMES, NOISE, Running, evaluate

COL = {m: k for k, m in enumerate(METRIC_NAMES)}


def job(job_id: int, app: str, nodes) -> Running:
    nodes = np.asarray(nodes)
    _, net, io = scaled(APPS[app], len(nodes), "weak")
    return Running(job_id, app, nodes, net, io)


def spanning(first_pod: int, n: int = 16) -> np.ndarray:
    """n nodes split evenly over two pods (their traffic crosses the uplinks)."""
    half = n // 2
    return np.concatenate(
        [first_pod * POD_SIZE + np.arange(half), (first_pod + 1) * POD_SIZE + np.arange(half)]
    )


def test_g_is_one_when_idle_and_monotone() -> None:
    u = np.linspace(0.0, 3.0, 301)
    values = g(u, KAPPA_NET)
    assert values[0] == 1.0
    assert np.all(np.diff(values) >= 0)
    assert values[-1] > values[100] > values[50] > 1.0


def test_network_slowdown_grows_with_noise_and_neighbours() -> None:
    victim = job(1, "MILC", spanning(0))
    alone = evaluate([victim], 0.0).slowdown[1]
    levels = [evaluate([victim], level).slowdown[1] for level in (0.25, 0.5, 0.75, 1.0)]
    assert alone < levels[0] < levels[1] < levels[2] < levels[3]
    # A second network job sharing the same two pods' uplinks slows the first further.
    neighbour = job(2, "AMG", spanning(0) + 8)
    assert evaluate([victim, neighbour], 0.0).slowdown[1] > alone
    # A job confined to one pod never crosses an uplink: immune to the noise.
    inside = job(3, "MILC", np.arange(16))
    assert evaluate([inside], 1.0).slowdown[3] == pytest.approx(1.0)


def test_io_slowdown_grows_with_pfs_load_and_compute_is_immune() -> None:
    io_job = job(1, "MACSio", np.arange(16))
    s = [evaluate([io_job] + [job(10 + k, "MACSio", np.arange(16) + 32 * (k + 1)) for k in range(m)], 0.0).slowdown[1]
         for m in range(4)]  # fmt: skip
    assert s[0] < s[1] < s[2] < s[3]
    compute = job(2, "PENNANT", spanning(4))
    assert evaluate([compute], 1.0).slowdown[2] < evaluate([job(3, "MILC", spanning(4))], 1.0).slowdown[3]


def test_off_pod_share() -> None:
    assert np.all(off_pod_share(np.arange(16), 1.0) == 0.0)
    share = off_pod_share(spanning(0), 1.0)
    assert np.allclose(share, 8 / 15)


def test_counters_follow_the_state() -> None:
    running = [job(1, "MILC", spanning(0)), job(2, "MACSio", np.arange(100, 116))]
    state = evaluate(running, 0.0)
    milc, macsio = running
    s1, s2 = state.slowdown[1], state.slowdown[2]
    xmit = state.rates[:, COL["ib_xmit_bytes_per_s"]]
    assert np.allclose(xmit[milc.nodes], milc.net_gbs / s1 * 1e9)
    write = state.rates[:, COL["lustre_write_bytes_per_s"]]
    assert np.allclose(write[macsio.nodes], macsio.io_gbs / s2 * (1 - APPS["MACSio"].read_share) * 1e9)
    idle = np.setdiff1d(np.arange(NODES), np.concatenate([milc.nodes, macsio.nodes]))
    assert xmit[idle].max() < 0.01 * xmit[milc.nodes].min()
    assert write[idle].max() == 0.0
    # Congestion shows in the job's port wait counter when the noise loads its uplinks.
    wait_off = evaluate(running, 0.0).rates[milc.nodes, COL["ib_port_xmit_wait_per_s"]].mean()
    wait_on = evaluate(running, 1.0).rates[milc.nodes, COL["ib_port_xmit_wait_per_s"]].mean()
    assert wait_on > wait_off


def test_recorder_averages_over_the_interval() -> None:
    rec = CounterRecorder(np.random.default_rng(0), interval=30.0)
    a = np.ones((NODES, len(METRIC_NAMES)))
    rec.advance(a, 0.0, 10.0)
    rec.advance(4 * a, 10.0, 30.0)
    values = rec.tick(30.0)
    # (1 x 10 + 4 x 20) / 30 = 3, times a lognormal noise of sigma 0.05.
    assert np.median(values) == pytest.approx(3.0, rel=0.01)
    assert 0.02 < np.std(np.log(values / 3.0)) < 0.08
    assert rec.next_tick == 60.0


def test_noise_schedule_and_nodes() -> None:
    nodes = noise_nodes()
    assert len(nodes) == NODES // 16 and len(set(nodes // POD_SIZE)) == NODES // POD_SIZE
    sched = NoiseSchedule.random(np.random.default_rng(3), 50_000.0)
    assert np.all(sched.starts < sched.ends) and np.all(sched.ends[:-1] < sched.starts[1:])
    t_on = float((sched.starts[0] + sched.ends[0]) / 2)
    assert 0.5 <= sched.level(t_on) <= 1.0
    assert sched.level(float(sched.starts[0]) - 1.0) == 0.0
    assert sched.next_switch(0.0) == sched.starts[0]
    assert sched.active_during(t_on, t_on + 1) and not sched.active_during(0.0, float(sched.starts[0]))


def test_noise_on_off_visible_in_the_feature_store(tmp_path) -> None:
    """Idle machine, noise on for [300, 600): the store's window features show it, and only then."""
    rec = CounterRecorder(np.random.default_rng(1), interval=30.0)
    with FeatureStore(tmp_path / "s.db") as store:
        for t0 in np.arange(0.0, 900.0, 30.0):
            level = 0.8 if 300.0 <= t0 < 600.0 else 0.0
            rec.advance(evaluate([], level).rates, t0, t0 + 30.0)
            store.insert(rec.samples(t0 + 30.0, rec.tick(t0 + 30.0)))
        noisy = [HOSTS[k] for k in NOISE]
        before = store.window_features(noisy, 0.0, 300.0)["mean_ib_xmit_bytes_per_s"]
        during = store.window_features(noisy, 330.0, 600.0)["mean_ib_xmit_bytes_per_s"]
        after = store.window_features(None, 660.0, 900.0)["max_ib_xmit_bytes_per_s"]
        machine_during = store.window_features(None, 330.0, 600.0)["max_ib_xmit_bytes_per_s"]
    assert during > 100 * before
    assert during == pytest.approx(0.8 * 12.5e9, rel=0.1)
    assert machine_during > 100 * after


def test_the_window_changes_only_at_ticks(tmp_path) -> None:
    """Why the RUSH oracle may read the window once per sampling interval: between two ticks
    the 300 s window holds the same readings (readings on the 30 s grid, window 10 intervals)."""
    from rush.contention.counters import SAMPLE_INTERVAL
    from rush.models.variability.features import window_features_for

    rec = CounterRecorder(np.random.default_rng(2), interval=SAMPLE_INTERVAL)
    with FeatureStore(tmp_path / "s.db") as store:
        for k in range(40):
            t0 = k * SAMPLE_INTERVAL
            rec.advance(evaluate([], 0.3 + 0.02 * k).rates, t0, t0 + SAMPLE_INTERVAL)
            store.insert(rec.samples(t0 + SAMPLE_INTERVAL, rec.tick(t0 + SAMPLE_INTERVAL)))
        for tick in (600.0, 900.0):
            inside = [window_features_for(store, None, tick + d, 300.0) for d in (1e-6, 7.0, 29.0, 30.0)]
            assert all(f == inside[0] for f in inside[1:])
            assert window_features_for(store, None, tick + 30.0 + 1e-6, 300.0) != inside[0]
