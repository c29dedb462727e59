"""Machine state -> per-job slowdowns and per-node counter rates (the contention model applied).

One function, :func:`evaluate`, reads which job holds each node and the noise level, and
returns every running job's slowdown S and every node's counter rates, so runtimes and
counters always come from the same state.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rush.contention.model import (
    APPS,
    HOTSPOT,
    KAPPA_IO,
    KAPPA_NET,
    LINK_GBS,
    NODES,
    PFS_GBS,
    POD_SIZE,
    POD_UPLINK_GBS,
    PODS,
    g,
    off_pod_share,
    pod_of,
)
from rush.contention.noise import noise_nodes

# Counter synthesis constants (units of the real collectors: bytes/s, packets/s, ticks/s).
PACKET_BYTES = 2048.0  # mean IB packet: a mix of 4 KiB MTU packets and small control packets
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


@dataclass
class Running:
    """A running job as the contention model sees it."""

    job_id: int
    app: str
    nodes: np.ndarray
    net_gbs: float  # per-node demand at this size and scaling
    io_gbs: float
    off: np.ndarray = field(default_factory=lambda: np.zeros(0))  # per node off-pod share

    def __post_init__(self) -> None:
        if len(self.off) != len(self.nodes):
            self.off = off_pod_share(self.nodes, APPS[self.app].locality)


@dataclass(frozen=True)
class Evaluation:
    slowdown: dict[int, float]  # job_id -> S
    pod_util: np.ndarray  # (PODS,) uplink utilisation
    pfs_util: float
    rates: np.ndarray  # (NODES, len(METRIC_NAMES)) counter rates, noise-free


NOISE = noise_nodes()
_NOISE_OFF = off_pod_share(NOISE, 1.0)


def evaluate(running: list[Running], noise_level: float) -> Evaluation:
    """Slowdowns and noise-free per-node counter rates for this state."""
    uplink = np.zeros(PODS)
    pfs = 0.0
    for r in running:
        np.add.at(uplink, pod_of(r.nodes), r.net_gbs * r.off)
        pfs += r.io_gbs * len(r.nodes)
    noise_gbs = noise_level * LINK_GBS
    noise_load = np.zeros(PODS)
    np.add.at(noise_load, pod_of(NOISE), noise_gbs * _NOISE_OFF)
    raw_util = (uplink + noise_load) / POD_UPLINK_GBS  # bandwidth actually offered
    pod_util = (uplink + HOTSPOT * noise_load) / POD_UPLINK_GBS  # what the queues see
    pfs_util = pfs / PFS_GBS
    g_pod = g(pod_util, KAPPA_NET)
    g_io = float(g(pfs_util, KAPPA_IO))

    rates = np.zeros((NODES, len(METRIC_NAMES)))
    col = {m: k for k, m in enumerate(METRIC_NAMES)}
    net = np.full(NODES, IDLE_NET_GBS)
    cpu = np.full(NODES, IDLE_CPU)
    wait = np.zeros(NODES)
    read = np.zeros(NODES)
    write = np.zeros(NODES)
    opens = np.zeros(NODES)
    slowdown: dict[int, float] = {}
    for r in running:
        app = APPS[r.app]
        pods = pod_of(r.nodes)
        # The job's network phase advances at the pace of its most congested pod (bulk-synchronous).
        worst = float(g_pod[pods].max())
        f = float(r.off.mean())
        s = app.compute + app.network * ((1.0 - f) + f * worst) + app.io * g_io
        slowdown[r.job_id] = s
        net[r.nodes] = r.net_gbs / s
        cpu[r.nodes] = app.compute * app.cpu / s + 0.05
        wait[r.nodes] = r.off * (1.0 - 1.0 / g_pod[pods]) * np.minimum(1.0, r.net_gbs / s / LINK_GBS)
        io = r.io_gbs / s
        read[r.nodes] = io * app.read_share
        write[r.nodes] = io * (1.0 - app.read_share)
        opens[r.nodes] = 20.0 * app.io / s
    if noise_level > 0:
        share = np.maximum(1.0, raw_util[pod_of(NOISE)])
        net[NOISE] = noise_gbs / share
        cpu[NOISE] = NOISE_CPU
        wait[NOISE] = _NOISE_OFF * (1.0 - 1.0 / g_pod[pod_of(NOISE)])
    rates[:, col["ib_xmit_bytes_per_s"]] = net * 1e9
    rates[:, col["ib_rcv_bytes_per_s"]] = net * 1e9
    rates[:, col["ib_port_xmit_packets_per_s"]] = net * 1e9 / PACKET_BYTES
    rates[:, col["ib_port_rcv_packets_per_s"]] = net * 1e9 / PACKET_BYTES
    rates[:, col["ib_port_xmit_wait_per_s"]] = wait * WAIT_TICKS
    rates[:, col["lustre_read_bytes_per_s"]] = read * 1e9
    rates[:, col["lustre_write_bytes_per_s"]] = write * 1e9
    rates[:, col["lustre_read_ops_per_s"]] = read * 1e9 / IO_OP_BYTES
    rates[:, col["lustre_write_ops_per_s"]] = write * 1e9 / IO_OP_BYTES
    rates[:, col["lustre_open_ops_per_s"]] = opens
    rates[:, col["cpu_busy_frac"]] = cpu
    return Evaluation(slowdown, pod_util, pfs_util, rates)


def pods_free(free: np.ndarray) -> np.ndarray:
    """Free nodes per pod."""
    return free.reshape(PODS, POD_SIZE).sum(axis=1)
