"""The variability study's set-up as a file: the machine, the noise job and the scenarios.

``rush experiment variability --config study.toml`` reads a study file; every key is optional
and the defaults are the paper's set-up (Nichols et al., IPDPS'22: one pod of 512 nodes, noise
on 1/16 of them, always on with variable all-to-all intensity)::

    scenarios = ["ADAA", "WS"]                # a subset of the paper's five (default: all)

    [machine]
    nodes = 512
    leaf_size = 32                            # or derived from topology
    topology = "topology.conf"                # Slurm's; relative to the study file

    [noise]
    mode = "always"
    intensity = [0.25, 1.0]

Everything is checked before the study creates anything: an unknown key, a wrong type, NaN or
infinity (TOML allows ``nan``), a value out of bounds, a machine whose sizes do not divide, a
topology file that contradicts ``machine.nodes`` or ``machine.leaf_size`` or lists a node
twice, a scenario or application that is not the paper's are :class:`~rush.errors.ConfigError`
naming the file, the key (or the topology file's line) and the fix. Sizes are bounded
(:data:`MAX_NODES`) so that no input makes the study's work out of proportion.

The lead's frozen dataclasses (``Machine``, ``NoiseSpec``) are built lazily by
:meth:`StudySpec.machine` / :meth:`StudySpec.noise`: this module imports neither at load time.
"""

from __future__ import annotations

import re
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, StrictInt, ValidationError

from rush.config_file import explain, read_toml
from rush.errors import ConfigError

# The paper's applications, scenarios and roles (Table II): ADPA/PDPA run THREE_APPS, PDPA's
# model trains on PDPA_TRAINING only.
PAPER_APPS: tuple[str, ...] = ("SWFFT", "LBANN", "Laghos", "AMG", "Kripke", "PENNANT", "sw4lite")
PAPER_SCENARIOS: tuple[str, ...] = ("ADAA", "ADPA", "PDPA", "WS", "SS")
THREE_APPS: tuple[str, ...] = ("Laghos", "LBANN", "PENNANT")
PDPA_TRAINING: tuple[str, ...] = ("AMG", "Kripke", "sw4lite", "SWFFT")

# Bounds: the simulator's work grows with the nodes and with the noise's changes per second.
MAX_NODES = 65_536
# The largest job of the scenarios is 32 nodes and the noise takes at most half the machine.
MIN_NODES = 64
MAX_TOPOLOGY_BYTES = 4 << 20  # 65 536 nodes written one by one fit in 1 MiB
MIN_PERIOD = 1.0  # s: a shorter one would make hours of simulated noise millions of changes
MAX_PERIOD = 1e6  # s: 11.6 days, far beyond any campaign
EXAMPLE = "docs/reference/variability-study.md"

# Sensitivity variants (``--variant``): overrides of the machine or the noise on the spec.
VARIANTS: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {
    "paper": ("the paper's set-up (the study file's, when given)", {}, {}),
    "multipod": ("pods of 128 nodes with 4:1 tapered uplinks", {"pod_size": 128, "pod_taper": 4.0}, {}),
    "onoff": ("the noise switched on and off (mean_on / mean_off)", {}, {"mode": "switching"}),
    # Three runs' length per noise level (a run lasts about five minutes): the README's open
    # question whether the paper's noise held its levels longer than this model's 180 s.
    "longnoise": ("the noise's level held 900 s on average (change_every)", {}, {"change_every": 900.0}),
}


def _finite(low: float, high: float, *, gt: bool = False) -> Any:
    """A strict, finite float in [low, high] (or (low, high] with ``gt``); TOML's ints are accepted."""
    bound = {"gt": low} if gt else {"ge": low}
    return Annotated[float, Field(**bound, le=high, allow_inf_nan=False)]


def _count(low: int, high: int) -> Any:
    return Annotated[StrictInt, Field(ge=low, le=high)]


