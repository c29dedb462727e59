"""The campaign record contract (rush/campaign/records.py) and the noise log reader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rush.campaign.records import (
    FORMAT,
    CampaignError,
    noise_during,
    noise_intervals,
    read_records,
    validate_record,
)
from rush.collect.probe import FEATURES
from rush.models.variability.dataset import DatasetError, parse_record

GOOD = {
    "job_id": "12",
    "app": "halo",
    "wtype": "network",
    "nodes": ["vm"],
    "submit": 100.0,
    "start": 101.0,
    "end": 110.0,
    "runtime": 8.5,
    "state": "COMPLETED",
    "probe": {name: 0.01 for name in FEATURES},
    "noise": True,
}


def test_a_good_record_passes() -> None:
    assert validate_record(dict(GOOD)) == GOOD
    assert validate_record({**GOOD, "probe": None, "noise": None})["probe"] is None


@pytest.mark.parametrize(
    ("change", "word"),
    [
        ({"job_id": ""}, "job_id"),
        ({"runtime": 0.0}, "runtime"),  # a COMPLETED run ran
        ({"state": ""}, "state"),
        ({"app": ""}, "app"),
        ({"wtype": "gpu"}, "wtype"),
        ({"nodes": "vm"}, "nodes"),
        ({"nodes": [""]}, "nodes"),
        ({"runtime": float("nan")}, "runtime"),
        ({"runtime": -1.0}, "runtime"),
        ({"end": float("inf")}, "end"),
        ({"start": True}, "start"),
        ({"start": 99.0}, "submit <= start"),
        ({"probe": {"send_min": 1.0}}, "probe"),
        ({"probe": {name: -1.0 for name in FEATURES}}, "probe"),
        ({"noise": "yes"}, "noise"),
    ],
)
def test_broken_records_name_the_field(change: dict, word: str) -> None:
    with pytest.raises(CampaignError) as info:
        validate_record({**GOOD, **change}, where="records.jsonl:3")
    assert word in info.value.message and info.value.where == "records.jsonl:3"


def test_one_check_for_the_campaign_and_the_dataset() -> None:
    # A run that failed at once (0 s) is a valid record for both; the dataset labels COMPLETED runs only.
    failed = {**GOOD, "state": "FAILED", "runtime": 0.0, "start": 110.0}
    assert validate_record(dict(failed)) == failed
    assert parse_record(failed, "records.jsonl:4", 4).runtime == 0.0
    for change in ({"runtime": 0.0}, {"probe": {name: -1.0 for name in FEATURES}}, {"nodes": []}):
        with pytest.raises(DatasetError) as dataset_error:
            parse_record({**GOOD, **change}, "x", 1)
        with pytest.raises(CampaignError) as campaign_error:
            validate_record({**GOOD, **change}, where="x")
        assert campaign_error.value.message == dataset_error.value.message


def test_read_records_keeps_the_header_apart(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    path.write_text(json.dumps({"format": FORMAT, "campaign": "x"}) + "\n" + json.dumps(GOOD) + "\n\n")
    header, runs = read_records(path)
    assert header == {"format": FORMAT, "campaign": "x"} and runs == [GOOD]
    path.write_text(json.dumps(GOOD) + "\n{broken\n")
    with pytest.raises(CampaignError, match="not JSON") as info:
        read_records(path)
    assert info.value.where == f"{path}:2"


def _log(path: Path, *lines: object) -> Path:
    path.write_text("".join((json.dumps(x) if not isinstance(x, str) else x) + "\n" for x in lines))
    return path


def test_noise_intervals_pairs_on_and_off(tmp_path: Path) -> None:
    log = _log(
        tmp_path / "n.jsonl",
        {"format": "rush-noise/1", "seed": 1},
        {"event": "on", "kind": "io", "t": 10.0},
        {"event": "off", "kind": "io", "t": 20.0},
        '{"event": "on", "kind": "mem',  # a line cut by a killed job
        {"event": "on", "kind": "memory", "t": 30.0},
    )
    header, intervals = noise_intervals(log, now=50.0)
    assert header["seed"] == 1
    assert intervals == [(10.0, 20.0, "io"), (30.0, 50.0, "memory")]  # still on: until now
    assert noise_during(intervals, 15.0, 16.0) and noise_during(intervals, 5.0, 11.0)
    assert not noise_during(intervals, 20.0, 30.0)  # touching the edges is not overlapping
    _log(log, {"format": "rush-noise/1"}, {"event": "on", "kind": "io", "t": 1.0}, {"event": "end", "t": 4.0})
    assert noise_intervals(log, now=99.0)[1] == [(1.0, 4.0, "io")]  # the end closes it


def test_noise_log_absent_or_foreign(tmp_path: Path) -> None:
    assert noise_intervals(tmp_path / "absent.jsonl", now=0.0) is None
    with pytest.raises(CampaignError, match="not a noise log"):
        noise_intervals(_log(tmp_path / "x.jsonl", {"event": "on", "t": 1.0}), now=2.0)
