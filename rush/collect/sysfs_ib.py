"""InfiniBand and Omni-Path port counters from sysfs.

Reads ``<root>/class/infiniband/<device>/ports/<n>/counters/<counter>`` (the standard
port counters) and ``.../hw_counters/<counter>`` when present. Data counters
(``port_xmit_data``, ``port_rcv_data``) count 4-octet words on InfiniBand but 8-byte
flits on Omni-Path; Omni-Path devices are recognised by the ``hfi1`` driver name prefix.
Both are converted to bytes, then to per-second rates summed over the host's ports.
"""

from __future__ import annotations

import logging
import socket
import time
from pathlib import Path

from rush.collect.base import Collector, Sample, register_collector
from rush.collect.rates import RateTracker
from rush.errors import CollectorError

log = logging.getLogger(__name__)

STANDARD_COUNTERS = (
    "symbol_error",
    "link_error_recovery",
    "link_downed",
    "port_rcv_errors",
    "port_rcv_remote_physical_errors",
    "port_rcv_switch_relay_errors",
    "port_xmit_discards",
    "port_xmit_constraint_errors",
    "port_rcv_constraint_errors",
    "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
    "VL15_dropped",
    "port_xmit_data",
    "port_rcv_data",
    "port_xmit_packets",
    "port_rcv_packets",
    "port_xmit_wait",
    "unicast_xmit_packets",
    "unicast_rcv_packets",
    "multicast_xmit_packets",
    "multicast_rcv_packets",
)
DATA_COUNTERS = {"port_xmit_data": "ib_xmit_bytes_per_s", "port_rcv_data": "ib_rcv_bytes_per_s"}
IB_WORD_BYTES = 4
OPA_FLIT_BYTES = 8


def data_unit_bytes(device: str) -> int:
    return OPA_FLIT_BYTES if device.startswith("hfi") else IB_WORD_BYTES


def read_counter(path: Path) -> int:
    try:
        text = path.read_text().strip()
    except PermissionError as exc:
        raise CollectorError(
            "permission denied", where=str(path), fix="run the collector as root or grant read access"
        ) from exc
    except OSError as exc:
        raise CollectorError(f"cannot read counter: {exc.strerror or exc}", where=str(path)) from exc
    try:
        return int(text.split()[0])
    except (ValueError, IndexError):
        raise CollectorError(f"not a counter value: {text[:40]!r}", where=str(path)) from None


@register_collector("sysfs_ib")
class SysfsIBCollector(Collector):
    def __init__(self, root: str = "/sys", host: str | None = None, hw_counters: bool = True) -> None:
        self.root = Path(root)
        self.host = host or socket.gethostname()
        self.hw_counters = hw_counters
        self.rates = RateTracker()
        self.errors: list[str] = []

    def read_counters(self) -> dict[str, float]:
        """Counter values summed over devices and ports (data counters in bytes)."""
        base = self.root / "class" / "infiniband"
        if not base.is_dir():
            raise CollectorError(
                "no InfiniBand/Omni-Path devices",
                where=str(base),
                fix="check the sysfs root or disable sysfs_ib",
            )
        totals: dict[str, int] = {}
        self.errors = []
        for device in sorted(p for p in base.iterdir() if (p / "ports").is_dir()):
            unit = data_unit_bytes(device.name)
            for port in sorted((device / "ports").iterdir()):
                for folder in ("counters", "hw_counters") if self.hw_counters else ("counters",):
                    directory = port / folder
                    if not directory.is_dir():
                        continue
                    for counter in sorted(directory.iterdir()):
                        try:
                            value = read_counter(counter)
                        except CollectorError as exc:
                            # One unreadable counter must not hide the others.
                            self.errors.append(str(exc))
                            log.warning("%s", exc)
                            continue
                        if folder == "counters" and counter.name in DATA_COUNTERS:
                            value *= unit
                        name = counter.name if folder == "counters" else f"hw_{counter.name}"
                        totals[name] = totals.get(name, 0) + value
        return totals

    def collect(self) -> list[Sample]:
        now = time.time()
        samples = []
        for counter, value in self.read_counters().items():
            rate = self.rates.update(counter, now, value)
            if rate is None:
                continue
            metric = DATA_COUNTERS.get(counter, f"ib_{counter}_per_s")
            samples.append(Sample(now, self.host, self.name, metric, rate))
        return samples
