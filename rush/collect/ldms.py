"""LDMS ``store_csv`` files: sysclassib, opa2, lustre2_client and lustre_client schemas.

store_csv writes ``#Time,Time_usec,ProducerName,<metrics...>`` where the metrics start with
the sampler base's ``component_id,job_id,app_id`` (lustre_client has ``job_id,app_id,...``
and no component_id), then one row per metric set and sample: ``Time`` is
``<sec>.<usec>``, ``ProducerName`` the node. With ``altheader=1`` the header is in
``<file>.HEADER``. Column names become rush's metric names (shared with the sysfs and
Lustre collectors, so features pool across sources):

==================================================  ======================================
LDMS column                                         rush metric
==================================================  ======================================
``ib.port_xmit_data#mlx5_0.1`` (sysclassib)         ``ib_xmit_bytes_per_s`` (4-octet words)
``ib.port_xmit_data#hfi1_0.1``                      ``ib_xmit_bytes_per_s`` (8-byte flits)
``ib.<counter>#<ca>.<port>``                        ``ib_<counter>_per_s``
``ib.<counter>.rate#<ca>.<port>``                   used only without the raw counter
``PortXmitData`` / ``PortRcvData`` (opa2)           ``ib_xmit/rcv_bytes_per_s`` (flits x 8)
``PortXmitPkts``, ``PortUnicastRcvPkts``, ...       ``ib_port_xmit_packets_per_s``, ...
``client.read_bytes#llite.<fs>`` (lustre2_client)   ``lustre_read_bytes_per_s``
``client.open#llite.<fs>``                          ``lustre_open_ops_per_s``
``read_bytes.sum``, ``open`` (lustre_client)        ``lustre_read_bytes_per_s``, ``..._ops_per_s``
==================================================  ======================================

Counters become per-second rates per node, set instance (opa2 ``ca_name``/``port``,
lustre_client ``llite``) and column — wrap and reset handled by
:class:`~rush.collect.rates.RateTracker`; sysclassib's own ``.rate`` columns are used only
when the raw counter is absent, since they go negative across a counter reset. Rates are
summed over ports and file systems: rows of one node within the same second are one
reading.

Bad input never stops the reader: a line with the wrong number of fields (a partial write)
is skipped with a warning, and so is a line whose time is not a number or lies in the
future (more than five minutes ahead: it would poison every counter's baseline); a
non-numeric, NaN or infinite value drops that value only; an unknown metric is
kept as ``ldms_<name>`` (raw value) with a warning, or dropped (``unknown="drop"``). A last
line without its newline is left for the next read while the file is live, and skipped
with a warning when reading a finished file (``final=True``).
"""

from __future__ import annotations

import glob
import logging
import math
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from rush.collect.base import Collector, Sample, register_collector
from rush.collect.rates import RateTracker
from rush.collect.sysfile import read_small_text
from rush.errors import CollectorError

log = logging.getLogger(__name__)
SOURCE = "ldms"
# Columns that describe the row, not a metric. The instance ones tell apart the sets
# (ports, file systems) one producer writes; their values key the counters.
INSTANCE_COLUMNS = ("ca_name", "port", "fs_name", "llite")
META_COLUMNS = {
    "#Time",
    "Time",
    "Time_usec",
    "ProducerName",
    "component_id",
    "job_id",
    "app_id",
    "job_slot_list_tail",
    "job_start",
    "job_end",
    "uid",
    "user",
    "COUNTER_SELECT2_F",  # a sysclassib placeholder, always 0
    *INSTANCE_COLUMNS,
}
OPA = {  # opa2: libibmad names of the PortCountersExtended fields
    "PortXmitData": "ib_xmit_bytes_per_s",
    "PortRcvData": "ib_rcv_bytes_per_s",
    "PortXmitPkts": "ib_port_xmit_packets_per_s",
    "PortRcvPkts": "ib_port_rcv_packets_per_s",
    "PortUnicastXmitPkts": "ib_unicast_xmit_packets_per_s",
    "PortUnicastRcvPkts": "ib_unicast_rcv_packets_per_s",
    "PortMulticastXmitPkts": "ib_multicast_xmit_packets_per_s",
    "PortMulticastRcvPkts": "ib_multicast_rcv_packets_per_s",
}
IB_DATA = {"port_xmit_data": "ib_xmit_bytes_per_s", "port_rcv_data": "ib_rcv_bytes_per_s"}
# lustre_client's llite stats without a ".sum" suffix are counts of operations
LLITE_OPS = {
    "dirty_pages_hits", "dirty_pages_misses", "ioctl", "open", "close", "mmap", "page_fault",
    "page_mkwrite", "seek", "fsync", "readdir", "setattr", "truncate", "flock", "getattr",
    "create", "link", "unlink", "symlink", "mkdir", "rmdir", "mknod", "rename", "statfs",
    "alloc_inode", "setxattr", "getxattr", "getxattr_hits", "listxattr", "removexattr",
    "inode_permission",
}  # fmt: skip
SANITIZE = re.compile(r"[^A-Za-z0-9_]+")
IB_WORD_BYTES, OPA_FLIT_BYTES = 4.0, 8.0


