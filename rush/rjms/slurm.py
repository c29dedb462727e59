"""Slurm backend: read the queue, set priorities, hold/release, requeue, cancel, submit.

Reads go through slurmrestd (``rest_url``, OpenAPI v0.0.38) when configured, and fall back
to ``squeue --json`` / ``sinfo --json`` (Slurm 22.05+) when slurmrestd cannot be reached.
Both answer with the same job and node records, parsed by one function. Actions use
Slurm's own levers through its commands and never overwrite ``Priority=``:

* priority: ``scontrol update JobId=N SiteFactor=S`` (priority/multifactor stays in charge;
  Slurm adds the site factor to the job's priority);
* skip: ``scontrol hold N`` now, ``scontrol release N`` in a later cycle;
* false-small kill: ``scontrol requeue N`` then ``scontrol update JobId=N AdminComment=...
  StartTime=now+5`` with the job's rush tags updated (class=large, requeues=k), so the
  requeued job is eligible at once instead of after Slurm's requeue delay;
* cancel: ``scancel N``; submit (replay, probes): ``sbatch --parsable``.

Every command is an argv list (no shell); job ids and free-text arguments are validated.
rush's per-job inputs come from ``AdminComment`` as written by
``plugins/slurm/job_submit_rush.lua``: ``rush:idempotent=1;app=lammps;wtype=network``.
A read either returns a complete :class:`ClusterState` or raises :class:`RJMSError`.
"""

from __future__ import annotations

import re
import shlex
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from rush.errors import ConfigError, RJMSError
from rush.rjms.base import ActionResult, ClusterState, RJMSBackend, RJMSJob, register_backend
from rush.rjms.slurm_cli import SlurmCLI
from rush.rjms.slurm_rest import SlurmREST

# Free text passed to Slurm (job name, comment, partition): no newlines, no ';', no quotes.
SAFE_TEXT = re.compile(r"^[A-Za-z0-9 _.,:=+/@%-]*$")
TAG_KEY = re.compile(r"^[a-z_]+$")
TAG_VALUE = re.compile(r"^[A-Za-z0-9._-]*$")
# Slurm's "no value" / "infinite" markers for 32-bit fields (NO_VAL, INFINITE).
NO_VAL = 0xFFFFFFFE
FINAL_STATES = frozenset(
    {
        "COMPLETED",
        "CANCELLED",
        "FAILED",
        "TIMEOUT",
        "NODE_FAIL",
        "PREEMPTED",
        "BOOT_FAIL",
        "DEADLINE",
        "OUT_OF_MEMORY",
        "REVOKED",
    }
)
RUNNING_STATES = frozenset({"RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED", "SIGNALING", "STAGE_OUT"})
# Nodes in these states or with these flags offer no CPUs to new jobs.
UNUSABLE_NODE = frozenset(
    {"down", "drain", "drained", "draining", "fail", "failing", "future", "unknown", "maint", "reboot_issued"}
    | {"not_responding", "powered_down", "powering_down", "power_down", "powering_up", "planned", "invalid"}
)


# -- rush tags in AdminComment --------------------------------------------------------------
def parse_tags(admin_comment: str) -> dict[str, str]:
    """``rush:k=v;k=v`` -> {k: v}; anything else (another tool's comment) -> {}."""
    if not admin_comment or not admin_comment.startswith("rush:"):
        return {}
    tags = {}
    for item in admin_comment[5:].split(";"):
        key, _, value = item.partition("=")
        if key.strip():
            tags[key.strip()] = value.strip() or "1"
    return tags


def format_tags(tags: dict[str, str]) -> str:
    for key, value in tags.items():
        if not TAG_KEY.match(str(key)) or not TAG_VALUE.match(str(value)):
            raise RJMSError(
                f"invalid rush tag {key}={value!r}",
                where="AdminComment",
                fix="keys [a-z_], values [A-Za-z0-9._-]",
            )
    return "rush:" + ";".join(f"{k}={v}" for k, v in tags.items())


