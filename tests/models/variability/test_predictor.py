"""The learned predictor live: the store's current window, class probabilities, unknown -> no skip."""

from __future__ import annotations

import json
import shutil
from types import SimpleNamespace

import numpy as np
import pytest

from rush.collect.base import Sample
from rush.collect.store import FeatureStore
from rush.daemon.service import Daemon
from rush.errors import ConfigError, ModelError
from rush.models.variability.features import vector, window_features_for, wtype_features
from rush.planner.config import parse_config
from rush.planner.snapshot_builder import SnapshotBuilder
from rush.planner.variation import LearnedVariationPredictor, get_predictor
from rush.rjms.base import ClusterState, RJMSJob
from tests.models.variability.synth import PERIOD, T0
from tests.queue_backend import Queue

NOISY = T0 + 2 * PERIOD + 420.0  # 420 s into a noise period: the whole window is noisy
QUIET = T0 + 2 * PERIOD + 2000.0


def jobs(*wtypes: str) -> list[SimpleNamespace]:
    return [SimpleNamespace(job_id=i, wtype=w) for i, w in enumerate(wtypes)]


@pytest.fixture
def predictor(model_file, campaign):
    return get_predictor("learned", source=campaign[1], model=model_file)


def test_flags_during_noise_only_and_journals_probabilities(predictor):
    flags = predictor.predict(jobs("network", "compute", "io"), NOISY)
    assert flags == [True, True, True]
    out = predictor.job_outputs(0)
    assert out["variation_class"] == "variation"
    assert set(out["variation_p"]) == set(predictor.class_names)
    assert sum(out["variation_p"].values()) == pytest.approx(1.0, abs=1e-3)
    assert predictor.predict(jobs("network", "io"), QUIET) == [False, False]
    assert predictor.job_outputs(1)["variation_class"] == "none"


def test_same_features_as_training(predictor, campaign, trained):
    """The live row is window_features_for(all nodes) + the one-hot: the training function."""
    with FeatureStore(campaign[1]) as store:
        features = window_features_for(store, None, NOISY, 300.0, scope="all")
    row = vector(trained.features, features | wtype_features("network"))
    expected = trained.pipeline.predict_proba(row[None, :])[0]
    predictor.predict(jobs("network"), NOISY)
    got = predictor.job_outputs(0)["variation_p"]
    assert [got[c] for c in predictor.class_names] == pytest.approx(expected.tolist(), abs=1e-4)


def test_configurable_classes(model_file, campaign):
    p = get_predictor("learned", source=campaign[1], model=model_file, classes=["little"])
    assert p.predict(jobs("network"), NOISY) == [False]  # predicted "variation", not a flagged class
    with pytest.raises(ConfigError, match="variation.classes"):
        get_predictor("learned", source=campaign[1], model=model_file, classes=["oracle"])


def test_missing_data_is_unknown_never_a_skip(predictor, model_file, tmp_path):
    # No sample in the window (before the campaign).
    assert predictor.predict(jobs("network"), T0 - 10_000) == [False]
    assert "no sample" in predictor.job_outputs(0)["variation_reason"]
    assert predictor.job_outputs(0)["variation_class"] == "unknown"
    # Unknown workload type: that job only.
    assert predictor.predict(jobs("gpu", "network"), NOISY) == [False, True]
    assert "workload type" in predictor.job_outputs(0)["variation_reason"]
    # The store absent (and not created by asking).
    absent = get_predictor("learned", source=tmp_path / "gone.sqlite", model=model_file)
    assert absent.predict(jobs("network"), NOISY) == [False]
    assert "feature store absent" in absent.job_outputs(0)["variation_reason"]
    assert not (tmp_path / "gone.sqlite").exists()
    # A file that is not a store.
    (tmp_path / "junk.sqlite").write_bytes(b"not a database" * 100)
    junk = get_predictor("learned", source=tmp_path / "junk.sqlite", model=model_file)
    assert junk.predict(jobs("network"), NOISY) == [False]
    assert "unusable" in junk.job_outputs(0)["variation_reason"]


