"""A node counter for each broker of a Flux test instance: the CPU its jobs' processes use.

Every broker of ``flux start --test-size=N`` is a fake node on this host, so this host's procfs
counters are the same for all of them. What does differ per broker is what its jobs do: each
job's shell (``flux-shell``) runs under the broker of each node the job got, and its tasks
under the shell. This collector sums, per broker, the CPU time (``/proc/PID/stat``: user +
system) of every process under a ``flux-shell`` of that broker, as cores busy: a node running
collectors/noise.py's network kind (a loopback TCP stream) keeps about one core busy, a node
running ``sleep`` or nothing ~0. (Socket traffic is not in a process's ``/proc/PID/io``, and
``/proc/PID/net/dev`` is the host's.) Samples are named ``node<rank>`` (the instance's
``--test-hosts``), source ``broker_tasks``, metric :data:`METRIC`.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from rush.collect.base import Sample

SOURCE = "broker_tasks"
METRIC = "task_cpu_busy"
TICKS = os.sysconf("SC_CLK_TCK")


def _processes() -> dict[int, tuple[int, str, int]]:
    """pid -> (parent pid, command name, CPU ticks used) of every process visible now."""
    found: dict[int, tuple[int, str, int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue  # ended meanwhile
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        # proc(5): after the name, field 4 is the parent, 14 and 15 user and system ticks.
        found[int(entry.name)] = (int(fields[1]), name, int(fields[11]) + int(fields[12]))
    return found


class BrokerTasks:
    """Per-broker job-process CPU use of a running :class:`tests.flux.instance.FluxInstance`."""

    name = SOURCE

    def __init__(self, flux: Any) -> None:
        self.brokers = {
            int(flux.run("exec", "-r", str(rank), "flux", "getattr", "broker.pid").stdout): f"node{rank}"
            for rank in range(flux.size)
        }
        self._last: tuple[float, dict[int, int]] | None = None

    def _tasks(self) -> dict[int, tuple[str, int]]:
        """pid -> (node name, CPU ticks) of every process under a flux-shell of a broker."""
        table = _processes()
        owner: dict[int, tuple[str, int]] = {}
        for pid in table:
            chain, cursor, node = [], pid, None
            while cursor in table and cursor not in self.brokers and len(chain) < 64:
                chain.append(cursor)
                cursor = table[cursor][0]
            if cursor in self.brokers and chain and table[chain[-1]][1] == "flux-shell":
                node = self.brokers[cursor]
            if node is not None:
                owner[pid] = (node, table[pid][2])
        return owner

    def collect(self) -> list[Sample]:
        now = time.time()
        owner = self._tasks()
        last, self._last = self._last, (now, {pid: ticks for pid, (_, ticks) in owner.items()})
        if last is None or now <= last[0]:
            return []
        used = dict.fromkeys(self.brokers.values(), 0)
        for pid, (node, ticks) in owner.items():
            # A process new since the last reading counts what it used since it began.
            used[node] += max(0, ticks - last[1].get(pid, 0))
        span = now - last[0]
        return [Sample(now, node, SOURCE, METRIC, n / TICKS / span) for node, n in sorted(used.items())]