# -- validation -----------------------------------------------------------------------------
def _job_id(job_id: object) -> str:
    if isinstance(job_id, bool) or not isinstance(job_id, int) or job_id <= 0:
        raise RJMSError(
            f"invalid job id {job_id!r}", where="slurm backend", fix="job ids are positive integers"
        )
    return str(job_id)


def _text(value: str, what: str) -> str:
    if not isinstance(value, str) or not SAFE_TEXT.match(value):
        raise RJMSError(
            f"refusing unsafe {what} {value!r}",
            where="slurm backend",
            fix="letters, digits, spaces and _.,:=+/@%- only (no newlines, ';' or quotes)",
        )
    return value


# -- parsing Slurm's JSON (squeue --json and slurmrestd v0.0.38 share the records) ----------
def _number(value: Any) -> float | None:
    """A time or count field: a plain number (v0.0.38) or {set, infinite, number} (v0.0.39+)."""
    if isinstance(value, dict):
        if value.get("infinite"):
            return float("inf")
        if not value.get("set", True):
            return None
        value = value.get("number")
    if value is None or isinstance(value, bool):
        return None
    number = float(value)
    return float("inf") if number >= NO_VAL else number


def _state(value: Any) -> str:
    if isinstance(value, list):  # v0.0.40+: ["PENDING", "REQUEUED", ...]
        return str(value[0]) if value else ""
    return str(value)


def parse_job(record: dict[str, Any]) -> RJMSJob:
    """One job record of ``squeue --json`` / ``GET /slurm/v0.0.38/jobs``."""
    state = _state(record["job_state"])
    limit = _number(record.get("time_limit"))  # minutes
    start = _number(record.get("start_time"))
    submit = _number(record["submit_time"])
    if submit is None:
        raise ValueError("job without submit_time")
    reason = str(record.get("state_reason") or "")
    return RJMSJob(
        job_id=int(record["job_id"]),
        state=state,
        submit=submit,
        procs=max(int(_number(record.get("cpus")) or 1), 1),
        requested_time=limit * 60.0 if limit else float("inf"),
        start=start if state in RUNNING_STATES and start else None,
        user=str(record.get("user_name") or ""),
        account=str(record.get("account") or ""),
        partition=str(record.get("partition") or ""),
        name=str(record.get("name") or ""),
        tags=parse_tags(str(record.get("admin_comment") or "")),
        held=state == "PENDING" and reason.startswith("JobHeld"),
        reason=reason,
        restarts=int(_number(record.get("restart_cnt")) or 0),
    )


def parse_nodes(records: list[dict[str, Any]], partitions: Sequence[str] = ()) -> tuple[int, int, set[str]]:
    """(total CPUs, free CPUs, partition names) over the nodes of ``partitions`` (all if empty)."""
    total = free = 0
    names: set[str] = set()
    wanted = set(partitions)
    for node in records:
        node_partitions = set(node.get("partitions") or [])
        if wanted and not node_partitions & wanted:
            continue
        names |= node_partitions
        cpus = int(node["cpus"])
        total += cpus
        states = {_state(node.get("state", "")).lower()}
        states |= {str(flag).lower() for flag in node.get("state_flags") or []}
        if not states & UNUSABLE_NODE:
            free += max(cpus - int(node.get("alloc_cpus") or 0), 0)
    return total, free, names


def parse_jobcomp(text: str) -> dict[int, dict[str, Any]]:
    """Records of Slurm's jobcomp/filetxt file (``JobId=1 ... JobState=COMPLETED ...``), by job id."""
    records: dict[int, dict[str, Any]] = {}
    for line in text.splitlines():
        fields = dict(re.findall(r"(?:^|\s)([A-Za-z]+)=(\S*)", line))
        if not fields.get("JobId", "").isdigit():
            continue

        def stamp(key: str, fields: dict[str, str] = fields) -> float | None:
            value = fields.get(key, "")
            try:  # filetxt writes the controller's local time without a zone
                return datetime.strptime(value, "%Y-%m-%dT%H:%M:%S").timestamp()
            except ValueError:
                return None

        job_id = int(fields["JobId"])
        records[job_id] = {
            "job_id": job_id,
            "state": fields.get("JobState", ""),
            "submit": stamp("SubmitTime"),
            "start": stamp("StartTime"),
            "end": stamp("EndTime"),
            "procs": int(fields["ProcCnt"]) if fields.get("ProcCnt", "").isdigit() else None,
            "exit_code": fields.get("ExitCode", ""),
            "source": "jobcomp",
        }
    return records


