"""The campaign runner behind ``rush campaign run``: control jobs through the RJMS, probes, counters.

A campaign runs ``runs`` control jobs of each named proxy application (collectors/proxies/) in a
seeded random order, ``concurrency`` at a time, through an RJMS backend of the registry
(:func:`rush.rjms.base.get_backend`). Each job runs ``rush/campaign/jobrun.py``: the MPI probe
(collectors/mpi_probe.py) on the job's nodes as it starts, then the application. Meanwhile a
sampler thread writes node counters into a :class:`rush.collect.store.FeatureStore` in the
output directory every ``interval`` seconds: procfs (this host: :mod:`rush.collect.procfs`)
and, with ``prometheus``, node_exporter's series through Prometheus (every node it scrapes).
With ``noise`` a noise job (collectors/noise.py) is submitted first and runs for the whole
campaign; its on/off log labels each run (``noise``: ground truth, never a feature). With
``nodes`` and a backend that takes node counts (Flux), each control job spans that many nodes,
and its record names the nodes the RJMS allocated (Flux: the job's R, with its broker
``ranks``); the probe's rows are stored under those names.

Output directory (created; an existing campaign is never overwritten):

* ``records.jsonl``: the header, then one record per finished run, appended as each ends
  (:mod:`rush.campaign.records` has the format and its check);
* ``features.sqlite``: the counters and the probe results (source ``mpi_probe``);
* ``noise.jsonl``: the noise job's log; ``jobs/``: each job's spec and result;
* ``summary.json``: per application runs, runtime mean/sd/min/max, runs with noise; counters
  present and absent on this machine; ``progress.json`` while it runs.

Every input is checked, and the RJMS asked once, before anything is created.
"""

from __future__ import annotations

import json
import logging
import math
import os
import random
import shlex
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    StringConstraints,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from rush.campaign.records import (
    FORMAT,
    CampaignError,
    noise_during,
    noise_intervals,
    validate_record,
)
from rush.collect.probe import MPI_SESSION_SCRIPT
from rush.config_file import explain
from rush.errors import RushError
from rush.output_file import replace_file