@dataclass(frozen=True)
class MetricName:
    metric: str  # rush's name
    scale: float  # to bytes or counts
    is_rate: bool  # the column is already per second
    known: bool = True


def normalize(column: str) -> MetricName:
    """rush's name, unit scale and kind of an LDMS column name."""
    name, _, instance = column.partition("#")
    rate = name.endswith(".rate")
    base = name.removesuffix(".rate")
    if base.startswith("ib."):
        counter = base[3:].removeprefix("port_") if "_unicast_" in base or "_multicast_" in base else base[3:]
        if counter in IB_DATA:
            # sysclassib reads the PMA through libibmad: hfi1 answers with flits
            scale = OPA_FLIT_BYTES if instance.startswith("hfi") else IB_WORD_BYTES
            return MetricName(IB_DATA[counter], scale, rate)
        return MetricName(f"ib_{counter}_per_s", 1.0, rate)
    if base in OPA:
        return MetricName(OPA[base], OPA_FLIT_BYTES if base.endswith("Data") else 1.0, rate)
    if base.startswith("client."):
        key = base[len("client.") :]
        return MetricName(
            f"lustre_{key}_per_s" if key.endswith("_bytes") else f"lustre_{key}_ops_per_s", 1.0, rate
        )
    if base.endswith(".sum") and base.removesuffix(".sum").endswith("_bytes"):
        return MetricName(f"lustre_{base.removesuffix('.sum')}_per_s", 1.0, rate)
    if base.endswith(".sum") and base.startswith("brw_"):
        return MetricName(f"lustre_{base.removesuffix('.sum')}_bytes_per_s", 1.0, rate)
    if base in LLITE_OPS:
        return MetricName(f"lustre_{base}_ops_per_s", 1.0, rate)
    return MetricName(f"ldms_{SANITIZE.sub('_', column).strip('_')}", 1.0, False, known=False)


def _timestamp(time_field: str, usec_field: str | None) -> float:
    t = float(time_field)
    # Older store_csv wrote whole seconds in Time and the microseconds only in Time_usec.
    if usec_field is not None and t.is_integer() and usec_field.strip().isdigit():
        t += int(usec_field) / 1e6
    return t


