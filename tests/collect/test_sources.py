"""Part A sources on fixture files in their real formats: rates, wraparound, resets, errors.

Tests run as root here, where chmod does not deny reads, so permission errors are
produced by patching ``Path.read_text``/``open`` to raise PermissionError (said so below).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from rush.collect.base import get_collector
from rush.collect.ldms import LdmsCsvReader, normalize
from rush.collect.lustre import parse_lctl_output, parse_stats_file
from rush.collect.rapl import RaplCollector, job_energy
from rush.collect.rates import RateTracker
from rush.collect.sonar import SonarCollector
from rush.collect.store import FeatureStore
from rush.collect.sysfs_ib import STANDARD_COUNTERS, SysfsIBCollector
from rush.errors import CollectorError, ConfigError


def ib_tree(root: Path, device: str, values: dict[str, int]) -> Path:
    counters = root / "class" / "infiniband" / device / "ports" / "1" / "counters"
    counters.mkdir(parents=True, exist_ok=True)
    for name in STANDARD_COUNTERS:
        (counters / name).write_text(f"{values.get(name, 0)}\n")
    return counters


def test_rate_tracker_wrap_and_reset():
    tracker = RateTracker()
    assert tracker.update("c", 0.0, 2**64 - 100) is None
    assert tracker.update("c", 10.0, 900) == pytest.approx(100.0)  # wrapped past 2**64
    assert tracker.update("c", 20.0, 5) is None  # low value dropped: a reset
    assert tracker.resets == 1
    assert tracker.update("c", 30.0, 105) == pytest.approx(10.0)
    assert RateTracker(counter_range=2**32).update("d", 0, 1) is None


@pytest.mark.parametrize(("device", "unit"), [("mlx5_0", 4), ("hfi1_0", 8)])
def test_sysfs_ib_data_counters_to_bytes(tmp_path, device, unit, monkeypatch):
    counters = ib_tree(tmp_path, device, {"port_xmit_data": 1000, "port_rcv_packets": 10})
    collector = SysfsIBCollector(root=str(tmp_path), host="n1")
    clock = iter([100.0, 110.0])
    monkeypatch.setattr("rush.collect.sysfs_ib.time.time", lambda: next(clock))
    assert collector.collect() == []  # first reading: no rate yet
    (counters / "port_xmit_data").write_text("3500\n")
    (counters / "port_rcv_packets").write_text("60\n")
    rates = {s.metric: s.value for s in collector.collect()}
    assert rates["ib_xmit_bytes_per_s"] == pytest.approx(2500 * unit / 10)
    assert rates["ib_port_rcv_packets_per_s"] == pytest.approx(5.0)


def test_sysfs_ib_hw_counters_and_bad_files(tmp_path):
    counters = ib_tree(tmp_path, "mlx5_0", {"port_xmit_data": 1})
    hw = counters.parent / "hw_counters"
    hw.mkdir()
    (hw / "out_of_buffer").write_text("7\n")
    (counters / "symbol_error").write_text("garbage\n")
    collector = SysfsIBCollector(root=str(tmp_path), host="n1")
    totals = collector.read_counters()
    assert totals["hw_out_of_buffer"] == 7 and totals["port_xmit_data"] == 4
    assert "symbol_error" not in totals and any("not a counter value" in e for e in collector.errors)
    with pytest.raises(CollectorError, match="no InfiniBand"):
        SysfsIBCollector(root=str(tmp_path / "missing")).collect()


def test_sysfs_ib_permission_denied_is_reported_not_fatal(tmp_path, monkeypatch):
    ib_tree(tmp_path, "mlx5_0", {})
    real = Path.read_text

    def deny(self, *a, **k):  # root ignores chmod, so deny by patching (see module docstring)
        if self.name == "port_xmit_wait":
            raise PermissionError(13, "Permission denied")
        return real(self, *a, **k)

    monkeypatch.setattr(Path, "read_text", deny)
    collector = SysfsIBCollector(root=str(tmp_path), host="n1")
    totals = collector.read_counters()
    assert "port_xmit_wait" not in totals and "port_xmit_data" in totals
    assert any("permission denied" in e for e in collector.errors)


LLITE = """snapshot_time             1700000010.000000000 secs.nsecs
start_time                1699990000.000000000 secs.nsecs
read_bytes                120 samples [bytes] 4096 1048576 52428800 1234567
write_bytes               10 samples [bytes] 4096 4096 40960 0
open                      30 samples [usecs]
close                     30 samples [usecs] 1 9 100
"""


def test_lustre_stats_file_and_lctl_output():
    stats = parse_stats_file(LLITE, "lustre-ffff88")
    assert stats.snapshot_time == 1700000010.0
    assert stats.counts["read_bytes"] == 120 and stats.sums["read_bytes"] == 52428800
    assert stats.counts["open"] == 30 and "open" not in stats.sums
    blocks = parse_lctl_output(
        "llite.lustre-ffff88.stats=\n" + LLITE + "llite.scratch-ffff99.stats=\n" + LLITE
    )
    assert [b.filesystem for b in blocks] == ["lustre-ffff88", "scratch-ffff99"]


def test_lustre_collector_rates(tmp_path):
    d = tmp_path / "lustre-ffff88"
    d.mkdir()
    (d / "stats").write_text(LLITE)
    collector = get_collector("lustre", paths=(str(tmp_path / "*" / "stats"),), host="n1")
    assert collector.collect() == []
    (d / "stats").write_text(LLITE.replace("1700000010.0", "1700000020.0").replace("52428800", "62428800"))
    rates = {s.metric: s.value for s in collector.collect()}
    assert rates["lustre_read_bytes_per_s"] == pytest.approx(1_000_000)
    assert rates["lustre_open_ops_per_s"] == 0
    with pytest.raises(CollectorError, match="no llite stats"):
        get_collector("lustre", paths=(str(tmp_path / "none" / "stats"),)).collect()


def rapl_tree(root: Path, energy: dict[str, int], wrap: int = 262143328850) -> None:
    for zone, (name, value) in energy.items():
        d = root / "class" / "powercap" / zone
        d.mkdir(parents=True, exist_ok=True)
        (d / "name").write_text(name + "\n")
        (d / "energy_uj").write_text(f"{value}\n")
        (d / "max_energy_range_uj").write_text(f"{wrap}\n")


def test_rapl_watts_with_wraparound(tmp_path, monkeypatch):
    wrap = 1_000_000_000
    rapl_tree(tmp_path, {"intel-rapl:0": ("package-0", 800_000_000), "intel-rapl:0:0": ("dram", 0)}, wrap)
    clock = iter([0.0, 10.0])
    monkeypatch.setattr("rush.collect.rapl.time.time", lambda: next(clock))
    collector = RaplCollector(root=str(tmp_path), host="n1")
    assert collector.collect() == []
    rapl_tree(
        tmp_path, {"intel-rapl:0": ("package-0", 300_000_000), "intel-rapl:0:0": ("dram", 120_000_000)}, wrap
    )
    watts = {s.metric: s.value for s in collector.collect()}
    assert watts["rapl_package_watts"] == pytest.approx(50.0)  # 200 J + 300 J over 10 s across the wrap
    assert watts["rapl_dram_watts"] == pytest.approx(12.0)


def test_rapl_permission_denied_names_the_fix(tmp_path, monkeypatch):
    rapl_tree(tmp_path, {"intel-rapl:0": ("package-0", 1)})
    real = Path.read_text

    def deny(self, *a, **k):  # root ignores chmod, so deny by patching (see module docstring)
        if self.name == "energy_uj":
            raise PermissionError(13, "Permission denied")
        return real(self, *a, **k)

    monkeypatch.setattr(Path, "read_text", deny)
    with pytest.raises(CollectorError) as err:
        RaplCollector(root=str(tmp_path)).collect()
    assert "root-only" in str(err.value) and "fix:" in str(err.value)


def test_job_energy_from_store(tmp_path):
    from rush.collect.base import Sample

    with FeatureStore(tmp_path / "f.sqlite") as store:
        store.insert(
            [
                Sample(t, h, "rapl", "rapl_package_watts", w)
                for h, w in (("a", 100.0), ("b", 50.0))
                for t in range(0, 101, 10)
            ]
        )
        energy = job_energy(store, ["a", "b", "c"], 0, 100)
    assert energy["joules"] == pytest.approx(15000)
    assert energy["mean_watts"] == pytest.approx(150)
    assert energy["hosts_with_data"] == 2


LDMS_HEADER = "#Time,Time_usec,ProducerName,component_id,job_id,app_id,ib.port_xmit_data#mlx5_0.1,ib.port_rcv_data.rate#mlx5_0.1,client.read_bytes#llite.lustre,PortXmitData,mystery.metric\n"


def test_ldms_store_csv_rates_truncation_and_unknown(tmp_path, caplog):
    path = tmp_path / "store.csv"
    path.write_text(
        LDMS_HEADER
        + "1700000000.000000,0,n1,1,0,0,1000,250.5,0,10,7\n"
        + "1700000010.000000,0,n1,1,0,0,3500,250.5,10000,30,8\n"
        + "1700000020.000000,0,n1,1,0,0"  # partial write at the end of a live file
    )
    reader = LdmsCsvReader(path)
    samples = reader.read_new()
    second = {s.metric: s.value for s in samples if s.timestamp == 1700000010.0}
    # Raw IB words x4 plus OPA flits x8, both per second, summed into one byte rate.
    assert second["ib_xmit_bytes_per_s"] == pytest.approx((2500 * 4 + 20 * 8) / 10)
    assert second["ib_rcv_bytes_per_s"] == pytest.approx(250.5 * 4)
    assert second["lustre_read_bytes_per_s"] == pytest.approx(1000)
    assert second["ldms_mystery_metric"] == 8
    assert "unknown LDMS metric 'mystery.metric'" in caplog.text
    # The partial line is read once it is complete.
    with open(path, "a") as fh:
        fh.write(",6000,250.5,20000,40,9\n")
    third = {s.metric: s.value for s in reader.read_new()}
    assert third["ib_xmit_bytes_per_s"] == pytest.approx((2500 * 4 + 10 * 8) / 10)


def test_ldms_truncated_line_in_the_middle_is_skipped(tmp_path):
    path = tmp_path / "store.csv"
    path.write_text(LDMS_HEADER + "1700000000,0,n1,1,0,0,1,2\n" + "1700000010,0,n1,1,0,0,5,2,3,4,5\n")
    reader = LdmsCsvReader(path, unknown="drop")
    samples = reader.read_new()
    assert reader.skipped == 1
    assert not any(s.metric.startswith("ldms_") for s in samples)


def test_ldms_bad_header_and_names():
    assert normalize("ib.symbol_error#mlx5_0.1").metric == "ib_symbol_error_per_s"
    assert normalize("PortRcvPkts").metric == "ib_port_rcv_packets_per_s"
    assert normalize("read_bytes.sum").metric == "lustre_read_bytes_per_s"
    assert normalize("client.open#llite.scratch").metric == "lustre_open_ops_per_s"


def test_ldms_rejects_a_non_ldms_file(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text("#a,b,c\n1,2,3\n")
    with pytest.raises(CollectorError, match="not an LDMS store_csv header"):
        LdmsCsvReader(path).read_new()


class FakeRow(tuple):
    """cassandra-driver's default row factory returns namedtuples: attribute access by column."""


