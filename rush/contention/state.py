"""Machine state -> per-job slowdowns, link utilisations and per-node counter rates.

:class:`Fabric` applies the laws of :mod:`rush.contention.model` to one machine and noise job:
:meth:`Fabric.evaluate` reads which job holds each node and the noise level and returns every
running job's slowdown and every node's counter rates, so runtimes and counters always come
from the same state; :meth:`Fabric.slowdown_if_started` is the same law for a job not yet
running (the present-state oracle and the simulated MPI probe use it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rush.contention.apps import APPS, App, scaled
from rush.contention.machine import Machine
from rush.contention.model import HOTSPOT, g_bw, g_io, h_lat, off_shares, uniform_off
from rush.contention.noise import NoiseSpec

# Counter synthesis constants (units of the real collectors: bytes/s, packets/s, ticks/s).
PACKET_BYTES = 2048.0  # mean packet: a mix of 4 KiB MTU packets and small control packets
IO_OP_BYTES = 1 << 20  # 1 MiB Lustre RPCs
WAIT_TICKS = 2.0e7  # PortXmitWait ticks per second of a fully blocked port
IDLE_NET_GBS = 0.002  # management and monitoring traffic on an idle node
IDLE_CPU = 0.01
NOISE_CPU = 0.3
METRICS: dict[str, tuple[str, ...]] = {
    "sysfs_ib": (
        "ib_xmit_bytes_per_s",
        "ib_rcv_bytes_per_s",
        "ib_port_xmit_packets_per_s",
        "ib_port_rcv_packets_per_s",
        "ib_port_xmit_wait_per_s",
    ),
    "lustre": (
        "lustre_read_bytes_per_s",
        "lustre_write_bytes_per_s",
        "lustre_read_ops_per_s",
        "lustre_write_ops_per_s",
        "lustre_open_ops_per_s",
    ),
    "procfs": ("cpu_busy_frac",),
}
METRIC_NAMES: tuple[str, ...] = tuple(m for ms in METRICS.values() for m in ms)
COLUMN = {m: k for k, m in enumerate(METRIC_NAMES)}


@dataclass
class Running:
    """A running (or candidate) job as the contention model sees it."""

    job_id: int
    app: App
    nodes: np.ndarray
    net_gbs: float  # per-node demand at this size and scaling
    io_gbs: float
    off_leaf: np.ndarray = field(default_factory=lambda: np.zeros(0))
    off_pod: np.ndarray = field(default_factory=lambda: np.zeros(0))
    spans: bool = False  # more than one leaf: its collectives cross an uplink

    @classmethod
    def of(
        cls, job_id: int, app: str, nodes: np.ndarray, machine: Machine, size_scaling: str = "weak"
    ) -> Running:
        spec = APPS[app]
        nodes = np.asarray(nodes, dtype=np.int64)
        s = scaled(spec, len(nodes), size_scaling)
        leaf, pod = off_shares(spec, nodes, machine)
        spans = bool(len(np.unique(machine.leaf_of[nodes])) > 1)
        return cls(job_id, spec, nodes, s.net_gbs, s.io_gbs, leaf, pod, spans)


@dataclass(frozen=True)
class Utilisation:
    leaf: np.ndarray  # per leaf uplink, what the queues see (noise counted HOTSPOT times)
    pod: np.ndarray  # per pod uplink (zeros with one pod)
    pfs: float
    leaf_raw: np.ndarray  # bandwidth actually offered


@dataclass(frozen=True)
class Evaluation:
    slowdown: dict[int, float]  # job_id -> S
    util: Utilisation
    rates: np.ndarray  # (nodes, len(METRIC_NAMES)) counter rates, noise-free


class Fabric:
    """One machine with its noise job: loads, utilisations, slowdowns and counter rates."""

    def __init__(self, machine: Machine, noise: NoiseSpec) -> None:
        self.machine = machine
        self.noise_nodes = noise.nodes(machine)
        self._noise_leaf = machine.leaf_of[self.noise_nodes]
        self._noise_pod = machine.pod_of[self.noise_nodes]
        self._noise_off_leaf = uniform_off(self._noise_leaf, len(self.noise_nodes))
        self._noise_off_pod = uniform_off(self._noise_pod, len(self.noise_nodes))

    # -- load and utilisation ----------------------------------------------------------------
    def utilisation(self, running: list[Running], noise_level: float) -> Utilisation:
        m = self.machine
        leaf = np.zeros(m.leaves)
        pod = np.zeros(m.pods)
        pfs = 0.0
        for r in running:
            np.add.at(leaf, m.leaf_of[r.nodes], r.net_gbs * r.off_leaf)
            if m.pods > 1:
                np.add.at(pod, m.pod_of[r.nodes], r.net_gbs * r.off_pod)
            pfs += r.io_gbs * len(r.nodes)
        noise_gbs = noise_level * m.link_gbs
        noise_leaf = np.zeros(m.leaves)
        np.add.at(noise_leaf, self._noise_leaf, noise_gbs * self._noise_off_leaf)
        noise_pod = np.zeros(m.pods)
        if m.pods > 1:
            np.add.at(noise_pod, self._noise_pod, noise_gbs * self._noise_off_pod)
        return Utilisation(
            (leaf + HOTSPOT * noise_leaf) / m.leaf_uplink_gbs,
            (pod + HOTSPOT * noise_pod) / m.pod_uplink_gbs,
            pfs / m.pfs_gbs,
            (leaf + noise_leaf) / m.leaf_uplink_gbs,
        )

    def worst_util(self, r: Running, util: Utilisation) -> float:
        """The worst utilisation over the uplinks the job's traffic crosses."""
        m = self.machine
        crossing = r.off_leaf > 0
        u = float(util.leaf[m.leaf_of[r.nodes[crossing]]].max()) if crossing.any() else 0.0
        if m.pods > 1 and (r.off_pod > 0).any():
            u = max(u, float(util.pod[m.pod_of[r.nodes[r.off_pod > 0]]].max()))
        if r.spans and not crossing.any():
            u = max(u, float(util.leaf[m.leaf_of[r.nodes]].max()))
        return u

    def slowdown(self, r: Running, util: Utilisation) -> float:
        app = r.app
        u = self.worst_util(r, util)
        f = 1.0 if app.pattern == "ring" and r.off_leaf.any() else float(r.off_leaf.mean())
        s = 1.0 if r.spans else 0.0
        return float(
            app.compute
            + app.bandwidth * ((1.0 - f) + f * g_bw(u))
            + app.latency * ((1.0 - s) + s * h_lat(u))
            + app.io * g_io(util.pfs)
        )

    def slowdown_if_started(self, running: list[Running], noise_level: float, candidate: Running) -> float:
        """The candidate's slowdown if it started now beside ``running`` (the present state)."""
        return self.slowdown(candidate, self.utilisation([*running, candidate], noise_level))

    # -- the whole state -----------------------------------------------------------------------
    def evaluate(self, running: list[Running], noise_level: float) -> Evaluation:
        m = self.machine
        util = self.utilisation(running, noise_level)
        g_leaf = g_bw(util.leaf)
        net = np.full(m.nodes, IDLE_NET_GBS)
        cpu = np.full(m.nodes, IDLE_CPU)
        wait = np.zeros(m.nodes)
        read = np.zeros(m.nodes)
        write = np.zeros(m.nodes)
        opens = np.zeros(m.nodes)
        slowdown: dict[int, float] = {}
        for r in running:
            app = r.app
            s = self.slowdown(r, util)
            slowdown[r.job_id] = s
            net[r.nodes] = r.net_gbs / s
            cpu[r.nodes] = app.compute * app.cpu / s + 0.05
            leaves = m.leaf_of[r.nodes]
            wait[r.nodes] = (
                r.off_leaf * (1.0 - 1.0 / g_leaf[leaves]) * np.minimum(1.0, r.net_gbs / s / m.link_gbs)
            )
            io = r.io_gbs / s
            read[r.nodes] = io * app.read_share
            write[r.nodes] = io * (1.0 - app.read_share)
            opens[r.nodes] = 20.0 * app.io / s
        if noise_level > 0:
            share = np.maximum(1.0, util.leaf_raw[self._noise_leaf])
            net[self.noise_nodes] = noise_level * m.link_gbs / share
            cpu[self.noise_nodes] = NOISE_CPU
            wait[self.noise_nodes] = self._noise_off_leaf * (1.0 - 1.0 / g_leaf[self._noise_leaf])
        rates = np.empty((m.nodes, len(METRIC_NAMES)))
        rates[:, COLUMN["ib_xmit_bytes_per_s"]] = net * 1e9
        rates[:, COLUMN["ib_rcv_bytes_per_s"]] = net * 1e9
        rates[:, COLUMN["ib_port_xmit_packets_per_s"]] = net * 1e9 / PACKET_BYTES
        rates[:, COLUMN["ib_port_rcv_packets_per_s"]] = net * 1e9 / PACKET_BYTES
        rates[:, COLUMN["ib_port_xmit_wait_per_s"]] = wait * WAIT_TICKS
        rates[:, COLUMN["lustre_read_bytes_per_s"]] = read * 1e9
        rates[:, COLUMN["lustre_write_bytes_per_s"]] = write * 1e9
        rates[:, COLUMN["lustre_read_ops_per_s"]] = read * 1e9 / IO_OP_BYTES
        rates[:, COLUMN["lustre_write_ops_per_s"]] = write * 1e9 / IO_OP_BYTES
        rates[:, COLUMN["lustre_open_ops_per_s"]] = opens
        rates[:, COLUMN["cpu_busy_frac"]] = cpu
        return Evaluation(slowdown, util, rates)
