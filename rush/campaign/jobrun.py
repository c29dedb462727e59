"""What one control job runs on its nodes: the MPI probe, then the proxy application.

    python3 jobrun.py SPEC.json

The campaign runner writes SPEC (the two argv lists, the environment to add, where to write)
and submits this file as the job's command through the RJMS. It runs the probe right as the job
starts (the published method's probe "as each job is scheduled"), then the application, and
writes ``result`` (JSON, atomically) with the job's start and end as seen on its first node,
the exit codes and the captured JSON lines of both programs. The exit status is the
application's, so the RJMS records a failed application as a failed job.

Standard library only: it runs on compute nodes that may not have rush installed. Its MPI
session directory rule is ``rush/collect/mpi_session.py``'s (the probe jobs' too), read from
rush's tree beside this file when it runs as a program.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from typing import Any

if __package__:
    from rush.collect.mpi_session import private_session_dir
else:  # a program on a compute node: rush's tree is beside it, not necessarily installed
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "collect"))
    from mpi_session import private_session_dir  # type: ignore[no-redef]

TAIL = 4000  # characters of a failed program's output kept for the record


def _json_line(text: str, fmt: str) -> dict[str, Any] | None:
    """The last JSON object line of ``text`` whose ``format`` is ``fmt``."""
    found = None
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict) and obj.get("format") == fmt:
            found = obj
    return found


def _run(argv: list[str], env: dict[str, str], timeout: float) -> tuple[int, str, float, float]:
    start = time.time()
    try:
        out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
        code, text = out.returncode, out.stdout + out.stderr
    except subprocess.TimeoutExpired as exc:
        code, text = 124, f"timed out after {timeout} s: {exc.stdout or ''}"
    except OSError as exc:
        code, text = 127, f"cannot run {argv[0]}: {exc.strerror}"
    return code, text, start, time.time()


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: jobrun.py SPEC.json", file=sys.stderr)
        return 2
    with open(argv[0]) as handle:
        spec = json.load(handle)
    env = {**os.environ, **spec.get("env", {})}
    session_dir = private_session_dir(env)
    try:
        return _job(spec, env)
    finally:
        if session_dir:
            shutil.rmtree(session_dir, ignore_errors=True)


def _job(spec: dict[str, Any], env: dict[str, str]) -> int:
    job_start = time.time()
    result: dict[str, Any] = {
        "format": "rush-campaign-job/1",
        "tag": spec["tag"],
        "job_id": os.environ.get("SLURM_JOB_ID") or os.environ.get("FLUX_JOB_ID"),
        "host": socket.gethostname(),
        "nodelist": os.environ.get("SLURM_JOB_NODELIST", ""),
        "job_start": job_start,
    }
    if spec.get("probe"):
        code, text, start, end = _run(spec["probe"], env, float(spec.get("timeout", 600)))
        result.update(probe_rc=code, probe_start=start, probe_end=end)
        result["probe"] = _json_line(text, "rush-mpi-probe/1") if code == 0 else None
        if code != 0:
            result["probe_output"] = text[-TAIL:]
    code, text, start, end = _run(spec["app"], env, float(spec.get("timeout", 600)))
    result.update(app_rc=code, app_start=start, app_end=end)
    result["app"] = _json_line(text, "rush-proxy/1") if code == 0 else None
    if code != 0 or result["app"] is None:
        result["app_output"] = text[-TAIL:]
    result["job_end"] = time.time()
    tmp = f"{spec['result']}.tmp"
    with open(tmp, "w") as handle:
        json.dump(result, handle, sort_keys=True)
        handle.write("\n")
    os.replace(tmp, spec["result"])  # the runner never reads half a result
    return code if code else (0 if result["app"] is not None else 1)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
