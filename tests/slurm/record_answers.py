"""Record what each Slurm and OpenAPI version answers for the same cluster state.

    .venv/bin/python -m tests.slurm.record_answers [22.05] [25.11]

For each install (tests/slurm/cluster.py's INSTALLS) it starts a fresh test cluster,
submits the same jobs in the same way (:data:`JOBS`), waits for the same states, and stores
under ``tests/slurm/recorded/<install>/``:

* ``commands/jobs.json``: ``squeue --json --states=all``; ``commands/nodes.json``:
  ``scontrol show nodes --json`` (``sinfo --json`` on 22.05, whose scontrol has no --json;
  ``commands/nodes-from`` says which);
* ``rest-<version>/jobs.json`` and ``nodes.json``: ``GET /slurm/<version>/jobs|nodes`` for
  every OpenAPI version the install's slurmrestd serves (22.05: v0.0.38; 25.11: v0.0.41 ..
  v0.0.44), read at the same moment as the commands';
* ``manifest.json``: the Slurm release, the job names by id, and the paths slurmrestd
  publishes at ``/openapi/v3`` (the list rush negotiates from).

Answers are stored byte for byte. tests/slurm/test_recorded_answers.py parses them all and
checks that they give identical rush jobs. Run it again after a Slurm upgrade.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from rush.rjms.slurm_rest import KNOWN_APIS, SlurmREST
from tests.slurm.cluster import INSTALLS, SlurmCluster

RECORDED = Path(__file__).resolve().parent / "recorded"
# (name, sbatch arguments): a running job with rush tags, a pending one waiting for CPUs, a
# held one without a time limit, a completed one and a failed one (exit 3).
JOBS = (
    ("blocker", ["-n", "60", "-t", "5", "--comment=rush:idempotent,wtype=network", "--wrap", "sleep 300"]),
    ("waiter", ["-n", "8", "-t", "7", "--wrap", "sleep 10"]),
    ("held", ["-n", "2", "-t", "UNLIMITED", "--hold", "--wrap", "true"]),
    ("done", ["-n", "1", "-t", "1", "--wrap", "true"]),
    ("failed", ["-n", "1", "-t", "1", "--wrap", "exit 3"]),
)
WANTED = {
    "blocker": "RUNNING",
    "waiter": "PENDING",
    "held": "PENDING",
    "done": "COMPLETED",
    "failed": "FAILED",
}


def record(name: str) -> Path:
    install = INSTALLS[name]
    reason = install.available()
    if reason:
        raise SystemExit(f"cannot record Slurm {name}: {reason}")
    out = RECORDED / name
    work = Path(tempfile.mkdtemp(prefix=f"rush-record-{name}-"))
    cluster = SlurmCluster(work, install=install)
    try:
        cluster.start()
        ids = {}
        for job_name, args in JOBS:
            ids[cluster.submit("-J", job_name, *args)] = job_name
        deadline = time.time() + 60
        while True:
            states = {ids[j]: cluster.job(j).state for j in ids}
            if states == WANTED:
                break
            if time.time() > deadline:
                raise SystemExit(f"the jobs did not reach their states: {states}")
            time.sleep(0.5)
        # Give the backfill scheduler a pass so every version sees the same settled queue.
        time.sleep(2)
        shutil.rmtree(out, ignore_errors=True)
        (out / "commands").mkdir(parents=True)
        answers: dict[str, bytes] = {}
        squeue = cluster.run(cluster.tool("squeue"), "--json", "--states=all")
        answers["commands/jobs.json"] = squeue.stdout.encode()
        nodes = cluster.run(cluster.tool("scontrol"), "show", "nodes", "--json", check=False)
        nodes_from = "scontrol show nodes --json"
        if nodes.returncode != 0:  # 22.05
            nodes, nodes_from = cluster.run(cluster.tool("sinfo"), "--json"), "sinfo --json"
        answers["commands/nodes.json"] = nodes.stdout.encode()
        answers["commands/nodes-from"] = (nodes_from + "\n").encode()
        options = cluster.rest_options()
        rest = SlurmREST(options["rest_url"], jwt=options.get("jwt", ""), user=options.get("jwt_user", ""))
        spec = rest.session.get(f"{rest.base}/openapi/v3", headers=rest._headers(), timeout=30)
        spec.raise_for_status()
        paths = sorted(spec.json()["paths"])
        served = sorted(
            api for api in KNOWN_APIS if {f"/slurm/{api}/jobs/", f"/slurm/{api}/jobs"} & set(paths)
        )
        for api in served:
            for endpoint in ("jobs", "nodes"):
                answer = rest.session.get(
                    f"{rest.base}/slurm/{api}/{endpoint}", headers=rest._headers(), timeout=30
                )
                answer.raise_for_status()
                answers[f"rest-{api}/{endpoint}.json"] = answer.content
        release = cluster.run(cluster.tool("scontrol"), "--version").stdout.split()[-1]
        for rel, data in answers.items():
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            (out / rel).write_bytes(data)
        manifest = {
            "slurm": release,
            "jobs": {str(job_id): job_name for job_id, job_name in ids.items()},
            "sources": ["commands", *[f"rest-{api}" for api in served]],
            "openapi_paths": paths,
            "cpus": cluster.cpus,
        }
        (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
        print(f"recorded Slurm {release} ({', '.join(manifest['sources'])}) in {out}")
        return out
    finally:
        cluster.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    for name in sys.argv[1:] or list(INSTALLS):
        record(name)
