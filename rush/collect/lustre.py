"""Lustre client statistics: ``lctl get_param llite.*.stats`` and the llite stats files.

The format (``/proc/fs/lustre/llite/<fs>-<id>/stats`` or
``/sys/kernel/debug/lustre/llite/<fs>-<id>/stats``)::

    snapshot_time             1700000000.123456789 secs.nsecs
    read_bytes                1234 samples [bytes] 4096 1048576 987654321 [sumsq]
    open                      42 samples [usecs]

``lctl get_param`` prefixes each file with a ``llite.<fs>-<id>.stats=`` line. Lines may
stop after the unit (``open 42 samples [usecs]``: a count only). Counts and the byte
sums of ``read_bytes``/``write_bytes`` are counters: the collector turns each mount's into
per-second rates (timed by ``snapshot_time``) and sums them over the mounts —
``lustre_read_bytes_per_s``, ``lustre_write_bytes_per_s`` and ``lustre_<op>_ops_per_s``.
A line it cannot parse is skipped with a warning; an unreadable file is skipped with a
warning unless no file at all could be read (then :class:`CollectorError`).
"""

from __future__ import annotations

import glob
import logging
import math
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from rush.collect.base import Collector, Sample, register_collector
from rush.collect.rates import RateTracker
from rush.collect.sysfile import read_small_text
from rush.errors import CollectorError

log = logging.getLogger(__name__)
STATS_GLOBS = ("/proc/fs/lustre/llite/*/stats", "/sys/kernel/debug/lustre/llite/*/stats")


@dataclass
class LliteStats:
    filesystem: str
    snapshot_time: float | None = None
    counts: dict[str, float] = field(default_factory=dict)
    sums: dict[str, float] = field(default_factory=dict)  # e.g. read_bytes -> total bytes
    bad_lines: int = 0  # lines skipped with a warning


# Bad lines of one block warned about one by one; the rest are counted in one line (a hostile
# file of two million bad lines must not write two million log lines).
WARNED_LINES = 10


def _finite(text: str) -> float:
    """A non-negative finite number: a counter or a time ("nan", "inf", "-3" are bad lines)."""
    value = float(text)
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(text)
    return value


def _parse_block(name: str, lines: list[str], where: str) -> LliteStats:
    stats = LliteStats(filesystem=name)
    for lineno, line in enumerate(lines, start=1):
        parts = line.split()
        if not parts:
            continue
        try:
            if parts[0] == "snapshot_time":
                stats.snapshot_time = _finite(parts[1])
                continue
            if parts[0] in ("start_time", "elapsed_time"):
                continue
            if len(parts) < 3 or parts[2] != "samples":
                _skip(stats, f"{where}:{lineno}: not a stats line: {line[:60]!r}")
                continue
            # name count samples [unit] min max sum [sumsq]
            count = _finite(parts[1])
            total = _finite(parts[6]) if len(parts) >= 7 and parts[3].startswith("[") else None
        except (ValueError, IndexError):
            _skip(stats, f"{where}:{lineno}: bad number in {line[:60]!r}")
            continue
        stats.counts[parts[0]] = count
        if total is not None:
            stats.sums[parts[0]] = total
    if stats.bad_lines > WARNED_LINES:
        log.warning("%s: %d more bad lines skipped", where, stats.bad_lines - WARNED_LINES)
    return stats


def _skip(stats: LliteStats, why: str) -> None:
    """Count a bad line; warn about the first WARNED_LINES of a block one by one."""
    stats.bad_lines += 1
    if stats.bad_lines <= WARNED_LINES:
        log.warning("%s", why)


def parse_stats_file(text: str, filesystem: str, where: str = "stats") -> LliteStats:
    return _parse_block(filesystem, text.splitlines(), where)


def parse_lctl_output(text: str) -> list[LliteStats]:
    """Blocks of ``llite.<fs>-<id>.stats=`` followed by the stats lines."""
    blocks: list[LliteStats] = []
    name, lines = None, []
    for line in text.splitlines():
        if line.startswith("llite.") and line.rstrip().endswith("="):
            if name is not None:
                blocks.append(_parse_block(name, lines, "lctl"))
            name = line.split(".")[1]
            lines = []
        elif name is not None:
            lines.append(line)
    if name is not None:
        blocks.append(_parse_block(name, lines, "lctl"))
    return blocks


@register_collector("lustre")
class LustreCollector(Collector):
    """``mode="files"`` reads the stats files (``paths`` globs); ``mode="lctl"`` runs lctl."""

    def __init__(
        self,
        mode: str = "files",
        paths: tuple[str, ...] = STATS_GLOBS,
        host: str | None = None,
        lctl: str = "lctl",
    ) -> None:
        if mode not in ("files", "lctl"):
            raise CollectorError(
                f"unknown lustre mode {mode!r}", where="collect.sources.lustre.mode", fix="files or lctl"
            )
        self.mode, self.paths, self.lctl = mode, tuple(paths), lctl
        self.host = host or socket.gethostname()
        self.rates = RateTracker()

    def read(self) -> list[LliteStats]:
        if self.mode == "lctl":
            try:
                out = subprocess.run(
                    [self.lctl, "get_param", "llite.*.stats"], capture_output=True, text=True, timeout=10
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise CollectorError(
                    f"lctl failed: {exc}", where=self.lctl, fix="install the Lustre client tools"
                ) from exc
            if out.returncode != 0:
                raise CollectorError(f"lctl failed: {out.stderr.strip()[:200]}", where=self.lctl)
            return parse_lctl_output(out.stdout)
        found, errors = [], []
        for pattern in self.paths:
            for path in sorted(glob.glob(pattern)):
                try:
                    text = read_small_text(path)
                except PermissionError:
                    errors.append(f"{path}: permission denied")
                    continue
                except OSError as exc:  # the file system was unmounted between glob and read
                    errors.append(f"{path}: {exc.strerror or exc}")
                    continue
                except CollectorError as exc:  # a FIFO or an endless file at the path
                    errors.append(f"{path}: {exc.message}")
                    continue
                found.append(parse_stats_file(text, Path(path).parent.name, path))
        for error in errors:
            log.warning("lustre: %s", error)
        if not found:
            if errors:
                raise CollectorError(
                    f"no llite stats file could be read ({errors[0]})",
                    where=", ".join(self.paths),
                    fix="run the collector as root (debugfs is root-only), or use mode='lctl'",
                )
            raise CollectorError(
                "no llite stats found",
                where=", ".join(self.paths),
                fix="is a Lustre client mounted? Lustre >= 2.12 keeps them under /sys/kernel/debug",
            )
        return found

    def collect(self) -> list[Sample]:
        """Rates summed over the mounted file systems: one sample per metric and host."""
        totals: dict[str, float] = {}
        stamp = 0.0
        for stats in self.read():
            now = stats.snapshot_time or time.time()
            stamp = max(stamp, now)
            values = {f"{k}_ops": v for k, v in stats.counts.items()}
            values |= {k: v for k, v in stats.sums.items() if k.endswith("_bytes")}
            for key, value in values.items():
                # Keyed by the client instance: each mount has its own counters.
                rate = self.rates.update((stats.filesystem, key), now, value)
                if rate is not None:
                    metric = f"lustre_{key}_per_s"
                    totals[metric] = totals.get(metric, 0.0) + rate
        return [Sample(stamp, self.host, self.name, metric, value) for metric, value in totals.items()]