class FakeCassandraSession:
    """No Cassandra server can run here: this fake implements the two driver calls the
    collector uses (``prepare`` and ``execute(prepared, params)``) and returns rows as the
    driver's default ``named_tuple_factory`` does, with naive UTC datetimes for timestamps."""

    def __init__(self, rows_by_host):
        from collections import namedtuple

        self.Row = namedtuple("Row", ["ts", "metric", "value"])
        self.rows_by_host = rows_by_host
        self.prepared = []

    def prepare(self, query):
        self.prepared.append(query)
        return query

    def execute(self, statement, params):
        host, since, until = params
        assert isinstance(since, datetime) and statement in self.prepared
        return [self.Row(*r) for r in self.rows_by_host.get(host, []) if since < r[0] <= until]


def test_sonar_long_table_counters_to_rates():
    t0 = datetime(2023, 11, 14, 22, 13, 20)  # 1700000000
    t1 = datetime(2023, 11, 14, 22, 13, 30)
    session = FakeCassandraSession(
        {
            "n1": [
                (t0, "ib.port_xmit_data#mlx5_0.1", 100),
                (t1, "ib.port_xmit_data#mlx5_0.1", 350),
                (t1, "ib.port_rcv_data.rate#mlx5_0.1", 5.0),
            ],
        }
    )
    collector = SonarCollector(
        hosts=["n1", "n2"], metric_column="metric", value_column="value", session=session
    )
    samples = collector.collect(now=1700000100.0)
    assert "WHERE hostname = ? AND ts > ? AND ts <= ?" in session.prepared[0]
    by_metric = {s.metric: s for s in samples}
    assert by_metric["ib_xmit_bytes_per_s"].value == pytest.approx(250 * 4 / 10)
    assert by_metric["ib_xmit_bytes_per_s"].timestamp == 1700000010.0
    assert by_metric["ib_rcv_bytes_per_s"].value == 20.0


