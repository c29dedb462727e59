"""RAPL powercap zones on a fixture tree in the real layout; per-job energy accounting.

Tests run as root here, where chmod does not deny reads: the root-only ``energy_uj`` of
Linux >= 5.10 is emulated by patching the collector's file read (``read_small_text``) to raise PermissionError.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from rush.collect import rapl
from rush.collect.base import Sample
from rush.collect.rapl import RaplCollector, job_energy
from rush.collect.store import FeatureStore
from rush.errors import CollectorError

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def sysfs(tmp_path: Path) -> Path:
    root = tmp_path / "sys"
    shutil.copytree(FIXTURES / "sys", root)
    return root


def set_energy(root: Path, zone: str, microjoules: int) -> None:
    (root / "class" / "powercap" / zone / "energy_uj").write_text(f"{microjoules}\n")


def clock(monkeypatch, *times: float) -> None:
    ticks = iter(times)
    # the module's own view of time only: patching time.time itself would stop logging
    monkeypatch.setattr("rush.collect.rapl.time", SimpleNamespace(time=lambda: next(ticks)))


def test_watts_per_domain_summed_over_sockets(sysfs, monkeypatch):
    clock(monkeypatch, 0.0, 10.0)
    collector = RaplCollector(root=str(sysfs), host="n1")
    assert collector.collect() == []
    set_energy(sysfs, "intel-rapl:0", 60311245633 + 1_000_000_000)  # 100 W
    set_energy(sysfs, "intel-rapl:1", 58001234567 + 900_000_000)  # 90 W
    set_energy(sysfs, "intel-rapl:0:1", 11062356224 + 150_000_000)  # 15 W
    set_energy(sysfs, "intel-rapl:1:0", 10500000000 + 120_000_000)  # 12 W
    set_energy(sysfs, "intel-rapl-mmio:0", 0)  # a mirror of package-0: must be ignored
    watts = {s.metric: s.value for s in collector.collect()}
    assert watts["rapl_package_watts"] == pytest.approx(190.0)
    assert watts["rapl_dram_watts"] == pytest.approx(27.0)
    assert watts["rapl_core_watts"] == 0.0


def test_wraparound_at_max_energy_range(sysfs, monkeypatch):
    wrap = 262143328850
    clock(monkeypatch, 0.0, 10.0)
    set_energy(sysfs, "intel-rapl:0", wrap - 800_000_000)
    collector = RaplCollector(root=str(sysfs), host="n1")
    collector.collect()
    set_energy(sysfs, "intel-rapl:0", 1_200_000_000)  # 800 J to the top, then 1200 J
    set_energy(sysfs, "intel-rapl:1", 58001234567)  # idle socket
    watts = {s.metric: s.value for s in collector.collect()}
    assert watts["rapl_package_watts"] == pytest.approx(200.0)
    assert collector.rates.wraps == 1


def test_permission_denied_everywhere_names_the_fixes(sysfs, monkeypatch):
    real = Path.read_text

    def deny(self, *args, **kwargs):  # root ignores chmod 000, so deny by patching
        if self.name == "energy_uj":
            raise PermissionError(13, "Permission denied")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(rapl, "read_small_text", lambda path, *a, **k: deny(Path(path)))
    with pytest.raises(CollectorError, match="root-only") as err:
        RaplCollector(root=str(sysfs)).collect()
    assert err.value.where.endswith("energy_uj")
    assert "root" in err.value.fix and "udev" in err.value.fix and "node_exporter" in err.value.fix


def test_one_bad_zone_is_a_warning(sysfs, monkeypatch, caplog):
    (sysfs / "class" / "powercap" / "intel-rapl:1" / "energy_uj").write_text("garbage\n")
    collector = RaplCollector(root=str(sysfs))
    readings = collector.read_energy()
    assert "intel-rapl:1" not in readings and readings["intel-rapl:0"][0] == "package-0"
    assert "intel-rapl-mmio:0" not in readings
    assert any("not a counter value" in e for e in collector.errors) and "garbage" in caplog.text


def test_no_powercap_is_a_clear_error(tmp_path):
    with pytest.raises(CollectorError, match="no powercap interface") as err:
        RaplCollector(root=str(tmp_path)).collect()
    assert "intel_rapl" in err.value.fix
    (tmp_path / "class" / "powercap" / "intel-rapl").mkdir(parents=True)
    with pytest.raises(CollectorError, match="no intel-rapl zones"):
        RaplCollector(root=str(tmp_path)).collect()


def power(host: str, watts: float, times, metric: str = "rapl_package_watts") -> list[Sample]:
    return [Sample(float(t), host, "rapl", metric, watts) for t in times]


def test_job_energy_from_the_store(tmp_path):
    with FeatureStore(tmp_path / "f.sqlite") as store:
        store.insert(power("a", 100.0, range(0, 201, 10)))
        store.insert(power("a", 10.0, range(0, 201, 10), "rapl_dram_watts"))
        store.insert(power("b", 50.0, range(5, 206, 10)))
        store.insert(power("other", 999.0, range(0, 201, 10)))
        energy = job_energy(store, ["a", "b", "c"], 20, 120)
    # a: (100 + 10) W x 100 s; b: 50 W x 100 s; c has no samples; "other" is not the job's
    assert energy["joules"] == pytest.approx(11000 + 5000)
    assert energy["mean_watts"] == pytest.approx(160.0)
    assert energy["hosts_with_data"] == 2 and energy["hosts"] == 3


def test_job_energy_from_samples_counts_each_interval_once():
    # A rate sample is the mean power since the previous sample: 100 W until t=50, then 300 W.
    samples = power("a", 100.0, [10, 30, 50]) + power("a", 300.0, [70, 90])
    energy = job_energy(samples, ["a"], 0, 80)
    assert energy["joules"] == pytest.approx(100 * 50 + 300 * 30)  # (70, 90] covers 70..80
    held = job_energy(power("a", 100.0, [10, 20]), ["a"], 0, 40)  # nothing after the end yet
    assert held["joules"] == pytest.approx(4000)
    assert job_energy([], ["a"], 0, 10) == {
        "joules": 0.0,
        "mean_watts": 0.0,
        "hosts_with_data": 0,
        "hosts": 1,
    }
    with pytest.raises(CollectorError, match="after its start"):
        job_energy(samples, ["a"], 50, 50)
