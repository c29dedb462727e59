"""What a Slurm daemon's read of a large queue costs through each of rush's Slurm backends, on a
live Slurm 25.11 (docs/research.md, "Which Slurm backend reads a large queue fastest").

The tests' live cluster (:class:`tests.slurm.cluster.SlurmCluster`, a helper module: the 25.11
install, eight slurmd on this host, free ports, a temporary directory, the JWT slurmrestd), with
``MaxJobCount`` raised and no job_submit plugin. One job takes every CPU of the default
partition; then ``--pending`` jobs are submitted one by one through pyslurm (each its own job,
not an array: ``squeue --json`` collapses a pending array into one record), so the records read
are real 25.11 records of pending jobs. Every read is split into:

* **rjms** (and **rjms cpu**: squeue's, slurmrestd's, or this process's in ``Jobs.load``):
  the answer's wall time: ``squeue --json --states=all`` (``SlurmCLI.run``), the
  HTTP GET of ``/slurm/<api>/jobs`` to its last byte, ``pyslurm.Jobs.load``;
* **decode**: ``json.loads`` of the answer; for pyslurm ``job_record`` of each job (CPU ms);
* **parse**: the backend's own ``parse_job`` over the records (CPU ms);
* **factors**: ``sprio`` through ``site_factors()`` (wall) and ``with_fields`` per job (CPU);
* **read**: ``read_state()``, what the daemon calls every cycle (jobs, nodes, topology, site
  factors), in wall and in this process's CPU, with slurmctld's CPU over it (/proc/PID/stat).

Backends alternate within each round (order rotated); medians of ``--repeat`` rounds. The
yardstick ``python -c pass`` (wall, a subprocess) and slurmctld's CPU over an idle interval as
long as a read are printed from the same run, with the load average.

Run (as root, Slurm 25.11 built in /opt/slurm-25.11, pyslurm for 25.11 in the venv):
``nice -n 15 python benchmarks/bench_slurm_backends.py --pending 1000 10000 [--repeat 5]``.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import bench_args

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import rush  # noqa: E402
from rush.planner.collector import settle_collector  # noqa: E402
from rush.rjms import slurm_json  # noqa: E402
from rush.rjms.base import RJMSBackend, get_backend, with_fields  # noqa: E402
from tests.slurm.cluster import MULTI_NODE, VENDORED, SlurmCluster  # noqa: E402

print = functools.partial(print, flush=True)  # noqa: A001 - rounds show as they end
TICK = os.sysconf("SC_CLK_TCK")


class BigQueueCluster(SlurmCluster):
    """The tests' multi-node 25.11 cluster, allowed ``max_jobs`` jobs (Slurm's default is 10 000)."""

    max_jobs = 40000

    def _write_config(self) -> None:
        super()._write_config()
        with self.conf.open("a") as conf:
            conf.write(f"MaxJobCount={self.max_jobs}\n")


def ctld_cpu(pid: int) -> float:
    """A daemon's (slurmctld's, slurmrestd's) CPU seconds so far (utime + stime)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(work: Callable[[], Any]) -> tuple[float, float, Any]:
    """(wall ms, CPU ms of this process, result) of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = work()
    return (time.perf_counter() - wall) * 1e3, (time.process_time() - cpu) * 1e3, out


def fill(cluster: SlurmCluster, pending: int, pyslurm: Any) -> float:
    """Submit jobs until ``pending`` are pending; returns the seconds it took."""
    have = sum(1 for j in cluster.squeue_json() if slurm_json.job_state(j.get("job_state", "")) == "PENDING")
    start = time.perf_counter()
    for k in range(have, pending):
        pyslurm.JobSubmitDescription(
            name=f"bench{k}",
            ntasks=1,
            time_limit=10,
            partitions="batch",
            standard_output="/dev/null",
            working_directory=str(cluster.dir),
            script="#!/bin/sh\nsleep 60\n",
        ).submit()
    return time.perf_counter() - start


def read_commands(backend: Any, row: dict[str, list[float]]) -> None:
    cpu0 = children_cpu()
    wall, _, out = timed(lambda: backend.cli.run("squeue", "--json", "--states=all"))
    row["rjms"].append(wall)
    row["rjms cpu"].append((children_cpu() - cpu0) * 1e3)
    row["bytes"].append(len(out.stdout.encode()))
    _, cpu, data = timed(lambda: backend.cli.decode(out, "squeue", "--json", "--states=all"))
    row["decode"].append(cpu)
    parse(backend, slurm_json.records(data, "jobs"), row)


def read_rest(backend: Any, row: dict[str, list[float]]) -> None:
    rest = backend.rest
    url = f"{rest.base}/slurm/{rest.negotiate()}/jobs"
    before = ctld_cpu(backend.restd_pid)
    wall, _, answer = timed(
        lambda: rest.session.get(url, headers=rest._headers(), timeout=rest.timeout).content
    )
    row["rjms"].append(wall)
    row["rjms cpu"].append((ctld_cpu(backend.restd_pid) - before) * 1e3)
    row["bytes"].append(len(answer))
    _, cpu, data = timed(lambda: json.loads(answer.decode("utf-8", "replace")))
    row["decode"].append(cpu)
    parse(backend, slurm_json.records(data, "jobs"), row)


def read_pyslurm(backend: Any, row: dict[str, list[float]]) -> None:
    from rush.rjms.slurm_pyslurm import job_record

    wall, cpu, jobs = timed(lambda: backend._call("Jobs.load", backend.pyslurm.Jobs.load))
    row["rjms"].append(wall)
    row["rjms cpu"].append(cpu)
    row["records"].append(len(jobs))
    _, cpu, records = timed(lambda: [job_record(j) for j in jobs.values()])
    row["decode"].append(cpu)
    row["bytes"].append(len(json.dumps(records)))
    _, cpu, parsed = timed(lambda: backend._parse(records))
    row["parse"].append(cpu)
    factors(backend._commands, parsed, row)


def parse(backend: Any, records: list[dict[str, Any]], row: dict[str, list[float]]) -> None:
    _, cpu, parsed = timed(lambda: backend._jobs(records))
    row["parse"].append(cpu)
    row["records"].append(len(records))
    factors(backend, parsed, row)


def factors(commands: Any, parsed: list[Any], row: dict[str, list[float]]) -> None:
    wall, _, found = timed(commands.site_factors)
    _, cpu, _ = timed(lambda: [with_fields(j, site_factor=found.get(j.job_id, 0)) for j in parsed])
    row["sprio"].append(wall)
    row["with_fields"].append(cpu)


def whole(backend: RJMSBackend, ctld: int, row: dict[str, list[float]]) -> None:
    before = ctld_cpu(ctld)
    wall, cpu, state = timed(backend.read_state)
    row["ctld cpu"].append((ctld_cpu(ctld) - before) * 1e3)
    row["read wall"].append(wall)
    row["read cpu"].append(cpu)
    row["jobs"].append(len(state.jobs))


def yardstick(repeat: int) -> float:
    """Median wall ms of ``python -c pass`` (this interpreter, a subprocess)."""
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        runs.append((time.perf_counter() - start) * 1e3)
    return statistics.median(runs)


def idle_ctld(ctld: int, seconds: float) -> float:
    """slurmctld's CPU ms per second over an idle interval (its own scheduling passes)."""
    before = ctld_cpu(ctld)
    time.sleep(seconds)
    return (ctld_cpu(ctld) - before) * 1e3 / seconds


