"""The contention laws: how link, switch and file-system load slow a job (parameters fixed up front).

Every constant here was written down from a stated physical assumption before any
RUSH-versus-FCFS comparison was run (sim/variability/README.md gives the order in which the
set-up was fixed). Nothing here knows about scheduling policies.

Load. Every running job offers, per node, its nominal injection rate (what it sends when it
runs unimpeded). The part of a node's traffic that leaves its leaf switch depends on the job's
pattern (:func:`off_shares`): all-to-all traffic goes uniformly to the job's other nodes, so
the share is ``(N - n_leaf) / (N - 1)`` for a job of N nodes with n_leaf of them on the leaf;
halo traffic is mostly to neighbours, so that share is scaled by the app's ``locality``; a
ring allreduce sends everything to the next node, so a node's traffic leaves the leaf exactly
when its ring successor is on another leaf. A leaf's uplink utilisation is the off-leaf traffic
of its nodes over the uplink capacity (likewise for pods in the multi-pod variant); the file
system's is the sum of every node's I/O over its aggregate bandwidth.

The noise job's all-to-all counts ``HOTSPOT`` = 4 times its bandwidth in the utilisation its
neighbours see: in a lossless, credit-based fabric (Omni-Path, InfiniBand) an all-to-all's
incast backs up into the switches (tree saturation, Pfister and Norton 1985), so flows that
share those switches queue far more than the noise's bandwidth share alone would explain.

Slowdown. A job's unimpeded time splits into compute c, bandwidth-bound messages b,
latency-bound collectives l and I/O o (c + b + l + o = 1); u is the worst utilisation over the
uplinks its traffic crosses::

    S = c + b x ((1 - f) + f x g_bw(u)) + l x ((1 - s) + s x h(u)) + o x g_io(u_pfs)

with f the job's off-leaf share of bulk traffic (1 for a ring that crosses a leaf: every step
waits for the slowest edge) and s = 1 when the job spans more than one leaf (its collectives
cross an uplink), else 0.

* ``g_bw(u) = max(1, u) x (1 + KAPPA_BW x min(u, 1)^2)``: proportional sharing above
  saturation (demand over capacity is how much longer each flow takes), plus congestion-control
  inefficiency below it (+50 % at full load);
* ``h(u) = 1 + KAPPA_LAT x v / (1 - v)``, v = min(u, U_MAX): an M/M/1 queue at the uplink, the
  waiting time of a small message in units of the unloaded latency (+30 % at u = 0.5, 3.7x at
  u = 0.9); latency-bound collectives are what makes an app like Laghos variation-prone;
* ``g_io``: like ``g_bw`` with ``KAPPA_IO`` = 0.5 (OST and metadata queueing).

Runtime integrates S over the run, progress-based: a job has ``work`` seconds of unimpeded run
(base runtime x a lognormal OS-jitter factor, sigma ``JITTER``), and between two events it
progresses at 1 / S, re-evaluated at every event (a start, an end, a change of the noise).
"""

from __future__ import annotations

import numpy as np

from rush.contention.apps import App
from rush.contention.machine import Machine

KAPPA_BW = 0.5
KAPPA_LAT = 0.3
U_MAX = 0.95  # the queueing term is capped: above it flows are bandwidth-shared (g_bw)
KAPPA_IO = 0.5
HOTSPOT = 4.0
JITTER = 0.02  # lognormal sigma of the run-to-run OS noise of a run on an idle machine
REQUEST_FACTOR = 2.0  # users request twice the unimpeded runtime (walltime not enforced)


def g_bw(u: np.ndarray | float) -> np.ndarray:
    """Slowdown of bandwidth-bound traffic at utilisation u (1 at u = 0, non-decreasing)."""
    u = np.asarray(u, dtype=np.float64)
    return np.maximum(1.0, u) * (1.0 + KAPPA_BW * np.minimum(u, 1.0) ** 2)


def h_lat(u: np.ndarray | float) -> np.ndarray:
    """Slowdown of latency-bound collectives at utilisation u (1 at u = 0, non-decreasing)."""
    v = np.minimum(np.asarray(u, dtype=np.float64), U_MAX)
    return 1.0 + KAPPA_LAT * v / (1.0 - v)


def g_io(u: np.ndarray | float) -> np.ndarray:
    u = np.asarray(u, dtype=np.float64)
    return np.maximum(1.0, u) * (1.0 + KAPPA_IO * np.minimum(u, 1.0) ** 2)


def uniform_off(groups: np.ndarray, count: int) -> np.ndarray:
    """Per node: the share of uniform traffic to the other nodes that leaves its group."""
    n = len(groups)
    if n <= 1:
        return np.zeros(n)
    _, inverse, counts = np.unique(groups, return_inverse=True, return_counts=True)
    return (n - counts[inverse]) / (n - 1)


def off_shares(app: App, nodes: np.ndarray, machine: Machine) -> tuple[np.ndarray, np.ndarray]:
    """Per node of a job: (share of its traffic leaving its leaf, share leaving its pod)."""
    leaves = machine.leaf_of[nodes]
    pods = machine.pod_of[nodes]
    if app.pattern == "ring":
        nxt = np.roll(np.arange(len(nodes)), -1)
        return (leaves[nxt] != leaves).astype(float), (pods[nxt] != pods).astype(float)
    scale = 1.0 if app.pattern == "alltoall" else app.locality
    return scale * uniform_off(leaves, len(nodes)), scale * uniform_off(pods, len(nodes))
