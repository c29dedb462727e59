"""InfiniBand and Omni-Path port counters from sysfs.

Reads ``<root>/class/infiniband/<device>/ports/<n>/counters/<counter>`` (the 21 standard
PMA port counters) and ``.../hw_counters/<counter>`` when the driver has them (mlx5:
``out_of_buffer``, ``rx_write_requests``, ...). Each counter of each port becomes a
per-second rate (:class:`~rush.collect.rates.RateTracker`, 64-bit wrap and resets); the
rates are then summed over the host's ports, one sample per metric:
``ib_xmit_bytes_per_s``/``ib_rcv_bytes_per_s`` for the data counters,
``ib_<counter>_per_s`` for the others and ``ib_hw_<counter>_per_s`` for hw_counters.

Units: ``port_xmit_data``/``port_rcv_data`` count 4-octet words on InfiniBand (the PMA
unit) but 8-byte flits on Omni-Path, whose hfi1 driver answers the same MAD with flit
counts. The device type is taken from the driver bound to the device
(``<device>/device/driver`` -> ``hfi1``), falling back to the device name (hfi1 names its
devices ``hfi1_<n>``); everything else is InfiniBand (mlx4/mlx5, qib, ...).

Errors never stop the other counters: an unreadable, vanished or garbage counter file is
recorded in ``errors`` and logged once; only a missing ``class/infiniband`` directory, or
a tree where not one counter could be read, raises :class:`CollectorError`.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from pathlib import Path

from rush.collect.base import Collector, Sample, register_collector
from rush.collect.rates import COUNTER_RANGE_64, RateTracker
from rush.collect.sysfile import read_small_text
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
OPA_DRIVERS = ("hfi1",)
SATURATED_32 = 2**32 - 1


def is_omnipath(device: Path) -> bool:
    """True for an Omni-Path HFI: bound to the hfi1 driver, or named like one."""
    driver = device / "device" / "driver"
    if driver.is_symlink() or driver.exists():
        return os.path.basename(os.path.realpath(driver)) in OPA_DRIVERS
    return device.name.startswith(OPA_DRIVERS)


def data_unit_bytes(device: Path | str) -> int:
    """Bytes per unit of port_xmit_data/port_rcv_data on this device."""
    return OPA_FLIT_BYTES if is_omnipath(Path(device)) else IB_WORD_BYTES


def read_counter(path: Path) -> int:
    """One counter file's value; CollectorError (where=path) when it cannot be had."""
    try:
        text = read_small_text(path).strip()
    except PermissionError as exc:
        raise CollectorError(
            "permission denied",
            where=str(path),
            fix="run the collector as root, or grant read access to the counters (udev rule)",
        ) from exc
    except OSError as exc:
        raise CollectorError(
            f"cannot read counter: {exc.strerror or exc}",
            where=str(path),
            fix="the port or device may have gone away; check `ibstat`",
        ) from exc
    try:
        value = int(text.split()[0])
        if not 0 <= value < COUNTER_RANGE_64:  # "-5", 2**70: garbage, not a counter
            raise ValueError(value)
        return value
    except (ValueError, IndexError):  # also int()'s 4300-digit limit
        # e.g. "N/A (no PMA)" on ports without a performance management agent
        raise CollectorError(
            f"not a counter value: {text[:40]!r}",
            where=str(path),
            fix="this port does not provide the counter; exclude the device or ignore the warning",
        ) from None


@register_collector("sysfs_ib")
class SysfsIBCollector(Collector):
    """Port counters of every InfiniBand/Omni-Path device under ``root`` (default /sys)."""

    def __init__(
        self,
        root: str = "/sys",
        host: str | None = None,
        hw_counters: bool = True,
        devices: list[str] | tuple[str, ...] | None = None,
    ) -> None:
        self.root = Path(root)
        self.host = host or socket.gethostname()
        self.hw_counters = hw_counters
        self.devices = None if devices is None else set(devices)
        self.rates = RateTracker()
        self.errors: list[str] = []
        self._warned: set[str] = set()

    def read_counters(self) -> dict[tuple[str, str, str], int]:
        """``{(device, port, counter): raw value}``; hw_counters are keyed ``hw_<name>``.

        Values stay in the counter's own unit so that wraparound is detected on the counter's
        range; :meth:`collect` scales the data rates to bytes.
        """
        base = self.root / "class" / "infiniband"
        if not base.is_dir():
            raise CollectorError(
                "no InfiniBand/Omni-Path devices",
                where=str(base),
                fix="check the sysfs root, load the HCA driver, or disable the sysfs_ib source",
            )
        self.errors = []
        values: dict[tuple[str, str, str], int] = {}
        folders = ("counters", "hw_counters") if self.hw_counters else ("counters",)
        for device in sorted(base.iterdir()):
            if self.devices is not None and device.name not in self.devices:
                continue
            if not (device / "ports").is_dir():
                continue
            for port in sorted((device / "ports").iterdir()):
                for folder in folders:
                    directory = port / folder
                    if not directory.is_dir():
                        continue
                    for counter in sorted(directory.iterdir()):
                        try:
                            value = read_counter(counter)
                        except CollectorError as exc:
                            # One unreadable counter must not hide the others.
                            self._error(exc)
                            continue
                        if folder == "counters" and counter.name in DATA_COUNTERS and value == SATURATED_32:
                            # 32-bit PMA counters stick at the top instead of wrapping
                            self._error(
                                CollectorError(
                                    "counter saturated at 2**32-1 (port without extended counters)",
                                    where=str(counter),
                                    fix="clear it with `perfquery -R`; rates resume from the next reading",
                                )
                            )
                            continue
                        name = counter.name if folder == "counters" else f"hw_{counter.name}"
                        values[(device.name, port.name, name)] = value
        if not values and self.errors:
            raise CollectorError(
                f"no counter could be read ({len(self.errors)} errors; first: {self.errors[0]})",
                where=str(base),
                fix="run the collector as root or check the devices with `ibstat`",
            )
        return values

    def _error(self, exc: CollectorError) -> None:
        self.errors.append(str(exc))
        if exc.where not in self._warned:  # a broken counter stays broken: warn once
            self._warned.add(exc.where or "")
            log.warning("%s", exc)

    def collect(self) -> list[Sample]:
        now = time.time()
        totals: dict[str, float] = {}
        units: dict[str, int] = {}
        for (device, port, counter), value in self.read_counters().items():
            rate = self.rates.update((device, port, counter), now, value)
            if rate is None:
                continue
            if counter in DATA_COUNTERS:
                if device not in units:
                    units[device] = data_unit_bytes(self.root / "class" / "infiniband" / device)
                rate *= units[device]
            metric = DATA_COUNTERS.get(counter, f"ib_{counter}_per_s")
            totals[metric] = totals.get(metric, 0.0) + rate
        return [Sample(now, self.host, self.name, metric, value) for metric, value in totals.items()]
