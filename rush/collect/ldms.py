"""LDMS ``store_csv`` files: sysclassib, opa2, lustre2_client and lustre_client schemas.

Header: ``#Time,Time_usec,ProducerName,component_id,job_id,app_id,<metrics...>``; one row
per sample set and producer (node). Metric names are normalised to rush's names:

==========================================  =====================================
LDMS column                                 rush metric
==========================================  =====================================
``ib.port_xmit_data#mlx5_0.1`` (sysclassib) ``ib_xmit_bytes_per_s`` (4-octet words)
``ib.port_rcv_data.rate#mlx5_0.1``          ``ib_rcv_bytes_per_s`` (already a rate)
``ib.<counter>#<ca>.<port>``                ``ib_<counter>_per_s``
``PortXmitData`` / ``PortRcvData`` (opa2)   ``ib_xmit/rcv_bytes_per_s`` (8-byte flits)
``PortXmitPkts`` / ``PortRcvPkts`` (opa2)   ``ib_port_xmit/rcv_packets_per_s``
``client.read_bytes#llite.<fs>`` (lustre2)  ``lustre_read_bytes_per_s``
``client.open#llite.<fs>``                  ``lustre_open_ops_per_s``
``read_bytes.sum`` (lustre_client)          ``lustre_read_bytes_per_s``
==========================================  =====================================

Counters become per-second rates per node (wrap and reset handled), summed over ports and
file systems. A truncated line (a partial write at the end of a live file) is skipped
with a warning; an unknown metric is kept under ``ldms_<name>`` as a raw value, with a
warning, or dropped (``unknown="drop"``).
"""

from __future__ import annotations

import glob
import logging
import re
from dataclasses import dataclass
from pathlib import Path

from rush.collect.base import Collector, Sample, register_collector
from rush.collect.rates import RateTracker
from rush.errors import CollectorError

log = logging.getLogger(__name__)
FIXED = ("#Time", "Time_usec", "ProducerName", "component_id", "job_id", "app_id")
OPA = {
    "PortXmitData": ("ib_xmit_bytes_per_s", 8.0),
    "PortRcvData": ("ib_rcv_bytes_per_s", 8.0),
    "PortXmitPkts": ("ib_port_xmit_packets_per_s", 1.0),
    "PortRcvPkts": ("ib_port_rcv_packets_per_s", 1.0),
}
IB_DATA = {"port_xmit_data": "ib_xmit_bytes_per_s", "port_rcv_data": "ib_rcv_bytes_per_s"}
SANITIZE = re.compile(r"[^A-Za-z0-9_]+")


@dataclass(frozen=True)
class MetricName:
    metric: str  # rush's name
    scale: float  # to bytes or counts
    is_rate: bool  # the column is already per second
    known: bool = True


def normalize(column: str) -> MetricName:
    name, _, _instance = column.partition("#")
    rate = name.endswith(".rate")
    base = name.removesuffix(".rate")
    if base.startswith("ib."):
        counter = base[3:]
        if counter in IB_DATA:
            return MetricName(IB_DATA[counter], 4.0, rate)
        return MetricName(f"ib_{counter}_per_s", 1.0, rate)
    if base in OPA:
        metric, scale = OPA[base]
        return MetricName(metric, scale, rate)
    if base.startswith("Port"):
        return MetricName(f"opa_{SANITIZE.sub('_', base)}_per_s", 1.0, rate)
    if base.startswith("client."):
        key = base[len("client.") :]
        return MetricName(
            f"lustre_{key}_per_s" if key.endswith("_bytes") else f"lustre_{key}_ops_per_s", 1.0, rate
        )
    if base.endswith(".sum") and base.removesuffix(".sum").endswith("_bytes"):
        return MetricName(f"lustre_{base.removesuffix('.sum')}_per_s", 1.0, rate)
    if base.endswith(".count"):
        return MetricName(f"lustre_{base.removesuffix('.count')}_ops_per_s", 1.0, rate)
    return MetricName(f"ldms_{SANITIZE.sub('_', column)}", 1.0, False, known=False)


def _timestamp(time_field: str, usec_field: str) -> float:
    t = float(time_field)
    if t.is_integer() and usec_field.strip().lstrip("-").isdigit():
        t += int(usec_field) / 1e6
    return t


