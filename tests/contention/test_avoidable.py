"""Counterfactual slowdowns, the attribution of runs with variation and the clairvoyant-delay oracle."""

from __future__ import annotations

import numpy as np
import pytest

from rush.contention.apps import APPS
from rush.contention.avoidable import attribute_runs
from rush.contention.counterfactual import Timeline, attribute, delayed_slowdown
from rush.contention.machine import PAPER
from rush.contention.noise import NoiseSchedule, NoiseSpec
from rush.contention.oracles import ClairvoyantOracle
from rush.contention.shell import JobSpec, Present, Simulation
from rush.contention.state import Fabric, Running
from rush.core.config import CoreConfig

FABRIC = Fabric(PAPER, NoiseSpec())


BLOCKER = JobSpec(1, "PENNANT", 24, 0.0)  # first-fit puts the next 16-node job across two leaves


def nodes_of(r) -> np.ndarray:
    return np.array([int(h[1:]) for h in r.hosts])


def spanning(first_leaf: int, n: int = 16) -> np.ndarray:
    half = n // 2
    return np.concatenate([first_leaf * 32 + np.arange(half), (first_leaf + 1) * 32 + np.arange(half)])


def steps(*pieces: tuple[float, float]) -> NoiseSchedule:
    """Noise levels from given times: ((t0, level0), (t1, level1), ...)."""
    return NoiseSchedule(np.array([t for t, _ in pieces]), np.array([lv for _, lv in pieces]))


def present(t: float, running: list[Running], work_left: list[float], noise: NoiseSchedule) -> Present:
    level = noise.level(t)
    util = FABRIC.utilisation(running, level)
    return Present(t, FABRIC, running, level, util, tuple(work_left), noise)


def test_attribution_reproduces_the_simulated_slowdown_and_finds_the_noise() -> None:
    """A lone Laghos across two leaves under loud noise: the counterfactual in full is the run's
    own slowdown; without the noise it is (almost) unimpeded; no other job, no file system."""
    noise = steps((0.0, 1.0), (200.0, 0.3))
    specs = [BLOCKER, JobSpec(2, "Laghos", 16, 0.0, jitter=1.01)]
    sim = Simulation(specs, CoreConfig.from_names("FCFS", "easy"), np.random.default_rng(0), noise, FABRIC)
    results = sim.run()
    ran = [(Running.of(x.job_id, x.app, nodes_of(x), PAPER), x.start, x.end) for x in results]
    job, r = ran[1][0], results[1]
    assert job.spans  # first-fit: the blocker holds 24 of leaf 0's 30 free nodes
    timeline = Timeline.of_results(FABRIC, noise, ran)
    a = attribute(timeline, job, r.start, r.end, r.base)
    assert a.slowdown == pytest.approx(r.runtime / r.base, rel=1e-6)
    assert a.without["noise"] < a.slowdown
    assert a.without["others"] == pytest.approx(a.slowdown)  # the blocker stays inside its leaf
    assert a.without["io"] == pytest.approx(a.slowdown)  # Laghos does no I/O
    assert a.without["all"] == pytest.approx(1.01, rel=1e-6)  # its jitter alone
    # Started after the loud period it would have been faster.
    later = delayed_slowdown(timeline, job, 300.0, r.base * 1.01, r.base)
    assert later < a.slowdown


def test_attribute_runs_names_the_cause_and_the_avoiding_delay() -> None:
    """Loud noise for 120 s then quiet: a spanning Laghos started at once varies, the noise is its
    decisive cause, and a start 120 s later (within 300 s) avoids it."""
    noise = steps((0.0, 1.0), (120.0, 0.0))
    specs = [BLOCKER, JobSpec(2, "Laghos", 16, 0.0)]
    bars = {"PENNANT": 10.0, "Laghos": 1.02}
    results = Simulation(
        specs, CoreConfig.from_names("FCFS", "easy"), np.random.default_rng(0), noise, FABRIC
    ).run()
    assert results[1].runtime > results[1].base * 1.02
    found = attribute_runs(results, specs, FABRIC, noise, bars, budget=300.0, step=30.0)
    assert set(found) == {2}
    d = found[2]
    assert d["cause"] == "noise" and "noise" in str(d["decisive"]).split("+")
    assert d["avoidable"] is True and 0 < d["best_delay"] <= 300.0
    # With the noise loud throughout, no delay within the budget helps.
    loud = steps((0.0, 1.0))
    results = Simulation(
        specs, CoreConfig.from_names("FCFS", "easy"), np.random.default_rng(0), loud, FABRIC
    ).run()
    found = attribute_runs(results, specs, FABRIC, loud, bars, budget=300.0, step=30.0)
    assert found[2]["avoidable"] is False
    # A run under its bar is not attributed.
    assert attribute_runs(results, specs, FABRIC, loud, dict.fromkeys(bars, 10.0), 300.0, 30.0) == {}


