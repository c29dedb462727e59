"""The collector registry, and collectors feeding the feature store end to end."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from rush.collect import Collector, Sample, collector_names, get_collector, register_collector
from rush.collect.ldms import read_store_csv
from rush.collect.store import FeatureStore
from rush.errors import ConfigError

FIXTURES = Path(__file__).parent / "fixtures"


def test_names_and_errors():
    assert {"sysfs_ib", "lustre", "rapl", "ldms", "sonar"} <= set(collector_names())
    with pytest.raises(ConfigError, match="unknown collector 'snmp'") as err:
        get_collector("snmp")
    assert "sysfs_ib" in err.value.fix
    with pytest.raises(ConfigError, match="bad options for collector 'rapl'"):
        get_collector("rapl", nonsense=1)


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> dict[str, type[Collector]]:
    """The collector registry, restored after the test (a site collector registered here
    must not leak into later tests)."""
    from rush.collect import base

    monkeypatch.setattr(base, "_REGISTERED", dict(base._REGISTERED))
    return base._REGISTERED


def test_register_a_site_collector(registry, monkeypatch):
    @register_collector("test_constant")
    class Constant(Collector):
        def __init__(self, value: float = 1.0) -> None:
            self.value = value

        def collect(self) -> list[Sample]:
            return [Sample(0.0, "h", self.name, "c", self.value)]

    assert "test_constant" in collector_names()
    assert get_collector("test_constant", value=3.0).collect() == [
        Sample(0.0, "h", "test_constant", "c", 3.0)
    ]
    assert registry["test_constant"] is Constant
    monkeypatch.undo()  # what the fixture does at teardown: the site collector is gone
    assert "test_constant" not in collector_names()


def test_sources_to_window_features(tmp_path, monkeypatch):
    # sysfs IB on one node and LDMS for others land in one store; one query gives the features.
    root = tmp_path / "sys"
    shutil.copytree(FIXTURES / "sys", root)
    ticks = iter([1700000000.0, 1700000010.0])
    # the module's own view of time only: patching time.time itself would stop logging
    monkeypatch.setattr("rush.collect.sysfs_ib.time", SimpleNamespace(time=lambda: next(ticks)))
    ib = get_collector("sysfs_ib", root=str(root), host="login1", devices=["mlx5_0"])
    ib.collect()
    counter = root / "class/infiniband/mlx5_0/ports/1/counters/port_xmit_data"
    counter.write_text(f"{int(counter.read_text()) + 1000}\n")  # 400 B/s
    with FeatureStore(tmp_path / "features.sqlite") as store:
        store.insert(ib.collect())
        store.insert(read_store_csv(FIXTURES / "ldms" / "sysclassib.csv"))
        features = store.window_features(None, 1700000000, 1700000040)
        job = store.window_features(["nid00002"], 1700000000, 1700000040, sources=["ldms"])
    # per-node means: login1 400, nid00001 (1e6 + 400)/2, nid00002 400
    assert features["min_ib_xmit_bytes_per_s"] == pytest.approx(400.0, rel=1e-4)
    assert features["max_ib_xmit_bytes_per_s"] == pytest.approx((1e6 + 400) / 2, rel=1e-4)
    assert job["mean_ib_xmit_bytes_per_s"] == pytest.approx(400.0, rel=1e-4)
