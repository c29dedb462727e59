"""Fuzzed collector inputs (a derandomized hypothesis profile, tests/hostile_mutations.py): the
LDMS store_csv fixtures and Lustre llite stats with damaged bytes, a Prometheus answer with
hostile leaves, a sysfs or RAPL counter file with damaged bytes. Each gives finite values, never
a negative rate of a known metric, or a CollectorError; never another exception."""

from __future__ import annotations

import math
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rush.collect.ldms import LdmsCsvReader
from rush.collect.lustre import parse_lctl_output, parse_stats_file
from rush.collect.prometheus import _parse_data
from rush.collect.rapl import _read_int
from rush.collect.sysfs_ib import read_counter
from rush.errors import CollectorError
from tests.hostile_mutations import FUZZ, byte_mutate, mutate

FIXTURES = Path(__file__).parent / "fixtures"
LDMS = {p.name: p.read_bytes()[:6000] for p in sorted((FIXTURES / "ldms").iterdir())}
# sysclassib's per-second columns, which the fixtures leave at 0.000000 until the second row
LDMS["rates.csv"] = (
    b"#Time,Time_usec,ProducerName,component_id,job_id,app_id,ib.port_xmit_data.rate#mlx5_0.1\n"
    b"1700000000,0,n1,1,0,0,100\n1700000010,0,n1,1,0,0,250.5\n"
)
LUSTRE = {p.name: p.read_text() for p in sorted((FIXTURES / "lustre").iterdir())}
NOW = time.time()
PROMETHEUS = [
    {"resultType": "matrix", "result": [{"metric": {"instance": "n1:9100"}, "values": [[NOW - 10, "1.5"], [NOW, "2"]]}]},
    {"resultType": "vector", "result": [{"metric": {"instance": "n1"}, "value": [NOW, "3"]}]},
]  # fmt: skip


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


@FUZZ
@given(st.data())
def test_fuzzed_ldms_store_csv(scratch, data):
    name = data.draw(st.sampled_from(sorted(LDMS)))
    path = scratch / name
    path.write_bytes(byte_mutate(LDMS[name], data))
    try:
        samples = LdmsCsvReader(path).read_new(final=True)
    except CollectorError:
        return
    for s in samples:
        assert math.isfinite(s.value) and math.isfinite(s.timestamp), s
        assert s.value >= 0 or s.metric.startswith("ldms_"), s  # an unknown metric's raw value


@FUZZ
@given(st.data())
def test_fuzzed_lustre_stats(data):
    text = byte_mutate(LUSTRE[data.draw(st.sampled_from(sorted(LUSTRE)))].encode(), data).decode(
        "utf-8", "replace"
    )
    for read in (lambda: [parse_stats_file(text, "fs")], lambda: parse_lctl_output(text)):
        try:
            found = read()
        except CollectorError:
            continue
        for stats in found:
            for value in vars(stats).values():
                for x in value.values() if isinstance(value, dict) else [value]:
                    assert not isinstance(x, float) or (math.isfinite(x) and x >= 0), stats


@FUZZ
@given(st.data())
def test_fuzzed_prometheus_answer(data):
    try:
        series = _parse_data(mutate(data.draw(st.sampled_from(PROMETHEUS)), data, 4), "http://prometheus")
    except CollectorError:
        return
    assert all(math.isfinite(t) and math.isfinite(v) for s in series for t, v in s.points)


@FUZZ
@given(st.data())
def test_fuzzed_counter_file(scratch, data):
    path = scratch / "counter"
    path.write_bytes(byte_mutate(data.draw(st.sampled_from([b"12345\n", b"18446744073709551615\n"])), data))
    for read in (read_counter, _read_int):
        try:
            value = read(path)
        except CollectorError:
            continue
        assert type(value) is int and 0 <= value < 2**64