log = logging.getLogger("rush.campaign")
# What runs on compute nodes ships inside the package (collectors/ links to it), so campaigns work
# from a non-editable install, where no source tree exists.
NODE_PROGRAMS = Path(__file__).resolve().with_name("node_programs")
PROXIES = NODE_PROGRAMS / "proxies"
NOISE_SCRIPT = NODE_PROGRAMS / "noise.py"
JOBRUN = Path(__file__).resolve().with_name("jobrun.py")
# name -> (script in node_programs/proxies, workload type)
APPS: dict[str, tuple[str, str]] = {
    "halo": ("halo.py", "network"),
    "cg": ("cg.py", "network"),
    "compute": ("compute.py", "compute"),
    "io": ("io.py", "io"),
}
MAX_RUNS = 10_000
MAX_CONCURRENCY = 64
NOISE_KINDS = ("memory", "network", "io")
FINISHED_STATES_LIVE = {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED"}
# node_exporter series (default collectors) as rates per host, for --prometheus.
NODE_EXPORTER_QUERIES: dict[str, str] = {
    "node_net_xmit_bytes_per_s": "rate(node_network_transmit_bytes_total[{w}])",
    "node_net_rcv_bytes_per_s": "rate(node_network_receive_bytes_total[{w}])",
    "node_net_xmit_packets_per_s": "rate(node_network_transmit_packets_total[{w}])",
    "node_net_rcv_packets_per_s": "rate(node_network_receive_packets_total[{w}])",
    "node_disk_read_bytes_per_s": "rate(node_disk_read_bytes_total[{w}])",
    "node_disk_written_bytes_per_s": "rate(node_disk_written_bytes_total[{w}])",
    "node_disk_io_time_frac": "rate(node_disk_io_time_seconds_total[{w}])",
    "node_cpu_user_s_per_s": 'rate(node_cpu_seconds_total{{mode="user"}}[{w}])',
    "node_cpu_system_s_per_s": 'rate(node_cpu_seconds_total{{mode="system"}}[{w}])',
    "node_cpu_iowait_s_per_s": 'rate(node_cpu_seconds_total{{mode="iowait"}}[{w}])',
    "node_context_switches_per_s": "rate(node_context_switches_total[{w}])",
    "node_pressure_cpu_waiting_frac": "rate(node_pressure_cpu_waiting_seconds_total[{w}])",
    "node_pressure_io_waiting_frac": "rate(node_pressure_io_waiting_seconds_total[{w}])",
    "node_pressure_memory_waiting_frac": "rate(node_pressure_memory_waiting_seconds_total[{w}])",
    "node_memory_available_bytes": "node_memory_MemAvailable_bytes",
    "node_load1": "node_load1",
}
# The published counter families and where Linux exposes them: reported absent when missing.
PUBLISHED_COUNTERS = {
    "InfiniBand (sysclassib)": "/sys/class/infiniband",
    "Omni-Path (hfi1)": "/sys/class/infiniband/hfi1_0",
    "Lustre client (llite)": "/proc/fs/lustre",
    "RAPL energy": "/sys/class/powercap/intel-rapl:0",
}


@dataclass
class CampaignOptions:
    apps: tuple[str, ...]
    runs: int
    out: Path
    seed: int = 0
    rjms: str = "slurm"
    rjms_options: dict[str, Any] = field(default_factory=dict)
    noise: bool = False
    noise_kinds: tuple[str, ...] = NOISE_KINDS
    noise_on: tuple[float, float] = (20.0, 60.0)
    noise_off: tuple[float, float] = (20.0, 60.0)
    noise_workers: int = 1
    ntasks: int = 2
    nodes: int | None = None
    scale: float = 1.0
    launcher: str = "mpirun"
    python: str = sys.executable
    env: dict[str, str] = field(default_factory=dict)
    time_limit: float = 600.0
    partition: str = ""
    concurrency: int = 1
    interval: float = 2.0
    warmup: float = 0.0
    procfs: bool = True
    # Node names this host's procfs counters stand for (default: its own name). The brokers
    # of a Flux test instance (``flux start --test-size``) are fake nodes all on this host.
    procfs_nodes: tuple[str, ...] = ()
    prometheus: str = ""
    prometheus_host_label: str = "instance"
    prometheus_rate_window: str = "15s"
    probe_ring_bytes: str = "4MB"
    probe_ring_iterations: int = 10
    probe_allreduce_bytes: str = "4MB"
    probe_allreduce_iterations: int = 5
    command: str = ""


def parse_apps(text: str) -> tuple[str, ...]:
    apps = [a.strip() for a in text.split(",") if a.strip()]
    unknown = [a for a in apps if a not in APPS]
    if not apps or unknown:
        shown = ", ".join(repr(a[:40]) for a in unknown[:5]) or "none given"
        raise CampaignError(
            f"unknown application(s): {shown}", where="--apps", fix=f"use some of: {','.join(APPS)}"
        )
    if len(set(apps)) != len(apps):
        raise CampaignError("an application is named twice", where="--apps", fix="name each once")
    return tuple(apps)


def parse_nodes(text: str) -> tuple[str, ...]:
    """``--procfs-nodes``: a hostlist (``node[0-3],login1``) as node names; "" gives none."""
    from rush.rjms.flux.hostlist import expand_hostlist

    if not text.strip():
        return ()
    try:
        return tuple(dict.fromkeys(expand_hostlist(text.strip(), limit=4096)))
    except ValueError as exc:
        raise CampaignError(str(exc), where="--procfs-nodes", fix="a hostlist such as node[0-3]") from None


def _ordered(pair: tuple[float, float]) -> tuple[float, float]:
    if pair[1] < pair[0]:
        raise ValueError(f"MIN {pair[0]:g} is over MAX {pair[1]:g}")
    return pair


def _noise_kinds(kinds: tuple[str, ...]) -> tuple[str, ...]:
    bad = [k[:40] for k in kinds if k not in NOISE_KINDS]
    if not kinds or bad:
        raise ValueError(f"unknown noise kind(s) {bad}" if bad else "no noise kind")
    return kinds


def _environment_names(env: dict[str, str]) -> dict[str, str]:
    for key, value in env.items():
        if not key or "=" in key or "\0" in key + value or "\n" in key + value:
            raise ValueError(f"bad environment variable {key[:40]!r}")
    return env


def _probe_size(size: str) -> str:
    from rush.collect import mpi_probe

    try:
        value = mpi_probe.parse_bytes(size)
    except Exception as exc:  # argparse.ArgumentTypeError
        raise ValueError(str(exc)) from None
    if value > 2**31:
        raise ValueError(f"{size} is more than 2 GiB")
    return size


def _count(low: int, high: int, flag: str) -> Any:
    return Field(ge=low, le=high, alias=flag, description=f"an integer in {low}..{high}")


def _number(low: float, high: float, flag: str) -> Any:
    return Field(ge=low, le=high, alias=flag, description=f"a number in [{low:g}, {high:g}]")


Seconds = Annotated[float, Field(ge=0.1, le=86400, allow_inf_nan=False)]
ProbeSize = Annotated[StrictStr, AfterValidator(_probe_size)]


class CampaignInput(BaseModel):
    """The values of :class:`CampaignOptions` a campaign checks, keyed by their command-line flags."""

    model_config = ConfigDict(strict=True, extra="ignore")

    runs: StrictInt = _count(1, MAX_RUNS, "--runs")
    ntasks: StrictInt = _count(2, 4096, "--ntasks")  # the probe's ring needs 2
    nodes: StrictInt | None = Field(ge=1, alias="--nodes", description="an integer from 1 to --ntasks")
    concurrency: StrictInt = _count(1, MAX_CONCURRENCY, "--concurrency")
    scale: Annotated[float, Field(allow_inf_nan=False)] = _number(0.001, 1000, "--scale")
    interval: Annotated[float, Field(allow_inf_nan=False)] = _number(0.2, 3600, "--interval")
    warmup: Annotated[float, Field(allow_inf_nan=False)] = _number(0, 3600, "--warmup")
    time_limit: Annotated[float, Field(allow_inf_nan=False)] = _number(10, 7 * 86400, "--time-limit")
    seed: StrictInt = _count(-(2**63), 2**63 - 1, "--seed")
    noise_workers: StrictInt = _count(1, 64, "--noise-workers")
    noise_on: Annotated[tuple[Seconds, Seconds], AfterValidator(_ordered)] = Field(
        alias="--noise-on", description="MIN:MAX seconds, each in [0.1, 86400], e.g. 20:60"
    )
    noise_off: Annotated[tuple[Seconds, Seconds], AfterValidator(_ordered)] = Field(
        alias="--noise-off", description="MIN:MAX seconds, each in [0.1, 86400], e.g. 20:60"
    )
    noise_kinds: Annotated[tuple[StrictStr, ...], AfterValidator(_noise_kinds)] = Field(
        alias="--noise-kinds", description=f"some of {','.join(NOISE_KINDS)}"
    )
    launcher: Annotated[StrictStr, StringConstraints(strip_whitespace=True, min_length=1)] = Field(
        alias="--launcher", description="an MPI launcher, e.g. mpirun or 'srun --mpi=pmix'"
    )
    env: Annotated[dict[StrictStr, StrictStr], AfterValidator(_environment_names)] = Field(
        alias="--env", description="KEY=VALUE pairs, each on one line"
    )
    probe_ring_bytes: ProbeSize = Field(
        alias="--probe-ring-bytes", description="a size up to 2 GiB, e.g. 4096, 1MiB, 4MB"
    )
    probe_allreduce_bytes: ProbeSize = Field(
        alias="--probe-allreduce-bytes", description="a size up to 2 GiB, e.g. 4096, 1MiB, 4MB"
    )
    probe_ring_iterations: StrictInt = _count(1, 1000, "--probe-ring-iterations")
    probe_allreduce_iterations: StrictInt = _count(1, 1000, "--probe-allreduce-iterations")
    procfs_nodes: tuple[Annotated[StrictStr, StringConstraints(pattern=r"^[A-Za-z0-9._-]{1,64}$")], ...] = (
        Field(
            max_length=4096,
            alias="--procfs-nodes",
            description="node names (letters, digits, . _ -), e.g. node[0-3]",
        )
    )

    @field_validator("nodes")
    @classmethod
    def _nodes_within_tasks(cls, nodes: int | None, info: ValidationInfo) -> int | None:
        ntasks = info.data.get("ntasks")
        if nodes is not None and ntasks is not None and nodes > ntasks:
            raise ValueError(f"more nodes than --ntasks ({ntasks}): each node runs a task")
        return nodes


def validate(options: CampaignOptions) -> None:
    """Every check that needs no RJMS: names, ranges, files, the output directory."""
    options.apps = parse_apps(",".join(options.apps))
    given = {info.alias: getattr(options, name) for name, info in CampaignInput.model_fields.items()}
    try:
        CampaignInput.model_validate(given)
    except ValidationError as exc:
        error = explain(exc, "command line", CampaignInput, example="rush campaign run --help")
        raise CampaignError(error.message, where=error.where, fix=error.fix) from None
    if not options.procfs and not options.prometheus:
        raise CampaignError(
            "no counter source", where="--no-procfs", fix="keep procfs or give --prometheus URL"
        )
    for path in [PROXIES / APPS[a][0] for a in options.apps] + [JOBRUN, MPI_SESSION_SCRIPT, NOISE_SCRIPT]:
        if not path.is_file():
            raise CampaignError("program not found", where=str(path), fix="run rush from its source tree")
    out = options.out
    existing = next((p for p in (out, *out.parents) if p.exists()), None)
    if existing is not None and existing != out and not existing.is_dir():
        raise CampaignError(
            f"cannot create the output directory: {existing} is not a directory",
            where=str(out),
            fix="choose another --out",
        )
    if out.exists() and not out.is_dir():
        raise CampaignError("exists and is not a directory", where=str(out), fix="choose a new --out")
    if out.is_dir() and any(out.iterdir()):
        raise CampaignError(
            "not empty: a campaign is never overwritten", where=str(out), fix="choose a new --out directory"
        )


def connect(options: CampaignOptions) -> Any:
    """The RJMS backend, asked once for its queue so an unreachable RJMS fails before any file."""
    from rush.rjms.base import get_backend

    backend = get_backend(options.rjms, **options.rjms_options)  # options checked: a ConfigError
    try:
        backend.read_state()
    except RushError as exc:
        raise CampaignError(
            f"the {options.rjms} RJMS cannot be reached: {exc.message}",
            where=exc.where or f"--rjms {options.rjms}",
            fix=exc.fix or "check that the RJMS runs and the --rjms-option values",
        ) from None
    return backend


# ------------------------------------------------------------------------------- sampling


class Sampler(threading.Thread):
    """Writes node counters into the store every ``interval`` seconds until stopped."""

    def __init__(self, store: Any, lock: threading.Lock, collectors: list[Any], interval: float) -> None:
        super().__init__(daemon=True, name="rush-campaign-sampler")
        self.store, self.lock, self.collectors, self.interval = store, lock, collectors, interval
        self.stop_event = threading.Event()
        self.samples = 0
        self.errors: dict[str, str] = {}
        self.metrics: set[tuple[str, str]] = set()

    def sample_once(self) -> None:
        for collector in self.collectors:
            try:
                samples = collector.collect()
            except Exception as exc:  # a source that fails costs its samples, not the campaign
                if collector.name not in self.errors:
                    log.warning("counter source %s failed: %s", collector.name, exc)
                self.errors[collector.name] = str(exc)[:300]
                continue
            with self.lock:
                self.store.insert(samples)
            self.samples += len(samples)
            self.metrics |= {(s.source, s.metric) for s in samples}

    def run(self) -> None:
        while not self.stop_event.is_set():
            started = time.monotonic()
            self.sample_once()
            self.stop_event.wait(max(0.0, self.interval - (time.monotonic() - started)))

    def stop(self) -> None:
        self.stop_event.set()
        self.join(timeout=30)


def counter_collectors(options: CampaignOptions) -> list[Any]:
    collectors: list[Any] = []
    if options.procfs:
        from rush.collect.procfs import ProcfsCollector

        procfs = ProcfsCollector()
        collectors.append(SameHost(procfs, options.procfs_nodes) if options.procfs_nodes else procfs)
    if options.prometheus:
        from rush.collect.prometheus import PrometheusCollector, PrometheusOptions

        label = options.prometheus_host_label
        queries = {
            name: f"sum by ({label}) ({expr.format(w=options.prometheus_rate_window)})"
            for name, expr in NODE_EXPORTER_QUERIES.items()
        }
        collectors.append(
            PrometheusCollector(PrometheusOptions(options.prometheus, queries=queries, host_label=label))
        )
    return collectors


class SameHost:
    """A collector of this host whose samples stand for several nodes on it (the brokers of a
    Flux test instance): each sample written once under each node's name."""

    def __init__(self, inner: Any, nodes: tuple[str, ...]) -> None:
        self.inner, self.nodes, self.name = inner, nodes, inner.name

    def collect(self) -> list[Any]:
        from dataclasses import replace

        return [replace(s, host=node) for s in self.inner.collect() for node in self.nodes]

    def absent(self) -> list[str]:
        return list(self.inner.absent())


# ------------------------------------------------------------------------------- the run


@dataclass
class _Flight:
    index: int
    app: str
    tag: str
    job_id: int
    submitted: float
    result: Path


def _environment(options: CampaignOptions) -> dict[str, str]:
    # One core per rank (BLAS threads would oversubscribe the allocation).
    env = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    if os.geteuid() == 0:  # OpenMPI refuses root without both
        env |= {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    launch = shlex.split(options.launcher)
    if options.rjms == "flux" and launch and Path(launch[0]).name == "mpirun":
        # In a Flux job (FLUX_JOB_ID set) OpenMPI 4's mpirun picks its pmix "flux" component,
        # meant for ranks Flux starts itself, and crashes (4.1.4, flux-core 0.88); mpirun starts
        # its ranks with its own PMIx. --env OMPI_MCA_pmix=... overrides.
        env["OMPI_MCA_pmix"] = "^flux"
    return env | dict(options.env)


class Campaign:
    def __init__(
        self,
        options: CampaignOptions,
        backend: Any,
        progress: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self.options, self.backend = options, backend
        self.progress = progress or (lambda _: None)
        self.out = options.out
        self.records_path = self.out / "records.jsonl"
        self.noise_log = self.out / "noise.jsonl"
        self.noise_job: int | None = None
        self.records: list[dict[str, Any]] = []
        self.failures: list[str] = []
        self.lock = threading.Lock()
        self.started = time.time()

    # -- set-up -----------------------------------------------------------------------------
    def _header(self) -> dict[str, Any]:
        o = self.options
        return {
            "format": FORMAT,
            "campaign": self.out.name,
            "seed": o.seed,
            "command": o.command,
            "machine": socket.gethostname(),
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "apps": {a: APPS[a][1] for a in o.apps},
            "runs_per_app": o.runs,
            "rjms": o.rjms,
            "ntasks": o.ntasks,
            "scale": o.scale,
            "noise": o.noise,
            "store": "features.sqlite",
        }

    def _submit_noise(self) -> None:
        o = self.options
        # Long enough for the whole campaign; it is cancelled when the last run ends.
        duration = min(
            7 * 86400.0, o.warmup + 600 + o.runs * len(o.apps) * (o.time_limit + 60) / o.concurrency
        )
        argv = [o.python, str(NOISE_SCRIPT), f"--seed={o.seed}", f"--log={self.noise_log}"]
        argv += [f"--kinds={','.join(o.noise_kinds)}", f"--duration={duration:.0f}"]
        argv += [f"--on={o.noise_on[0]}:{o.noise_on[1]}", f"--off={o.noise_off[0]}:{o.noise_off[1]}"]
        argv += [f"--workers={o.noise_workers}", f"--workdir={self.out / 'scratch'}"]
        self.noise_job = self.backend.submit(
            name="rush-noise", procs=1, time_limit=duration + 120, command=argv, comment="rush:app=noise",
            partition=o.partition,
        )  # fmt: skip
        deadline = time.time() + 120
        while time.time() < deadline:
            if self.noise_log.is_file() and self.noise_log.stat().st_size:
                return
            time.sleep(0.5)
        raise CampaignError(
            f"the noise job {self.noise_job} did not start within 120 s",
            where=str(self.noise_log),
            fix="check that the RJMS has a free CPU for it and that the job can write to --out",
        )

    def _wait_noise_end(self, timeout: float = 30.0) -> None:
        # scancel sends SIGTERM: the generator stops its workers and logs "end"; wait for it so
        # that the log is complete when the campaign returns.
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                lines = self.noise_log.read_text(errors="replace").splitlines()
            except OSError:
                return
            if lines and '"end"' in lines[-1]:
                return
            time.sleep(0.2)
        log.warning("the noise job %s logged no end within %.0f s", self.noise_job, timeout)

    def _submit(self, index: int, app: str) -> _Flight:
        o = self.options
        from rush.collect.probe import probe_arguments, probe_command

        tag = f"{index:05d}-{app}"
        jobs = self.out / "jobs"
        # A backend that takes node counts gets them (the job spans that many nodes, and the
        # launcher takes its hosts from the job); the others get processes only, and mpirun's
        # --npernode spreads the ranks over the hosts of the allocation.
        by_rjms = bool(o.nodes) and self.backend.capabilities.submits_node_counts
        spread = None if by_rjms else o.nodes
        result = jobs / f"{tag}.result.json"
        probe = probe_command(
            o.ntasks, nodes=spread, launcher=o.launcher, python=o.python,
            probe_args=probe_arguments(
                ring_bytes=o.probe_ring_bytes, ring_iterations=o.probe_ring_iterations,
                allreduce_bytes=o.probe_allreduce_bytes, allreduce_iterations=o.probe_allreduce_iterations,
            ),
        )  # fmt: skip
        app_args = [f"--scale={o.scale}", f"--seed={o.seed + index}", f"--workdir={self.out / 'scratch'}"]
        app_argv = probe_command(
            o.ntasks, nodes=spread, launcher=o.launcher, python=o.python,
            script=PROXIES / APPS[app][0], probe_args=app_args,
        )  # fmt: skip
        spec = {
            "tag": tag,
            "probe": probe,
            "app": app_argv,
            "env": _environment(o),
            "result": str(result),
            "timeout": o.time_limit,
        }
        spec_path = jobs / f"{tag}.spec.json"
        spec_path.write_text(json.dumps(spec, indent=1) + "\n")
        submitted = time.time()
        job_id = self.backend.submit(
            name=f"rush-{app}", procs=o.ntasks, time_limit=o.time_limit + 60,
            command=[o.python, str(JOBRUN), str(spec_path)],
            comment=f"rush:app={app},wtype={APPS[app][1]}", partition=o.partition,
            **({"nodes": o.nodes} if by_rjms else {}),
        )  # fmt: skip
        return _Flight(index, app, tag, job_id, submitted, result)

    # -- finishing a run ----------------------------------------------------------------------
    def _finished(self, flights: list[_Flight]) -> dict[int, dict[str, Any]]:
        if not flights:
            return {}
        rows = self.backend.accounting([f.job_id for f in flights])
        return {
            int(r["job_id"]): r
            for r in rows
            if str(r.get("state", "")).upper() not in FINISHED_STATES_LIVE and r.get("end") is not None
        }

    def _record(self, flight: _Flight, acct: dict[str, Any], store: Any) -> dict[str, Any]:
        from rush.collect.probe import FEATURES, parse_probe_result

        try:
            result = json.loads(flight.result.read_text())
        except (OSError, ValueError):
            result = {}  # the job died before writing it (killed, node failure): times from the RJMS
        app = result.get("app") if isinstance(result.get("app"), dict) else None
        probe_obj = result.get("probe") if isinstance(result.get("probe"), dict) else None
        # The nodes the RJMS allocated (Flux: from the job's R), when it names them: what rush
        # schedules by, so the probe's rows go under them (not the ranks' own host names,
        # which differ on a Flux test instance where every broker is a fake node on this host).
        named = acct.get("nodes")
        allocated = [str(n) for n in named if n] if isinstance(named, list) else []
        probe = None
        if probe_obj is not None:
            try:
                parsed = parse_probe_result(probe_obj, where=f"{flight.tag} probe")
            except RushError as exc:
                log.warning("run %s: probe result refused: %s", flight.tag, exc)
            else:
                probe = {k: parsed.features[k] for k in FEATURES}
                if allocated:
                    parsed = replace(parsed, hosts=tuple(allocated))
                with self.lock:
                    store.insert(parsed.samples())
        start = float(result.get("job_start") or acct.get("start") or flight.submitted)
        end = float(result.get("job_end") or acct.get("end") or start)
        state = str(acct.get("state") or "UNKNOWN").upper()
        if app is None and state == "COMPLETED":
            state = "FAILED"  # the job ended but the application printed no result
        runtime = float(app["runtime"]) if app else max(0.0, end - start)
        app_start = float(app["start"]) if app else start
        hosts = (app or {}).get("hosts") or (probe_obj or {}).get("hosts") or [result.get("host") or ""]
        hosts = allocated or hosts
        record: dict[str, Any] = {
            "job_id": str(flight.job_id),
            "app": flight.app,
            "wtype": APPS[flight.app][1],
            "nodes": sorted({str(h).split(".")[0] for h in hosts if h}) or ["unknown"],
            "submit": min(flight.submitted, start),
            "start": start,
            "end": max(end, start),
            "runtime": runtime,
            "state": state,
            "probe": probe,
            "noise": self._noise_label(app_start, app_start + runtime),
            "run": flight.index,
            "app_start": app_start,
        }
        if allocated and isinstance(acct.get("ranks"), list):
            record["ranks"] = [int(r) for r in acct["ranks"]]  # Flux's broker ranks
        if app is None:
            output = str(result.get("app_output") or result.get("probe_output") or "no result file")
            record["error"] = output[-500:]
        return validate_record(record, where=f"run {flight.tag}")

    def _noise_label(self, start: float, end: float) -> bool | None:
        if not self.options.noise:
            return False  # no noise job in this campaign
        found = noise_intervals(self.noise_log, now=time.time())
        return None if found is None else noise_during(found[1], start, end)

    # -- the loop -----------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        from rush.collect.store import FeatureStore

        o = self.options
        rng = random.Random(o.seed)
        order = [app for app in o.apps for _ in range(o.runs)]
        rng.shuffle(order)
        (self.out / "jobs").mkdir(parents=True)
        (self.out / "scratch").mkdir()
        store = FeatureStore(self.out / "features.sqlite")
        sampler = Sampler(store, self.lock, counter_collectors(o), o.interval)
        flights: list[_Flight] = []
        done = 0
        with open(self.records_path, "w") as records:
            records.write(json.dumps(self._header(), sort_keys=True) + "\n")
            records.flush()
            sampler.start()
            try:
                if o.noise:
                    self._submit_noise()
                time.sleep(o.warmup)  # a window of counters before the first job
                pending = list(enumerate(order))
                while pending or flights:
                    while pending and len(flights) < o.concurrency:
                        index, app = pending.pop(0)
                        flights.append(self._submit(index, app))
                    time.sleep(1.0)
                    finished = self._finished(flights)
                    for flight in [f for f in flights if f.job_id in finished]:
                        flights.remove(flight)
                        record = self._record(flight, finished[flight.job_id], store)
                        records.write(json.dumps(record, sort_keys=True) + "\n")
                        records.flush()
                        self.records.append(record)
                        done += 1
                        self._progress(done, len(order))
                    for flight in list(flights):  # a job the RJMS never ran or lost
                        if time.time() > flight.submitted + o.time_limit * 2 + 600:
                            self.backend.cancel(flight.job_id)
                            flights.remove(flight)
                            self.failures.append(
                                f"{flight.tag}: job {flight.job_id} did not finish; cancelled"
                            )
            finally:
                for flight in flights:
                    self.backend.cancel(flight.job_id)
                if self.noise_job is not None:
                    self.backend.cancel(self.noise_job)
                    self._wait_noise_end()
                sampler.stop()
                store.close()
        summary = self.summary(sampler)
        _write_json(self.out / "summary.json", summary)
        return summary

    def _progress(self, done: int, total: int) -> None:
        info = {
            "done": done,
            "total": total,
            "elapsed_s": round(time.time() - self.started, 1),
            "last": self.records[-1] if self.records else None,
        }
        _write_json(self.out / "progress.json", info)
        self.progress(info)

    def summary(self, sampler: Sampler) -> dict[str, Any]:
        from rush.collect.procfs import ProcfsCollector

        per_app: dict[str, Any] = {}
        for app in self.options.apps:
            runs = [r for r in self.records if r["app"] == app]
            ok = [r["runtime"] for r in runs if r["state"] == "COMPLETED"]
            mean = sum(ok) / len(ok) if ok else None
            sd = (
                math.sqrt(sum((x - mean) ** 2 for x in ok) / (len(ok) - 1))
                if len(ok) > 1 and mean is not None
                else None
            )
            per_app[app] = {
                "wtype": APPS[app][1],
                "runs": len(runs),
                "completed": len(ok),
                "runtime_mean": mean,
                "runtime_sd": sd,
                "runtime_min": min(ok) if ok else None,
                "runtime_max": max(ok) if ok else None,
                "runs_with_noise": sum(1 for r in runs if r["noise"]),
            }
        absent = [name for name, path in PUBLISHED_COUNTERS.items() if not Path(path).exists()]
        procfs = next(
            (c for c in sampler.collectors if isinstance(getattr(c, "inner", c), ProcfsCollector)), None
        )
        return {
            "campaign": self.out.name,
            "records": str(self.records_path),
            "store": str(self.out / "features.sqlite"),
            "noise_log": str(self.noise_log) if self.options.noise else None,
            "runs": len(self.records),
            "completed": sum(1 for r in self.records if r["state"] == "COMPLETED"),
            "wall_s": round(time.time() - self.started, 1),
            "apps": per_app,
            "counter_samples": sampler.samples,
            "counters": sorted(f"{s}:{m}" for s, m in sampler.metrics),
            "counter_errors": sampler.errors,
            "absent_counters": absent + (procfs.absent() if procfs else []),
            "failures": self.failures,
        }


def _write_json(path: Path, obj: object) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(obj, indent=1, sort_keys=True) + "\n")
    replace_file(tmp, path)


def run_campaign(
    options: CampaignOptions, progress: Callable[[dict[str, Any]], None] | None = None
) -> dict[str, Any]:
    """Validate, reach the RJMS, then run the campaign; return its summary."""
    options.out = options.out.absolute()  # jobs run in other directories than ours
    validate(options)
    backend = connect(options)
    try:
        options.out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CampaignError(
            f"cannot create the output directory: {exc.strerror}",
            where=str(options.out),
            fix="choose another --out",
        ) from None
    return Campaign(options, backend, progress).run()


def command_line() -> str:
    return shlex.join(["rush", *sys.argv[1:]])