def _scenario(name: str) -> str:
    if name.strip().upper() not in PAPER_SCENARIOS:
        raise ValueError(f"unknown scenario {name[:40]!r}; the paper's are {', '.join(PAPER_SCENARIOS)}")
    return name.strip().upper()


def _scenarios(names: list[str]) -> list[str]:
    if not names:
        raise ValueError(f"is empty; list some of {', '.join(PAPER_SCENARIOS)} or leave it out (all)")
    if len(set(names)) != len(names):
        raise ValueError("lists a scenario twice (list each once)")
    return names


def _apps(names: list[str]) -> list[str]:
    unknown = [n for n in names if n not in PAPER_APPS]
    if unknown:
        raise ValueError(
            f"unknown application {unknown[0][:40]!r}; the study runs the paper's seven: {', '.join(PAPER_APPS)}"
        )
    missing = [a for a in PAPER_APPS if a not in names]
    if missing or len(names) != len(PAPER_APPS):
        what = f"lacks {', '.join(missing)}" if missing else "lists an application twice"
        raise ValueError(f"{what}; the study runs exactly the paper's seven: {', '.join(PAPER_APPS)}")
    return names


def _interval(pair: list[float]) -> list[float]:
    if pair[0] > pair[1]:
        raise ValueError(f"lo {pair[0]} is above hi {pair[1]}; write [lo, hi] with lo <= hi")
    return pair


def _path(value: Any) -> Any:
    if isinstance(value, str) and (not value.strip() or "\0" in value):
        raise ValueError("must be a file's path (not empty, no NUL)")
    return value


Fraction = _finite(0.0, 1.0)
Period = _finite(MIN_PERIOD, MAX_PERIOD)
Names = Field(max_length=64)  # a few names; a hostile list of millions is refused early


class MachineTable(BaseModel):
    """``[machine]``: the simulated cluster. One pod = leaves under one spine; links per node."""

    model_config = ConfigDict(extra="forbid", strict=True)

    nodes: _count(MIN_NODES, MAX_NODES) | None = Field(
        None,
        description=f"the number of compute nodes, an integer {MIN_NODES}..{MAX_NODES} divisible by "
        "leaf_size and pod_size",
        json_schema_extra={"shown": "`512`, or the topology's count"},
    )
    leaf_size: _count(1, MAX_NODES) | None = Field(
        None,
        description="nodes per leaf switch, an integer dividing nodes and pod_size",
        json_schema_extra={"shown": "`32`, or the topology's (uniform) leaf size"},
    )
    leaf_taper: _finite(1.0, 1024.0) = Field(
        2.0, description="the leaf uplinks' taper, a number >= 1 (2 = 2:1: half the nodes' bandwidth up)"
    )
    pod_size: _count(1, MAX_NODES) | None = Field(
        None,
        description="nodes per pod, an integer dividing nodes, a multiple of leaf_size",
        json_schema_extra={"shown": "nodes (one pod, as in the paper)"},
    )
    pod_taper: _finite(1.0, 1024.0) = Field(
        4.0, description="the pod uplinks' taper, a number >= 1 (matters with more than one pod)"
    )
    link_gbs: _finite(0.0, 10_000.0, gt=True) = Field(
        12.5, description="each node's link rate in GB/s, a number in (0, 10000]"
    )
    pfs_gbs: _finite(0.0, 1_000_000.0, gt=True) = Field(
        100.0, description="the parallel file system's bandwidth in GB/s, a number in (0, 1e6]"
    )
    cores_per_node: _count(1, 1024) = Field(36, description="cores per node, an integer 1..1024")
    topology: Annotated[str | None, BeforeValidator(_path)] = Field(
        None,
        description="the path of a Slurm topology.conf (relative to the study file) whose leaves "
        "(SwitchName=... Nodes=...) hold exactly nodes nodes, leaf_size each, no node twice",
    )
    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9._-]{1,64}$")] | None = Field(
        None,
        description="a label for reports: 1..64 letters, digits, . _ -",
        json_schema_extra={"shown": "the study file's stem (`paper` without a file)"},
    )


