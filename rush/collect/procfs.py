"""Node counters from procfs: what a machine without InfiniBand, Omni-Path, Lustre or RAPL offers.

One reading of the local node (source ``procfs``, host = the short host name, which is what
Slurm calls the node) gives these metrics; counters become per-second rates with
:class:`rush.collect.rates.RateTracker` (the first reading only primes them), gauges are
reported as read:

==========================  =============================================================
``net_{rcv,xmit}_bytes_per_s``, ``net_{rcv,xmit}_packets_per_s``   /proc/net/dev, all interfaces (``lo`` included: on one node it carries the local traffic)
``tcp_{in,out}_segs_per_s``, ``tcp_retrans_segs_per_s``            /proc/net/snmp
``disk_{read,write}_bytes_per_s``, ``disk_{read,write}_ops_per_s``, ``disk_busy_frac``, ``disk_queue``   /proc/diskstats, whole disks (not partitions, loop or ram devices)
``cpu_{user,system,iowait,idle,steal}_frac``, ``ctxt_per_s``, ``procs_running``   /proc/stat
``load1``                                                          /proc/loadavg
``mem_available_frac``, ``mem_dirty_bytes``, ``mem_writeback_bytes``   /proc/meminfo
``pgfault_per_s``, ``pgmajfault_per_s``, ``pgpgin_per_s``, ``pgpgout_per_s``   /proc/vmstat
``psi_{cpu,memory,io}_some_frac``, ``psi_{memory,io}_full_frac``   /proc/pressure (Linux >= 4.20 with PSI)
==========================  =============================================================

A file that is absent is skipped (listed by :meth:`ProcfsCollector.absent`); a file that does
not parse costs its metrics for that reading and a logged warning, never the others.
"""

from __future__ import annotations

import logging
import re
import socket
import time
from collections.abc import Callable
from pathlib import Path

from rush.collect.base import Collector, Sample, register_collector
from rush.collect.rates import RateTracker
from rush.collect.sysfile import read_small_text
from rush.errors import CollectorError

SOURCE = "procfs"
log = logging.getLogger(__name__)
SECTOR = 512  # /proc/diskstats counts 512-byte sectors whatever the device's block size
_SKIP_DISKS = re.compile(r"^(loop|ram|zram|dm-|md|sr|fd)")


def short_hostname() -> str:
    return socket.gethostname().split(".")[0]


