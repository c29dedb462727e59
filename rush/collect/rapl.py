"""RAPL energy counters from the powercap sysfs interface, and per-job energy accounting.

Reads ``<root>/class/powercap/intel-rapl:N[:M]/{name,energy_uj,max_energy_range_uj}``
(``intel-rapl-mmio:*`` zones are skipped: they mirror the package zones). ``energy_uj``
wraps at ``max_energy_range_uj`` (the 32-bit status register times the energy unit: about
65-262 kJ, i.e. every few minutes at full power — sample more often than half that); the
rate between two readings is power in watts, summed per domain kind over sockets:
``package-N`` -> ``rapl_package_watts``, ``dram`` -> ``rapl_dram_watts``, ``core``,
``uncore``, ``psys`` likewise. The package does not include DRAM, so a node's power is
package + dram (what :func:`job_energy` adds up by default).

Since Linux 5.10 (CVE-2020-8694) ``energy_uj`` is readable by root only: when no zone can
be read a :class:`CollectorError` names the fixes; a single unreadable or garbage zone is
a warning (``errors``) and the others are still reported.
"""

from __future__ import annotations

import logging
import re
import socket
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Protocol

from rush.collect.base import Collector, Sample, register_collector
from rush.collect.rates import COUNTER_RANGE_64, RateTracker
from rush.collect.sysfile import read_small_text
from rush.errors import CollectorError

log = logging.getLogger(__name__)
ZONE = re.compile(r"intel-rapl:\d+(:\d+)?$")
PERMISSION_FIX = (
    "run the collector as root; or make energy_uj readable with a udev rule, e.g. "
    'SUBSYSTEM=="powercap", ACTION=="add", RUN+="/bin/chmod 0444 %S%p/energy_uj"; '
    "or collect node_exporter's rapl collector through the prometheus source"
)
NODE_POWER = ("rapl_package_watts", "rapl_dram_watts")


def _read(path: Path) -> str:
    try:
        return read_small_text(path).strip()
    except PermissionError as exc:
        raise CollectorError(
            "permission denied (energy_uj is root-only since Linux 5.10)",
            where=str(path),
            fix=PERMISSION_FIX,
        ) from exc
    except OSError as exc:
        raise CollectorError(f"cannot read: {exc.strerror or exc}", where=str(path)) from exc


def _read_int(path: Path) -> int:
    text = _read(path)
    try:
        value = int(text)
        if not 0 <= value < COUNTER_RANGE_64:  # negative or beyond 64 bits: garbage
            raise ValueError(value)
    except ValueError:  # also int()'s 4300-digit limit
        raise CollectorError(f"not a counter value: {text[:40]!r}", where=str(path)) from None
    return value


def domain_metric(name: str) -> str:
    """``package-0`` -> ``rapl_package_watts``; ``dram`` -> ``rapl_dram_watts``."""
    return f"rapl_{name.split('-')[0]}_watts"


@register_collector("rapl")
class RaplCollector(Collector):
    def __init__(self, root: str = "/sys", host: str | None = None) -> None:
        self.root = Path(root)
        self.host = host or socket.gethostname()
        self.rates = RateTracker()
        self.errors: list[str] = []

    def zones(self) -> list[Path]:
        base = self.root / "class" / "powercap"
        if not base.is_dir():
            raise CollectorError(
                "no powercap interface",
                where=str(base),
                fix="load intel_rapl_msr (or intel_rapl_common on AMD), or disable the rapl source",
            )
        zones = sorted(p for p in base.iterdir() if ZONE.match(p.name))
        if not zones:
            raise CollectorError(
                "no intel-rapl zones", where=str(base), fix="load intel_rapl_msr, or disable the rapl source"
            )
        return zones

    def read_energy(self) -> dict[str, tuple[str, int, int]]:
        """``{zone: (domain name, energy in µJ, wrap range in µJ)}`` for the readable zones."""
        readings: dict[str, tuple[str, int, int]] = {}
        failures: list[CollectorError] = []
        for zone in self.zones():
            try:
                name, energy, wrap = (
                    _read(zone / "name"),
                    _read_int(zone / "energy_uj"),
                    _read_int(zone / "max_energy_range_uj"),
                )
                if wrap == 0:  # the counter's range divides the wrap test: 0 is garbage
                    raise CollectorError("max_energy_range_uj is 0", where=str(zone / "max_energy_range_uj"))
                readings[zone.name] = (name, energy, wrap)
            except CollectorError as exc:
                failures.append(exc)
        self.errors = [str(e) for e in failures]
        if failures and not readings:
            first = failures[0]
            raise CollectorError(
                f"no RAPL zone could be read: {first.message}", where=first.where, fix=first.fix
            )
        for error in self.errors:
            log.warning("rapl: %s", error)
        return readings

    def collect(self) -> list[Sample]:
        now = time.time()
        watts: dict[str, float] = {}
        for zone, (name, energy, wrap) in self.read_energy().items():
            rate = self.rates.update(zone, now, energy, counter_range=wrap)
            if rate is not None:
                metric = domain_metric(name)
                watts[metric] = watts.get(metric, 0.0) + rate / 1e6  # µJ/s -> W
        return [Sample(now, self.host, self.name, metric, value) for metric, value in watts.items()]


class SampleSource(Protocol):
    def samples(
        self,
        hosts: Sequence[str] | None = None,
        start: float = ...,
        end: float = ...,
        sources: Sequence[str] | None = None,
        metrics: Sequence[str] | None = None,
    ) -> list[Sample]: ...


def _energy(series: list[tuple[float, float]], start: float, end: float) -> float:
    """Joules of one power series (each sample = mean power since the previous sample)."""
    joules, previous = 0.0, start
    for t, watts in series:
        lo, hi = max(previous, start), min(t, end)
        if hi > lo:
            joules += watts * (hi - lo)
        previous = t
        if t >= end:
            return joules
    if series and previous < end:  # no sample after the end yet: hold the last power
        joules += series[-1][1] * (end - previous)
    return joules


def job_energy(
    store_or_samples: SampleSource | Iterable[Sample],
    hosts: Sequence[str],
    start: float,
    end: float,
    metrics: Sequence[str] = NODE_POWER,
    lookahead: float = 600.0,
) -> dict[str, float]:
    """Energy of a job on ``hosts`` between ``start`` and ``end`` from RAPL power samples.

    A power sample is a rate: the mean power over the interval since the previous sample.
    Each host's series of each metric (default package + DRAM) is integrated piecewise
    over [start, end]; the first sample after ``end`` (within ``lookahead`` s) covers the
    tail, or else the last power is held to the end. Returns ``joules``, ``mean_watts``
    (joules / duration, all nodes together), ``hosts_with_data`` and ``hosts``.
    """
    if end <= start:
        raise CollectorError(
            f"job end ({end}) must be after its start ({start})",
            where="job_energy",
            fix="check the job times",
        )
    wanted, metric_set = set(hosts), set(metrics)
    if hasattr(store_or_samples, "samples"):
        samples = store_or_samples.samples(
            hosts=list(hosts), start=start, end=end + lookahead, metrics=metrics
        )
    else:
        samples = [
            s
            for s in store_or_samples
            if s.host in wanted and s.metric in metric_set and start <= s.timestamp < end + lookahead
        ]
    series: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for s in sorted(samples, key=lambda s: s.timestamp):
        series.setdefault((s.host, s.metric), []).append((s.timestamp, s.value))
    joules = sum(_energy(points, start, end) for points in series.values())
    return {
        "joules": joules,
        "mean_watts": joules / (end - start),
        "hosts_with_data": len({host for host, _ in series}),
        "hosts": len(hosts),
    }
