"""sysfs InfiniBand / Omni-Path counters on fixture trees copied from the real layout.

Tests run as root here, where chmod 000 does not deny reads, so "permission denied" is
produced by patching the collector's file read (``read_small_text``) to raise PermissionError for one file.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from rush.collect import sysfs_ib
from rush.collect.base import get_collector
from rush.collect.sysfs_ib import STANDARD_COUNTERS, SysfsIBCollector, data_unit_bytes
from rush.errors import CollectorError

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def sysfs(tmp_path: Path) -> Path:
    root = tmp_path / "sys"
    shutil.copytree(FIXTURES / "sys", root)
    return root


def counters(root: Path, device: str) -> Path:
    return root / "class" / "infiniband" / device / "ports" / "1" / "counters"


def clock(monkeypatch, *times: float) -> None:
    ticks = iter(times)
    # the module's own view of time only: patching time.time itself would stop logging
    monkeypatch.setattr("rush.collect.sysfs_ib.time", SimpleNamespace(time=lambda: next(ticks)))


def test_fixture_has_the_21_standard_counters():
    assert len(STANDARD_COUNTERS) == 21
    assert sorted(p.name for p in counters(FIXTURES / "sys", "mlx5_0").iterdir()) == sorted(STANDARD_COUNTERS)


def test_data_counters_in_bytes_for_infiniband_and_omnipath(sysfs, monkeypatch):
    clock(monkeypatch, 100.0, 110.0)
    collector = get_collector("sysfs_ib", root=str(sysfs), host="n1", devices=["mlx5_0"])
    assert collector.collect() == []  # the first reading has no rate yet
    c = counters(sysfs, "mlx5_0")
    c.joinpath("port_xmit_data").write_text(f"{9381862113 + 2500}\n")
    c.joinpath("port_rcv_packets").write_text(f"{40125518 + 50}\n")
    samples = collector.collect()
    assert {(s.host, s.source, s.timestamp) for s in samples} == {("n1", "sysfs_ib", 110.0)}
    rates = {s.metric: s.value for s in samples}
    assert rates["ib_xmit_bytes_per_s"] == pytest.approx(2500 * 4 / 10)  # 4-octet words
    assert rates["ib_port_rcv_packets_per_s"] == pytest.approx(5.0)
    assert rates["ib_rcv_bytes_per_s"] == 0.0
    assert rates["ib_hw_out_of_buffer_per_s"] == 0.0  # hw_counters are collected too

    clock(monkeypatch, 100.0, 110.0)
    opa = SysfsIBCollector(root=str(sysfs), host="n1", devices=["hfi1_0"])
    opa.collect()
    counters(sysfs, "hfi1_0").joinpath("port_xmit_data").write_text(f"{9381862113 + 2500}\n")
    rates = {s.metric: s.value for s in opa.collect()}
    assert rates["ib_xmit_bytes_per_s"] == pytest.approx(2500 * 8 / 10)  # 8-byte flits


def test_device_type_from_the_bound_driver(tmp_path):
    device = tmp_path / "opa_dev"
    (device / "device").mkdir(parents=True)
    (device / "device" / "driver").symlink_to(tmp_path / "bus" / "pci" / "drivers" / "hfi1")
    assert data_unit_bytes(device) == 8  # renamed device, still an hfi1
    mlx = tmp_path / "hfi_lookalike"
    (mlx / "device").mkdir(parents=True)
    (mlx / "device" / "driver").symlink_to(tmp_path / "bus" / "pci" / "drivers" / "mlx5_core")
    assert data_unit_bytes(mlx) == 4
    assert data_unit_bytes(tmp_path / "hfi1_3") == 8 and data_unit_bytes(tmp_path / "mlx4_0") == 4


def test_rates_summed_over_devices_and_64bit_wrap(sysfs, monkeypatch):
    clock(monkeypatch, 0.0, 10.0)
    for device in ("mlx5_0", "hfi1_0"):
        counters(sysfs, device).joinpath("port_xmit_packets").write_text(f"{2**64 - 500}\n")
    collector = SysfsIBCollector(root=str(sysfs), host="n1")
    collector.collect()
    counters(sysfs, "mlx5_0").joinpath("port_xmit_packets").write_text("500\n")  # wrapped: +1000
    counters(sysfs, "hfi1_0").joinpath("port_xmit_packets").write_text(f"{2**64 - 300}\n")  # +200
    rates = {s.metric: s.value for s in collector.collect()}
    assert rates["ib_port_xmit_packets_per_s"] == pytest.approx((1000 + 200) / 10)
    assert collector.rates.wraps == 1


def test_counter_reset_drops_that_interval_only(sysfs, monkeypatch):
    clock(monkeypatch, 0.0, 10.0, 20.0)
    collector = SysfsIBCollector(root=str(sysfs), host="n1", devices=["mlx5_0"])
    collector.collect()
    counters(sysfs, "mlx5_0").joinpath("port_xmit_data").write_text("100\n")  # perfquery -R
    assert "ib_xmit_bytes_per_s" not in {s.metric for s in collector.collect()}
    counters(sysfs, "mlx5_0").joinpath("port_xmit_data").write_text("600\n")
    rates = {s.metric: s.value for s in collector.collect()}
    assert rates["ib_xmit_bytes_per_s"] == pytest.approx(500 * 4 / 10)
    assert collector.rates.resets == 1


def test_garbage_and_saturated_counters_are_warnings(sysfs, caplog):
    c = counters(sysfs, "mlx5_0")
    c.joinpath("symbol_error").write_text("N/A (no PMA)\n")
    c.joinpath("port_rcv_data").write_text(f"{2**32 - 1}\n")
    collector = SysfsIBCollector(root=str(sysfs), host="n1", devices=["mlx5_0"])
    values = collector.read_counters()
    assert ("mlx5_0", "1", "symbol_error") not in values
    assert ("mlx5_0", "1", "port_rcv_data") not in values
    assert values[("mlx5_0", "1", "port_xmit_data")] == 9381862113  # raw words
    assert values[("mlx5_0", "1", "hw_out_of_buffer")] == 12
    assert any("not a counter value" in e and "symbol_error" in e for e in collector.errors)
    assert any("saturated" in e and "perfquery -R" in e for e in collector.errors)
    assert caplog.text.count("not a counter value") == 1
    collector.read_counters()
    assert caplog.text.count("not a counter value") == 1  # warned once, still recorded
    assert len(collector.errors) == 2


def test_permission_denied_on_one_counter_keeps_the_rest(sysfs, monkeypatch):
    real = Path.read_text

    def deny(self, *args, **kwargs):  # root ignores chmod 000, so deny by patching
        if self.name == "port_xmit_wait":
            raise PermissionError(13, "Permission denied")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(sysfs_ib, "read_small_text", lambda path, *a, **k: deny(Path(path)))
    collector = SysfsIBCollector(root=str(sysfs), host="n1", devices=["mlx5_0"])
    values = collector.read_counters()
    assert ("mlx5_0", "1", "port_xmit_wait") not in values
    assert ("mlx5_0", "1", "port_xmit_data") in values
    assert any("permission denied" in e and "fix: run the collector as root" in e for e in collector.errors)


def test_nothing_readable_or_no_devices_is_an_error(sysfs, monkeypatch, tmp_path):
    with pytest.raises(CollectorError, match="no InfiniBand") as err:
        SysfsIBCollector(root=str(tmp_path / "missing")).collect()
    assert err.value.where.endswith("class/infiniband") and err.value.fix

    def deny(self, *args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(sysfs_ib, "read_small_text", lambda path, *a, **k: deny(Path(path)))
    with pytest.raises(CollectorError, match="no counter could be read"):
        SysfsIBCollector(root=str(sysfs)).collect()


def test_a_counter_that_vanishes_is_a_warning(sysfs, caplog):
    path = counters(sysfs, "mlx5_0") / "link_downed"
    path.unlink()
    path.mkdir()  # reading a directory fails like a port torn down mid-read
    with caplog.at_level(logging.WARNING):
        values = SysfsIBCollector(root=str(sysfs), devices=["mlx5_0"]).read_counters()
    assert ("mlx5_0", "1", "link_downed") not in values and "link_downed" in caplog.text