class NoiseTable(BaseModel):
    """``[noise]``: the noise job's share of the nodes and its all-to-all traffic."""

    model_config = ConfigDict(extra="forbid", strict=True)

    fraction: _finite(0.0, 0.5, gt=True) = Field(
        1 / 16,
        description="the share of the nodes the noise job holds, a number in (0, 0.5] (1/16 = 0.0625 in the paper)",
    )
    mode: Literal["always", "switching"] = Field(
        "always", description='"always" (on, intensity changing) or "switching" (on and off)'
    )
    intensity: Annotated[list[Fraction], Field(min_length=2, max_length=2), AfterValidator(_interval)] = (
        Field(
            default_factory=lambda: [0.25, 1.0],
            description="[lo, hi] with 0 <= lo <= hi <= 1: the range of the noise's per-node traffic as a "
            "share of the link rate, drawn uniformly at each change",
        )
    )
    change_every: Period = Field(
        180.0,
        description=f"the mean seconds between intensity changes (always), {MIN_PERIOD:g}..{MAX_PERIOD:g}",
    )
    mean_on: Period = Field(
        300.0, description=f"the mean seconds of an on period (switching), {MIN_PERIOD:g}..{MAX_PERIOD:g}"
    )
    mean_off: Period = Field(
        600.0, description=f"the mean seconds of an off period (switching), {MIN_PERIOD:g}..{MAX_PERIOD:g}"
    )


Share = _finite(0.0, 1.0)


class AppTable(BaseModel):
    """``[calibration.<app>]``: one application's parameters (rush.contention.apps.App) overridden."""

    model_config = ConfigDict(extra="forbid", strict=True)

    compute: Share | None = Field(
        None, description="the share of its unimpeded time computing, a number in [0, 1]"
    )
    bandwidth: Share | None = Field(
        None, description="the share in bandwidth-bound messages, a number in [0, 1]"
    )
    latency: Share | None = Field(
        None, description="the share in latency-bound collectives, a number in [0, 1]"
    )
    io: Share | None = Field(None, description="the share in file I/O, a number in [0, 1]")
    net_gbs: _finite(0.0, 1000.0) | None = Field(
        None, description="per-node injection in GB/s while it runs unimpeded, a number in [0, 1000]"
    )
    io_gbs: _finite(0.0, 1000.0) | None = Field(
        None, description="per-node file-system traffic in GB/s, a number in [0, 1000]"
    )
    locality: Share | None = Field(
        None, description="halo: the share of a node's traffic beyond its neighbours, a number in [0, 1]"
    )
    pattern: Literal["alltoall", "halo", "ring"] | None = Field(
        None, description='where its bulk traffic goes: "alltoall", "halo" or "ring"'
    )
    base: _finite(1.0, 1e6) | None = Field(
        None, description="its unimpeded runtime on 16 nodes in seconds, a number in [1, 1e6]"
    )


class StudyFile(BaseModel):
    """A study file as written; :func:`load_study_spec` adds the rules between keys and the topology."""

    model_config = ConfigDict(extra="forbid", strict=True)

    scenarios: Annotated[
        list[Annotated[str, AfterValidator(_scenario)]], Names, AfterValidator(_scenarios)
    ] = Field(
        default_factory=lambda: list(PAPER_SCENARIOS),
        description=f"a list of the paper's scenarios: {', '.join(PAPER_SCENARIOS)}",
    )
    apps: Annotated[list[str], Names, AfterValidator(_apps)] | None = Field(
        None,
        description=f"the paper's seven applications, each once: {', '.join(PAPER_APPS)} "
        "(the study always runs these; the key only confirms it)",
        json_schema_extra={"shown": "the paper's seven"},
    )
    machine: MachineTable = Field(default_factory=MachineTable, description="the [machine] table")
    noise: NoiseTable = Field(default_factory=NoiseTable, description="the [noise] table")
    calibration: Annotated[dict[str, AppTable], Field(max_length=len(PAPER_APPS))] = Field(
        default_factory=dict,
        description="[calibration.<app>] tables overriding an application's parameters (the keys of "
        "rush.contention.apps.App); the time shares must still sum to 1",
        json_schema_extra={"shown": "none (the committed table)"},
    )