@register_backend("slurm")
class SlurmBackend(RJMSBackend):
    """Options (``rjms.options`` in the daemon's config):

    * ``rest_url``: ``unix:/path/slurmrestd.socket`` or ``http://host:6820``; empty = commands only;
    * ``jwt`` / ``jwt_file``: a token (``scontrol token``) for rest_auth/jwt, ``jwt_user`` its user;
    * ``fallback``: read through squeue/sinfo when slurmrestd cannot be reached (default on);
    * ``slurm_conf``: SLURM_CONF for the commands; ``bin_dir``: where they are (/usr/bin);
    * ``timeout``: seconds per command or request; ``jobcomp_file``: JobCompLoc (filetxt), read
      by :meth:`accounting` for jobs slurmctld has forgotten (older than MinJobAge).
    """

    def __init__(
        self,
        rest_url: str = "",
        jwt: str = "",
        jwt_file: str = "",
        jwt_user: str = "",
        fallback: bool = True,
        slurm_conf: str | None = None,
        bin_dir: str = "/usr/bin",
        timeout: float = 20.0,
        jobcomp_file: str = "",
    ) -> None:
        if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0:
            raise ConfigError(f"invalid timeout {timeout!r}", where="rjms.options.timeout", fix="seconds > 0")
        self.cli = SlurmCLI(bin_dir=bin_dir, slurm_conf=slurm_conf, timeout=timeout)
        self.rest = (
            SlurmREST(rest_url, jwt=jwt, jwt_file=jwt_file, user=jwt_user, timeout=timeout)
            if rest_url
            else None
        )
        self.fallback = bool(fallback)
        self.jobcomp_file = Path(jobcomp_file) if jobcomp_file else None
        # Where the last read came from ("rest" or "cli") and why REST was skipped, if it was.
        self.last_source = ""
        self.last_rest_error: RJMSError | None = None

    # -- reading --------------------------------------------------------------------------
    def _read(self, endpoint: str, cli_only: bool = False) -> dict[str, Any]:
        """``jobs`` or ``nodes`` from slurmrestd, else from squeue/sinfo."""
        if self.rest is not None and not cli_only:
            try:
                data = self.rest.get(endpoint)
                self.last_source = "rest"
                return data
            except RJMSError as exc:
                self.last_rest_error = exc
                if not self.fallback:
                    raise
        data = self.cli.json("squeue" if endpoint == "jobs" else "sinfo", "--json")
        self.last_source = "cli"
        return data

    def _records(self, endpoint: str, cli_only: bool = False) -> list[dict[str, Any]]:
        data = self._read(endpoint, cli_only)
        records = data.get(endpoint)
        if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
            raise RJMSError(
                f"the answer has no list of {endpoint}",
                where=f"slurm {endpoint} ({self.last_source})",
                fix="rush supports Slurm 22.05+ (openapi/v0.0.38, squeue --json)",
            )
        return records

    def _jobs(self, records: list[dict[str, Any]]) -> list[RJMSJob]:
        try:
            return [parse_job(r) for r in records]
        except (KeyError, TypeError, ValueError) as exc:
            raise RJMSError(
                f"unexpected job record ({exc!r})",
                where=f"slurm jobs ({self.last_source})",
                fix="rush supports Slurm 22.05+ JSON job records",
            ) from exc

    def read_state(self, partitions: Sequence[str] = ()) -> ClusterState:
        """Pending and live jobs (finished ones left out) and free CPUs, all or nothing."""
        taken_at = time.time()
        jobs = [j for j in self._jobs(self._records("jobs")) if j.state not in FINAL_STATES]
        if partitions:
            jobs = [j for j in jobs if j.partition in partitions]
        try:
            # Once REST has failed in this read, do not wait for it a second time.
            nodes = self._records("nodes", cli_only=self.last_source == "cli")
            total, free, names = parse_nodes(nodes, partitions)
        except (KeyError, TypeError, ValueError) as exc:
            raise RJMSError(
                f"unexpected node record ({exc!r})",
                where=f"slurm nodes ({self.last_source})",
                fix="rush supports Slurm 22.05+ JSON node records",
            ) from exc
        factors = self.site_factors() if any(j.state == "PENDING" for j in jobs) else {}
        return ClusterState(
            taken_at=taken_at,
            total_procs=total,
            free_procs=free,
            jobs=tuple(replace(j, site_factor=factors.get(j.job_id, 0)) for j in jobs),
            partitions=tuple(sorted(names)),
        )

    def job(self, job_id: int) -> RJMSJob | None:
        """One job as slurmctld knows it, finished ones included (for MinJobAge seconds)."""
        wanted = int(_job_id(job_id))
        found = [j for j in self._jobs(self._records("jobs")) if j.job_id == wanted]
        if not found:
            return None
        factors = self.site_factors() if found[0].state == "PENDING" else {}
        return replace(found[0], site_factor=factors.get(wanted, 0))

    def site_factors(self) -> dict[int, int]:
        """Pending jobs' site factors from ``sprio`` (neither squeue nor slurmrestd 22.05 show it).

        Best effort: a held job is not listed (reads 0), and without Slurm's commands on this
        host (slurmrestd only) every job reads 0. The daemon keeps its own record of what it set.
        """
        try:
            out = self.cli.run("sprio", "-h", "-o", "%i %S")
        except RJMSError:
            return {}
        factors = {}
        for line in out.stdout.splitlines() if out.returncode == 0 else []:
            parts = line.split()
            if len(parts) == 2 and parts[0].isdigit() and parts[1].lstrip("-").isdigit():
                factors[int(parts[0])] = int(parts[1])
        return factors

    def accounting(self, job_ids: Sequence[int]) -> list[dict]:
        """Finished-job records: from slurmctld while it remembers them (MinJobAge), then
        from the jobcomp/filetxt file when ``jobcomp_file`` is set. No slurmdbd needed."""
        wanted = {int(_job_id(j)) for j in job_ids}
        records: dict[int, dict[str, Any]] = {}
        for r in self._records("jobs"):
            try:
                job_id = int(r["job_id"])
                if job_id not in wanted or _state(r["job_state"]) not in FINAL_STATES:
                    continue
                records[job_id] = {
                    "job_id": job_id,
                    "state": _state(r["job_state"]),
                    "submit": _number(r["submit_time"]),
                    "start": _number(r.get("start_time")) or None,
                    "end": _number(r.get("end_time")) or None,
                    "procs": int(_number(r.get("cpus")) or 1),
                    "restarts": int(_number(r.get("restart_cnt")) or 0),
                    "exit_code": r.get("exit_code"),
                    "source": self.last_source,
                }
            except (KeyError, TypeError, ValueError) as exc:
                raise RJMSError(f"unexpected job record ({exc!r})", where="slurm accounting") from exc
        missing = wanted - set(records)
        if missing and self.jobcomp_file is not None:
            try:
                text = self.jobcomp_file.read_text(errors="replace")
            except OSError as exc:
                raise RJMSError(
                    f"cannot read the jobcomp file ({exc.strerror})",
                    where=str(self.jobcomp_file),
                    fix="set rjms.options.jobcomp_file to slurm.conf's JobCompLoc (JobCompType=jobcomp/filetxt)",
                ) from exc
            from_file = parse_jobcomp(text)
            records.update({j: from_file[j] for j in missing if j in from_file})
        return sorted(records.values(), key=lambda r: r["job_id"])

    # -- acting ---------------------------------------------------------------------------
    def set_priority(self, job_id: int, site_factor: int) -> ActionResult:
        if (
            isinstance(site_factor, bool)
            or not isinstance(site_factor, int)
            or not -(2**31) < site_factor < 2**31
        ):
            raise RJMSError(
                f"invalid site factor {site_factor!r}", where="set_priority", fix="an integer in 32-bit range"
            )
        return self.cli.action("scontrol", "update", f"JobId={_job_id(job_id)}", f"SiteFactor={site_factor}")

    def hold(self, job_id: int) -> ActionResult:
        return self.cli.action("scontrol", "hold", _job_id(job_id))

    def release(self, job_id: int) -> ActionResult:
        return self.cli.action("scontrol", "release", _job_id(job_id))

    def requeue(self, job_id: int, tags: dict[str, str]) -> ActionResult:
        comment = format_tags(tags)  # validate before killing anything
        result = self.cli.action("scontrol", "requeue", _job_id(job_id))
        if not result.ok:
            return result
        # Tags at once: they are the daemon's evidence that this run was requeued.
        tagged = self.cli.action("scontrol", "update", f"JobId={job_id}", f"AdminComment={comment}")
        answer = f"requeued: {result.answer}; tags {comment}: {tagged.answer}"
        # Slurm finishes the requeue asynchronously (COMPLETING, then PENDING) and then
        # delays the job's begin time by ~2 min; as a large job it may run at once, so bring
        # the begin time back to now once the requeue is complete. Best effort.
        deadline = time.monotonic() + min(self.cli.timeout, 30.0)
        while time.monotonic() < deadline:
            out = self.cli.run("squeue", "-h", "-t", "all", "-j", str(job_id), "-o", "%T")
            if out.returncode != 0 or out.stdout.strip() != "COMPLETING":
                break
            time.sleep(0.2)
        begin = self.cli.action("scontrol", "update", f"JobId={job_id}", "StartTime=now+5")  # slurmd rejects a launch not newer than the old run's credential revocation
        answer += f"; begin in 5 s: {begin.answer}"
        return ActionResult(ok=tagged.ok, answer=answer)

    def cancel(self, job_id: int) -> ActionResult:
        return self.cli.action("scancel", _job_id(job_id))

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
        if isinstance(procs, bool) or not isinstance(procs, int) or procs <= 0:
            raise RJMSError(f"invalid procs {procs!r}", where="submit", fix="a positive integer")
        if not isinstance(time_limit, int | float) or not 0 < time_limit < float("inf"):
            raise RJMSError(f"invalid time limit {time_limit!r}", where="submit", fix="seconds > 0")
        if not command or any(not isinstance(c, str) or "\n" in c or "\0" in c for c in command):
            raise RJMSError(
                f"invalid command {list(command)!r}", where="submit", fix="a non-empty argv list, one line"
            )
        # Slurm's limits are whole minutes: round up so the job is never cut short.
        minutes = max(1, int(-(-float(time_limit) // 60)))
        args = [
            "--parsable",
            f"--job-name={_text(name, 'job name')}",
            f"--ntasks={procs}",
            f"--time={minutes}",
            "--output=/dev/null",
        ]
        if comment:
            args.append(f"--comment={_text(comment, 'comment')}")
        if partition:
            args.append(f"--partition={_text(partition, 'partition')}")
        if begin is not None:
            # sbatch reads --begin in local time, as strftime writes it here.
            args.append(f"--begin={time.strftime('%Y-%m-%dT%H:%M:%S', time.localtime(float(begin)))}")
        args.append(f"--wrap={shlex.join(command)}")
        out = self.cli.run("sbatch", *args)
        if out.returncode != 0:
            raise RJMSError(
                f"sbatch failed: {out.stderr.strip()[:300]}", where="sbatch", fix="check the job's parameters"
            )
        try:
            return int(out.stdout.strip().split(";")[0])
        except ValueError as exc:
            raise RJMSError(f"sbatch answered {out.stdout.strip()!r}", where="sbatch") from exc
