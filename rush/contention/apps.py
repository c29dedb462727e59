"""The paper's seven applications and how their time and traffic scale (parameters fixed up front).

Nichols et al. (IPDPS'22) ran seven LLNL/ECP proxy applications: SWFFT (network-heavy: 3-D
FFT transposes are all-to-alls), LBANN (allreduce-heavy: data-parallel training reduces the
gradients every step), Laghos (variation-prone: high-order hydro whose conjugate-gradient mass
solves issue many tiny allreduces, so it is latency-bound), and AMG, Kripke, PENNANT, sw4lite.

Each is described at 16 nodes, unimpeded, by the shares of its time in compute (never
contends: nodes are exclusive), bandwidth-bound communication, latency-bound collectives and
file I/O, its per-node injection rate while it runs, and the pattern its bulk traffic follows
(which decides how much of it leaves a leaf switch, see :mod:`rush.contention.model`). The
values are read from the applications' published characterisations (communication share and
pattern from their ECP proxy documentation and the HPC communication studies of them), rounded;
they are not measurements of Quartz. They were written down before any scheduling run, and three
were changed in the baseline's calibration (FCFS+EASY only, development trials; the order and the
measured effect of each change: sim/variability/README.md, "Calibration of the baseline").
"""

from __future__ import annotations

from dataclasses import dataclass

PATTERNS = ("alltoall", "halo", "ring")
REFERENCE_NODES = 16


@dataclass(frozen=True)
class App:
    name: str
    compute: float  # share of unimpeded time computing
    bandwidth: float  # share in bandwidth-bound messages (slowed by link sharing)
    latency: float  # share in latency-bound collectives (slowed by switch queueing)
    io: float  # share in file I/O (slowed by the file system's load)
    net_gbs: float  # per-node injection while running unimpeded, GB/s
    pattern: str  # alltoall | halo | ring: where the bulk traffic goes
    locality: float  # halo: share of a node's traffic that is not to nearest neighbours
    base: float  # unimpeded runtime on 16 nodes, seconds
    io_gbs: float = 0.0  # per-node file-system traffic, GB/s
    read_share: float = 0.3
    cpu: float = 0.95  # CPU busy fraction while computing

    def __post_init__(self) -> None:
        if abs(self.compute + self.bandwidth + self.latency + self.io - 1.0) > 1e-9:
            raise ValueError(f"{self.name}: time shares must sum to 1")
        if self.pattern not in PATTERNS:
            raise ValueError(f"{self.name}: pattern {self.pattern!r} not in {PATTERNS}")

    @property
    def wtype(self) -> str:
        """The model's one-hot workload type: network when communication is 30 % or more."""
        if self.io >= 0.2:
            return "io"
        return "network" if self.bandwidth + self.latency >= 0.3 else "compute"


APPS: dict[str, App] = {
    a.name: a
    for a in (
        # Pencil-decomposed 3-D FFT: bandwidth-bound transposes, each an all-to-all within one
        # row or column of the 2-D process grid (calibration step 4): half of a node's traffic
        # goes beyond its grid neighbours, not uniformly to every node.
        App("SWFFT", 0.35, 0.55, 0.10, 0.0, 9.0, "halo", 0.5, 240.0),
        # Data-parallel DNN training: ring allreduce of the gradients every step, one per layer
        # bucket, each step synchronous (calibration step 4: a latency-bound part, 0.20); reads
        # its training samples from the file system.
        App("LBANN", 0.50, 0.25, 0.20, 0.05, 8.0, "ring", 1.0, 300.0, io_gbs=0.3, read_share=0.95),
        # High-order Lagrangian hydro: small halos, CG mass solves with many tiny allreduces, the
        # most latency-bound of the seven at 512 ranks (calibration step 4: 0.45).
        App("Laghos", 0.50, 0.05, 0.45, 0.0, 1.5, "halo", 0.3, 300.0),
        # Algebraic multigrid: halo exchange on fine levels, latency-bound coarse levels.
        App("AMG", 0.45, 0.25, 0.30, 0.0, 5.0, "halo", 0.6, 240.0),
        # Deterministic transport sweeps: pipelined neighbour messages.
        App("Kripke", 0.55, 0.35, 0.10, 0.0, 5.0, "halo", 0.5, 300.0),
        # Unstructured-mesh hydro: memory-bound node work, one time-step reduction per cycle.
        App("PENNANT", 0.85, 0.05, 0.10, 0.0, 0.5, "halo", 0.3, 200.0),
        # 4th-order seismic stencil: halo exchange and a few image writes.
        App("sw4lite", 0.80, 0.10, 0.03, 0.07, 1.5, "halo", 0.3, 280.0, io_gbs=0.2, read_share=0.1),
    )
}
APP_NAMES: tuple[str, ...] = tuple(APPS)
DEFAULT_APPS: dict[str, App] = dict(APPS)


def use_apps(overrides: dict[str, dict]) -> None:
    """Make ``APPS`` the committed table with a study file's ``[calibration.<app>]`` overrides
    (checked by :mod:`rush.contention.spec`). Every module reads the one ``APPS`` dict, so each
    trial (and the campaign) sets it first: a worker process then runs with the study's table."""
    from dataclasses import replace

    APPS.clear()
    APPS.update(DEFAULT_APPS)
    for name, fields in overrides.items():
        APPS[name] = replace(DEFAULT_APPS[name], **fields)


# The paper's Table II: ADPA and PDPA run three applications; PDPA's model is trained on the
# other four only.
THREE_APPS: tuple[str, ...] = ("Laghos", "LBANN", "PENNANT")
OTHER_FOUR: tuple[str, ...] = ("AMG", "Kripke", "sw4lite", "SWFFT")


@dataclass(frozen=True)
class Scaled:
    base: float  # unimpeded runtime at this size, seconds
    net_gbs: float  # per-node injection
    io_gbs: float


def scaled(app: App, nodes: int, scaling: str) -> Scaled:
    """Runtime and per-node demands of ``app`` on ``nodes`` nodes (reference: 16).

    Weak scaling keeps the work per node, so runtime and per-node demands stay. Strong scaling
    divides a fixed problem: compute time scales as 16/N, communication time per node stays
    (surface over volume), so the runtime is base x (c x 16/N + comm + o); per-node network
    bytes scale with the surface of the per-node domain, (16/N)^(2/3), over the new runtime;
    per-node I/O volume falls as 16/N.
    """
    if scaling == "weak" or nodes == REFERENCE_NODES:
        return Scaled(app.base, app.net_gbs, app.io_gbs)
    ratio = REFERENCE_NODES / nodes
    time_factor = app.compute * ratio + app.bandwidth + app.latency + app.io
    return Scaled(
        app.base * time_factor,
        app.net_gbs * ratio ** (2.0 / 3.0) / time_factor,
        app.io_gbs * ratio / time_factor,
    )