@dataclass(frozen=True)
class StudySpec:
    """A checked study: the arguments of the lead's ``Machine`` and ``NoiseSpec``, the scenarios."""

    machine_args: dict[str, Any]
    noise_args: dict[str, Any]
    scenarios: tuple[str, ...] = PAPER_SCENARIOS
    source: str = "the paper's defaults"
    topology: str | None = None  # the topology file checked against machine_args
    variant_name: str = "paper"
    leaves: tuple[tuple[str, ...], ...] = field(default=(), repr=False)  # the topology's, in file order
    apps: dict[str, dict[str, Any]] = field(default_factory=dict)  # [calibration.<app>] overrides

    def machine(self) -> Any:
        from rush.contention.machine import Machine  # the lead's; imported late on purpose

        return Machine(**self.machine_args)

    def noise(self) -> Any:
        from rush.contention.noise import NoiseSpec

        return NoiseSpec(**self.noise_args)

    def variant(self, name: str) -> StudySpec:
        """This spec with a sensitivity variant's overrides, checked like the file's keys."""
        if name not in VARIANTS:
            raise ConfigError(
                f"unknown variant {name[:40]!r}", where="--variant", fix=f"one of {', '.join(VARIANTS)}"
            )
        _, machine_over, noise_over = VARIANTS[name]
        if not machine_over and not noise_over:
            return self
        machine = {**self.machine_args, **machine_over}
        if machine_over:  # the paper's machine's variant is the simulator's MULTIPOD ("multipod")
            base = self.machine_args["name"]
            machine["name"] = name if base == "paper" else f"{base}-{name}"
        try:
            _check_machine(machine, {**self.noise_args, **noise_over}, f"--variant {name} on {self.source}")
        except ConfigError as exc:  # the variant's sizes are fixed: the file or the flag must change
            overrides = ", ".join(f"machine.{k} = {v}" for k, v in machine_over.items())
            raise ConfigError(
                exc.message,
                where=exc.where,
                fix=f"the {name} variant sets {overrides}: make {self.source}'s machine fit it, "
                f"or drop --variant {name}",
            ) from None
        return replace(
            self,
            machine_args=machine,
            noise_args={**self.noise_args, **noise_over},
            variant_name=name,
        )


def paper_spec() -> StudySpec:
    """The paper's set-up: one pod of 512 nodes, 32-node leaves, noise on 1/16, always on."""
    return load_study_spec(None)


def load_study_spec(path: str | Path | None) -> StudySpec:
    """The study file at ``path`` checked (None: the paper's defaults); ConfigError names key and fix."""
    if path is None:
        return _spec(StudyFile(), "the paper's defaults", None)
    path = Path(path)
    source = str(path)
    if not path.is_file():  # read_toml's own fix speaks of rush.toml
        raise ConfigError(
            "study file not found" if not path.exists() else "the study file's path is not a regular file",
            where=source,
            fix=f"give a study TOML file (its keys: {EXAMPLE}), or leave --config out for the paper's set-up",
        )
    try:
        doc = read_toml(path, example=EXAMPLE)
    except ConfigError as exc:
        # A syntax error: file:line, as an editor jumps to it.
        line = re.search(r"at line (\d+)", exc.message)
        where = f"{source}:{line.group(1)}" if line else exc.where
        raise ConfigError(
            exc.message, where=where, fix=(exc.fix or "").replace("rush.toml", "study file")
        ) from None
    try:
        parsed = StudyFile.model_validate(doc)
    except ValidationError as exc:
        raise explain(exc, source, StudyFile, example=EXAMPLE) from None
    return _spec(parsed, source, path)