def test_all_nan_window_is_unknown(model_file, tmp_path):
    """The store has the model's metric in its schema but only NaN/absent values in the window."""
    path = tmp_path / "s.sqlite"
    p = get_predictor("learned", source=path, model=model_file)
    with FeatureStore(path) as store:
        for metric in p._metrics:  # in the schema, but long before the window
            store.insert([Sample(NOISY - 5000, "n00", "sysfs_ib", metric, 1.0)])
            store.insert([Sample(NOISY - 10, "n00", "sysfs_ib", metric, float("nan"))])  # dropped
    assert p.predict(jobs("network"), NOISY) == [False]
    assert "no sample" in p.job_outputs(0)["variation_reason"]


def test_model_features_not_in_the_store(model_file, tmp_path):
    """A model from another machine: its counters are not in this store's schema -> unknown."""
    path = tmp_path / "other.sqlite"
    with FeatureStore(path) as store:
        store.insert([Sample(NOISY - 10, "x1", "procfs", "opa_xmit_flits_per_s", 5.0)])
    p = get_predictor("learned", source=path, model=model_file)
    assert p.predict(jobs("network"), NOISY) == [False]
    reason = p.job_outputs(0)["variation_reason"]
    assert "not in the store's schema" in reason and "ib_xmit_bytes_per_s" in reason


def test_tampered_model_is_refused(model_file, campaign, tmp_path):
    bad = tmp_path / "bad.joblib"
    shutil.copy(model_file, bad)
    shutil.copy(str(model_file) + ".json", str(bad) + ".json")
    with bad.open("r+b") as fh:
        fh.seek(100)
        fh.write(b"\x00\x01\x02")
    with pytest.raises(ModelError, match="sha256"):
        get_predictor("learned", source=campaign[1], model=bad)
    with pytest.raises(ConfigError, match="variation.model"):
        LearnedVariationPredictor(source=campaign[1], model=None)


def test_snapshot_builder_journals_per_job_outputs(predictor):
    state = ClusterState(
        NOISY,
        8,
        8,
        (
            RJMSJob(1, "PENDING", NOISY - 5, 2, 600.0, tags={"wtype": "network"}),
            RJMSJob(2, "PENDING", NOISY - 5, 2, 600.0, tags={"wtype": "weird"}),
        ),
    )
    built = SnapshotBuilder(variation=predictor).build(state, {})
    assert [p.variable for p in built.snapshot.pending] == [True, False]
    assert built.outputs[1]["variation_class"] == "variation" and "variation_p" in built.outputs[1]
    assert built.outputs[2]["variation_class"] == "unknown"


def _daemon(tmp_path, model_file, store, state, **variation):
    config = parse_config(
        {
            "daemon": {"journal": str(tmp_path / "journal.sqlite"), "dry_run": False},
            "variation": {
                "enabled": True,
                "predictor": "learned",
                "store": str(store),
                "model": str(model_file),
            }
            | variation,
        }
    )
    return Daemon(config, backend=Queue(state))


def test_daemon_holds_a_network_job_during_noise(tmp_path, model_file, campaign):
    state = ClusterState(
        NOISY, 8, 8, (RJMSJob(7, "PENDING", NOISY - 5, 2, 600.0, tags={"wtype": "network"}),)
    )
    daemon = _daemon(tmp_path, model_file, campaign[1], state)
    report = daemon.run_cycle()
    assert report.ok, report.error
    assert daemon.backend.held == [7]
    outputs = [d["model_outputs"] for d in daemon.journal.decisions(7)]
    assert outputs and all(o.get("variation_class") == "variation" for o in outputs)
    assert all(o["variation_predictor"] == "learned" for o in outputs)
    daemon.journal.close()


