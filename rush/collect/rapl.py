"""RAPL energy counters from the powercap sysfs interface, and per-job energy accounting.

Reads ``<root>/class/powercap/intel-rapl:N[:M]/{name,energy_uj,max_energy_range_uj}``.
``energy_uj`` wraps at ``max_energy_range_uj``; the rate between two readings is power in
watts, reported per domain name (``package-0`` -> ``rapl_package_watts`` summed over
sockets, ``dram`` -> ``rapl_dram_watts``, ...). Since Linux 5.10 ``energy_uj`` is readable
by root only: a clear error says so.
"""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Sequence
from pathlib import Path

from rush.collect.base import Collector, Sample, register_collector
from rush.collect.rates import RateTracker
from rush.errors import CollectorError

ZONE = re.compile(r"intel-rapl:\d+(:\d+)?$")


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except PermissionError as exc:
        raise CollectorError(
            "permission denied (energy_uj is root-only since Linux 5.10)",
            where=str(path),
            fix="run the collector as root, add a udev rule making energy_uj readable, or use node_exporter's rapl collector via Prometheus",
        ) from exc
    except OSError as exc:
        raise CollectorError(f"cannot read: {exc.strerror or exc}", where=str(path)) from exc


def domain_metric(name: str) -> str:
    # "package-0" -> "package", "dram" -> "dram", "core" -> "core"
    return f"rapl_{name.split('-')[0]}_watts"


@register_collector("rapl")
class RaplCollector(Collector):
    def __init__(self, root: str = "/sys", host: str | None = None) -> None:
        self.root = Path(root)
        self.host = host or socket.gethostname()
        self.rates = RateTracker()

    def zones(self) -> list[Path]:
        base = self.root / "class" / "powercap"
        if not base.is_dir():
            raise CollectorError(
                "no powercap interface", where=str(base), fix="load intel_rapl_msr or disable the rapl source"
            )
        return sorted(p for p in base.iterdir() if ZONE.match(p.name))

    def read_energy(self) -> dict[str, tuple[float, float]]:
        """zone -> (domain name, energy in microjoules, wrap range in microjoules)."""
        readings = {}
        for zone in self.zones():
            name = _read(zone / "name")
            try:
                energy = int(_read(zone / "energy_uj"))
                wrap = int(_read(zone / "max_energy_range_uj"))
            except ValueError as exc:
                raise CollectorError(f"not a counter value ({exc})", where=str(zone)) from exc
            readings[zone.name] = (name, energy, wrap)
        return readings

    def collect(self) -> list[Sample]:
        now = time.time()
        watts: dict[str, float] = {}
        for zone, (name, energy, wrap) in self.read_energy().items():
            rate = self.rates.update(zone, now, energy, counter_range=wrap)
            if rate is not None:
                rate /= 1e6  # microjoules per second -> watts
                metric = domain_metric(name)
                watts[metric] = watts.get(metric, 0.0) + rate
        return [Sample(now, self.host, self.name, metric, value) for metric, value in watts.items()]


def job_energy(
    store, hosts: Sequence[str], start: float, end: float, metric: str = "rapl_package_watts"
) -> dict:
    """Joules and mean watts of a job from its nodes' power samples (trapezoid rule).

    Each node's power series is integrated over [start, end]; the value at the window's
    edges is the nearest sample's (samples are rates over the preceding interval).
    """
    if end <= start:
        raise CollectorError("job end must be after its start", where="job_energy")
    joules = 0.0
    covered = 0
    for host in hosts:
        series = [
            (s.timestamp, s.value)
            for s in store.samples(hosts=[host], start=start, end=end)
            if s.metric == metric
        ]
        if not series:
            continue
        covered += 1
        times = [start] + [t for t, _ in series] + [end]
        values = [series[0][1]] + [v for _, v in series] + [series[-1][1]]
        joules += sum(
            (times[k + 1] - times[k]) * (values[k + 1] + values[k]) / 2 for k in range(len(times) - 1)
        )
    return {
        "joules": joules,
        "mean_watts": joules / (end - start),
        "hosts_with_data": covered,
        "hosts": len(hosts),
    }
