"""MPI probe results (collectors/mpi_probe.py): parse, turn into Samples, ingest, submit.

The probe prints one JSON object (format ``rush-mpi-probe/1``) with nine features — the minimum,
maximum and mean across ranks of the per-iteration seconds spent in ``Send``, ``Recv`` and
``Allreduce`` — and metadata (ranks, hosts, sizes, iterations, timestamp, job id).

In the feature store each feature becomes one Sample per host the probe ran on
(source ``mpi_probe``, metric = feature name, timestamp = probe start), so a job's window query
over its own hosts finds the probes that measured those hosts' network:
``window_features(hosts, start, end, ["mpi_probe"])`` then gives ``mean_send_max`` etc.
"""

from __future__ import annotations

import json
import math
import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rush.collect.base import Sample
from rush.collect.rates import MAX_FUTURE_S
from rush.errors import CollectorError

if TYPE_CHECKING:
    from rush.rjms.base import RJMSBackend

SOURCE = "mpi_probe"
FORMAT = "rush-mpi-probe/1"
FEATURES: tuple[str, ...] = tuple(
    f"{op}_{stat}" for op in ("send", "recv", "allreduce") for stat in ("min", "max", "mean")
)
# Shipped inside the package (the wheel has no collectors/ directory); collectors/mpi_probe.py links here.
PROBE_SCRIPT = Path(__file__).resolve().with_name("mpi_probe.py")
# Runs the probe job's launch with a private OpenMPI session directory (the campaign jobs' rule).
MPI_SESSION_SCRIPT = Path(__file__).resolve().with_name("mpi_session.py")


@dataclass(frozen=True)
class ProbeResult:
    features: dict[str, float]  # the nine FEATURES, seconds per iteration
    ranks: int
    hosts: tuple[str, ...]
    timestamp: float  # probe start, unix seconds
    ring_bytes: int
    ring_iterations: int
    allreduce_bytes: int
    allreduce_iterations: int
    job_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def samples(self) -> list[Sample]:
        return [
            Sample(timestamp=self.timestamp, host=host, source=SOURCE, metric=name, value=self.features[name])
            for host in self.hosts
            for name in FEATURES
        ]


def _number(obj: dict[str, Any], key: str, where: str, *, integer: bool = False) -> float:
    value = obj.get(key)
    try:
        # float(): an int beyond float range (JSON allows 10**400) is refused, not an OverflowError.
        ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(float(value))
    except OverflowError:
        ok = False
    ok = ok and value >= 0
    if ok and integer:
        ok = float(value).is_integer()
    if not ok:
        kind = "a non-negative integer" if integer else "a finite non-negative number"
        shown = repr(value) if not isinstance(value, int) or abs(value) < 10**30 else "a number too large"
        raise CollectorError(
            f"field {key!r} must be {kind}, got {shown[:60]}",
            where=where,
            fix="re-run collectors/mpi_probe.py; do not edit its output",
        )
    return float(value)


def parse_probe_result(obj: object, where: str = "probe result") -> ProbeResult:
    """Validate one probe JSON object."""
    if not isinstance(obj, dict):
        raise CollectorError("probe result is not a JSON object", where=where)
    if obj.get("format") != FORMAT:
        raise CollectorError(
            f"unknown probe format {obj.get('format')!r}, expected {FORMAT!r}",
            where=where,
            fix="use collectors/mpi_probe.py from the same rush version",
        )
    features = {name: _number(obj, name, where) for name in FEATURES}
    for op in ("send", "recv", "allreduce"):
        if not features[f"{op}_min"] <= features[f"{op}_mean"] <= features[f"{op}_max"]:
            raise CollectorError(f"{op}_min <= {op}_mean <= {op}_max does not hold", where=where)
    hosts = obj.get("hosts")
    if not isinstance(hosts, list) or not hosts or not all(isinstance(h, str) and h for h in hosts):
        raise CollectorError("field 'hosts' must be a non-empty list of host names", where=where)
    ranks = int(_number(obj, "ranks", where, integer=True))
    if ranks < 1:
        raise CollectorError("field 'ranks' must be >= 1", where=where)
    timestamp = _number(obj, "timestamp", where)
    if timestamp > time.time() + MAX_FUTURE_S:  # a future sample would outlive every real one
        raise CollectorError(
            f"timestamp {timestamp:.0f} is in the future",
            where=where,
            fix="check the clock of the node that ran the probe",
        )
    job_id = obj.get("job_id")
    known = set(FEATURES) | {
        "format",
        "hosts",
        "ranks",
        "timestamp",
        "job_id",
        "ring_bytes",
        "ring_iterations",
    }
    known |= {"allreduce_bytes", "allreduce_iterations"}
    return ProbeResult(
        features=features,
        ranks=ranks,
        hosts=tuple(dict.fromkeys(hosts)),
        timestamp=timestamp,
        ring_bytes=int(_number(obj, "ring_bytes", where, integer=True)),
        ring_iterations=int(_number(obj, "ring_iterations", where, integer=True)),
        allreduce_bytes=int(_number(obj, "allreduce_bytes", where, integer=True)),
        allreduce_iterations=int(_number(obj, "allreduce_iterations", where, integer=True)),
        job_id=str(job_id) if job_id not in (None, "") else None,
        metadata={k: v for k, v in obj.items() if k not in known},
    )


