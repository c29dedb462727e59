"""Sonar-style Cassandra tables through the cassandra-driver interface.

No Cassandra server can run here, so these tests use a fake Session implementing the two
driver calls the collector makes — ``prepare(query)`` and ``execute(prepared, params)`` —
and returning rows as the driver's default ``named_tuple_factory`` does (namedtuples,
``timestamp`` columns as naive UTC datetimes). The fake evaluates the prepared statement's
WHERE clause (partition key and clustering range) on its rows, as Cassandra would.
"""

from __future__ import annotations

import sys

import pytest

from rush.collect.sonar import SonarCollector, SonarOptions
from rush.errors import BackendUnavailableError, CollectorError
from tests.collect.sonar_fake import FakeSession, at

LONG_ROWS = [
    ("n1", at(0), "ib.port_xmit_data#mlx5_0.1", 100.0),
    ("n1", at(10), "ib.port_xmit_data#mlx5_0.1", 350.0),
    ("n1", at(10), "ib.port_rcv_data.rate#mlx5_0.1", 5.0),
    ("n1", at(10), "Active#meminfo", 123.0),
    ("n2", at(0), "client.read_bytes#llite.lustre", 0.0),
    ("n2", at(10), "client.read_bytes#llite.lustre", 1e6),
    ("n3", at(5), "client.read_bytes#llite.lustre", 1e6),  # not asked for
]


def test_long_table_counters_become_rates():
    session = FakeSession(["hostname", "ts", "metric", "value"], LONG_ROWS)
    options = SonarOptions(hosts=["n1", "n2"], metric_column="metric", value_column="value")
    collector = SonarCollector(options, session=session)
    samples = collector.collect(now=1700000100.0)
    assert session.prepared == [
        "SELECT ts, metric, value FROM ldms.metrics WHERE hostname = ? AND ts > ? AND ts <= ?"
    ]
    by = {(s.host, s.metric): s for s in samples}
    assert by[("n1", "ib_xmit_bytes_per_s")].value == pytest.approx(250 * 4 / 10)
    assert by[("n1", "ib_xmit_bytes_per_s")].timestamp == 1700000010.0
    assert by[("n1", "ib_rcv_bytes_per_s")].value == 20.0  # a .rate column, words -> bytes
    assert by[("n1", "ldms_Active_meminfo")].value == 123.0  # unknown: passed through
    assert by[("n2", "lustre_read_bytes_per_s")].value == pytest.approx(1e5)
    assert not any(s.host == "n3" for s in samples)
    # The next collect asks only for rows after the last one seen per host.
    session.executed.clear()
    assert collector.collect(now=1700000200.0) == []
    assert session.executed[0][1] == at(10)


def test_wide_table_and_fetch_for_a_training_window():
    rows = [("n1", at(t), 1000.0 * t, 2.0) for t in range(0, 60, 10)]
    session = FakeSession(["node", "time", "xmit", "rcv_rate"], rows)
    collector = SonarCollector(
        SonarOptions(
            hosts=["n1"],
            table="metrics",
            host_column="node",
            time_column="time",
            metrics={"xmit": "ib.port_xmit_data#mlx5_0.1", "rcv_rate": "ib.port_rcv_data.rate#mlx5_0.1"},
        ),
        session=session,
    )
    samples = collector.fetch(1700000000.0 - 1, 1700000030.0)
    xmit = [s.value for s in samples if s.metric == "ib_xmit_bytes_per_s"]
    assert xmit == pytest.approx([4000.0] * 3)  # 1000 words/s x 4 bytes
    assert [s.value for s in samples if s.metric == "ib_rcv_bytes_per_s"] == [8.0] * 4


def test_one_failing_host_does_not_stop_the_others(caplog):
    session = FakeSession(["hostname", "ts", "metric", "value"], LONG_ROWS, fail_hosts=("n1",))
    collector = SonarCollector(
        SonarOptions(hosts=["n1", "n2"], metric_column="metric", value_column="value"), session=session
    )
    samples = collector.collect(now=1700000100.0)
    assert {s.host for s in samples} == {"n2"} and "OperationTimedOut" in caplog.text
    everything_down = SonarCollector(
        SonarOptions(hosts=["n1"], metric_column="metric", value_column="value"), session=session
    )
    with pytest.raises(CollectorError, match="every Cassandra query failed"):
        everything_down.collect(now=1700000100.0)


def test_bad_table_is_a_clear_error():
    session = FakeSession(["hostname", "ts", "metric", "value"], [])
    collector = SonarCollector(
        SonarOptions(hosts=["n1"], table="nosuchtable", metric_column="metric", value_column="value"),
        session=session,
    )
    with pytest.raises(CollectorError, match="Cassandra rejected the query") as err:
        collector.collect(now=0.0)
    assert "table" in err.value.fix


def test_config_errors():
    with pytest.raises(CollectorError, match="no hosts"):
        SonarCollector(SonarOptions())
    with pytest.raises(CollectorError, match="wide tables"):
        SonarCollector(SonarOptions(hosts=["n1"]))
    with pytest.raises(CollectorError, match="bad identifier"):
        SonarCollector(SonarOptions(hosts=["n1"], table="x; DROP", metric_column="m", value_column="v"))


def test_missing_driver_is_reported_when_a_session_is_needed(monkeypatch):
    monkeypatch.setitem(sys.modules, "cassandra.cluster", None)  # import fails as if not installed
    collector = SonarCollector(SonarOptions(hosts=["n1"], metric_column="m", value_column="v"))  # lazy: fine
    with pytest.raises(BackendUnavailableError, match="cassandra-driver") as err:
        collector.collect(now=0.0)
    assert "rush[cassandra]" in err.value.fix


def test_unreachable_cassandra_with_the_real_driver():
    pytest.importorskip("cassandra.cluster")
    collector = SonarCollector(
        SonarOptions(hosts=["n1"], metric_column="m", value_column="v", port=1)
    )  # nothing listens
    with pytest.raises(CollectorError, match="cannot connect to Cassandra"):
        collector.collect(now=0.0)


def test_the_registry_builds_the_options_from_the_sources_table():
    from rush.collect.base import get_collector
    from rush.errors import ConfigError

    collector = get_collector("sonar", hosts=["n1"], metric_column="m", value_column="v", port=9043)
    assert isinstance(collector, SonarCollector) and (collector.hosts, collector.port) == (["n1"], 9043)
    with pytest.raises(ConfigError, match="bad options for collector 'sonar'"):
        get_collector("sonar", hosts=["n1"], metric_column="m", value_column="v", sesion=None)
