"""Options of a sweep: where results go and which Dask cluster runs the cells."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class SlurmOptions:
    """dask-jobqueue ``SLURMCluster`` settings: each Slurm job runs one Dask worker process.

    ``env`` is exported to the scheduler side (``sbatch``/``squeue``/``scancel`` are run from
    its PATH, with its SLURM_CONF) and into the job scripts.
    """

    queue: str | None = None  # the partition
    cores: int = 1
    memory: str = "1GB"
    walltime: str = "00:30:00"
    jobs: int = 1
    processes: int = 1  # worker processes per job
    python: str | None = None  # the workers' python (default: this interpreter)
    account: str | None = None
    job_extra_directives: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    local_directory: str | None = None  # the workers' scratch and the job logs (default: a temp dir)
    interface: str | None = None  # network interface of scheduler and workers (e.g. "lo")
    start_timeout: float = 600.0  # seconds to wait for the first worker job to join


@dataclass
class SweepOptions:
    """How ``run_sweep`` runs.

    * ``out``: a directory (``DIR/sweep.csv`` and ``DIR/sweep.json``), or a ``.csv`` path (the
      description goes beside it as ``.json``); None keeps the rows in memory only.
    * ``cluster``: ``"local"`` (a LocalCluster of ``workers`` processes, default the cores),
      ``"local:N"``, ``"serial"`` (this process, no Dask: references and debugging),
      ``"slurm"`` (dask-jobqueue with ``slurm``), a scheduler address (``tcp://host:8786``) or a
      ``distributed.Client`` (used, not closed).
    * ``resume``: skip cells whose key is already in ``out`` (failed cells are run again);
      False starts the table afresh.
    * ``resources``: name -> zero-argument picklable loader, called once per worker, lazily.
    * ``key_fields``: the parameters that identify a cell (default: all of them).
    * ``batch``: cells per Dask task; None (default) sizes tasks from the measured cell
      durations (about 0.25 s of work a task, see ``engine.Batches``).
    """

    out: Path | None = None
    cluster: Any = "local"
    workers: int | None = None
    resume: bool = True
    progress: bool = True
    resources: dict[str, Callable[[], Any]] = field(default_factory=dict)
    key_fields: Sequence[str] | None = None
    batch: int | None = None
    slurm: SlurmOptions = field(default_factory=SlurmOptions)
    description: dict[str, Any] = field(default_factory=dict)  # extra fields for the JSON description