def parse_probe_output(text: str, where: str = "probe output") -> list[ProbeResult]:
    """Every probe result in a file or captured job output.

    Lines that are not JSON objects are skipped: a batch job's output file also holds mpirun
    warnings and banners. A line that is JSON with the probe's format but broken is an error.
    """
    results = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError) as exc:  # also int()'s digit limit, deep nesting
            if any(f'"{key}"' in line for key in ("format", *FEATURES)):
                message = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)[:80]
                raise CollectorError(
                    f"truncated or broken probe JSON: {message}", where=f"{where}:{number}"
                ) from exc
            continue
        if isinstance(obj, dict) and "format" in obj:
            results.append(parse_probe_result(obj, where=f"{where}:{number}"))
    if not results:
        raise CollectorError(
            "no probe result found",
            where=where,
            fix="point at the probe's --output file or the job's stdout file; check the job finished",
        )
    return results


def read_probe_file(path: Path) -> list[ProbeResult]:
    try:
        if not path.is_file():  # a FIFO would block, a directory cannot be read
            raise CollectorError("not a regular file", where=str(path), fix="give the probe's output file")
        text = path.read_text(errors="replace")
    except OSError as exc:
        raise CollectorError(f"cannot read: {exc.strerror}", where=str(path)) from exc
    return parse_probe_output(text, where=str(path))


def ingest_probe_files(paths: list[Path], store: Any) -> int:
    """Insert the Samples of every probe result in ``paths`` into a feature store; return the count."""
    samples = [s for path in paths for result in read_probe_file(path) for s in result.samples()]
    store.insert(samples)
    return len(samples)


# -------------------------------------------------------------------------------- submit


def probe_arguments(
    *,
    ring_bytes: str = "100MB",
    ring_iterations: int = 10,
    allreduce_bytes: str = "100MB",
    allreduce_iterations: int = 5,
    output: str = "",
) -> list[str]:
    args = [
        f"--ring-bytes={ring_bytes}",
        f"--ring-iterations={ring_iterations}",
        f"--allreduce-bytes={allreduce_bytes}",
        f"--allreduce-iterations={allreduce_iterations}",
    ]
    return args + ([f"--output={output}"] if output else [])


def probe_command(
    ntasks: int,
    *,
    nodes: int | None = None,
    launcher: str = "mpirun",
    python: str = sys.executable,
    script: Path = PROBE_SCRIPT,
    probe_args: list[str] | None = None,
) -> list[str]:
    """The command a batch job runs:
    ``python mpi_session.py mpirun -np N [--npernode K] python mpi_probe.py ...``.

    OpenMPI's mpirun takes the hosts from the Slurm allocation. ``nodes`` spreads the ranks with
    ``--npernode ceil(ntasks/nodes)``, because the backend interface asks the RJMS for processes only.
    The launch runs through ``mpi_session.py``: a private OpenMPI session directory for the job,
    removed when it ends (the RJMS's submit takes no environment; a site's own setting is kept).
    """
    launch = shlex.split(launcher)
    if launch and Path(launch[0]).name == "mpirun":
        launch += ["-np", str(ntasks)]
        if nodes:
            launch += ["--npernode", str(math.ceil(ntasks / nodes))]
    return [python, str(MPI_SESSION_SCRIPT), *launch, python, str(script), *(probe_args or [])]


def submit_probe(
    backend: RJMSBackend,
    *,
    ntasks: int,
    nodes: int | None = None,
    time_limit: float = 600.0,
    partition: str = "",
    launcher: str = "mpirun",
    python: str = sys.executable,
    probe_args: list[str] | None = None,
) -> int:
    """Submit the probe as a batch job through an RJMS backend; return the job id."""
    if ntasks < 2:
        raise CollectorError(
            "the probe needs at least 2 tasks to form a ring", where="--ntasks", fix="use --ntasks 2 or more"
        )
    if nodes is not None and not 1 <= nodes <= ntasks:
        raise CollectorError(f"--nodes {nodes} must be between 1 and --ntasks {ntasks}", where="--nodes")
    for program in (PROBE_SCRIPT, MPI_SESSION_SCRIPT):
        if not program.exists():
            raise CollectorError(
                "probe program not found", where=str(program), fix="install rush from its source tree"
            )
    command = probe_command(ntasks, nodes=nodes, launcher=launcher, python=python, probe_args=probe_args)
    return backend.submit(
        name="rush-mpi-probe",
        procs=ntasks,
        time_limit=time_limit,
        command=command,
        comment="rush-probe:mpi",
        partition=partition,
    )
