"""The campaign covers what the experiments ask (issue 28): control runs of 8, 16 and 32 nodes, packed
and spread placements, the noise's intensity range; and every record's placement features can be
read back from the store the campaign wrote (the topology beside the counters).

A slice of the campaign's own job stream (its WS block) runs through the contention simulator on
the paper's machine; nothing is faked."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from rush.collect.store import FeatureStore
from rush.contention.campaign import (
    BLOCK_EVERY,
    CONTROL_SIZES,
    campaign_jobs,
    coverage,
    filter_records,
    record,
)
from rush.contention.machine import PAPER
from rush.contention.noise import NoiseSchedule, NoiseSpec
from rush.contention.shell import EPOCH, Simulation
from rush.contention.state import Fabric
from rush.core.config import CoreConfig
from rush.models.variability.dataset import DatasetError, parse_record
from rush.models.variability.features import window_features_for


def test_the_job_stream_holds_every_size_the_experiments_ask():
    jobs = campaign_jobs(np.random.default_rng(0), 12.0)
    sizes = {j.nodes for j in jobs}
    assert sizes == set(CONTROL_SIZES)
    for size in CONTROL_SIZES:  # every application at every size
        assert {j.app for j in jobs if j.nodes == size} == {j.app for j in jobs}


@pytest.fixture(scope="module")
def campaign_slice():
    """45 jobs of the campaign's WS block (8, 16 and 32 nodes), first-fit, always-on noise."""
    rng = np.random.default_rng(5)
    jobs = [j for j in campaign_jobs(rng, 1.5) if j.submit >= BLOCK_EVERY][:45]
    jobs = [replace(j, submit=j.submit - BLOCK_EVERY + 600.0) for j in jobs]  # after a warm-up
    noise = NoiseSpec()
    fabric = Fabric(PAPER, noise)
    schedule = NoiseSchedule.random(noise, rng, 86_400.0)
    store = FeatureStore(":memory:")
    sim = Simulation(jobs, CoreConfig.from_names("FCFS", "easy"), rng, schedule, fabric, store=store,
                     probe_at_start=True)  # fmt: skip
    results = sim.run()
    yield results, fabric, noise, store
    store.close()


def test_coverage_counts_sizes_placements_and_noise(campaign_slice):
    results, fabric, noise, _ = campaign_slice
    got = coverage(results, fabric, noise)
    assert set(got["sizes"]) == {str(s) for s in CONTROL_SIZES}
    for size, row in got["sizes"].items():
        assert row["packed"] + row["spread"] == row["runs"] == sum(row["leaves_spanned"].values())
        assert min(int(k) for k in row["leaves_spanned"]) >= -(-int(size) // 30)  # 30 usable nodes a leaf
    assert got["sizes"]["32"]["spread"] + got["sizes"]["32"]["packed"] > 0
    assert sum(row["spread"] for row in got["sizes"].values()) > 0  # first-fit spreads some
    assert sum(row["packed"] for row in got["sizes"].values()) > 0  # and packs others
    met = got["noise_level_met"]
    assert noise.intensity[0] <= met["min"] <= met["max"] <= noise.intensity[1]
    assert got["noise_intensity_range"] == list(noise.intensity)


def test_every_record_reads_back_its_placement(campaign_slice):
    results, fabric, _, store = campaign_slice
    m = fabric.machine
    for r in results:
        rec = parse_record(record(r, 0.6), "test", 1)
        features = window_features_for(
            store, list(rec.nodes), rec.start, 300.0, scope="job", with_probe=False
        )
        leaves = {int(m.leaf_of[m.hosts.index(h)]) for h in rec.nodes}
        assert features["job_nodes"] == r.size
        assert features["job_leaves"] == len(leaves)
        assert (features["job_offleaf"] > 0) == (len(leaves) > 1)
        assert rec.start - EPOCH == pytest.approx(r.start)


def _records(tmp_path, run: dict):
    good = {"job_id": "1", "app": "SWFFT", "wtype": "network", "nodes": ["n000", "n001"], "submit": 0.0,
            "start": 1.0, "end": 2.0, "runtime": 1.0, "state": "COMPLETED", "probe": None}  # fmt: skip
    src = tmp_path / "records.jsonl"
    lines = [{"format": "rush-campaign/1"}, good, good | {"job_id": "2", "app": "AMG"}, good | run]
    src.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return src


def test_filter_records_keeps_the_header_and_the_apps(tmp_path):
    dst = tmp_path / "other4.jsonl"
    assert filter_records(_records(tmp_path, {"job_id": "3"}), dst, ("AMG",)) == 1
    kept = [json.loads(line) for line in dst.read_text().splitlines()]
    assert kept[0]["format"] == "rush-campaign/1" and [r["job_id"] for r in kept[1:]] == ["2"]


@pytest.mark.parametrize(
    ("run", "key"),
    [({"app": "HPL"}, "app"), ({"runtime": -1.0}, "runtime"), ({"runtime": float("nan")}, "runtime")],
)
def test_filter_records_refuses_bad_runs_and_writes_nothing(tmp_path, run, key):
    dst = tmp_path / "other4.jsonl"
    with pytest.raises(DatasetError) as info:
        filter_records(_records(tmp_path, {"job_id": "3"} | run), dst, ("AMG",))
    assert ":4" in info.value.where and key in (info.value.where + info.value.message)
    assert not dst.exists()
