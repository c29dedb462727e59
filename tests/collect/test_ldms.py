"""LDMS store_csv files of the sysclassib, opa2, lustre2_client and lustre_client samplers.

Fixtures follow the column naming of the ovis-hpc/ldms samplers (``ib.<counter>#<ca>.<port>``
with ``.rate`` twins, libibmad field names for opa2, ``client.<stat>#llite.<fs>`` and
``<stat>.sum``) and store_csv's ``#Time,Time_usec,ProducerName,...`` header.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest

from rush.collect.base import get_collector
from rush.collect.ldms import LdmsCsvReader, normalize, read_store_csv
from rush.errors import CollectorError

FIXTURES = Path(__file__).parent / "fixtures" / "ldms"


def by(samples, host, metric):
    return [(s.timestamp, s.value) for s in samples if s.host == host and s.metric == metric]


def test_sysclassib_wrap_reset_and_truncated_last_line(caplog):
    with caplog.at_level(logging.WARNING):
        samples = read_store_csv(FIXTURES / "sysclassib.csv")
    # nid00002 wrapped past 2**64 (616 + 384 = 1000 words), then 1000 words per 10 s.
    wrapped = by(samples, "nid00002", "ib_xmit_bytes_per_s")
    assert [round(v, 1) for _, v in wrapped] == [400.0, 400.0]
    # nid00001: +2.5 M words, then a reset (LDMS's own .rate went negative: not used), then +1000.
    xmit = by(samples, "nid00001", "ib_xmit_bytes_per_s")
    assert [t for t, _ in xmit] == pytest.approx([1700000010.002097, 1700000030.002105])
    assert [v for _, v in xmit] == pytest.approx([2_500_000 * 4 / 10, 1000 * 4 / 10], rel=1e-5)
    assert all(v >= 0 for s in samples for v in [s.value])
    # port_unicast_* is named like the sysfs counter; COUNTER_SELECT2_F is not a metric.
    assert by(samples, "nid00001", "ib_unicast_xmit_packets_per_s")[0][1] == pytest.approx(250, rel=1e-5)
    assert not any("COUNTER_SELECT2" in s.metric for s in samples)
    assert {s.source for s in samples} == {"ldms"}
    assert "truncated last line skipped" in caplog.text and "sysclassib.csv:9" in caplog.text


def test_live_file_waits_for_the_rest_of_a_partial_line(tmp_path):
    path = tmp_path / "sysclassib.csv"
    shutil.copy(FIXTURES / "sysclassib.csv", path)
    reader = LdmsCsvReader(path)
    first = reader.read_new()
    assert not any(s.host == "nid00002" and s.timestamp > 1700000030 for s in first)
    assert reader.skipped == 0  # not skipped: the writer is mid-line
    with open(path, "a") as fh:
        fh.write("00,2700,nid00002,2,4242,0,0,0.0,2384,100.0,3500,100.0,1100,10.0,0,0.0,1100,10.0,0,0.0\n")
    rates = {s.metric: s.value for s in reader.read_new()}
    assert rates["ib_xmit_bytes_per_s"] == pytest.approx(400.0, rel=1e-4)
    assert reader.read_new() == []


def test_opa2_flits_to_bytes_summed_over_ports():
    samples = read_store_csv(FIXTURES / "opa2.csv")
    rates = {s.metric: s.value for s in samples}
    # hfi1_0: +1000 flits, hfi1_1: +1000 flits over 10 s; 8 bytes per flit
    assert rates["ib_xmit_bytes_per_s"] == pytest.approx((1000 + 1000) * 8 / 10, rel=1e-4)
    assert rates["ib_rcv_bytes_per_s"] == pytest.approx(2000 * 8 / 10, rel=1e-4)
    assert rates["ib_port_xmit_packets_per_s"] == pytest.approx(2.0, rel=1e-4)
    assert rates["ib_unicast_rcv_packets_per_s"] == pytest.approx(2.0, rel=1e-4)
    assert len({s.timestamp for s in samples}) == 1  # the two port rows are one reading


def test_lustre2_client_truncated_middle_line_and_unknown_metric(caplog):
    with caplog.at_level(logging.WARNING):
        samples = read_store_csv(FIXTURES / "lustre2_client.csv")
    assert "lustre2_client.csv:4: line with 14 of 16 fields skipped" in caplog.text
    assert "unknown LDMS metric 'mystery_counter' kept as ldms_mystery_counter" in caplog.text
    reads = by(samples, "nid00020", "lustre_read_bytes_per_s")
    # lustre +10 MiB and scratch +1 MiB over 10 s; then (line 3 skipped) +1 MiB +2 MiB over 20 s
    assert [v for _, v in reads] == pytest.approx([11 * 1048576 / 10, 3 * 1048576 / 20], rel=1e-5)
    assert by(samples, "nid00020", "lustre_open_ops_per_s")[0][1] == pytest.approx(2.4, rel=1e-5)
    assert [v for _, v in by(samples, "nid00020", "ldms_mystery_counter")] == [7, 8, 9]
    dropped = LdmsCsvReader(FIXTURES / "lustre2_client.csv", unknown="drop").read_new(final=True)
    assert not any(s.metric.startswith("ldms_") for s in dropped)


def test_lustre_client_sums_file_systems():
    samples = read_store_csv(FIXTURES / "lustre_client.csv")
    rates = {s.metric: s.value for s in samples}
    assert rates["lustre_read_bytes_per_s"] == pytest.approx((1048576 + 2048000) / 10, rel=1e-5)
    assert rates["lustre_write_bytes_per_s"] == pytest.approx(4096, rel=1e-5)
    assert rates["lustre_open_ops_per_s"] == pytest.approx(1.5, rel=1e-5)
    assert rates["lustre_getattr_ops_per_s"] == pytest.approx(6.0, rel=1e-5)
    assert not any("job_slot" in m or "fs_name" in m for m in rates)


def test_names():
    assert normalize("ib.symbol_error#mlx5_0.1").metric == "ib_symbol_error_per_s"
    assert (
        normalize("ib.port_rcv_data#hfi1_0.1").scale == 8
        and normalize("ib.port_rcv_data#mlx4_0.1").scale == 4
    )
    assert normalize("ib.port_rcv_data.rate#mlx4_0.1").is_rate
    assert normalize("PortRcvPkts").metric == "ib_port_rcv_packets_per_s"
    assert normalize("read_bytes.sum").metric == "lustre_read_bytes_per_s"
    assert normalize("client.open#llite.scratch").metric == "lustre_open_ops_per_s"
    assert not normalize("Active#meminfo").known


def test_altheader_file_and_bad_inputs(tmp_path, caplog):
    data = (FIXTURES / "opa2.csv").read_text().splitlines(keepends=True)
    (tmp_path / "opa2.csv.HEADER").write_text(data[0])
    (tmp_path / "opa2.csv").write_text("".join(data[1:]))
    assert read_store_csv(tmp_path / "opa2.csv")  # header from the .HEADER side file
    (tmp_path / "orphan.csv").write_text("".join(data[1:]))
    with pytest.raises(CollectorError, match="data before the header") as err:
        read_store_csv(tmp_path / "orphan.csv")
    assert "altheader" in err.value.fix and err.value.where.endswith("orphan.csv:1")
    (tmp_path / "x.csv").write_text("#a,b,c\n1,2,3\n")
    with pytest.raises(CollectorError, match="not an LDMS store_csv header"):
        read_store_csv(tmp_path / "x.csv")
    bad = tmp_path / "bad.csv"
    bad.write_text(data[0] + data[1].replace(",1000,2000,", ",oops,2000,") + "not-a-time" + data[1][17:])
    reader = LdmsCsvReader(bad)
    reader.read_new(final=True)
    assert reader.bad_values == 1 and reader.skipped == 1
    assert "non-numeric 'PortXmitData'" in caplog.text and "bad time" in caplog.text
    with pytest.raises(CollectorError, match="unknown='maybe'"):
        LdmsCsvReader(bad, unknown="maybe")
    with pytest.raises(CollectorError, match="cannot read"):
        LdmsCsvReader(tmp_path / "missing.csv").read_new()


def test_collector_follows_files_and_skips_side_files(tmp_path, caplog):
    for name in ("opa2.csv", "lustre_client.csv"):
        shutil.copy(FIXTURES / name, tmp_path / name)
    (tmp_path / "opa2.csv.HEADER").write_text("not data")
    (tmp_path / "broken.csv").write_text("#a,b\n")
    collector = get_collector("ldms", paths=[str(tmp_path / "*")])
    samples = collector.collect()
    assert {s.host for s in samples} == {"nid00010", "nid00030"}
    assert "broken.csv" in caplog.text  # one bad file is a warning, the others are read
    assert collector.collect() == []  # nothing new
    with pytest.raises(CollectorError, match="no LDMS store_csv paths"):
        get_collector("ldms")
