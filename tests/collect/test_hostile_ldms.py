"""Hostile LDMS store_csv files and counter readings: counted and skipped, never a poisoned baseline.

A small store_csv file with one node and one 64-bit counter (``ib.port_xmit_data#mlx5_0.1``, 4-byte
words) is followed by hostile rows; each case states how many rates come out and how many lines
and values are skipped. The RateTracker cases check the same rule one reading at a time.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from rush.collect.ldms import LdmsCsvReader, read_store_csv
from rush.collect.rates import RateTracker
from rush.errors import CollectorError

HEADER = "#Time,Time_usec,ProducerName,component_id,job_id,app_id,ib.port_xmit_data#mlx5_0.1\n"
T0 = 1_700_000_000


def row(t: object, value: object, host: str = "n1") -> str:
    return f"{t},0,{host},1,0,0,{value}\n"


GOOD = row(T0, 0) + row(T0 + 10, 1000)
FUTURE = 10**10  # year 2286

# (id, text after the header, rates emitted, lines skipped, values skipped)
CASES = [
    ("plain", GOOD + row(T0 + 20, 2000), 2, 0, 0),
    ("far-future-row", GOOD + row(FUTURE, 5000) + row(T0 + 20, 2000) + row(T0 + 30, 3000), 3, 1, 0),
    ("future-first-row", row(FUTURE, 5) + GOOD + row(T0 + 20, 2000), 2, 1, 0),
    ("nan-time", GOOD + row("nan", 5) + row(T0 + 20, 2000), 2, 1, 0),
    ("inf-time", GOOD + row("inf", 5) + row(T0 + 20, 2000), 2, 1, 0),
    ("text-time", GOOD + row("yesterday", 5) + row(T0 + 20, 2000), 2, 1, 0),
    ("huge-digits-time", GOOD + row("9" * 400, 5) + row(T0 + 20, 2000), 2, 1, 0),
    ("nan-value", GOOD + row(T0 + 15, "nan") + row(T0 + 20, 2000), 2, 0, 1),
    ("inf-value", GOOD + row(T0 + 15, "inf") + row(T0 + 20, 2000), 2, 0, 1),
    ("text-value", GOOD + row(T0 + 15, "N/A") + row(T0 + 20, 2000), 2, 0, 1),
    ("negative-value", GOOD + row(T0 + 15, -5) + row(T0 + 20, 2000), 2, 0, 0),
    ("beyond-64-bits", GOOD + row(T0 + 15, 2**70) + row(T0 + 20, 2000), 2, 0, 0),
    ("missing-column", GOOD + f"{T0 + 15},0,n1,1,0\n" + row(T0 + 20, 2000), 2, 1, 0),
    ("extra-column", GOOD + f"{T0 + 15},0,n1,1,0,0,7,8\n" + row(T0 + 20, 2000), 2, 1, 0),
    ("empty-line-and-blanks", GOOD + "\n   \n" + row(T0 + 20, 2000), 2, 0, 0),
    ("non-utf8", GOOD + row(T0 + 15, "\udcff") + row(T0 + 20, 2000), 2, 0, 1),
    ("duplicate-time", GOOD + row(T0 + 10, 1500) + row(T0 + 20, 2000), 2, 0, 0),
    ("time-goes-back", GOOD + row(T0 - 100, 1500) + row(T0 + 20, 2000), 2, 0, 0),
    ("truncated-last-line", GOOD + f"{T0 + 20},0,n", 1, 1, 0),
    ("enormous-line", GOOD + "x" * 2_000_000 + "\n" + row(T0 + 20, 2000), 2, 1, 0),
]


@pytest.mark.parametrize(
    ("body", "rates", "skipped", "bad"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_hostile_store_csv(tmp_path: Path, body: str, rates: int, skipped: int, bad: int):
    path = tmp_path / "sysclassib"
    path.write_bytes((HEADER + body).encode("utf-8", "surrogateescape"))
    reader = LdmsCsvReader(path)
    samples = reader.read_new(final=True)
    assert len(samples) == rates, samples
    assert (reader.skipped, reader.bad_values) == (skipped, bad)
    for s in samples:
        assert math.isfinite(s.value) and s.value >= 0 and s.timestamp < FUTURE
        assert s.value == pytest.approx(400.0)  # 1000 words (4 bytes) per 10 s in every good interval


def test_far_future_row_does_not_stop_later_readings(tmp_path: Path):
    """The observed defect: one far-future row became the baseline and every later row was dropped."""
    path = tmp_path / "sysclassib"
    path.write_text(HEADER + GOOD + row(FUTURE, 5000))
    reader = LdmsCsvReader(path)
    assert len(reader.read_new()) == 1 and reader.future_rows == 1
    with open(path, "a") as fh:
        fh.write(row(T0 + 20, 2000) + row(T0 + 30, 3000))
    later = reader.read_new()
    assert [s.timestamp for s in later] == [T0 + 20, T0 + 30]


# A column LDMS already gives per second (sysclassib's ``.rate``): (id, value, rates, bad values).
RATE_HEADER = "#Time,Time_usec,ProducerName,component_id,job_id,app_id,ib.port_xmit_data.rate#mlx5_0.1\n"
RATE_CASES = [
    ("plain", "100", 1, 0),
    ("zero", "0", 1, 0),
    ("negative", "-5", 0, 1),
    ("1e308-times-the-word-size", "1e308", 0, 1),
    ("400-digit-integer", "9" * 400, 0, 1),
]


@pytest.mark.parametrize(
    ("value", "rates", "bad"), [c[1:] for c in RATE_CASES], ids=[c[0] for c in RATE_CASES]
)
def test_hostile_rate_column(tmp_path: Path, value: str, rates: int, bad: int):
    """Found by fuzzing: a negative or overflowing per-second value was published as a rate (-20,
    inf) or stopped the read with an OverflowError; it is a bad value, counted and skipped."""
    path = tmp_path / "sysclassib"
    path.write_text(RATE_HEADER + row(T0, value) + row(T0 + 10, 100))
    reader = LdmsCsvReader(path)
    samples = reader.read_new(final=True)
    assert len(samples) == rates + 1 and reader.bad_values == bad
    assert all(math.isfinite(s.value) and s.value >= 0 for s in samples)
    assert samples[-1].value == 400.0  # 100 words (4 bytes) per second


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ("Time_usec,ProducerName,x\n", "data before the header line"),
        ("#Time,Time_usec,x\n", "not an LDMS store_csv header"),
        ("#\n", "not an LDMS store_csv header"),
    ],
    ids=["no-time-column", "no-producer", "empty-header"],
)
def test_bad_headers_are_clear_errors(tmp_path: Path, header: str, message: str):
    path = tmp_path / "x.csv"
    path.write_text(header + row(T0, 1))
    with pytest.raises(CollectorError, match=message):
        read_store_csv(path)


def test_data_without_header_and_special_files(tmp_path: Path):
    path = tmp_path / "x.csv"
    path.write_text(row(T0, 1))
    with pytest.raises(CollectorError, match="data before the header"):
        read_store_csv(path)
    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    with pytest.raises(CollectorError, match="not a regular file"):
        read_store_csv(fifo)
    with pytest.raises(CollectorError, match="not a regular file"):
        read_store_csv(tmp_path)


# ---------------------------------------------------------------- RateTracker, one reading at a time
NOW = 2_000_000_000.0


def tracker() -> RateTracker:
    return RateTracker(clock=lambda: NOW)


# (id, hostile (time, value), reason counted)
READINGS = [
    ("future-time", (NOW + 3600, 150), "future_time"),
    ("nan-time", (math.nan, 150), "bad_time"),
    ("inf-time", (math.inf, 150), "bad_time"),
    ("text-time", ("soon", 150), "bad_time"),
    ("huge-int-time", (10**400, 150), "bad_time"),
    ("nan-value", (NOW - 50, math.nan), "bad_value"),
    ("inf-value", (NOW - 50, math.inf), "bad_value"),
    ("negative-value", (NOW - 50, -1), "bad_value"),
    ("beyond-range", (NOW - 50, 2**64), "bad_value"),
    ("text-value", (NOW - 50, "150"), "bad_value"),
    ("bool-value", (NOW - 50, True), "bad_value"),
]


@pytest.mark.parametrize(("reading", "reason"), [c[1:] for c in READINGS], ids=[c[0] for c in READINGS])
def test_hostile_reading_is_refused_and_keeps_the_baseline(reading, reason: str):
    rates = tracker()
    assert rates.update("c", NOW - 100, 100) is None
    assert rates.update("c", *reading) is None
    assert rates.rejected == {reason: 1}
    assert rates.update("c", NOW - 90, 200) == pytest.approx(10.0)  # the baseline is still (NOW-100, 100)
    assert rates.resets == 0 and rates.wraps == 0


def test_small_clock_skew_is_tolerated():
    rates = tracker()
    rates.update("c", NOW + 60, 100)
    assert rates.update("c", NOW + 70, 200) == pytest.approx(10.0) and rates.rejected == {}


@pytest.mark.parametrize("kind", ["binary", "fifo", "empty"])
def test_hostile_altheader_file(tmp_path: Path, kind: str):
    """store_csv with altheader=1 keeps the header in <file>.HEADER: it may be anything too."""
    path = tmp_path / "sysclassib"
    path.write_text(GOOD)
    header = tmp_path / "sysclassib.HEADER"
    if kind == "fifo":
        os.mkfifo(header)
    else:
        header.write_bytes(b"\xff\xfe#Time\x00,,\n" if kind == "binary" else b"")
    with pytest.raises(CollectorError) as err:
        read_store_csv(path)
    assert str(header) in str(err.value) or str(path) in str(err.value)
