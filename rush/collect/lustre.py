"""Lustre client statistics: ``lctl get_param llite.*.stats`` and the llite stats files.

The format (``/proc/fs/lustre/llite/<fs>-<id>/stats`` or
``/sys/kernel/debug/lustre/llite/<fs>-<id>/stats``)::

    snapshot_time             1700000000.123456789 secs.nsecs
    read_bytes                1234 samples [bytes] 4096 1048576 987654321 [sumsq]
    open                      42 samples [usecs]

``lctl get_param`` prefixes each file with a ``llite.<fs>-<id>.stats=`` line. Counts and
byte sums are counters; the collector turns them into per-second rates.
"""

from __future__ import annotations

import glob
import logging
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from rush.collect.base import Collector, Sample, register_collector
from rush.collect.rates import RateTracker
from rush.errors import CollectorError

log = logging.getLogger(__name__)
STATS_GLOBS = ("/proc/fs/lustre/llite/*/stats", "/sys/kernel/debug/lustre/llite/*/stats")


@dataclass
class LliteStats:
    filesystem: str
    snapshot_time: float | None = None
    counts: dict[str, float] = field(default_factory=dict)
    sums: dict[str, float] = field(default_factory=dict)  # e.g. read_bytes -> total bytes


def _parse_block(name: str, lines: list[str], where: str) -> LliteStats:
    stats = LliteStats(filesystem=name)
    for lineno, line in enumerate(lines, start=1):
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "snapshot_time":
            stats.snapshot_time = float(parts[1])
            continue
        if parts[0] in ("start_time", "elapsed_time"):
            continue
        if len(parts) < 3 or parts[2] != "samples":
            log.warning("%s:%d: not a stats line: %r", where, lineno, line[:60])
            continue
        try:
            stats.counts[parts[0]] = float(parts[1])
            # name count samples [unit] min max sum [sumsq]
            if len(parts) >= 7:
                stats.sums[parts[0]] = float(parts[6])
        except ValueError:
            log.warning("%s:%d: bad number in %r", where, lineno, line[:60])
    return stats


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


def _fs_label(instance: str) -> str:
    # "lustre-ffff8881234" -> "lustre"
    return instance.rsplit("-", 1)[0] if "-" in instance else instance


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
        found = []
        for pattern in self.paths:
            for path in sorted(glob.glob(pattern)):
                try:
                    text = Path(path).read_text()
                except PermissionError as exc:
                    raise CollectorError(
                        "permission denied", where=path, fix="run as root (debugfs is root-only)"
                    ) from exc
                except OSError as exc:
                    log.warning("%s: %s", path, exc)
                    continue
                found.append(parse_stats_file(text, Path(path).parent.name, path))
        if not found:
            raise CollectorError(
                "no llite stats found", where=", ".join(self.paths), fix="is a Lustre client mounted?"
            )
        return found

    def collect(self) -> list[Sample]:
        samples = []
        for stats in self.read():
            now = stats.snapshot_time or time.time()
            fs = _fs_label(stats.filesystem)
            values = {f"{k}_ops": v for k, v in stats.counts.items()}
            values |= {k: v for k, v in stats.sums.items() if k.endswith("_bytes")}
            for key, value in values.items():
                rate = self.rates.update((fs, key), now, value)
                if rate is not None:
                    samples.append(Sample(now, self.host, self.name, f"lustre_{key}_per_s", rate))
        return samples