class LdmsCsvReader:
    """Reads samples from one store_csv file, remembering where it stopped (files grow live)."""

    def __init__(self, path: str | Path, unknown: str = "keep") -> None:
        if unknown not in ("keep", "drop"):
            raise CollectorError(
                f"unknown={unknown!r}", where="collect.sources.ldms.unknown", fix="keep or drop"
            )
        self.path = Path(path)
        self.unknown = unknown
        self.offset = 0
        self.lineno = 0
        self.columns: list[str] | None = None
        self.rates = RateTracker()
        self.skipped = 0  # lines skipped
        self.bad_values = 0  # single values skipped
        self.future_rows = 0  # lines skipped for a time beyond now + the rate tracker's tolerance
        self._warned: set[str] = set()

    # -- header ---------------------------------------------------------------------------
    def _header(self, line: str, where: str) -> None:
        columns = [c.strip() for c in line.strip().split(",")]
        if columns[0] not in ("#Time", "Time") or "ProducerName" not in columns:
            raise CollectorError(
                f"not an LDMS store_csv header: {line[:80]!r}",
                where=where,
                fix="expected #Time,Time_usec,ProducerName,<metrics>",
            )
        self.columns = columns
        self.time_index = 0
        self.usec_index = columns.index("Time_usec") if "Time_usec" in columns else None
        self.host_index = columns.index("ProducerName")
        self.instance_indexes = [i for i, c in enumerate(columns) if c in INSTANCE_COLUMNS]
        raw_names = {
            (normalize(c).metric, c.partition("#")[2])
            for c in columns
            if not c.partition("#")[0].endswith(".rate")
        }
        self.metric_columns: list[tuple[int, str, MetricName]] = []
        for i, column in enumerate(columns):
            if i in (self.time_index, self.usec_index, self.host_index):
                continue
            bare = column.partition("#")[0].removeprefix("ib.").removesuffix(".rate")
            if bare in META_COLUMNS or bare.startswith("job_slot_list") or column.endswith(".userdata"):
                continue
            name = normalize(column)
            if name.is_rate and (name.metric, column.partition("#")[2]) in raw_names:
                continue  # the raw counter gives a reset-safe rate
            if not name.known:
                self._warn(
                    f"unknown:{column}",
                    f"{where}: unknown LDMS metric {column!r} "
                    + (f"kept as {name.metric} (raw value)" if self.unknown == "keep" else "dropped"),
                )
                if self.unknown == "drop":
                    continue
            self.metric_columns.append((i, column, name))

    def _alt_header(self) -> bool:
        header = Path(str(self.path) + ".HEADER")
        if not header.is_file():
            return False
        try:
            text = read_small_text(header)  # bounded, no FIFO, undecodable bytes replaced
        except OSError as exc:
            raise CollectorError(f"cannot read: {exc.strerror or exc}", where=str(header)) from exc
        self._header(text.splitlines()[0] if text else "", f"{header}:1")
        return True

    def _warn(self, key: str, message: str) -> None:
        if key not in self._warned:  # a bad column stays bad: warn once per reader
            self._warned.add(key)
            log.warning("%s", message)

    # -- reading --------------------------------------------------------------------------
    def read_new(self, final: bool = False) -> list[Sample]:
        """Samples from the lines written since the last call.

        ``final``: the file is complete, so a last line without a newline is a truncated
        write (skipped with a warning) rather than one still being written.
        """
        try:
            info = self.path.stat()
            if not stat.S_ISREG(info.st_mode):  # a FIFO would block the collector forever
                raise CollectorError(
                    "not a regular file (a FIFO, device or directory)",
                    where=str(self.path),
                    fix="point collect.sources.ldms.paths at store_csv files",
                )
            size = info.st_size
            if size < self.offset:  # rotated or truncated: start over
                log.warning("%s: file shrank, reading it again from the start", self.path)
                self.offset, self.lineno, self.columns = 0, 0, None
            with open(self.path, "rb") as fh:
                fh.seek(self.offset)
                data = fh.read()
        except PermissionError as exc:
            raise CollectorError(
                "permission denied", where=str(self.path), fix="make the LDMS store files readable"
            ) from exc
        except OSError as exc:
            raise CollectorError(f"cannot read: {exc.strerror or exc}", where=str(self.path)) from exc
        end = data.rfind(b"\n") + 1
        tail = data[end:]
        self.offset += end
        lines = data[:end].decode("utf-8", "replace").splitlines()
        if tail.strip():
            if final:
                self.offset += len(tail)
                self.skipped += 1
                log.warning(
                    "%s:%d: truncated last line skipped (partial write): %r",
                    self.path,
                    self.lineno + len(lines) + 1,
                    tail[:60].decode("utf-8", "replace"),
                )
            # else: the writer is mid-line; the line is read complete next time
        readings: dict[tuple[str, int, str], list[float]] = {}
        for line in lines:
            self.lineno += 1
            where = f"{self.path}:{self.lineno}"
            if not line.strip():
                continue
            if line.startswith("#"):
                self._header(line, where)
                continue
            if self.columns is None and not self._alt_header():
                raise CollectorError(
                    "data before the header line",
                    where=where,
                    fix="store_csv with altheader=1 writes the header to <file>.HEADER: keep it next to the file",
                )
            self._row(line, where, readings)
        return [
            Sample(stamp, host, SOURCE, metric, value)
            for (host, _, metric), (stamp, value) in readings.items()
        ]

    def _row(self, line: str, where: str, readings: dict[tuple[str, int, str], list[float]]) -> None:
        assert self.columns is not None
        fields = [f.strip() for f in line.split(",")]
        if len(fields) != len(self.columns):
            self.skipped += 1
            log.warning(
                "%s: line with %d of %d fields skipped (truncated write?)",
                where,
                len(fields),
                len(self.columns),
            )
            return
        try:
            t = _timestamp(
                fields[self.time_index], None if self.usec_index is None else fields[self.usec_index]
            )
        except (ValueError, OverflowError):
            t = math.nan
        if not math.isfinite(t):
            self.skipped += 1
            log.warning("%s: bad time %r, line skipped", where, fields[self.time_index][:30])
            return
        if t > self.rates.clock() + self.rates.max_future:
            # A far-future row must not become the counters' baseline (every later row would
            # look out of order) nor a sample from the future: skip and count it.
            self.skipped += 1
            self.future_rows += 1
            self._warn("future", f"{where}: time {t:.0f} is in the future (a node's clock?), line skipped")
            return
        host = fields[self.host_index]
        instance = tuple(fields[i] for i in self.instance_indexes)
        for index, column, name in self.metric_columns:
            text = fields[index]
            try:
                value: int | float = int(text)  # ints keep 64-bit counters exact
            except ValueError:
                try:
                    value = float(text)
                    if not math.isfinite(value):
                        raise ValueError(text)
                except ValueError:
                    self.bad_values += 1
                    self._warn(
                        f"value:{column}", f"{where}: non-numeric {column!r} value {text[:30]!r} skipped"
                    )
                    continue
            if not name.known or name.is_rate:
                try:
                    scaled = float(value) * name.scale
                except OverflowError:  # an integer beyond a float's range
                    scaled = math.inf
                # A per-second value LDMS computed is never negative, and none is infinite
                # (1e308 words is inf bytes); a raw value of an unknown metric may be negative.
                if not math.isfinite(scaled) or (name.known and scaled < 0):
                    self.bad_values += 1
                    self._warn(
                        f"value:{column}", f"{where}: {column!r} value {text[:30]!r} out of range, skipped"
                    )
                    continue
                rate: float | None = scaled
            else:
                # Rate of the raw counter (its own wrap range), then scaled to bytes.
                rate = self.rates.update((host, instance, column), t, value)
                if rate is not None:
                    rate *= name.scale
            if rate is None:
                continue
            # Rows of one node in the same second (its ports, its file systems) are one reading.
            key = (host, round(t), name.metric)
            stamp, total = readings.get(key, (t, 0.0))
            readings[key] = [max(stamp, t), total + rate]


