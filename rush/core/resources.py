"""The machine as the core sees it: nodes, partitions, node state and the switch tree, and
what a job asks of it.

A cluster without nodes (``Snapshot.nodes == ()``) is a bag of processors: a job's ``procs``
are taken anywhere, as in the scheduling literature and in SWF traces that record no node
allocation. With nodes, fits, shadow times and placements are computed on them
(:mod:`rush.core.node_pass`), and a start decision carries its node list.

One mapping from every source, documented in docs/reference/resources.md:

* a :class:`Request` with ``nodes == 0`` asks for ``procs`` cores anywhere in its partition
  (spread over as few nodes as first fit gives; SWF jobs of a log without node allocation,
  Flux's ``ncores`` requests without a node level, Slurm jobs with ``--ntasks`` only);
* ``nodes > 0`` asks for that many nodes with ``cores_per_node`` cores and ``gpus_per_node``
  GPUs free on each; ``exclusive`` takes the whole node (Slurm ``--exclusive``, Flux
  ``-x``/node-level jobspec, SWF logs with whole-node allocation);
* ``partition`` names the node set ("": every node, the default partition).

The fat-tree is described by each node's leaf switch (``Node.leaf``: the pod it hangs off)
and, per leaf, its uplink taper (:class:`Fabric`), which the contention simulator reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

NodeState = Literal["up", "drained", "down"]
NODE_STATES: tuple[str, ...] = ("up", "drained", "down")


@dataclass(frozen=True)
class Node:
    """One compute node: its size, state, partitions and leaf switch, and what is free on it
    now (the RJMS's count; drained and down nodes offer nothing to new jobs)."""

    name: str
    cores: int
    gpus: int = 0
    memory_mb: int = 0
    state: NodeState = "up"
    partitions: tuple[str, ...] = ()
    leaf: int = 0
    free_cores: int | None = None  # None: all its cores
    free_gpus: int | None = None  # None: all its GPUs
    # The variation predictor sees no contention on this node's pod now (variability-aware
    # placement prefers such nodes for jobs it flags).
    quiet: bool = True
    # The pod (group of leaf switches under one spine) of its leaf, when the links between pods
    # are tapered: variability-aware placement keeps a flagged job's quiet nodes in one pod.
    pod: int = 0


@dataclass(frozen=True)
class Request:
    """What a job asks for, beyond its processor count (see the module docstring)."""

    nodes: int = 0
    cores_per_node: int = 1
    gpus_per_node: int = 0
    exclusive: bool = False
    partition: str = ""

    def procs(self, node_cores: int = 1) -> int:
        """Processors the request occupies (an exclusive node counts all ``node_cores``)."""
        if self.nodes == 0:
            return self.cores_per_node
        return self.nodes * (node_cores if self.exclusive else self.cores_per_node)


@dataclass(frozen=True)
class Slot:
    """Part of a job's allocation: ``cores`` and ``gpus`` on the node at ``node`` (its index in
    ``Snapshot.nodes``)."""

    node: int
    cores: int
    gpus: int = 0


@dataclass(frozen=True)
class Fabric:
    """The switch tree above the nodes: one entry per leaf switch (pod), its uplink taper
    (down-links per up-link; 1.0 is a full-bandwidth fat-tree)."""

    taper: tuple[float, ...] = ()
    names: tuple[str, ...] = field(default=())


PLACEMENTS: tuple[str, ...] = ("first-fit", "topology", "variability")
PLACEMENT_HELP = {
    "first-fit": "lowest-indexed nodes that fit (the faithful default: RUSH's Flux used the default match)",
    "topology": "fewest leaf switches: the smallest pod that holds the job, else the fullest pods first "
    "(as Slurm's topology/tree and Flux's TreePool)",
    "variability": "topology packing; a job the variation predictor flags goes to quiet pods first, and is "
    "only skipped (skip-with-limit) when no quiet placement exists",
}