def test_daemon_with_tampered_model_journals_and_holds_nothing(tmp_path, model_file, campaign):
    bad = tmp_path / "bad.joblib"
    bad.write_bytes(model_file.read_bytes()[:-10])
    shutil.copy(str(model_file) + ".json", str(bad) + ".json")
    state = ClusterState(
        NOISY, 8, 8, (RJMSJob(7, "PENDING", NOISY - 5, 2, 600.0, tags={"wtype": "network"}),)
    )
    daemon = _daemon(tmp_path, bad, campaign[1], state)
    assert daemon.variation is None
    assert any("sha256" in e["message"] for e in daemon.journal.events("model"))
    assert daemon.run_cycle().ok and daemon.backend.held == []
    daemon.journal.close()


def test_config_keys(tmp_path, model_file, campaign):
    with pytest.raises(ConfigError, match="variation.model"):
        parse_config({"variation": {"enabled": True, "predictor": "learned", "store": str(campaign[1])}})
    with pytest.raises(ConfigError, match="variation.store"):
        parse_config({"variation": {"enabled": True, "predictor": "learned", "model": str(model_file)}})
    config = parse_config(
        {
            "variation": {
                "enabled": True,
                "predictor": "learned",
                "model": str(model_file),
                "store": str(campaign[1]),
                "classes": ["little", "variation"],
            }
        }
    )
    assert config.variation.classes == ["little", "variation"]
    # An old configuration (rule, no model keys) stays valid.
    old = parse_config({"variation": {"enabled": True, "store": str(campaign[1]), "threshold": 5.0}})
    assert old.variation.model is None and old.variation.classes is None


def test_prediction_is_one_model_call_per_workload_type(predictor):
    """1 000 pending jobs cost one window and one predict_proba of at most 3 rows."""
    calls = []
    inner = predictor._proba
    predictor._proba = lambda X: calls.append(len(X)) or inner(X)
    flags = predictor.predict(jobs(*(["network", "compute", "io"] * 334)), NOISY)
    assert len(flags) == 1002 and calls == [3]
    assert json.dumps([predictor.job_outputs(i) for i in range(3)])  # journal-ready JSON
    assert np.array(flags).all()


def _with_threshold(model_file, tmp_path, threshold):
    """A copy of the session's model whose card carries ``threshold`` (the card is re-checked on load)."""
    copy = tmp_path / model_file.name
    shutil.copy(model_file, copy)
    card = json.loads(model_file.with_name(model_file.name + ".json").read_text())
    card["flag_threshold"] = threshold
    copy.with_name(copy.name + ".json").write_text(json.dumps(card))
    return copy


def test_the_cards_flag_threshold_decides(model_file, campaign, tmp_path):
    """With the card's threshold a job is flagged when P(variation) reaches it, whatever the most
    probable class; the rule, scope and window are journaled."""
    p = get_predictor("learned", source=campaign[1], model=model_file)
    p.predict(jobs("network"), QUIET)
    quiet_p = p.job_outputs(0)["variation_p"]["variation"]
    assert p.job_outputs(0)["variation_class"] == "none" and quiet_p < 0.5
    low = get_predictor(
        "learned", source=campaign[1], model=_with_threshold(model_file, tmp_path, quiet_p / 2)
    )
    assert low.predict(jobs("network"), QUIET) == [True]  # most probable "none", flagged by the threshold
    out = low.job_outputs(0)
    assert out["variation_class"] == "none" and out["variation_rule"].startswith("P(variation) >= ")
    assert out["variation_scope"] == "all" and out["variation_window_s"] == 300.0
    high = get_predictor("learned", source=campaign[1], model=_with_threshold(model_file, tmp_path, 1.0))
    assert high.predict(jobs("network"), QUIET) == [False]
    # Classes other than the card's: the threshold was not chosen for them, the most probable class rules.
    other = get_predictor(
        "learned", source=campaign[1], model=_with_threshold(model_file, tmp_path, 0.0), classes=["little"]
    )
    assert other.predict(jobs("network"), QUIET) == [False]
    assert other.job_outputs(0)["variation_rule"] == "most probable class in ['little']"