def read_store_csv(path: str | Path, unknown: str = "keep") -> list[Sample]:
    """All samples of a finished store_csv file (a truncated last line is skipped, warned)."""
    return LdmsCsvReader(path, unknown).read_new(final=True)


@register_collector("ldms")
class LdmsCollector(Collector):
    """Follows store_csv files matching ``paths`` (globs); new lines on each collect()."""

    def __init__(self, paths: tuple[str, ...] | list[str] = (), unknown: str = "keep") -> None:
        if not paths:
            raise CollectorError(
                "no LDMS store_csv paths given",
                where="collect.sources.ldms.paths",
                fix='paths = ["/var/lib/ldms/csv/*/sysclassib"]',
            )
        if unknown not in ("keep", "drop"):
            raise CollectorError(
                f"unknown={unknown!r}", where="collect.sources.ldms.unknown", fix="keep or drop"
            )
        self.patterns = list(paths)
        self.unknown = unknown
        self.readers: dict[str, LdmsCsvReader] = {}

    def collect(self) -> list[Sample]:
        samples: list[Sample] = []
        errors: list[str] = []
        for pattern in self.patterns:
            for path in sorted(glob.glob(pattern)):
                if path.endswith((".HEADER", ".KIND", ".UNITS")):
                    continue  # store_csv side files
                reader = self.readers.setdefault(path, LdmsCsvReader(path, self.unknown))
                try:
                    samples += reader.read_new()
                except CollectorError as exc:  # one bad file must not hide the others
                    errors.append(str(exc))
                    log.warning("%s", exc)
        if errors and not samples and len(errors) == len(self.readers):
            raise CollectorError(f"no LDMS file could be read: {errors[0]}", where=", ".join(self.patterns))
        return samples
