"""Hostile rows from Sonar's Cassandra tables and hostile MPI probe output files.

Sonar: a row stamped in the future, without a time, or with a non-numeric value is skipped and
counted; it must not move the per-host ``last_seen`` (every later query asks for rows after it).
The Cassandra session is the fake of ``test_sonar`` (Cassandra cannot run here).

Probe: each line of a probe output file is either ignored (not the probe's JSON), parsed, or a
CollectorError naming ``file:line``; never a traceback.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from rush.collect.probe import FEATURES, read_probe_file
from rush.collect.sonar import SonarCollector, SonarOptions
from rush.errors import CollectorError
from tests.collect.sonar_fake import FakeSession, at

COUNTER = "ib.port_xmit_data#mlx5_0.1"
RATE = "ib.port_rcv_data.rate#mlx5_0.1"
FAR = at(10**9)  # year 2055

# (id, extra rows for host n1, rates of the counter emitted, rows rejected, values rejected)
SONAR_CASES = [
    ("plain", [], 1, 0, 0),
    ("far-future-row", [("n1", FAR, COUNTER, 9e9)], 1, 1, 0),
    ("nan-counter", [("n1", at(5), COUNTER, float("nan"))], 1, 0, 0),
    ("text-counter", [("n1", at(5), COUNTER, "lots")], 1, 0, 1),
    ("text-rate", [("n1", at(5), RATE, "lots")], 1, 0, 1),
    ("inf-rate", [("n1", at(5), RATE, float("inf"))], 1, 0, 1),
    ("negative-counter", [("n1", at(5), COUNTER, -7.0)], 1, 0, 0),
]


@pytest.mark.parametrize(
    ("extra", "rates", "rows", "values"), [c[1:] for c in SONAR_CASES], ids=[c[0] for c in SONAR_CASES]
)
def test_hostile_sonar_rows(extra, rates: int, rows: int, values: int):
    base = [("n1", at(0), COUNTER, 100.0), ("n1", at(10), COUNTER, 350.0)]
    session = FakeSession(["hostname", "ts", "metric", "value"], base + extra)
    collector = SonarCollector(
        SonarOptions(hosts=["n1"], metric_column="metric", value_column="value"), session=session
    )
    samples = collector.fetch(1699999990.0, 1700000000.0 + 2 * 10**9)
    counter_rates = [s for s in samples if s.metric == "ib_xmit_bytes_per_s"]
    assert len(counter_rates) == rates and counter_rates[0].value == pytest.approx(100.0)
    assert (collector.rejected_rows, collector.bad_values) == (rows, values)
    assert collector.last_seen["n1"] == 1700000010.0  # not moved into the future
    assert all(s.value == s.value and abs(s.value) != float("inf") for s in samples)


def probe_line(**change: object) -> str:
    obj: dict[str, object] = {f: 0.001 for f in FEATURES}
    obj.update(
        format="rush-mpi-probe/1",
        ranks=2,
        hosts=["n1", "n2"],
        timestamp=1.7e9,
        ring_bytes=8,
        ring_iterations=1,
        allreduce_bytes=8,
        allreduce_iterations=1,
    )
    obj.update(change)
    return json.dumps(obj)


# (id, file text, results parsed, or the error text)
PROBE_CASES: list[tuple[str, str, int | str]] = [
    ("plain", probe_line(), 1),
    ("with-noise", "mpirun: warning\n{not json\n" + probe_line() + "\n", 1),
    ("nan-feature", probe_line(send_min=float("nan")), "must be a finite non-negative number"),
    ("inf-timestamp", probe_line(timestamp=float("inf")), "'timestamp' must be"),
    ("future-timestamp", probe_line(timestamp=time.time() + 10**8), "is in the future"),
    ("huge-int", probe_line(ranks=10**400), "'ranks' must be a non-negative integer"),
    ("huge-int-literal", probe_line().replace('"ranks": 2', '"ranks": ' + "9" * 5000), "broken probe JSON"),
    ("negative-ranks", probe_line(ranks=-2), "'ranks' must be"),
    ("bool-ranks", probe_line(ranks=True), "'ranks' must be"),
    ("hosts-empty", probe_line(hosts=[]), "'hosts' must be a non-empty list"),
    ("hosts-not-strings", probe_line(hosts=[1, None]), "'hosts' must be a non-empty list"),
    ("min-above-max", probe_line(send_min=5.0), "send_min <= send_mean <= send_max"),
    ("wrong-format", probe_line(format="other/2"), "unknown probe format"),
    ("truncated", probe_line()[:60], "truncated or broken probe JSON"),
    ("deep-nesting", "{" + '"format": ' + "[" * 100_000 + "]" * 100_000 + "}", "broken probe JSON"),
    ("empty", "", "no probe result found"),
    ("binary", "\x00\xff\x01{{{", "no probe result found"),
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in PROBE_CASES], ids=[c[0] for c in PROBE_CASES])
def test_hostile_probe_output(tmp_path: Path, text: str, expected: int | str):
    path = tmp_path / "probe.json"
    path.write_text(text, errors="surrogateescape")
    if isinstance(expected, int):
        assert len(read_probe_file(path)) == expected
        return
    with pytest.raises(CollectorError) as err:
        read_probe_file(path)
    assert expected in str(err.value) and str(path) in str(err.value)


def test_probe_output_fifo_is_refused(tmp_path: Path):
    fifo = tmp_path / "probe.json"
    os.mkfifo(fifo)
    with pytest.raises(CollectorError, match="not a regular file"):
        read_probe_file(fifo)
