"""The simulated machine: nodes, leaf switches, pods and their tapered uplinks.

The paper's machine (Nichols et al., IPDPS'22) is a 512-node allocation of LLNL's Quartz, whose
512 nodes lie in one pod of its Omni-Path fat-tree. Inside a pod, nodes hang off 48-port edge
(leaf) switches, 32 nodes down and 16 links up to the pod's spine switches: a 2:1 taper
(``leaf_taper``), so the leaf's uplinks carry at most ``leaf_size x link_gbs / leaf_taper``
= 200 GB/s per direction, shared by every flow that leaves the leaf. The pod's spine is
non-blocking (its switches have as many ports as the leaves' uplinks). That is the default,
``one pod of 512``: contention happens on leaf uplinks only.

The tapered multi-pod variant (``pod_size < nodes``; a sensitivity run) adds a second level:
traffic leaving a pod shares ``pod_size x link_gbs / pod_taper`` per pod and direction.

Nodes are ``n000``.. in rank order (the order Flux's default match takes them); leaf
``k // leaf_size``, pod ``k // pod_size``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

MAX_NODES = 65_536


@dataclass(frozen=True)
class Machine:
    nodes: int = 512
    leaf_size: int = 32
    leaf_taper: float = 2.0
    pod_size: int = 512
    pod_taper: float = 4.0
    link_gbs: float = 12.5  # 100 Gb/s Omni-Path, per node and direction
    pfs_gbs: float = 100.0  # Lustre-like aggregate bandwidth
    cores_per_node: int = 36  # Quartz: 2 x 18-core Xeon E5-2695 v4
    name: str = "paper"

    def __post_init__(self) -> None:
        # The study's loader (rush.contention.spec) gives the user-facing errors; this guards code.
        ok = (
            0 < self.leaf_size <= self.pod_size <= self.nodes <= MAX_NODES
            and self.nodes % self.pod_size == 0
            and self.pod_size % self.leaf_size == 0
            and self.leaf_taper >= 1.0
            and self.pod_taper >= 1.0
            and self.link_gbs > 0
            and self.pfs_gbs > 0
        )
        if not ok:
            raise ValueError(f"inconsistent machine {self}")

    @property
    def leaves(self) -> int:
        return self.nodes // self.leaf_size

    @property
    def pods(self) -> int:
        return self.nodes // self.pod_size

    @property
    def leaf_uplink_gbs(self) -> float:
        return self.leaf_size * self.link_gbs / self.leaf_taper

    @property
    def pod_uplink_gbs(self) -> float:
        return self.pod_size * self.link_gbs / self.pod_taper

    @cached_property
    def leaf_of(self) -> np.ndarray:
        return np.arange(self.nodes) // self.leaf_size

    @cached_property
    def pod_of(self) -> np.ndarray:
        return np.arange(self.nodes) // self.pod_size

    @cached_property
    def hosts(self) -> tuple[str, ...]:
        width = max(3, len(str(self.nodes - 1)))
        return tuple(f"n{k:0{width}d}" for k in range(self.nodes))

    def hostname(self, node: int) -> str:
        return self.hosts[node]

    def leaf_hosts(self, leaf: int) -> list[str]:
        return list(self.hosts[leaf * self.leaf_size : (leaf + 1) * self.leaf_size])


PAPER = Machine()
# The sensitivity variant: 4 pods of 128 nodes, 4:1 tapered pod uplinks on top of the leaves'.
MULTIPOD = Machine(pod_size=128, pod_taper=4.0, name="multipod")
