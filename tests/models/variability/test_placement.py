"""What the job brings: its node count and how its tentative placement spreads over leaves.

Constructed placements on a real FeatureStore whose topology readings the contention
simulator's counter recorder wrote (nothing faked): packed and spread placements of the same
size give different leaf features, the window function and the batched reader agree, a store
without topology leaves the leaf features out, and a model card naming an unknown feature or
listing features other than the model's is refused.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from rush.collect.store import FeatureStore
from rush.contention.counters import CounterRecorder
from rush.contention.machine import Machine
from rush.errors import ModelError
from rush.models.variability.features import (
    PLACEMENT_FEATURES,
    WindowReader,
    placement_features,
    topology_of,
    window_features_for,
)
from rush.models.variability.train import load_variability_model

MACHINE = Machine(nodes=128, leaf_size=32, pod_size=64)
T0 = 1_700_000_000.0


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """Ten counter ticks of an idle 128-node machine, with where each node hangs."""
    rng = np.random.default_rng(3)
    recorder = CounterRecorder(rng, MACHINE.hosts, origin=T0, leaves=MACHINE.leaf_of, pods=MACHINE.pod_of)
    path = tmp_path_factory.mktemp("placement") / "store.db"
    with FeatureStore(path) as s:
        for tick in range(1, 11):
            t = tick * 30.0
            recorder.advance(np.full((MACHINE.nodes, 11), 1e3), t - 30.0, t)
            s.insert(recorder.samples(t, recorder.tick(t)))
    s = FeatureStore(path)
    yield s
    s.close()


def hosts(nodes) -> list[str]:
    return [MACHINE.hostname(int(k)) for k in nodes]


def test_packed_and_spread_placements_differ():
    where = {h: (float(MACHINE.leaf_of[k]), float(MACHINE.pod_of[k])) for k, h in enumerate(MACHINE.hosts)}
    packed = placement_features(hosts(range(16)), where)  # one leaf
    spread = placement_features(hosts(range(0, 128, 8)), where)  # 4 nodes on each of 4 leaves
    assert packed["job_nodes"] == spread["job_nodes"] == 16
    assert (packed["job_leaves"], packed["job_leafshare"], packed["job_offleaf"], packed["job_ringoff"]) == (
        1,
        1.0,
        0.0,
        0.0,
    )
    assert spread["job_leaves"] == 4 and spread["job_leafshare"] == 0.25
    # all-to-all: each node has 12 of its 15 peers on other leaves
    assert spread["job_offleaf"] == pytest.approx(12 / 15)
    assert spread["job_ringoff"] == pytest.approx(4 / 16)  # the ring leaves a leaf 4 times
    assert (spread["job_pods"], spread["job_offpod"]) == (2, pytest.approx(8 / 15))
    assert packed["job_pods"] == 1 and packed["job_offpod"] == 0.0
    # Two leaves, 24 + 8: the largest share and the all-to-all share in between.
    two = placement_features(hosts([*range(8, 32), *range(32, 40)]), where)
    assert two["job_leaves"] == 2 and two["job_leafshare"] == 0.75
    assert two["job_offleaf"] == pytest.approx((32 - (24**2 + 8**2) / 32) / 31)
    assert placement_features([], where) == {}
    assert placement_features(["x"], where) == {"job_nodes": 1.0}  # a node of unknown topology


def test_the_store_carries_the_topology(store):
    where = topology_of(store, None, T0 + 300.0, 300.0)
    assert len(where) == MACHINE.nodes
    assert where["n000"] == (0.0, 0.0) and where["n127"] == (3.0, 1.0)


def test_window_function_and_reader_agree_on_placements(store):
    now = T0 + 305.0
    sets = [hosts(range(16)), hosts(range(0, 128, 8)), hosts([5, 5, 40]), ["nobody", "n001"], []]
    reader = WindowReader(store, now, 300.0)
    table = reader.table(sets, "job", with_probe=True)
    for k, placed in enumerate(sets):
        expected = window_features_for(store, placed, now, 300.0, scope="job") if placed else {}
        assert table.row(k) == pytest.approx(expected), placed
    spread = table.row(1)
    assert spread["job_leaves"] == 4 and table.row(0)["job_leaves"] == 1
    assert set(PLACEMENT_FEATURES) <= set(spread)
    # all-node features describe no job's placement
    assert not set(PLACEMENT_FEATURES) & set(reader.all_nodes("all"))
    assert not set(PLACEMENT_FEATURES) & set(window_features_for(store, None, now, 300.0))
    # the topology is no counter: no job_mean_leaf
    assert not any(f.endswith(("_leaf", "_pod")) for f in spread)


def test_a_store_without_topology_keeps_only_the_node_count(tmp_path):
    rng = np.random.default_rng(1)
    recorder = CounterRecorder(rng, MACHINE.hosts[:8], origin=T0)
    with FeatureStore(tmp_path / "s.db") as s:
        recorder.advance(np.ones((8, 11)), 0.0, 30.0)
        s.insert(recorder.samples(30.0, recorder.tick(30.0)))
        got = window_features_for(s, MACHINE.hosts[:4], T0 + 60.0, 300.0, scope="job")
    assert got["job_nodes"] == 4 and "job_leaves" not in got


def test_recorder_refuses_a_topology_of_another_length():
    with pytest.raises(ValueError, match="one leaf"):
        CounterRecorder(np.random.default_rng(0), MACHINE.hosts, leaves=MACHINE.leaf_of[:3])


def _copy(model_file, tmp_path):
    copy = tmp_path / model_file.name
    shutil.copy(model_file, copy)
    card = json.loads(model_file.with_name(model_file.name + ".json").read_text())
    return copy, card


def test_a_card_naming_an_unknown_feature_is_refused(model_file, tmp_path):
    copy, card = _copy(model_file, tmp_path)
    card["features"] = [*card["features"][:-1], "job_secret_sauce"]
    copy.with_name(copy.name + ".json").write_text(json.dumps(card))
    with pytest.raises(ModelError, match="unknown feature"):
        load_variability_model(copy)


def test_a_card_whose_features_are_not_the_models_is_refused(model_file, tmp_path):
    """Same count, other names (or another order): the card no longer describes the model."""
    copy, card = _copy(model_file, tmp_path)
    model, _ = load_variability_model(model_file)
    assert model.rush_features_ == card["features"]
    card["features"] = [f"all_max_swapped_{k}" for k in range(len(card["features"]))]
    copy.with_name(copy.name + ".json").write_text(json.dumps(card))
    with pytest.raises(ModelError, match="does not describe this model") as info:
        load_variability_model(copy)
    assert "features" in info.value.where and "retrain" in info.value.fix