def check_scenarios(names: list[str], where: str = "--scenario") -> tuple[str, ...]:
    """Command-line scenario names (any case, ``all``) as the paper's; ConfigError otherwise."""
    upper = [n.strip().upper() for n in names if n.strip()]
    if "ALL" in upper:
        return PAPER_SCENARIOS
    bad = [n for n in upper if n not in PAPER_SCENARIOS]
    if not upper or bad:
        raise ConfigError(
            f"unknown scenario {', '.join(bad)[:200] or '(none)'}",
            where=where,
            fix=f"the paper's: {', '.join(PAPER_SCENARIOS)}, or all",
        )
    return tuple(dict.fromkeys(upper))


def check_variants(spec: StudySpec, names: list[str]) -> tuple[StudySpec, ...]:
    """The spec of each ``--variant`` (paper when none), each checked on ``spec``'s machine."""
    chosen = list(dict.fromkeys(n.strip().lower() for n in names)) or ["paper"]
    return tuple(spec.variant(n) for n in chosen)


# -- rules between keys ---------------------------------------------------------------------------


def _spec(parsed: StudyFile, source: str, path: Path | None) -> StudySpec:
    m = parsed.machine
    leaves: tuple[tuple[str, ...], ...] = ()
    topology = None
    nodes, leaf_size = m.nodes, m.leaf_size
    if m.topology is not None:
        base = path.parent if path is not None else Path.cwd()
        topo_path = base / m.topology
        topology = str(topo_path)
        leaves = read_topology(topo_path, source)
        nodes, leaf_size = _check_topology(leaves, topo_path, nodes, leaf_size)
    nodes = 512 if nodes is None else nodes
    machine = {
        "nodes": nodes,
        "leaf_size": 32 if leaf_size is None else leaf_size,
        "leaf_taper": float(m.leaf_taper),
        "pod_size": nodes if m.pod_size is None else m.pod_size,
        "pod_taper": float(m.pod_taper),
        "link_gbs": float(m.link_gbs),
        "pfs_gbs": float(m.pfs_gbs),
        "cores_per_node": m.cores_per_node,
        "name": m.name or ("paper" if path is None else path.stem[:64] or "study"),
    }
    n = parsed.noise
    noise = {
        "fraction": float(n.fraction),
        "mode": n.mode,
        "intensity": (float(n.intensity[0]), float(n.intensity[1])),
        "change_every": float(n.change_every),
        "mean_on": float(n.mean_on),
        "mean_off": float(n.mean_off),
    }
    _check_machine(machine, noise, source)
    apps = _check_calibration(parsed.calibration, source)
    return StudySpec(machine, noise, tuple(parsed.scenarios), source, topology, "paper", leaves, apps)


def _check_calibration(tables: dict[str, AppTable], source: str) -> dict[str, dict[str, Any]]:
    """The [calibration.<app>] overrides: known applications only, time shares summing to 1."""
    from rush.contention.apps import DEFAULT_APPS  # the lead's table; imported late on purpose

    out: dict[str, dict[str, Any]] = {}
    for name, table in tables.items():
        if name not in PAPER_APPS:
            raise ConfigError(
                f"unknown application {name[:40]!r} in [calibration]",
                where=f"{source}: calibration.{name[:40]}",
                fix=f"one of the paper's seven: {', '.join(PAPER_APPS)}",
            )
        given = table.model_dump(exclude_none=True)
        app = DEFAULT_APPS[name]
        shares = {k: given.get(k, getattr(app, k)) for k in ("compute", "bandwidth", "latency", "io")}
        if abs(sum(shares.values()) - 1.0) > 1e-6:
            listed = " + ".join(f"{k} {v:g}" for k, v in shares.items())
            raise ConfigError(
                f"{name}'s time shares sum to {sum(shares.values()):.4g} ({listed})",
                where=f"{source}: calibration.{name}",
                fix="compute + bandwidth + latency + io must be 1: change the shares you set, or set all four",
            )
        out[name] = given
    return out