def test_sonar_config_errors():
    with pytest.raises(CollectorError, match="no hosts"):
        SonarCollector()
    with pytest.raises(CollectorError, match="wide tables"):
        SonarCollector(hosts=["n1"])
    with pytest.raises(CollectorError, match="bad identifier"):
        SonarCollector(hosts=["n1"], table="x; DROP", metric_column="m", value_column="v")


def test_registry_errors():
    with pytest.raises(ConfigError, match="unknown collector 'snmp'"):
        get_collector("snmp")
    with pytest.raises(ConfigError, match="bad options"):
        get_collector("rapl", nonsense=1)


def test_store_window_features_over_node_means(tmp_path):
    from rush.collect.base import Sample

    with FeatureStore(tmp_path / "f.sqlite") as store:
        rows = [Sample(t, "a", "x", "m", v) for t, v in ((0, 1.0), (60, 3.0))]  # mean 2
        rows += [Sample(t, "b", "x", "m", v) for t, v in ((0, 10.0), (60, 10.0))]  # mean 10
        rows += [Sample(400, "a", "x", "m", 99.0)]  # outside the window
        store.insert(rows)
        assert store.window_features(None, 0, 300) == {"min_m": 2.0, "max_m": 10.0, "mean_m": 6.0}
        assert store.window_features(["a"], 0, 300)["mean_m"] == 2.0
        assert store.window_features(["zzz"], 0, 300) == {}
        assert store.window_features(None, 0, 300, sources=["other"]) == {}
        assert store.prune(older_than=100) == 4
        assert len(store.samples()) == 1
