"""RateTracker (wrap, reset, first reading) and the SQLite feature store (window features)."""

from __future__ import annotations

import logging
import math
import sqlite3

import pytest

from rush.collect.base import Sample
from rush.collect.rates import COUNTER_RANGE_32, RateTracker
from rush.collect.store import FeatureStore
from rush.errors import CollectorError


def test_first_reading_emits_nothing_then_a_rate():
    tracker = RateTracker()
    assert tracker.update("c", 0.0, 100) is None
    assert tracker.update("c", 10.0, 600) == pytest.approx(50.0)


def test_64bit_wraparound_is_exact():
    tracker = RateTracker()
    tracker.update("c", 0.0, 2**64 - 100)
    assert tracker.update("c", 10.0, 900) == pytest.approx(100.0)  # 1000 counts across the wrap
    assert tracker.wraps == 1 and tracker.resets == 0


def test_32bit_range_is_configurable():
    tracker = RateTracker(counter_range=COUNTER_RANGE_32)
    tracker.update("c", 0.0, 2**32 - 10)
    assert tracker.update("c", 1.0, 10) == pytest.approx(20.0)
    # The same drop on a 64-bit counter is not a plausible wrap: a reset.
    wide = RateTracker()
    wide.update("c", 0.0, 2**32 - 10)
    assert wide.update("c", 1.0, 10) is None and wide.resets == 1


def test_reset_emits_no_rate_and_is_logged(caplog):
    tracker = RateTracker()
    tracker.update("port", 0.0, 5_000_000)
    with caplog.at_level(logging.INFO, logger="rush.collect.rates"):
        assert tracker.update("port", 10.0, 42) is None
    assert tracker.resets == 1 and "reset" in caplog.text
    assert tracker.update("port", 20.0, 142) == pytest.approx(10.0)  # counting resumes


def test_out_of_order_reading_keeps_the_baseline():
    tracker = RateTracker()
    tracker.update("c", 10.0, 100)
    assert tracker.update("c", 10.0, 500) is None
    assert tracker.update("c", 20.0, 200) == pytest.approx(10.0)


def test_rate_samples_keyed_by_host_source_metric():
    tracker = RateTracker()
    first = [Sample(0, h, "s", "bytes", 0) for h in ("a", "b")]
    second = [Sample(10, "a", "s", "bytes", 100), Sample(10, "b", "s", "bytes", 300)]
    assert tracker.rate_samples(first, "_per_s") == []
    rates = tracker.rate_samples(second, "_per_s")
    assert {(s.host, s.metric, s.value) for s in rates} == {
        ("a", "bytes_per_s", 10.0),
        ("b", "bytes_per_s", 30.0),
    }


def fill(store: FeatureStore) -> None:
    rows = [Sample(t, "a", "x", "m", v) for t, v in ((0, 1.0), (60, 3.0))]  # node mean 2
    rows += [Sample(t, "b", "x", "m", v) for t, v in ((0, 10.0), (60, 10.0), (120, 10.0))]  # mean 10
    rows += [Sample(30, "c", "x", "m", 6.0), Sample(30, "c", "y", "other", 1.0)]
    rows += [Sample(400, "a", "x", "m", 99.0)]  # outside [0, 300)
    store.insert(rows)


def test_window_features_are_over_per_node_means(tmp_path):
    with FeatureStore(tmp_path / "f.sqlite") as store:
        fill(store)
        features = store.window_features(None, 0, 300)
        # b has three samples, a two: a mean over samples would be 6.8, over nodes 6.
        assert features["min_m"] == 2.0 and features["max_m"] == 10.0
        assert features["mean_m"] == pytest.approx((2 + 10 + 6) / 3)
        assert store.window_features(["a", "b"], 0, 300)["mean_m"] == pytest.approx(6.0)
        assert store.window_features(None, 0, 300, sources=["y"]) == {
            "min_other": 1.0,
            "max_other": 1.0,
            "mean_other": 1.0,
        }
        assert store.window_features(["zzz"], 0, 300) == {}
        assert store.window_features(None, 0, 300, sources=["nope"]) == {}
        assert store.window_features(None, 1000, 2000) == {}
        assert store.node_means(["a", "c"], 0, 300) == {"a": {"m": 2.0}, "c": {"m": 6.0, "other": 1.0}}