def _check_machine(machine: dict[str, Any], noise: dict[str, Any], source: str) -> None:
    nodes, leaf, pod = machine["nodes"], machine["leaf_size"], machine["pod_size"]
    if nodes % leaf:
        raise ConfigError(
            f"machine.nodes {nodes} is not a multiple of machine.leaf_size {leaf}",
            where=f"{source}: machine.leaf_size",
            fix=f"a leaf size dividing {nodes} (e.g. 32), or nodes a multiple of {leaf}",
        )
    if pod % leaf:
        raise ConfigError(
            f"machine.pod_size {pod} is not a multiple of machine.leaf_size {leaf}",
            where=f"{source}: machine.pod_size",
            fix=f"whole leaves per pod: a multiple of {leaf}",
        )
    if nodes % pod:
        raise ConfigError(
            f"machine.nodes {nodes} is not a multiple of machine.pod_size {pod}",
            where=f"{source}: machine.pod_size",
            fix=f"a pod size dividing {nodes} (leave it out for one pod of all the nodes)",
        )
    noisy = noise["fraction"] * nodes
    if noisy < 1:
        raise ConfigError(
            f"noise.fraction {noise['fraction']:g} of {nodes} nodes is less than one node",
            where=f"{source}: noise.fraction",
            fix=f"at least 1/{nodes} (the paper's is 1/16 = 0.0625)",
        )


def read_topology(path: Path, source: str) -> tuple[tuple[str, ...], ...]:
    """The leaves (switches with ``Nodes=``) of a Slurm topology.conf, in file order.

    A node in two leaves, a malformed host list, a line that is not a switch's, a switch listed
    twice or a ``Switches=`` naming an unknown switch is a ConfigError at ``file:line``."""
    from rush.rjms.slurm_json import hostlist  # Slurm's host list syntax, one reader in rush

    text = _read_bounded(path, source)
    where = str(path)
    leaves: list[tuple[str, ...]] = []
    seen: dict[str, int] = {}  # node -> line of its leaf
    switches: dict[str, int] = {}
    uplinks: list[tuple[int, str]] = []
    total = 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        fields = {k.lower(): v for k, _, v in (item.partition("=") for item in line.split())}
        name = fields.get("switchname", "")
        if not name:
            raise ConfigError(
                f"not a switch line: {line[:80]!r}",
                where=f"{where}:{number}",
                fix="topology.conf lines are SwitchName=NAME Nodes=HOSTLIST (or Switches=NAMES)",
            )
        if name in switches:
            raise ConfigError(
                f"switch {name[:40]!r} is defined twice (first at line {switches[name]})",
                where=f"{where}:{number}",
                fix="one line per switch",
            )
        switches[name] = number
        if "switches" in fields:
            uplinks.append((number, fields["switches"]))
        if "nodes" not in fields:
            continue
        try:
            names = hostlist(fields["nodes"], "Nodes", limit=MAX_NODES - total)
        except ValueError as exc:
            raise ConfigError(
                f"switch {name[:40]}: {exc}",
                where=f"{where}:{number}",
                fix=f"a Slurm host list such as n[000-031]; at most {MAX_NODES} nodes in all (machine.topology)",
            ) from None
        if not names:
            raise ConfigError(
                f"switch {name[:40]} has Nodes= but no node", where=f"{where}:{number}", fix="list its nodes"
            )
        if len(set(names)) != len(names):
            raise ConfigError(
                f"switch {name[:40]} lists a node twice", where=f"{where}:{number}", fix="list each node once"
            )
        for node in names:
            if node in seen:
                raise ConfigError(
                    f"node {node[:40]} is in two leaf switches (lines {seen[node]} and {number})",
                    where=f"{where}:{number}",
                    fix="each node hangs off one leaf switch: remove it from one of them",
                )
            seen[node] = number
        total += len(names)
        leaves.append(tuple(names))
    for number, value in uplinks:
        try:
            below = hostlist(value, "Switches", limit=len(switches) + 1)
        except ValueError as exc:
            raise ConfigError(str(exc), where=f"{where}:{number}", fix="a list of switch names") from None
        unknown = [s for s in below if s not in switches]
        if unknown:
            raise ConfigError(
                f"Switches= names {unknown[0][:40]!r}, which no line defines",
                where=f"{where}:{number}",
                fix="define every switch with its own SwitchName= line",
            )
    if not leaves:
        raise ConfigError(
            "no leaf switch (no SwitchName=... Nodes=... line)",
            where=where,
            fix=f"list the leaves of the machine, or remove machine.topology from {source}",
        )
    return tuple(leaves)


