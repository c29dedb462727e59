"""The rule variation predictor (callable and real feature store) and its simulator intervals."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rush.collect.base import Sample
from rush.collect.store import FeatureStore
from rush.core.config import CoreConfig
from rush.errors import ConfigError
from rush.planner.variation import (
    RuleVariationPredictor,
    VariationPredictor,
    get_predictor,
    predictor_names,
    variable_intervals,
    workload_type,
)
from rush.simulator.engine import SimInputs, simulate
from rush.workload.model import Workload


@dataclass
class Job:
    job_id: int
    tags: dict[str, str] = field(default_factory=dict)


def series_mean(times: np.ndarray, values: np.ndarray):
    """The rule's window mean straight from arrays: samples with start <= ts < end."""

    def mean(start: float, end: float) -> float | None:
        inside = (times >= start) & (times < end)
        return float(values[inside].mean()) if inside.any() else None

    return mean


def test_registry_and_protocol():
    assert "rule" in predictor_names()
    rule = get_predictor("rule", source=lambda s, e: 1.0, threshold=0.5)
    assert isinstance(rule, VariationPredictor) and rule.name == "rule"
    with pytest.raises(ConfigError) as info:
        get_predictor("oracle")
    assert info.value.where == "variation.predictor" and "rule" in info.value.fix


def test_workload_type_from_attribute_or_tag():
    assert workload_type(Job(1, {"wtype": "network"})) == "network"

    @dataclass
    class WithType:
        wtype: str

    assert workload_type(WithType("io")) == "io" and workload_type(Job(2)) == ""


def test_rule_flags_only_network_jobs_while_the_counter_is_high():
    now = 10_000.0
    readings = {"value": 5e9}
    calls = []

    def mean(start: float, end: float) -> float:
        calls.append((start, end))
        return readings["value"]

    rule = RuleVariationPredictor(mean, threshold=1e9, workload_type="network")
    jobs = [Job(1, {"wtype": "network"}), Job(2, {"wtype": "compute"}), Job(3)]
    assert rule.predict(jobs, now) == [True, False, False]
    assert calls == [(now - 300.0, now)]  # the last 5 minutes by default
    readings["value"] = 1e9  # not above X
    assert rule.predict(jobs, now) == [False, False, False]
    assert rule.predict([Job(2, {"wtype": "io"})], now) == [False]  # no network job: no read
    assert len(calls) == 2


def test_rule_reads_the_real_feature_store(tmp_path):
    path = tmp_path / "features.sqlite"
    now = time.time()
    with FeatureStore(path) as store:
        store.insert(
            [Sample(now - 60, h, "sysfs_ib", "ib_xmit_bytes_per_s", v) for h, v in (("n1", 4e9), ("n2", 2e9))]
            # an old, huge reading outside the window must not count
            + [Sample(now - 900, "n1", "sysfs_ib", "ib_xmit_bytes_per_s", 1e12)]
        )
    network = [Job(7, {"wtype": "network"})]
    assert RuleVariationPredictor(path, threshold=2.5e9).predict(network, now) == [True]
    rule = RuleVariationPredictor(path, threshold=3.5e9)
    assert rule.predict(network, now) == [False] and rule.last_mean == pytest.approx(3e9)
    # A counter nobody reports: no data, no flag (a silent collector must not hold the queue).
    assert RuleVariationPredictor(path, counter="opa_bytes", threshold=0).predict(network, now) == [False]


def test_intervals_by_hand():
    times = np.array([0.0, 100.0, 200.0, 300.0])
    values = np.array([0.0, 10.0, 10.0, 0.0])
    # Window 150 s: the mean exceeds 5 from t=150 (sample 0 leaves) to t=300 (sample 3 enters).
    assert variable_intervals(times, values, 5.0, 150.0).tolist() == [[150.0, 300.0]]
    assert variable_intervals(times, values, 50.0, 150.0).shape == (0, 2)
    assert variable_intervals(np.array([]), np.array([]), 0.0).shape == (0, 2)
    with pytest.raises(ValueError):
        variable_intervals(times, values[:2], 1.0)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 2000), st.floats(0, 10)), min_size=1, max_size=30),
    st.floats(0.5, 9.5),
    st.integers(10, 400),
)
def test_intervals_agree_with_the_live_rule(samples, threshold, window):
    times = np.array([float(t) for t, _ in samples])
    values = np.array([v for _, v in samples])
    intervals = variable_intervals(times, values, threshold, float(window))
    assert np.all(intervals[:, 0] < intervals[:, 1])
    assert np.all(intervals[1:, 0] > intervals[:-1, 1])  # sorted, disjoint, merged
    rule = RuleVariationPredictor(series_mean(times, values), threshold=threshold, window=float(window))
    # Probe off the breakpoints (integers +/- window): the live rule and the intervals agree.
    for t in np.arange(-0.25, 2500.0, 7.3):
        inside = bool(np.any((intervals[:, 0] <= t) & (t < intervals[:, 1])))
        flagged = rule.predict([Job(1, {"wtype": "network"})], float(t)) == [True]
        if rule.last_mean is not None and abs(rule.last_mean - threshold) <= 1e-9 * max(1.0, threshold):
            continue  # a mean equal to X up to rounding: either answer is right
        assert flagged == inside, t


def test_intervals_drive_the_simulator():
    times = np.array([0.0, 100.0, 200.0, 300.0])
    intervals = variable_intervals(times, np.array([0.0, 10.0, 10.0, 0.0]), 5.0, 150.0)
    workload = Workload(
        job_id=np.array([1, 2]),
        submit=np.array([160.0, 160.0]),
        runtime=np.array([50.0, 50.0]),
        procs=np.array([1, 1]),
        requested_time=np.array([60.0, 60.0]),
        user=np.array([1, 1]),
        machine_procs=4,
    )
    result = simulate(
        workload,
        CoreConfig(skip_limit=100),
        SimInputs(sensitive=np.array([True, False]), variable_intervals=intervals),
    )
    # The sensitive job waits for the end of the variable interval; the other starts at once.
    assert result.start.tolist() == [300.0, 160.0]
