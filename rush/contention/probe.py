"""The MPI probe (collectors/mpi_probe.py) simulated on a set of nodes from the link state.

The real probe runs inside a job's allocation: a token ring (rank r sends ``RING_BYTES`` to
r + 1 and receives from r - 1, ``send``/``recv`` seconds per lap) and an ``MPI_Allreduce`` of
``ALLREDUCE_BYTES``, and reports the minimum, maximum and mean over ranks of each (the nine
features of :mod:`rush.collect.probe`). Here one rank per node, in node order; an edge between
two nodes on one leaf never contends, an edge that leaves the leaf moves its bytes at the
bandwidth law ``g_bw`` and pays its latency at the queueing law ``h_lat`` of the worst uplink
it crosses (the same laws that slow the jobs, :mod:`rush.contention.model`). The allreduce is
the ring algorithm MPI uses for large messages: 2 (N - 1) steps, each bounded by the slowest
edge. Every timing gets a lognormal measurement noise (sigma ``PROBE_NOISE``). The probe is
short (tenths of a second), so its own traffic does not change the state.
"""

from __future__ import annotations

import numpy as np

from rush.collect.probe import FEATURES
from rush.contention.model import g_bw, h_lat
from rush.contention.state import Fabric, Utilisation

RING_BYTES = 100e6  # the real probe's defaults (--ring-bytes 100MB, --allreduce-bytes 100MB)
ALLREDUCE_BYTES = 100e6
LATENCY_S = 2e-6  # unloaded small-message latency through the fabric
PROBE_NOISE = 0.05


def edge_util(fabric: Fabric, util: Utilisation, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per edge a[i] -> b[i]: the worst utilisation of the uplinks it crosses (0 within a leaf)."""
    m = fabric.machine
    la, lb = m.leaf_of[a], m.leaf_of[b]
    u = np.where(la != lb, np.maximum(util.leaf[la], util.leaf[lb]), 0.0)
    if m.pods > 1:
        pa, pb = m.pod_of[a], m.pod_of[b]
        u = np.where(pa != pb, np.maximum(u, np.maximum(util.pod[pa], util.pod[pb])), u)
    return u


def simulate_probe(
    fabric: Fabric, util: Utilisation, nodes: np.ndarray, rng: np.random.Generator
) -> dict[str, float]:
    """The nine probe features (seconds per iteration) of a probe on ``nodes`` now."""
    nodes = np.asarray(nodes, dtype=np.int64)
    n = len(nodes)
    link = fabric.machine.link_gbs * 1e9
    if n < 2:
        return dict.fromkeys(FEATURES, 0.0)
    nxt = np.roll(nodes, -1)
    u = edge_util(fabric, util, nodes, nxt)
    edge = LATENCY_S * h_lat(u) + RING_BYTES / link * g_bw(u)
    send = edge
    recv = edge.sum() - np.roll(edge, 1)  # waiting for the token to come round to this rank
    worst = float(u.max())
    steps = 2 * (n - 1)
    allreduce = steps * (LATENCY_S * float(h_lat(worst)) + ALLREDUCE_BYTES / n / link * float(g_bw(worst)))
    times = {
        "send": send * rng.lognormal(0.0, PROBE_NOISE, n),
        "recv": recv * rng.lognormal(0.0, PROBE_NOISE, n),
        "allreduce": allreduce * rng.lognormal(0.0, PROBE_NOISE, n),
    }
    out = {}
    for op, values in times.items():
        out[f"{op}_min"] = float(values.min())
        out[f"{op}_max"] = float(values.max())
        out[f"{op}_mean"] = float(values.mean())
    return {name: out[name] for name in FEATURES}