def test_same_metric_from_two_sources_is_pooled(tmp_path):
    with FeatureStore(tmp_path / "f.sqlite") as store:
        store.insert([Sample(0, "a", "sysfs_ib", "ib_xmit_bytes_per_s", 10.0)])
        store.insert([Sample(5, "a", "ldms", "ib_xmit_bytes_per_s", 30.0)])
        assert store.window_features(None, 0, 10)["mean_ib_xmit_bytes_per_s"] == 20.0
        assert store.window_features(None, 0, 10, ["ldms"])["mean_ib_xmit_bytes_per_s"] == 30.0


def test_samples_roundtrip_reinsert_and_non_finite(tmp_path, caplog):
    with FeatureStore(tmp_path / "f.sqlite") as store:
        batch = [Sample(1.5, "a", "x", "m", 1.0), Sample(1.5, "a", "x", "n", 2.0)]
        assert store.insert(batch) == 2
        assert store.insert(batch) == 2  # the same reading again: replaced, not doubled
        assert store.insert([Sample(2.0, "a", "x", "m", math.nan)]) == 0
        assert "non-finite" in caplog.text
        assert store.samples() == batch
        assert store.samples(metrics=["n"]) == [batch[1]]
        assert store.samples(hosts=["b"]) == []


def test_prune_and_retention(tmp_path):
    with FeatureStore(tmp_path / "f.sqlite", retention=3600) as store:
        fill(store)
        assert store.prune(older_than=100) == 6  # the samples at 0, 30 and 60
        assert {s.timestamp for s in store.samples()} == {120, 400}
        assert store.prune() == 2  # now - 1 h removes the rest (timestamps from 1970)
        assert store.samples() == []
    with FeatureStore(tmp_path / "g.sqlite") as store:
        fill(store)
        assert store.prune() == 0  # no retention configured: keep everything


def test_a_second_connection_sees_new_names(tmp_path):
    path = tmp_path / "f.sqlite"
    with FeatureStore(path) as reader, FeatureStore(path) as writer:
        assert reader.window_features(None, 0, 10) == {}
        writer.insert([Sample(1, "new-host", "x", "fresh", 4.0)])
        assert reader.window_features(["new-host"], 0, 10) == {
            "min_fresh": 4.0,
            "max_fresh": 4.0,
            "mean_fresh": 4.0,
        }
        assert reader.samples()[0].host == "new-host"


def test_old_or_corrupt_store_is_a_clear_error(tmp_path):
    old = tmp_path / "old.sqlite"
    with sqlite3.connect(old) as db:
        db.execute("CREATE TABLE samples (ts REAL, metric_id INT, host_id INT, value REAL)")
    with pytest.raises(CollectorError, match="schema version") as err:
        FeatureStore(old)
    assert err.value.where == str(old) and err.value.fix
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(CollectorError, match="cannot open the feature store"):
        FeatureStore(junk)


def test_a_reading_spread_over_a_second_keeps_exact_times(tmp_path):
    # Prometheus answers each query at its own instant: one host's metrics ms apart.
    with FeatureStore(tmp_path / "f.sqlite") as store:
        batch = [
            Sample(99.6, "a", "prometheus", "early", 1.0),
            Sample(100.2, "a", "prometheus", "late", 2.0),
            Sample(100.4, "a", "prometheus", "early", 3.0),  # same metric again: a new reading
        ]
        store.insert(batch)
        assert store.samples() == batch
        assert store.samples(start=100) == batch[1:]
        features = store.window_features(None, 100, 200)
        assert features["mean_early"] == 3.0 and features["mean_late"] == 2.0
        assert store.window_features(None, 99, 100) == {"min_early": 1.0, "max_early": 1.0, "mean_early": 1.0}
        assert store.window_features(None, 100.3, 100.35) == {}
