"""Slurm backend: read the queue, set priorities, hold/release, requeue, submit.

Reads go through ``squeue --json`` and ``sinfo --json`` (Slurm 22.05+). Actions use
Slurm's own levers and never overwrite ``Priority=``:

* priority: ``scontrol update JobId=N SiteFactor=S`` (priority/multifactor stays in charge;
  the site factor is added to the job's priority);
* skip: ``scontrol hold N`` now, ``scontrol release N`` in a later cycle;
* false-small kill: ``scontrol requeue N`` then ``scontrol update JobId=N AdminComment=...
  StartTime=now`` with the job's rush tags updated (class=large, requeues=k), so the
  requeued job is eligible at once instead of after Slurm's requeue delay;
* submit (replay, probes): ``sbatch --parsable``.

Every command is an argv list (no shell); job ids and free-text arguments are validated.
rush's per-job inputs come from ``AdminComment`` as written by
``plugins/slurm/job_submit_rush.lua``: ``rush:idempotent=1;app=lammps;wtype=network``.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from rush.errors import RJMSError
from rush.rjms.base import ActionResult, ClusterState, RJMSBackend, RJMSJob, register_backend

SAFE_TEXT = re.compile(r"^[A-Za-z0-9 _.,:;=+/@%-]*$")
TAG_KEY = re.compile(r"^[a-z_]+$")
TAG_VALUE = re.compile(r"^[A-Za-z0-9._-]*$")
PENDING_STATES = ("PENDING",)
RUNNING_STATES = ("RUNNING", "COMPLETING", "CONFIGURING")


def parse_tags(admin_comment: str) -> dict[str, str]:
    """``rush:k=v;k=v`` -> {k: v}; anything else -> {}."""
    if not admin_comment or not admin_comment.startswith("rush:"):
        return {}
    tags = {}
    for item in admin_comment[5:].split(";"):
        key, _, value = item.partition("=")
        if key:
            tags[key.strip()] = value.strip() or "1"
    return tags


def format_tags(tags: dict[str, str]) -> str:
    for key, value in tags.items():
        if not TAG_KEY.match(key) or not TAG_VALUE.match(str(value)):
            raise RJMSError(
                f"invalid rush tag {key}={value!r}",
                where="AdminComment",
                fix="keys [a-z_], values [A-Za-z0-9._-]",
            )
    return "rush:" + ";".join(f"{k}={v}" for k, v in tags.items())


def _job_id(job_id: int) -> str:
    if isinstance(job_id, bool) or not isinstance(job_id, int) or job_id <= 0:
        raise RJMSError(
            f"invalid job id {job_id!r}", where="slurm backend", fix="job ids are positive integers"
        )
    return str(job_id)


def _text(value: str, what: str) -> str:
    if not SAFE_TEXT.match(value or ""):
        raise RJMSError(
            f"refusing unsafe {what} {value!r}",
            where="slurm backend",
            fix="letters, digits and _.,:;=+/@%- only",
        )
    return value


@register_backend("slurm")
class SlurmBackend(RJMSBackend):
    def __init__(
        self, bin_dir: str = "/usr/bin", slurm_conf: str | None = None, timeout: float = 20.0
    ) -> None:
        self.bin_dir = Path(bin_dir)
        self.timeout = float(timeout)
        self.env = None
        if slurm_conf:
            import os

            self.env = {**os.environ, "SLURM_CONF": str(slurm_conf)}

    # -- running Slurm's commands ---------------------------------------------------------
    def _run(self, tool: str, *args: str) -> subprocess.CompletedProcess:
        argv = [str(self.bin_dir / tool), *args]
        try:
            return subprocess.run(argv, capture_output=True, text=True, timeout=self.timeout, env=self.env)
        except FileNotFoundError as exc:
            raise RJMSError(
                f"{tool} not found",
                where=str(self.bin_dir),
                fix="install Slurm's client commands or set rjms.bin_dir",
            ) from exc
        except subprocess.TimeoutExpired as exc:
            raise RJMSError(
                f"{tool} did not answer within {self.timeout:.0f} s",
                where=" ".join(argv[:2]),
                fix="is slurmctld overloaded or down? rush will retry",
            ) from exc

    def _json(self, tool: str, *args: str) -> dict:
        out = self._run(tool, *args)
        if out.returncode != 0:
            raise RJMSError(
                f"{tool} failed: {out.stderr.strip()[:300]}",
                where=f"{tool} {' '.join(args)}",
                fix="check that slurmctld is up (scontrol ping)",
            )
        try:
            data = json.loads(out.stdout)
        except json.JSONDecodeError as exc:
            raise RJMSError(
                f"{tool} answered with invalid JSON ({exc.msg})", where=f"{tool} {' '.join(args)}"
            ) from exc
        if not isinstance(data, dict):
            raise RJMSError(f"{tool} answered with unexpected JSON", where=f"{tool} {' '.join(args)}")
        # Slurm 22.05 exits 0 when slurmctld is unreachable and reports it only here: an
        # empty job list would otherwise look like an empty queue.
        errors = data.get("errors") or []
        if errors:
            first = errors[0] if isinstance(errors[0], dict) else {"description": str(errors[0])}
            text = first.get("description") or first.get("error") or str(first)
            raise RJMSError(
                f"{tool} reported an error: {text}",
                where=f"{tool} {' '.join(args)}",
                fix="check that slurmctld is up (scontrol ping); rush takes no action until it answers",
            )
        return data

    def _action(self, tool: str, *args: str) -> ActionResult:
        out = self._run(tool, *args)
        answer = (out.stdout + out.stderr).strip()
        return ActionResult(ok=out.returncode == 0, answer=answer or "ok")

    # -- reading --------------------------------------------------------------------------
    def read_state(self, partitions: Sequence[str] = ()) -> ClusterState:
        taken_at = time.time()
        queue = self._json("squeue", "--json")
        nodes = self._json("sinfo", "--json")
        try:
            jobs = tuple(
                self._job(j) for j in queue["jobs"] if not partitions or j.get("partition") in partitions
            )
            total = free = 0
            names = set()
            for node in nodes["nodes"]:
                node_partitions = set(node.get("partitions") or [])
                if partitions and not node_partitions & set(partitions):
                    continue
                names |= node_partitions
                state = str(node.get("state", "")).lower()
                cpus = int(node.get("cpus", 0))
                total += cpus
                if state not in ("down", "drained", "draining", "fail", "future", "unknown"):
                    free += cpus - int(node.get("alloc_cpus", 0))
        except (KeyError, TypeError, ValueError) as exc:
            raise RJMSError(
                f"unexpected squeue/sinfo JSON ({exc!r})",
                where="squeue --json / sinfo --json",
                fix="rush supports Slurm 22.05+ JSON output",
            ) from exc
        factors = self.site_factors()
        jobs = tuple(replace(j, site_factor=factors.get(j.job_id, 0)) for j in jobs)
        return ClusterState(
            taken_at=taken_at,
            total_procs=total,
            free_procs=max(free, 0),
            jobs=jobs,
            partitions=tuple(sorted(names)),
        )

    def site_factors(self) -> dict[int, int]:
        """Pending jobs' site factors from sprio (a held job's priority reads 0, so not from squeue)."""
        out = self._run("sprio", "-h", "-o", "%i %S")
        factors = {}
        for line in out.stdout.splitlines() if out.returncode == 0 else []:
            parts = line.split()
            if len(parts) == 2 and parts[0].isdigit() and parts[1].lstrip("-").isdigit():
                factors[int(parts[0])] = int(parts[1])
        return factors

    @staticmethod
    def _job(j: dict) -> RJMSJob:
        state = j["job_state"] if isinstance(j["job_state"], str) else j["job_state"][0]
        limit = j.get("time_limit")
        limit = limit.get("number") if isinstance(limit, dict) else limit
        start = j.get("start_time")
        start = start.get("number") if isinstance(start, dict) else start
        return RJMSJob(
            job_id=int(j["job_id"]),
            state=state,
            submit=float(
                j["submit_time"] if not isinstance(j["submit_time"], dict) else j["submit_time"]["number"]
            ),
            procs=int(j.get("cpus") or j.get("num_cpus") or 1),
            requested_time=float(limit) * 60.0 if limit not in (None, 0) else float("inf"),
            start=float(start) if state in RUNNING_STATES and start else None,
            user=str(j.get("user_name", "")),
            account=str(j.get("account", "")),
            partition=str(j.get("partition", "")),
            name=str(j.get("name", "")),
            tags=parse_tags(str(j.get("admin_comment", ""))),
            held=str(j.get("state_reason", "")).startswith("JobHeld"),
            reason=str(j.get("state_reason", "")),
            restarts=int(j.get("restart_cnt", 0) or 0),
        )

    def accounting(self, job_ids: Sequence[int]) -> list[dict]:
        """Records of jobs slurmctld still remembers (MinJobAge), finished ones included."""
        wanted = {int(j) for j in job_ids}
        records = []
        for j in self._json("squeue", "--json")["jobs"]:
            if int(j["job_id"]) in wanted:
                records.append(
                    {
                        "job_id": int(j["job_id"]),
                        "state": j["job_state"],
                        "submit": j["submit_time"],
                        "start": j.get("start_time") or None,
                        "end": j.get("end_time") or None,
                        "restarts": j.get("restart_cnt", 0),
                    }
                )
        return records

    # -- acting ---------------------------------------------------------------------------
    def set_priority(self, job_id: int, site_factor: int) -> ActionResult:
        if not isinstance(site_factor, int) or not -(2**31) < site_factor < 2**31:
            raise RJMSError(f"invalid site factor {site_factor!r}", where="set_priority")
        return self._action("scontrol", "update", f"JobId={_job_id(job_id)}", f"SiteFactor={site_factor}")

    def hold(self, job_id: int) -> ActionResult:
        return self._action("scontrol", "hold", _job_id(job_id))

    def release(self, job_id: int) -> ActionResult:
        return self._action("scontrol", "release", _job_id(job_id))

    def requeue(self, job_id: int, tags: dict[str, str]) -> ActionResult:
        comment = format_tags(tags)
        result = self._action("scontrol", "requeue", _job_id(job_id))
        if not result.ok:
            return result
        # Slurm sets the requeue delay when the job has finished completing: wait for that.
        deadline = time.time() + 15
        while time.time() < deadline:
            out = self._run("squeue", "-h", "-j", str(job_id), "-o", "%T")
            if out.returncode == 0 and out.stdout.strip() == "PENDING":
                break
            time.sleep(0.5)
        # Slurm delays a requeued job (BeginTime ~2 min); as a large job it may run at once.
        tagged = self._action(
            "scontrol", "update", f"JobId={job_id}", f"AdminComment={comment}", "StartTime=now"
        )
        return ActionResult(ok=tagged.ok, answer=f"{result.answer}; {tagged.answer}")

    def cancel(self, job_id: int) -> ActionResult:
        return self._action("scancel", _job_id(job_id))

    def submit(
        self,
        *,
        name: str,
        procs: int,
        time_limit: float,
        command: Sequence[str],
        comment: str = "",
        begin: float | None = None,
        partition: str = "",
    ) -> int:
        if procs <= 0 or time_limit <= 0:
            raise RJMSError("procs and time_limit must be positive", where="submit")
        minutes = max(1, int(-(-time_limit // 60)))
        args = [
            "--parsable",
            f"--job-name={_text(name, 'job name')}",
            f"--ntasks={int(procs)}",
            f"--time={minutes}",
            "--output=/dev/null",
        ]
        if comment:
            args.append(f"--comment={_text(comment, 'comment')}")
        if partition:
            args.append(f"--partition={_text(partition, 'partition')}")
        if begin is not None:
            args.append(f"--begin={time.strftime('%Y-%m-%dT%H:%M:%S', time.localtime(begin))}")
        args.append(f"--wrap={shlex.join([str(c) for c in command])}")
        out = self._run("sbatch", *args)
        if out.returncode != 0:
            raise RJMSError(
                f"sbatch failed: {out.stderr.strip()[:300]}", where="sbatch", fix="check the job's parameters"
            )
        try:
            return int(out.stdout.strip().split(";")[0])
        except ValueError as exc:
            raise RJMSError(f"sbatch answered {out.stdout.strip()!r}", where="sbatch") from exc