@register_collector(SOURCE)
class ProcfsCollector(Collector):
    """Options: ``proc`` (root of procfs, ``/proc``), ``sys`` (root of sysfs, ``/sys``: tells whole
    disks from partitions), ``host`` (default: the short host name)."""

    def __init__(
        self,
        proc: str = "/proc",
        sys: str = "/sys",
        host: str = "",
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.proc, self.sys = Path(proc), Path(sys)
        self.host = host or short_hostname()
        self.clock = clock
        self.tracker = RateTracker(clock=clock)
        self._absent: set[str] = set()

    def absent(self) -> list[str]:
        """The procfs files this machine lacks (their metrics are not reported)."""
        return sorted(self._absent)

    def _text(self, relative: str) -> str | None:
        path = self.proc / relative
        try:
            return read_small_text(path)
        except FileNotFoundError:
            self._absent.add(str(path))
        except (OSError, CollectorError) as exc:
            log.warning("cannot read %s: %s", path, exc)
        return None

    def collect(self) -> list[Sample]:
        now = self.clock()
        counters: dict[str, int] = {}
        gauges: dict[str, float] = {}
        for reader in (self._net, self._snmp, self._disks, self._stat, self._loadavg, self._meminfo):
            try:
                reader(counters, gauges)
            except (ValueError, IndexError, KeyError) as exc:  # a malformed file: skip its metrics
                log.warning("procfs %s: unreadable (%s)", reader.__name__.strip("_"), exc)
        self._vmstat_pressure(counters, gauges)
        samples = [Sample(now, self.host, SOURCE, name, float(v)) for name, v in sorted(gauges.items())]
        rates: dict[str, float] = {}
        for name, value in counters.items():
            rate = self.tracker.update(name, now, value)
            if rate is not None:
                rates[name] = rate
        samples += self._derived(rates, now)
        return samples

    # -- readers: each fills raw counters (monotonic ints) and gauges -----------------------
    def _net(self, counters: dict[str, int], gauges: dict[str, float]) -> None:
        text = self._text("net/dev")
        if text is None:
            return
        totals = [0, 0, 0, 0]
        for line in text.splitlines()[2:]:
            _, sep, rest = line.partition(":")
            fields = rest.split()
            if not sep or len(fields) < 16:
                raise ValueError(f"net/dev line {line[:60]!r}")
            for i, column in enumerate((0, 1, 8, 9)):
                totals[i] += int(fields[column])
        for name, value in zip(
            ("net_rcv_bytes", "net_rcv_packets", "net_xmit_bytes", "net_xmit_packets"), totals, strict=True
        ):
            counters[name] = value

    def _snmp(self, counters: dict[str, int], gauges: dict[str, float]) -> None:
        text = self._text("net/snmp")
        if text is None:
            return
        tcp = [line.split()[1:] for line in text.splitlines() if line.startswith("Tcp:")]
        if len(tcp) >= 2:
            values = dict(zip(tcp[0], tcp[1], strict=False))  # a short line loses its tail only
            for key, name in (
                ("InSegs", "tcp_in_segs"),
                ("OutSegs", "tcp_out_segs"),
                ("RetransSegs", "tcp_retrans_segs"),
            ):
                counters[name] = int(values[key])

    def _whole_disk(self, name: str) -> bool:
        if _SKIP_DISKS.match(name):
            return False
        block = self.sys / "block"
        if block.is_dir():
            return (block / name.replace("/", "!")).exists()
        return not re.search(r"\d$", name) or name.startswith("nvme") and "p" not in name[4:]

    def _disks(self, counters: dict[str, int], gauges: dict[str, float]) -> None:
        text = self._text("diskstats")
        if text is None:
            return
        totals = [0] * 6
        for line in text.splitlines():
            fields = line.split()
            if len(fields) < 14:
                continue
            if not self._whole_disk(fields[2]):
                continue
            for i, column in enumerate((3, 5, 7, 9, 12, 13)):
                totals[i] += int(fields[column])
        names = (
            "disk_read_ops",
            "disk_read_sectors",
            "disk_write_ops",
            "disk_write_sectors",
            "disk_io_ms",
            "disk_weighted_ms",
        )
        counters.update(zip(names, totals, strict=True))

    def _stat(self, counters: dict[str, int], gauges: dict[str, float]) -> None:
        text = self._text("stat")
        if text is None:
            return
        for line in text.splitlines():
            fields = line.split()
            if fields and fields[0] == "cpu":
                ticks = [int(x) for x in fields[1:9]]
                user, nice, system, idle, iowait, irq, softirq, steal = ticks + [0] * (8 - len(ticks))
                counters.update(
                    cpu_user=user + nice,
                    cpu_system=system + irq + softirq,
                    cpu_idle=idle,
                    cpu_iowait=iowait,
                    cpu_steal=steal,
                )
            elif fields and fields[0] == "ctxt":
                counters["ctxt"] = int(fields[1])
            elif fields and fields[0] == "procs_running":
                gauges["procs_running"] = float(fields[1])

    def _loadavg(self, counters: dict[str, int], gauges: dict[str, float]) -> None:
        text = self._text("loadavg")
        if text is not None:
            gauges["load1"] = float(text.split()[0])

    def _meminfo(self, counters: dict[str, int], gauges: dict[str, float]) -> None:
        text = self._text("meminfo")
        if text is None:
            return
        kib = {}
        for line in text.splitlines():
            key, _, rest = line.partition(":")
            parts = rest.split()
            if parts:
                kib[key] = int(parts[0])
        if kib.get("MemTotal"):
            gauges["mem_available_frac"] = kib.get("MemAvailable", kib.get("MemFree", 0)) / kib["MemTotal"]
        for key, name in (("Dirty", "mem_dirty_bytes"), ("Writeback", "mem_writeback_bytes")):
            if key in kib:
                gauges[name] = kib[key] * 1024.0

    def _vmstat_pressure(self, counters: dict[str, int], gauges: dict[str, float]) -> None:
        text = self._text("vmstat")
        if text is not None:
            values = dict(line.split()[:2] for line in text.splitlines() if len(line.split()) >= 2)
            for key in ("pgfault", "pgmajfault", "pgpgin", "pgpgout"):
                if key in values and values[key].isdigit():
                    counters[key] = int(values[key])
        for resource in ("cpu", "memory", "io"):
            text = self._text(f"pressure/{resource}")
            if text is None:
                continue
            for line in text.splitlines():
                match = re.match(r"(some|full) .*total=(\d+)", line)
                if match and not (resource == "cpu" and match.group(1) == "full"):
                    counters[f"psi_{resource}_{match.group(1)}_us"] = int(match.group(2))

    # -- rates into metrics -----------------------------------------------------------------
    def _derived(self, rates: dict[str, float], now: float) -> list[Sample]:
        out: dict[str, float] = {}
        for name in ("net_rcv_bytes", "net_xmit_bytes", "net_rcv_packets", "net_xmit_packets"):
            if name in rates:
                out[f"{name}_per_s"] = rates[name]
        for name in (
            "tcp_in_segs",
            "tcp_out_segs",
            "tcp_retrans_segs",
            "ctxt",
            "pgfault",
            "pgmajfault",
            "pgpgin",
            "pgpgout",
        ):
            if name in rates:
                out[f"{name}_per_s"] = rates[name]
        for op in ("read", "write"):
            if f"disk_{op}_sectors" in rates:
                out[f"disk_{op}_bytes_per_s"] = rates[f"disk_{op}_sectors"] * SECTOR
            if f"disk_{op}_ops" in rates:
                out[f"disk_{op}_ops_per_s"] = rates[f"disk_{op}_ops"]
        if "disk_io_ms" in rates:
            out["disk_busy_frac"] = rates["disk_io_ms"] / 1000.0
        if "disk_weighted_ms" in rates:
            out["disk_queue"] = rates["disk_weighted_ms"] / 1000.0
        cpu = {
            k: rates[f"cpu_{k}"] for k in ("user", "system", "idle", "iowait", "steal") if f"cpu_{k}" in rates
        }
        total = sum(cpu.values())
        if len(cpu) == 5 and total > 0:
            out.update({f"cpu_{k}_frac": v / total for k, v in cpu.items()})
        for name, rate in rates.items():
            if name.startswith("psi_"):
                out[name.removesuffix("_us") + "_frac"] = rate / 1e6
        return [Sample(now, self.host, SOURCE, name, value) for name, value in sorted(out.items())]
