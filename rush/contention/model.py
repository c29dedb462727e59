"""The contention model: machine, applications and the slowdown law (parameters fixed up front).

Every number here was written down from a stated physical assumption before any scheduling
experiment was run (sim/variability/README.md repeats them with the reasoning). Nothing in
this module knows about scheduling policies.

Machine. 512 nodes in 16 fat-tree *pods* of 32 nodes (``n000``..``n511``, pod = index // 32).
Each node has one 100 Gb/s link (``LINK_GBS`` = 12.5 GB/s). Inside a pod the leaf switches are
non-blocking, so intra-pod traffic never contends. The pod's uplinks to the spine are tapered
4:1 (``TAPER``): 32 x 12.5 / 4 = 100 GB/s per pod and direction, so traffic that leaves a pod
shares that capacity with every other job (and the noise job) in the pod. A Lustre-like
parallel file system of ``PFS_GBS`` = 100 GB/s aggregate (about 20 OSS of 5 GB/s) is shared
by all nodes.

Load. Every running job offers, per node, its nominal network demand (GB/s injected when it
runs unimpeded, averaged over the run) and I/O demand. The share of a node's traffic that
leaves its pod, for a job of N nodes with n of them in the pod, is ``locality x (N - n) / (N - 1)``
(uniform destinations scaled by the share of non-neighbour traffic). A pod's uplink
utilisation u_p is the sum of the off-pod traffic of its nodes over 100 GB/s; the PFS
utilisation is the sum of all I/O demand over 100 GB/s. The noise job's all-to-all counts
``HOTSPOT`` = 4 times its bandwidth in u_p: in a lossless, credit-based fabric (InfiniBand,
Omni-Path) an all-to-all's incast at its destinations backs up into the switches (tree
saturation, Pfister and Norton 1985), so flows sharing those switches queue far more than the
noise's bandwidth share alone would explain. Nominal demand (not the throttled
rate) is the input, as in a proportional-share network: when demand exceeds capacity every
flow gets capacity/demand of what it asked for, i.e. takes u times longer.

Slowdown. A job's unimpeded time splits into compute c, network n and I/O o (c + n + o = 1).
Compute never contends (nodes are exclusive). The off-pod part of the network time is slowed
by ``g(u) = max(1, u) x (1 + KAPPA_NET x min(u, 1)^2)``, where u is the worst utilisation over
the job's pods: the first factor is bandwidth sharing, the second the queueing delay of
latency-bound collectives, which grows with utilisation before the link saturates (at full
load they take 1 + KAPPA_NET times as long). I/O is slowed the same way with the PFS's
utilisation and ``KAPPA_IO``::

    S = c + n x ((1 - f) + f x g_net(u_pods)) + o x g_io(u_pfs)        f = off-pod share

Runtime integrates S over the run, progress-based: a job has ``work`` seconds of unimpeded
run (base runtime x a lognormal OS-jitter factor, sigma ``JITTER``); between two events it
progresses at 1 / S and S is re-evaluated at every event (a start, an end, a noise switch).
Fixing S at the start would ignore the noise switching on mid-run, which is exactly the
variability the scheduler is meant to dodge.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

NODES = 512
POD_SIZE = 32
PODS = NODES // POD_SIZE
# Cores per node as the core sees them: every job asks for whole nodes, exclusive (compute never
# contends), so the count only sizes the core's node requests, not any slowdown.
CORES_PER_NODE = 32
LINK_GBS = 12.5  # 100 Gb/s EDR / Omni-Path class link, per node and direction
TAPER = 4.0  # pod uplinks oversubscribed 4:1
POD_UPLINK_GBS = POD_SIZE * LINK_GBS / TAPER  # 100 GB/s per pod and direction
PFS_GBS = 100.0  # Lustre-like aggregate bandwidth
KAPPA_NET = 1.5  # latency-bound collectives at full uplink load take 2.5x as long
KAPPA_IO = 0.5  # OST/metadata queueing at full PFS load adds 50 % to I/O time
# Tree saturation: the noise job's all-to-all incast back-pressures the lossless fabric, so
# flows sharing an uplink with it queue as if its load were this many times its bandwidth.
HOTSPOT = 4.0
JITTER = 0.02  # lognormal sigma of the run-to-run OS noise of a run on an idle machine
REQUEST_FACTOR = 2.0  # users request twice the unimpeded runtime (walltime not enforced)


@dataclass(frozen=True)
class App:
    """One proxy application: time split, per-node demands at its reference size, base runtime."""

    name: str
    wtype: str  # compute | network | io (the model's one-hot workload type)
    compute: float
    network: float
    io: float
    net_gbs: float  # per-node injection, averaged over an unimpeded run
    io_gbs: float  # per-node PFS traffic (read + write), averaged over an unimpeded run
    locality: float  # share of traffic that is not nearest-neighbour (0 all local, 1 uniform)
    base: float  # unimpeded runtime on 16 nodes, seconds
    read_share: float = 0.3  # share of I/O that is reads (the rest writes)
    cpu: float = 0.95  # CPU busy fraction while computing

    def __post_init__(self) -> None:
        if abs(self.compute + self.network + self.io - 1.0) > 1e-9:
            raise ValueError(f"{self.name}: time shares must sum to 1")


# Modelled on LLNL/ECP proxy applications of the three kinds; demands are per-node averages at
# 16 nodes from their published communication/I-O character, not measurements.
APPS: dict[str, App] = {
    a.name: a
    for a in (
        # Algebraic multigrid: halo exchanges plus coarse-level collectives (latency-bound).
        App("AMG", "network", 0.45, 0.55, 0.0, 8.0, 0.0, 0.8, 240.0),
        # Deterministic transport sweeps: pipelined neighbour messages.
        App("Kripke", "network", 0.40, 0.60, 0.0, 6.0, 0.0, 0.5, 300.0),
        # Lattice QCD CG: 4-d halo plus many small allreduces.
        App("MILC", "network", 0.35, 0.65, 0.0, 10.0, 0.0, 0.7, 360.0),
        # High-order Lagrangian hydro: compute-heavy, small halos.
        App("Laghos", "compute", 0.85, 0.15, 0.0, 2.0, 0.0, 0.5, 300.0),
        # Unstructured-mesh hydro: memory-bound node work, few messages.
        App("PENNANT", "compute", 0.90, 0.10, 0.0, 1.0, 0.0, 0.5, 200.0),
        # Seismic wave propagation writing images and checkpoints.
        App("SW4lite", "io", 0.60, 0.10, 0.30, 1.0, 0.4, 0.5, 280.0, read_share=0.1),
        # I/O proxy: multi-file checkpoint dumps and restarts.
        App("MACSio", "io", 0.25, 0.05, 0.70, 0.5, 1.0, 0.5, 180.0, read_share=0.3),
    )
}
APP_NAMES: tuple[str, ...] = tuple(APPS)
# The three applications of the ADPA/PDPA scenarios (one of each kind); PDPA's model is trained
# on the other four.
THREE_APPS: tuple[str, ...] = ("MILC", "Laghos", "MACSio")


def scaled(app: App, nodes: int, scaling: str) -> tuple[float, float, float]:
    """(base runtime, per-node net demand, per-node I/O demand) of ``app`` on ``nodes`` nodes.

    Reference size 16. Weak scaling keeps the work per node: runtime and per-node demands stay.
    Strong scaling divides a fixed problem: the compute part scales as 16/N, communication
    per node stays about constant in time (surface/volume), so the runtime is
    base x (c x 16/N + n + o) and per-node demand rises by the factor the run got shorter for
    the network share, while per-node I/O volume falls as 16/N over a time falling less.
    """
    if scaling == "weak" or nodes == 16:
        return app.base, app.net_gbs, app.io_gbs
    ratio = 16.0 / nodes
    time_factor = app.compute * ratio + app.network + app.io
    base = app.base * time_factor
    # Per-node network bytes scale with the surface of the per-node domain, ~ ratio^(2/3).
    net = app.net_gbs * ratio ** (2.0 / 3.0) / time_factor
    io = app.io_gbs * ratio / time_factor
    return base, net, io


def g(u: np.ndarray | float, kappa: float) -> np.ndarray:
    """Slowdown of the contended part at utilisation u (monotone non-decreasing, 1 at u = 0)."""
    u = np.asarray(u, dtype=np.float64)
    return np.maximum(1.0, u) * (1.0 + kappa * np.minimum(u, 1.0) ** 2)


def pod_of(nodes: np.ndarray) -> np.ndarray:
    return np.asarray(nodes) // POD_SIZE


def off_pod_share(nodes: np.ndarray, locality: float) -> np.ndarray:
    """Per node of a job: share of its traffic that leaves its pod (uniform destinations x locality)."""
    nodes = np.asarray(nodes)
    n = len(nodes)
    if n <= 1:
        return np.zeros(n)
    pods = pod_of(nodes)
    counts = np.bincount(pods, minlength=PODS)
    return locality * (n - counts[pods]) / (n - 1)


def hostname(node: int) -> str:
    return f"n{node:03d}"