COLUMNS = (
    ("records", "{:.0f}"),
    ("bytes", "{:.0f}"),
    ("rjms", "{:.0f}"),
    ("rjms cpu", "{:.0f}"),
    ("decode", "{:.0f}"),
    ("parse", "{:.0f}"),
    ("sprio", "{:.0f}"),
    ("with_fields", "{:.0f}"),
    ("read wall", "{:.0f}"),
    ("read cpu", "{:.0f}"),
    ("ctld cpu", "{:.0f}"),
    ("jobs", "{:.0f}"),
)


def measure(cluster: SlurmCluster, backends: dict[str, Any], repeat: int) -> None:
    readers = {"commands": read_commands, "slurmrestd": read_rest, "pyslurm": read_pyslurm}
    ctld = cluster.procs["slurmctld"].pid
    rows: dict[str, dict[str, list[float]]] = {
        name: {column: [] for column, _ in COLUMNS} for name in backends
    }
    names = list(backends)
    for r in range(repeat):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            readers[name](backends[name], rows[name])
            whole(backends[name], ctld, rows[name])
    print(f"  yardstick python -c pass: {yardstick(repeat):.0f} ms wall")
    reads = [statistics.median(row["read wall"]) for row in rows.values()]
    print(f"  slurmctld idle: {idle_ctld(ctld, max(1.0, max(reads) / 1e3)):.0f} ms CPU per s")
    head = " ".join(f"{column:>11}" for column, _ in COLUMNS)
    print(f"  {'backend':11} {head}")
    for name, row in rows.items():
        cells = " ".join(
            f"{form.format(statistics.median(row[c])) if row[c] else '-':>11}" for c, form in COLUMNS
        )
        print(f"  {name:11} {cells}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pending", type=bench_args.positive, nargs="+", default=[1000, 10000])
    parser.add_argument("--repeat", type=bench_args.positive, default=5)
    parser.add_argument(
        "--timeout",
        type=bench_args.positive_number,
        default=20.0,
        help="rjms.options.timeout (rush's default 20 s)",
    )
    args = parser.parse_args()
    if reason := VENDORED.available():
        sys.exit(f"cannot run: {reason}")
    print(f"rush from {rush.__file__}; {settle_collector()}; load {os.getloadavg()}")
    with tempfile.TemporaryDirectory(prefix="rush-bench-slurm-") as workdir:
        cluster = BigQueueCluster(Path(workdir), job_submit_lua=None, install=VENDORED, layout=MULTI_NODE)
        try:
            cluster.start()
            # pyslurm reads SLURM_CONF at import (libslurm exits without a configuration).
            os.environ["SLURM_CONF"] = str(cluster.conf)
            import pyslurm

            blocker = cluster.submit(
                "-p", "batch", "-N", "5", "-n", "20", "-t", "600", "--wrap", "sleep 3600"
            )
            cluster._wait(
                lambda: cluster.scontrol_job(blocker).get("JobState") == "RUNNING", 60, "the blocker"
            )
            backends: dict[str, Any] = {
                "commands": get_backend("slurm", **cluster.options(timeout=args.timeout))
            }
            try:
                options = cluster.options(**cluster.rest_options(), fallback=False, timeout=args.timeout)
                backends["slurmrestd"] = get_backend("slurm", **options)
                backends["slurmrestd"].restd_pid = cluster.procs["slurmrestd-jwt"].pid
            except Exception as exc:  # noqa: BLE001 - said and skipped, the others still run
                print(f"slurmrestd skipped: {exc}")
            backends["pyslurm"] = get_backend("pyslurm", **cluster.options(timeout=args.timeout))
            print(f"blocker job {blocker}; backends {', '.join(backends)}; {backends['pyslurm'].versions}")
            for pending in args.pending:
                took = fill(cluster, pending, pyslurm)
                print(f"N = {pending} pending: submitted in {took:.1f} s; load {os.getloadavg()}")
                measure(cluster, backends, args.repeat)
                print(f"  load {os.getloadavg()}")
        finally:
            cluster.stop()
    print(
        "columns: rjms, sprio, read wall = wall ms; rjms cpu = squeue's / slurmrestd's / Jobs.load's CPU ms; decode, parse,"
    )
    print("with_fields, read cpu = this process's CPU ms; ctld cpu = slurmctld's CPU ms over the read;")
    print("bytes = the answer (pyslurm: its records as JSON); medians over the rounds")


if __name__ == "__main__":
    main()
