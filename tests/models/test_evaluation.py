"""Classification quality formulas on hand-made cases, clocks and temporal features."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rush.models.evaluation import classification_block, classification_summary, importance_distribution
from rush.models.runtime_features import TimeBase, temporal_features


def test_formulas_on_a_hand_confusion():
    actual_small = np.array([1, 1, 1, 0, 0, 0, 0, 1], bool)
    predicted_small = np.array([1, 1, 0, 1, 0, 0, 0, 0], bool)
    s = classification_summary(actual_small, predicted_small)
    assert s["confusion"] == {"TS": 2, "FS": 1, "FL": 2, "TL": 3}
    assert s["accuracy"] == pytest.approx(5 / 8)
    assert s["precision"] == pytest.approx(2 / 3) and s["recall"] == pytest.approx(2 / 4)
    # false small = predicted small but large, over all predicted small
    assert s["false_small_rate"] == pytest.approx(1 / 3) and s["false_large_rate"] == pytest.approx(2 / 5)


def test_block_has_the_five_ratios_and_null_for_undefined():
    block = classification_block(np.array([True, False]), np.array([False, False]))
    assert set(block) == {"accuracy", "precision", "recall", "false_small_rate", "false_large_rate"}
    assert block["precision"] is None and block["false_small_rate"] is None  # nothing predicted small
    assert block["accuracy"] == 0.5 and block["false_large_rate"] == 0.5
    assert math.isnan(classification_summary(np.array([], bool), np.array([], bool))["accuracy"])


def test_importance_distribution():
    imp = np.array([[0.2, 0.8], [0.6, 0.4], [0.4, 0.6]])
    dist = importance_distribution(imp, ("a", "b"))
    assert dist["a"]["mean"] == pytest.approx(0.4) and dist["a"]["median"] == pytest.approx(0.4)
    assert dist["b"]["min"] == 0.4 and dist["b"]["max"] == 0.8
    assert importance_distribution(np.zeros((0, 2)), ("a", "b")) == {}


def test_temporal_features():
    # 2023-11-14 (a Tuesday) 22:13:20 UTC
    row = temporal_features(np.array([1700000000.0]))[0]
    assert row.tolist() == [22, 1, 14, 11, (317 // 7) + 1, 4]


def local_of(base: TimeBase, trace_times: np.ndarray) -> np.ndarray:
    """Trace times to the site's wall clock through the one time base (Unix seconds)."""
    return base.clock.local(np.asarray(trace_times) + base.unix_start)


def test_clock_from_swf_header_uses_the_named_time_zone():
    # KTH-SP2: UnixStartTime 843480031 is Mon Sep 23 14:00:31 CEST 1996 (UTC+2 in summer).
    header = {"UnixStartTime": "843480031", "TimeZone": "3600", "TimeZoneString": "Europe/Stockholm"}
    base = TimeBase.from_header(header)
    assert base.unix_start == 843480031 and base.unix_start_known and base.zone_source == "TimeZoneString"
    hour, weekday, monthday, month = temporal_features(local_of(base, np.array([0.0, 40 * 86400.0])))[:, :4].T
    assert (hour[0], weekday[0], monthday[0], month[0]) == (14, 0, 23, 9)
    assert hour[1] == 13  # 40 days later, CET (UTC+1): 12:00:31 UTC is 13:00 local
    fixed = TimeBase.from_header({"UnixStartTime": "843480031", "TimeZone": "3600"})
    assert fixed.zone_source == "TimeZone" and temporal_features(local_of(fixed, np.array([0.0])))[0, 0] == 13
    # An explicit zone (rush train --timezone) wins over the header's.
    utc = TimeBase.from_header(header, timezone="UTC")
    assert utc.zone_source == "--timezone" and temporal_features(local_of(utc, np.array([0.0])))[0, 0] == 12


def test_clock_without_header_starts_on_a_monday_midnight():
    base = TimeBase.from_header({})
    assert not base.unix_start_known and base.zone_source == "default UTC"
    row = temporal_features(local_of(base, np.array([0.0, 3 * 3600.0])))
    assert row[0, :2].tolist() == [0, 0] and row[1, :2].tolist() == [3, 0]


@pytest.mark.parametrize(
    "header",
    [
        {"UnixStartTime": "nan"},
        {"UnixStartTime": "1e400"},
        {"UnixStartTime": "0", "TimeZoneString": "Not/AZone"},
        {"UnixStartTime": "0", "TimeZone": "1e12"},
        {"UnixStartTime": "0", "TimeZoneString": "../../../etc/passwd"},
    ],
)
def test_hostile_time_headers_fall_back_as_documented(header):
    base = TimeBase.from_header(header)
    assert np.isfinite(base.unix_start) and abs(base.clock.utc_offset) <= 18 * 3600
    assert base.clock.timezone is None and np.isfinite(local_of(base, np.array([0.0]))).all()
