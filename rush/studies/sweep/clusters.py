"""Where cells run: this process, a LocalCluster, dask-jobqueue's SLURMCluster or a scheduler.

Every executor has one method, ``run(fn, batches)``, yielding each batch's result as it
completes (any order). Dask executors keep a bounded window of tasks in flight, so a sweep
of a million cells never holds a million futures.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from rush.errors import BackendUnavailableError, ConfigError, RJMSError
from rush.studies.sweep.options import SlurmOptions, SweepOptions

DASK_FIX = "pip install 'rush[dask]' (dask[distributed] and dask-jobqueue)"
ADDRESS = re.compile(r"^(tcp|tls|inproc|ucx|ws|wss)://\S+$")


def import_distributed():
    try:
        import distributed
    except ImportError as exc:
        raise BackendUnavailableError(
            f"sweeps on Dask need dask.distributed ({exc.name or 'distributed'} is not installed)",
            where="sweep cluster",
            fix=DASK_FIX + "; or run with cluster='serial'",
        ) from None
    return distributed


class SerialExecutor:
    """Cells run one after the other in this process (the reference of the benchmark)."""

    name = "serial"
    workers = 1

    def run(
        self,
        fn: Callable[[Any], Any],
        batches: Iterable[Any],
        lost: Callable[[Any, BaseException], Any] | None = None,
    ) -> Iterator[Any]:
        for batch in batches:
            yield fn(batch)


class DaskExecutor:
    """Cells run on a ``distributed.Client``; results arrive as tasks complete."""

    def __init__(self, client: Any, name: str, window: int | None = None) -> None:
        self.client = client
        self.name = name
        self.window = window

    @property
    def workers(self) -> int:
        info = self.client.scheduler_info()
        return max(1, sum(w.get("nthreads", 1) for w in info.get("workers", {}).values()))

    def run(
        self,
        fn: Callable[[Any], Any],
        batches: Iterable[Any],
        lost: Callable[[Any, BaseException], Any] | None = None,
    ) -> Iterator[Any]:
        """``fn(batch)`` for each batch; a task Dask itself gave up on (its worker died each
        time it ran, e.g. a segfault or the OOM killer) yields ``lost(batch, error)`` instead."""
        distributed = import_distributed()
        window = self.window or max(8, 4 * self.workers)
        pending = iter(batches)
        queue = distributed.as_completed()
        sent: dict[Any, Any] = {}

        def submit(batch: Any) -> None:
            future = self.client.submit(fn, batch, pure=False)
            sent[future.key] = batch
            queue.add(future)

        for batch in pending:
            submit(batch)
            if queue.count() >= window:
                break
        for future in queue:
            batch = sent.pop(future.key)
            try:
                result = future.result()  # fn catches the cells' own errors
            except Exception as exc:
                if lost is None:
                    raise
                result = lost(batch, exc)
            future.release()
            nxt = next(pending, None)
            if nxt is not None:
                submit(nxt)
            yield result


def _workers(options: SweepOptions, spec: str) -> int:
    if spec.startswith("local:"):
        text = spec.split(":", 1)[1]
        if not text.isdigit() or not 0 < int(text) <= 1024:
            raise ConfigError(
                f"bad worker count in cluster {spec!r}", where="cluster", fix="e.g. local:2 (1 to 1024)"
            )
        return int(text)
    if options.workers is not None:
        if isinstance(options.workers, bool) or not isinstance(options.workers, int):
            raise ConfigError("workers must be an integer", where="workers", fix="e.g. --workers 2")
        if not 0 < options.workers <= 1024:
            raise ConfigError(
                f"workers must be 1 to 1024, got {options.workers}", where="workers", fix="e.g. --workers 2"
            )
        return options.workers
    return os.cpu_count() or 1


def check_cluster(options: SweepOptions) -> None:
    """Refuse a bad cluster spec before anything is written or started."""
    spec = options.cluster
    if options.workers is not None:
        _workers(options, "local")  # checks the count whatever the cluster
    if not isinstance(spec, str):
        return  # a Client
    if spec in ("local", "serial", "slurm") or ADDRESS.match(spec):
        return
    if spec.startswith("local:"):
        _workers(options, spec)
        return
    raise ConfigError(
        f"unknown cluster {spec!r}",
        where="cluster",
        fix="use local, local:N, serial, slurm or a scheduler address such as tcp://host:8786",
    )


@contextlib.contextmanager
def open_executor(options: SweepOptions) -> Iterator[SerialExecutor | DaskExecutor]:
    """The executor for ``options.cluster``; clusters it starts are closed on the way out."""
    spec = options.cluster
    check_cluster(options)
    if isinstance(spec, str) and spec == "serial":
        yield SerialExecutor()
        return
    distributed = import_distributed()
    if not isinstance(spec, str):
        yield DaskExecutor(spec, "client")
        return
    if ADDRESS.match(spec):
        with distributed.Client(spec, timeout="30s") as client:
            yield DaskExecutor(client, spec)
        return
    if spec == "slurm":
        with _slurm_cluster(options.slurm) as cluster, distributed.Client(cluster) as client:
            _wait_for_workers(client, options.slurm, cluster)
            yield DaskExecutor(client, "slurm")
        return
    workers = _workers(options, spec)
    with (
        distributed.LocalCluster(
            n_workers=workers,
            threads_per_worker=1,  # numba kernels hold the GIL: one process per core
            processes=True,
            dashboard_address=":0",  # the HTTP endpoint on a free port (8787 may be taken)
            silence_logs=logging.ERROR,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield DaskExecutor(client, f"local:{workers}")


@contextlib.contextmanager
def _slurm_cluster(slurm: SlurmOptions) -> Iterator[Any]:
    """A SLURMCluster scaled to ``slurm.jobs`` jobs; its jobs are cancelled when it closes."""
    try:
        from dask_jobqueue import SLURMCluster
    except ImportError:
        raise BackendUnavailableError(
            "cluster 'slurm' needs dask-jobqueue, which is not installed", where="cluster", fix=DASK_FIX
        ) from None
    saved = {k: os.environ.get(k) for k in slurm.env}
    os.environ.update(slurm.env)  # SLURMCluster runs sbatch/squeue/scancel from this process's PATH
    scratch = slurm.local_directory or tempfile.mkdtemp(prefix="rush-sweep-")
    exports = [f"export {k}={_quote(v)}" for k, v in slurm.env.items()]
    cluster = None
    try:
        cluster = SLURMCluster(
            queue=slurm.queue,
            account=slurm.account,
            cores=slurm.cores,
            processes=slurm.processes,
            memory=slurm.memory,
            walltime=slurm.walltime,
            python=slurm.python or sys.executable,
            job_script_prologue=exports,
            job_extra_directives=list(slurm.job_extra_directives),
            local_directory=scratch,
            log_directory=scratch,
            interface=slurm.interface,
            scheduler_options={"dashboard_address": ":0"}
            | ({"interface": slurm.interface} if slurm.interface else {}),
            silence_logs="error",
        )
        cluster.scale(jobs=slurm.jobs)
        yield cluster
    finally:
        if cluster is not None:
            cluster.close()  # scancels the worker jobs
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _wait_for_workers(client: Any, slurm: SlurmOptions, cluster: Any) -> None:
    """A worker job that never starts would hang the sweep: fail with where to look instead."""
    try:
        client.wait_for_workers(1, timeout=slurm.start_timeout)
    except (TimeoutError, OSError) as exc:
        script = getattr(cluster, "job_script", lambda: "")()
        raise RJMSError(
            f"no Dask worker joined within {slurm.start_timeout:g} s ({type(exc).__name__})",
            where="cluster slurm",
            fix="check the worker jobs with squeue and their logs in the log directory; the job script "
            "was:\n" + script[:2000],
        ) from None


def _quote(value: str) -> str:
    import shlex

    return shlex.quote(value)