class LdmsCsvReader:
    """Reads rows from a store_csv file, remembering where it stopped (files grow live)."""

    def __init__(self, path: str | Path, unknown: str = "keep") -> None:
        if unknown not in ("keep", "drop"):
            raise CollectorError(
                f"unknown={unknown!r}", where="collect.sources.ldms.unknown", fix="keep or drop"
            )
        self.path = Path(path)
        self.unknown = unknown
        self.offset = 0
        self.columns: list[str] | None = None
        self.names: list[MetricName] = []
        self.rates = RateTracker()
        self.skipped = 0
        self._warned: set[str] = set()

    def _header(self, line: str) -> None:
        columns = [c.strip() for c in line.strip().split(",")]
        if tuple(columns[: len(FIXED)]) != FIXED:
            raise CollectorError(
                f"not an LDMS store_csv header: {line[:80]!r}",
                where=f"{self.path}:1",
                fix="expected #Time,Time_usec,ProducerName,component_id,job_id,app_id,<metrics>",
            )
        self.columns = columns
        self.names = [normalize(c) for c in columns[len(FIXED) :]]
        for column, name in zip(columns[len(FIXED) :], self.names, strict=True):
            if not name.known and column not in self._warned:
                self._warned.add(column)
                log.warning(
                    "%s: unknown LDMS metric %r (%s)",
                    self.path,
                    column,
                    "kept as " + name.metric if self.unknown == "keep" else "dropped",
                )

    def read_new(self) -> list[Sample]:
        try:
            size = self.path.stat().st_size
            if size < self.offset:  # rotated or truncated: start over
                self.offset, self.columns = 0, None
            with open(self.path, "rb") as fh:
                fh.seek(self.offset)
                data = fh.read()
        except PermissionError as exc:
            raise CollectorError(
                "permission denied", where=str(self.path), fix="make the LDMS store readable"
            ) from exc
        except OSError as exc:
            raise CollectorError(f"cannot read: {exc.strerror or exc}", where=str(self.path)) from exc
        # A last line without a newline may still be being written: read it next time.
        end = data.rfind(b"\n") + 1
        complete = data[: max(end - 1, 0)].decode("utf-8", "replace")
        self.offset += end
        samples: list[Sample] = []
        lines = complete.split("\n") if complete else []
        for lineno, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            if line.startswith("#"):
                self._header(line)
                continue
            if self.columns is None:
                raise CollectorError("data before the header line", where=f"{self.path}:{lineno}")
            samples += self._row(line, lineno)
        return samples

    def _row(self, line: str, lineno: int) -> list[Sample]:
        fields = [f.strip() for f in line.split(",")]
        if len(fields) != len(self.columns):
            self.skipped += 1
            log.warning(
                "%s: line with %d of %d fields skipped (truncated write?)",
                self.path,
                len(fields),
                len(self.columns),
            )
            return []
        try:
            t = _timestamp(fields[0], fields[1])
            values = [float(f) for f in fields[len(FIXED) :]]
        except ValueError:
            self.skipped += 1
            log.warning("%s: non-numeric line skipped: %r", self.path, line[:60])
            return []
        host = fields[2]
        totals: dict[str, float] = {}
        raw: dict[str, float] = {}
        for name, value in zip(self.names, values, strict=True):
            if not name.known:
                if self.unknown == "keep":
                    raw[name.metric] = value
                continue
            if name.is_rate:
                totals[name.metric] = totals.get(name.metric, 0.0) + value * name.scale
            else:
                raw_key = "counter:" + name.metric
                raw[raw_key] = raw.get(raw_key, 0.0) + value * name.scale
        samples = [Sample(t, host, "ldms", m, v) for m, v in totals.items()]
        for key, value in raw.items():
            if key.startswith("counter:"):
                metric = key[len("counter:") :]
                if metric in totals:
                    continue  # the .rate column already gave it
                rate = self.rates.update((host, metric), t, value)
                if rate is not None:
                    samples.append(Sample(t, host, "ldms", metric, rate))
            else:
                samples.append(Sample(t, host, "ldms", key, value))
        return samples


@register_collector("ldms")
class LdmsCollector(Collector):
    def __init__(self, paths: tuple[str, ...] | list[str] = (), unknown: str = "keep") -> None:
        if not paths:
            raise CollectorError(
                "no LDMS store_csv paths given",
                where="collect.sources.ldms.paths",
                fix='paths = ["/var/ldms/csv/*"]',
            )
        self.patterns = list(paths)
        self.unknown = unknown
        self.readers: dict[str, LdmsCsvReader] = {}

    def collect(self) -> list[Sample]:
        samples = []
        for pattern in self.patterns:
            for path in sorted(glob.glob(pattern)):
                reader = self.readers.setdefault(path, LdmsCsvReader(path, self.unknown))
                samples += reader.read_new()
        return samples