def test_clairvoyant_delays_only_when_a_delay_within_the_budget_avoids_the_variation() -> None:
    laghos = JobSpec(7, "Laghos", 16, 0.0)
    nodes = spanning(0)
    bar = dict.fromkeys(APPS, 1.02)
    # Loud for 90 s, then silent: started now it varies, 90 s later it does not -> hold.
    soon_quiet = steps((0.0, 1.0), (90.0, 0.0))
    oracle = ClairvoyantOracle(bar)
    now, best, when = oracle.best_delay(present(0.0, [], [], soon_quiet), laghos, nodes)
    assert now > 1.02 >= best and when == pytest.approx(90.0)
    assert oracle(present(0.0, [], [], soon_quiet), [(laghos, nodes)]) == [True]
    # Loud beyond the budget: no delay avoids it -> start now.
    late_quiet = steps((0.0, 1.0), (2000.0, 0.0))
    assert ClairvoyantOracle(bar)(present(0.0, [], [], late_quiet), [(laghos, nodes)]) == [False]
    # Quiet now: start now.
    assert ClairvoyantOracle(bar)(present(0.0, [], [], steps((0.0, 0.0))), [(laghos, nodes)]) == [False]
    # The budget runs from the first hold: held at t = 0, asked again at t = 280 with the quiet
    # moment at 700 s, beyond 0 + 300 -> start.
    oracle = ClairvoyantOracle(bar)
    assert oracle(present(0.0, [], [], soon_quiet), [(laghos, nodes)]) == [True]
    moved = steps((0.0, 1.0), (700.0, 0.0))
    assert oracle(present(280.0, [], [], moved), [(laghos, nodes)]) == [False]


def test_clairvoyant_sees_running_jobs_finish() -> None:
    """A SWFFT job loading the same uplinks ends in a few minutes (its work left): the clairvoyant
    oracle waits for it, the present-state view alone could not know it ends."""
    quiet = steps((0.0, 0.0))
    swfft = Running.of(1, "SWFFT", spanning(0, 32), PAPER)
    laghos = JobSpec(2, "Laghos", 16, 0.0)
    nodes = spanning(0) + 16  # the same two leaves
    p = present(0.0, [swfft], [200.0], quiet)
    now, best, when = ClairvoyantOracle(dict.fromkeys(APPS, 1.0)).best_delay(p, laghos, nodes)
    assert now > best == pytest.approx(1.0, abs=0.005) and when >= 180.0
    bar = dict.fromkeys(APPS, (now + best) / 2)
    assert ClairvoyantOracle(bar)(p, [(laghos, nodes)]) == [True]
    # With a long-running SWFFT no delay helps.
    assert ClairvoyantOracle(bar)(present(0.0, [swfft], [5000.0], quiet), [(laghos, nodes)]) == [False]


def test_calibrated_sensitivity_order() -> None:
    """The calibration's invariant (sim/variability/README.md): on a placement across two leaves
    under the noise alone, Laghos is the most sensitive application and LBANN is among the three
    most; the compute-bound PENNANT and sw4lite are the least."""
    nodes = spanning(0)
    for level in (0.5, 1.0):
        s = {a: FABRIC.slowdown_if_started([], level, Running.of(1, a, nodes, PAPER)) for a in APPS}
        ranked = sorted(s, key=s.get, reverse=True)
        assert ranked[0] == "Laghos" and "LBANN" in ranked[:3]
        assert set(ranked[-2:]) == {"PENNANT", "sw4lite"}
        assert all(v > 1.0 for v in s.values())


def test_ladder_orders_the_rungs_and_shares_the_clairvoyants_removal() -> None:
    """Hand-made paired results: removals 4 (clairvoyant), 2 (present state), 1 (RUSH)."""
    from rush.studies.contention_avoidable import causes, ladder, markdown

    def exp(v: float) -> dict:
        return {"runs_with_variation": v, "starts_at_limit_per_trial": 0.0}

    def pair(removed: list[float]) -> dict:
        return {"removed": {"mean": float(np.mean(removed)), "per_trial": removed},
                "makespan_change_pct": {"mean": 0.5}}  # fmt: skip

    summary = {
        "experiments": {"paper": {"ADAA": {"FCFS+EASY": exp(10), "CLAIRVOYANT-ORACLE": exp(6),
                                           "PRESENT-ORACLE": exp(8), "RUSH": exp(9)}}},
        "paired": {"paper": {"ADAA": {"CLAIRVOYANT-ORACLE": pair([4, 4]), "PRESENT-ORACLE": pair([1, 3]),
                                      "RUSH": pair([1, 1])}}},
    }  # fmt: skip
    lad = ladder(summary)["paper"]["ADAA"]
    assert lad["ordered"] is True
    assert lad["PRESENT-ORACLE"]["share_of_clairvoyant"] == pytest.approx(0.5)
    assert lad["RUSH"]["share_of_clairvoyant"] == pytest.approx(0.25)
    assert lad["RUSH"]["share_of_present"] == pytest.approx(0.5)  # the target: 1 of 2
    summary["paired"]["paper"]["ADAA"]["RUSH"] = pair([3, 3])  # RUSH above the present state
    assert ladder(summary)["paper"]["ADAA"]["ordered"] is False
    rows = [
        {"variant": "paper", "scenario": "ADAA", "policy": "FCFS+EASY", "trial": t, "app": "Laghos",
         "variation": v, "cause": c, "decisive": c, "avoidable": a}
        for t, v, c, a in ((0, True, "noise", True), (0, False, "", ""), (1, True, "jitter", False))
    ]  # fmt: skip
    c = causes(rows)["paper"]["ADAA"]
    assert c["runs_with_variation"] == 1.0 and c["avoidable_by_delay"] == 0.5
    assert c["by_cause"] == {"jitter": 0.5, "noise": 0.5}
    text = markdown(causes(rows), ladder(summary))
    assert "| paper | ADAA | 1.0 |" in text and "(100 %)" in text