def _check_topology(
    leaves: tuple[tuple[str, ...], ...], path: Path, nodes: int | None, leaf_size: int | None
) -> tuple[int, int]:
    """(nodes, leaf size) agreed between the study file and its topology (derived when not given)."""
    count = sum(len(leaf) for leaf in leaves)
    if nodes is not None and count != nodes:
        raise ConfigError(
            f"the topology lists {count} nodes but machine.nodes is {nodes}",
            where=f"{path}: machine.nodes",
            fix=f"list {nodes} nodes in {path.name}, or set machine.nodes = {count} (or leave it out)",
        )
    if not MIN_NODES <= count <= MAX_NODES:
        raise ConfigError(
            f"the topology lists {count} nodes", where=str(path), fix=f"{MIN_NODES}..{MAX_NODES} nodes"
        )
    expected = leaf_size if leaf_size is not None else len(leaves[0])
    for i, leaf in enumerate(leaves):
        if len(leaf) != expected:
            what = (
                f"machine.leaf_size is {leaf_size}" if leaf_size is not None else f"the first has {expected}"
            )
            raise ConfigError(
                f"leaf switch {i + 1} has {len(leaf)} nodes; {what} (leaves must be uniform)",
                where=f"{path}: machine.leaf_size",
                fix=f"give every leaf {expected} nodes, or set machine.leaf_size to the topology's",
            )
    return count, expected


def _read_bounded(path: Path, source: str) -> str:
    """A topology file's text, at most MAX_TOPOLOGY_BYTES read; a FIFO or directory is refused."""
    where = f"{source}: machine.topology"
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(f"{path} is not a regular file", where=where, fix="give a topology.conf's path")
        with path.open("rb") as handle:
            data = handle.read(MAX_TOPOLOGY_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError(
            f"topology file {path} not found", where=where, fix="a path relative to the study file"
        ) from None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}", where=where) from None
    if len(data) > MAX_TOPOLOGY_BYTES:
        raise ConfigError(
            f"{path} is over {MAX_TOPOLOGY_BYTES} bytes", where=where, fix="a topology.conf, not another file"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError("not UTF-8 text", where=f"{path}:{line}", fix="save it as UTF-8") from None


# -- the reference table --------------------------------------------------------------------------


def _default(info: Any) -> str:
    value = info.default_factory() if info.default_factory is not None else info.default
    shown = (info.json_schema_extra or {}).get("shown")
    if shown or value is None:
        return str(shown or "none")
    if isinstance(value, str):
        return f'`"{value}"`'
    if isinstance(value, list):
        return "`[" + ", ".join(f'"{v}"' if isinstance(v, str) else repr(v) for v in value) + "]`"
    return f"`{value!r}`"


def keys_markdown() -> str:
    """The study file's keys as a Markdown table (key, default, meaning) from the models' descriptions."""
    rows = ["| key | default | meaning |", "|---|---|---|"]
    tables = {"machine": MachineTable, "noise": NoiseTable}
    for name, info in StudyFile.model_fields.items():
        if name in tables:
            for key, sub in tables[name].model_fields.items():
                rows.append(f"| `{name}.{key}` | {_default(sub)} | {_cell(sub.description)} |")
        else:
            rows.append(f"| `{name}` | {_default(info)} | {_cell(info.description)} |")
    return "\n".join(rows) + "\n"


def _cell(text: str | None) -> str:
    return " ".join((text or "").split()).replace("|", "\\|")
