"""Slurm backend (22.05 .. 25.11): read the queue, set priorities, hold/release, requeue, cancel, submit.

Reads and actions go through slurmrestd (``rest_url``; the OpenAPI version is negotiated,
see :mod:`rush.rjms.slurm_rest`) when configured, and through Slurm's commands
(``squeue --json --states=all``, ``scontrol show nodes --json`` or, on 22.05, ``sinfo
--json``, ``scontrol``, ``scancel``, ``sbatch``) when it cannot be reached or cannot do it;
:class:`SlurmBackend` lists which path each action takes. Every answer, of every version,
is read by one normaliser (:mod:`rush.rjms.slurm_json`). Actions use Slurm's own levers and
never overwrite ``Priority=``:

* priority: ``SiteFactor`` (priority/multifactor adds it to the job's priority; through
  slurmrestd v0.0.41+ or ``scontrol``) or, where only an older slurmrestd is available, the
  job's ``nice`` (subtracted from it);
* skip: hold now, release in a later cycle;
* false-small kill: ``scontrol requeue N`` then ``scontrol update JobId=N AdminComment=...``
  with the job's rush tags updated (class=large, requeues=k); the call returns at once and
  the daemon confirms the requeue next cycle, then brings the begin time back to now + 5 s
  (:meth:`SlurmBackend.finish_requeue`) instead of Slurm's requeue delay;
* cancel: ``DELETE job/N`` or ``scancel N``; submit (replay, probes): ``sbatch --parsable``.

Every command is an argv list (no shell); job ids and free-text arguments are validated.
rush's per-job inputs come from ``AdminComment`` as written by
``plugins/slurm/job_submit_rush.lua``: ``rush:idempotent=1;app=lammps;wtype=network``.
A read either returns a complete :class:`ClusterState` or raises :class:`RJMSError`.
"""

from __future__ import annotations

import math
import re
import shlex
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rush.errors import ConfigError, RJMSError
from rush.rjms import site_factor as site_factor_values
from rush.rjms import slurm_json
from rush.rjms.base import (
    ActionResult,
    BackendOption,
    Capabilities,
    ClusterState,
    RJMSBackend,
    RJMSJob,
    check_submit,
    check_time_limit,
    register_backend,
)
from rush.rjms.slurm_cli import SlurmCLI
from rush.rjms.slurm_json import (  # noqa: F401  (re-exported: the backend's parsing API)
    FINAL_STATES,
    RUNNING_STATES,
    UNUSABLE_NODE,
    parse_job,
    parse_nodes,
    parse_tags,
)

if TYPE_CHECKING:
    from rush.rjms.slurm_rest import SlurmREST

# Free text passed to Slurm (job name, comment, partition): no newlines, no ';', no quotes.
SAFE_TEXT = re.compile(r"^[A-Za-z0-9 _.,:=+/@%-]*$")
TAG_KEY = re.compile(r"^[a-z_]+$")
TAG_VALUE = re.compile(r"^[A-Za-z0-9._-]*$")
# Seconds a read of the switch tree is reused (slurm.conf/topology.conf change it only with
# `scontrol reconfigure`); one command per read cycle otherwise.
TOPOLOGY_TTL = 300.0


# -- rush tags in AdminComment --------------------------------------------------------------
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


def _minutes(seconds: float) -> int:
    """Slurm's limit (whole minutes) that holds ``seconds``: rounded up, at least 1."""
    return max(1, math.ceil(seconds / 60 - 1e-9))


def finished_records(
    job_records: Iterable[dict[str, Any]], wanted: set[int], source: str, jobcomp_file: Path | None
) -> list[dict]:
    """The finished records of ``wanted`` jobs among slurmctld's job records, then from the
    jobcomp/filetxt file (``jobcomp_file``) for the ones slurmctld forgot (MinJobAge)."""
    records: dict[int, dict[str, Any]] = {}
    for r in job_records:
        try:
            if r.get("job_id") not in wanted:
                continue
            record = slurm_json.finished_record(r, source)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise RJMSError(f"unexpected job record ({exc!r})", where=f"{source} accounting") from exc
        if record is not None:
            records[record["job_id"]] = record
    missing = wanted - set(records)
    if missing and jobcomp_file is not None:
        try:
            text = jobcomp_file.read_text(errors="replace")
        except OSError as exc:
            raise RJMSError(
                f"cannot read the jobcomp file ({exc.strerror})",
                where=str(jobcomp_file),
                fix="set rjms.options.jobcomp_file to slurm.conf's JobCompLoc (JobCompType=jobcomp/filetxt)",
            ) from exc
        from_file = parse_jobcomp(text)
        records.update({j: from_file[j] for j in missing if j in from_file})
    return sorted(records.values(), key=lambda r: r["job_id"])


def parse_jobcomp(text: str) -> dict[int, dict[str, Any]]:
    """Records of Slurm's jobcomp/filetxt file (``JobId=1 ... JobState=COMPLETED ...``), by job id."""
    records: dict[int, dict[str, Any]] = {}
    for line in text.splitlines():
        # The id is the line's first field, as filetxt writes it: a "JobId=" inside the user's
        # job name (written later on the line) must not name another job. ASCII digits only
        # (int() refuses "²", which str.isdigit accepts), of a bounded length.
        first = re.match(r"JobId=([0-9]{1,19})(?:\s|$)", line)
        if first is None:
            continue
        fields = dict(re.findall(r"(?:^|\s)([A-Za-z]+)=(\S*)", line))

        def stamp(key: str, fields: dict[str, str] = fields) -> float | None:
            value = fields.get(key, "")
            try:  # filetxt writes the controller's local time without a zone
                return datetime.strptime(value, "%Y-%m-%dT%H:%M:%S").timestamp()
            except ValueError:
                return None

        job_id = int(first[1])
        records[job_id] = {
            "job_id": job_id,
            "state": fields.get("JobState", ""),
            "submit": stamp("SubmitTime"),
            "start": stamp("StartTime"),
            "end": stamp("EndTime"),
            "procs": int(procs) if re.fullmatch("[0-9]{1,9}", procs := fields.get("ProcCnt", "")) else None,
            "exit_code": fields.get("ExitCode", ""),
            "source": "jobcomp",
        }
    return records


@dataclass(frozen=True)
class SlurmOptions:
    """The Slurm backend's options (``rjms.options``; meanings in :class:`SlurmBackend`)."""

    rest_url: str = ""
    jwt: str = ""
    jwt_file: str = ""
    jwt_user: str = ""
    fallback: bool = True
    slurm_conf: str | None = None
    bin_dir: str = "/usr/bin"
    timeout: float = 20.0
    jobcomp_file: str = ""
    max_answer_mb: float = 512
    priority_lever: str = "auto"
    rest_api: str = "auto"
    fairshare: bool = False


@register_backend("slurm")
class SlurmBackend(RJMSBackend):
    """Options (``rjms.options`` in the daemon's config):

    * ``rest_url``: ``unix:/path/slurmrestd.socket`` or ``http://host:6820``; empty = commands only;
    * ``jwt`` / ``jwt_file``: a token (``scontrol token``) for rest_auth/jwt, ``jwt_user`` its user;
    * ``fallback``: use the commands when slurmrestd cannot be reached (default on);
    * ``slurm_conf``: SLURM_CONF for the commands; ``bin_dir``: where they are (/usr/bin);
    * ``timeout``: seconds per command or request; ``jobcomp_file``: JobCompLoc (filetxt), read
      by :meth:`accounting` for jobs slurmctld has forgotten (older than MinJobAge);
    * ``max_answer_mb``: the largest queue answer accepted (default 512 MiB);
    * ``rest_api``: ``auto`` (default: ask slurmrestd, take the newest version rush knows) or
      a version to pin (``v0.0.44`` .. ``v0.0.38``), e.g. behind a proxy hiding /openapi/v3;
    * ``priority_lever``: ``site_factor`` (``scontrol update SiteFactor=``), ``nice`` (the
      job's nice, negated: through slurmrestd, else ``scontrol update Nice=``) or ``auto``
      (default: ``site_factor`` where scontrol is installed, else ``nice``). Both keep
      priority/multifactor in charge; keep one lever per cluster, since Slurm adds both;
    * ``fairshare``: read each pending job's fair-share factor into ``RJMSJob.fairshare``
      (``site.fairshare = "rjms"`` sets it): one ``sshare`` per cycle with pending jobs,
      whatever the read path (slurmrestd has no fair-share factor before v0.0.41's shares,
      and rush does not read that); sshare must be installed here.

    Which path each action takes (every OpenAPI version serves ``GET jobs``, ``GET nodes``,
    ``POST job/{id}`` with sbatch-like keys, ``DELETE job/{id}``; v0.0.41+ also takes
    ``site_factor``, raw: rush adds Slurm's NICE_OFFSET 2**31 as scontrol does):

    ============  ===============================  ===========================================
    action        slurmrestd (when ``rest_url``)    command (fallback, or the only way)
    ============  ===============================  ===========================================
    read          GET jobs, nodes                   squeue --json --states=all, scontrol show
                                                    nodes --json (22.05: sinfo --json)
    hold          POST job/N {"hold": true}         scontrol hold N
    release       POST job/N {"hold": false}        scontrol release N
    priority      v0.0.41+: POST job/N              scontrol update SiteFactor=S / Nice=-S
                  {"site_factor": S + 2**31};
                  POST job/N {"nice": -S} (nice)
    requeue       none: no OpenAPI version has a    scontrol requeue N; update AdminComment
                  requeue                           (required: without scontrol the requeue
                                                    fails, journaled, nothing is killed)
    begin time    (not used: part of the requeue)   scontrol update StartTime=now+5
    cancel        DELETE job/N                      scancel N
    submit        (not used)                        sbatch --parsable
    ============  ===============================  ===========================================

    A transport failure of slurmrestd falls back to the command when ``fallback`` is on and
    the command is installed (every REST action is idempotent, so a repeat is harmless);
    a refusal by Slurm (bad job id, finished job) is a failed :class:`ActionResult`.
    """

    capabilities = Capabilities(time_limit_granularity=60.0)  # Slurm's limits are whole minutes
    options = (
        BackendOption(
            "rest_url", str, "unix:/path/slurmrestd.socket or http://host:6820; empty: commands only"
        ),
        BackendOption("jwt", str, "a token (scontrol token) for rest_auth/jwt"),
        BackendOption("jwt_file", str, "a file holding that token"),
        BackendOption("jwt_user", str, "the token's user"),
        BackendOption("fallback", bool, "use the commands when slurmrestd cannot be reached"),
        BackendOption("slurm_conf", str, "SLURM_CONF for the commands", optional=True),
        BackendOption("bin_dir", str, "where the Slurm commands are (/usr/bin)"),
        BackendOption("timeout", float, "seconds per command or request"),
        BackendOption("jobcomp_file", str, "JobCompLoc (filetxt) for jobs slurmctld has forgotten"),
        BackendOption("max_answer_mb", float, "the largest queue answer accepted, MiB"),
        BackendOption("priority_lever", str, "site_factor, nice or auto"),
        BackendOption("rest_api", str, "auto or a slurmrestd version to pin (v0.0.44 .. v0.0.38)"),
        BackendOption("fairshare", bool, "read pending jobs' fair-share factors (sshare; site.fairshare)"),
    )

    options_type = SlurmOptions

    def __init__(self, options: SlurmOptions = SlurmOptions()) -> None:
        rest_url, jwt, jwt_file, jwt_user = options.rest_url, options.jwt, options.jwt_file, options.jwt_user
        fallback, slurm_conf, bin_dir, timeout = (
            options.fallback,
            options.slurm_conf,
            options.bin_dir,
            options.timeout,
        )
        jobcomp_file, max_answer_mb = options.jobcomp_file, options.max_answer_mb
        priority_lever, rest_api = options.priority_lever, options.rest_api
        if not isinstance(timeout, int | float) or isinstance(timeout, bool) or not 0 < timeout < 3600:
            raise ConfigError(
                f"invalid timeout {timeout!r}",
                where="rjms.options.timeout",
                fix="seconds, 0 < timeout < 3600",
            )
        if (
            not isinstance(max_answer_mb, int | float)
            or isinstance(max_answer_mb, bool)
            or not 0 < max_answer_mb <= 64 * 1024
        ):
            raise ConfigError(
                f"invalid max_answer_mb {max_answer_mb!r}",
                where="rjms.options.max_answer_mb",
                fix="MiB, 0 < max_answer_mb <= 65536 (default 512)",
            )
        if not isinstance(fallback, bool):
            raise ConfigError(
                f"invalid fallback {fallback!r}", where="rjms.options.fallback", fix="true or false"
            )
        if priority_lever not in ("auto", "site_factor", "nice"):
            raise ConfigError(
                f"unknown priority_lever {priority_lever!r}",
                where="rjms.options.priority_lever",
                fix="site_factor, nice or auto",
            )
        limit = int(max_answer_mb * 2**20)
        self.cli = SlurmCLI(bin_dir=bin_dir, slurm_conf=slurm_conf, timeout=timeout, max_output_bytes=limit)
        self.fairshare = options.fairshare
        if self.fairshare and not self.cli.has("sshare"):
            # Refused at start-up: every cycle would fail to read the policy's input.
            raise ConfigError(
                f'site.fairshare = "rjms" needs sshare, which is not installed in {bin_dir}',
                where="site.fairshare",
                fix="install Slurm's client commands (sshare) on this host, set rjms.options.bin_dir, "
                'or set site.fairshare = "none"',
            )
        self.rest: SlurmREST | None = None
        if rest_url:
            # requests and urllib3 (~0.05 s of CPU) only where slurmrestd is configured.
            from rush.rjms.slurm_rest import SlurmREST

            self.rest = SlurmREST(
                rest_url,
                jwt=jwt,
                jwt_file=jwt_file,
                user=jwt_user,
                timeout=timeout,
                max_answer_bytes=limit,
                api=rest_api,
            )
        self.fallback = fallback
        self.jobcomp_file = Path(jobcomp_file) if jobcomp_file else None
        if priority_lever == "auto":
            priority_lever = "site_factor" if self.cli.has("scontrol") or self.rest is None else "nice"
        self.priority_lever = priority_lever
        # Where the last read came from ("rest" or "cli") and why REST was skipped, if it was.
        self.last_source = ""
        self.last_rest_error: RJMSError | None = None
        # Whether `scontrol show nodes --json` works here (22.05's scontrol has no --json).
        self._scontrol_json: bool | None = None
        # (when read, node -> leaf switch index) of the last `scontrol show topology`.
        self._leaves: tuple[float, dict[str, int], dict[str, int]] | None = None
        # The last read's jobs, reused while a job's record is unchanged (the read costs its changes).
        self.parsed = slurm_json.ParsedJobs()

    # -- reading --------------------------------------------------------------------------
    def _read(self, endpoint: str, cli_only: bool = False) -> dict[str, Any]:
        """``jobs`` or ``nodes`` from slurmrestd, else from Slurm's commands."""
        if self.rest is not None and not cli_only:
            try:
                data = self.rest.get(endpoint)
                self.last_source = "rest"
                return data
            except RJMSError as exc:
                self.last_rest_error = exc
                if not self.fallback:
                    raise
        self.last_source = "cli"
        if endpoint == "jobs":
            # Finished jobs too (22.05 listed them by default, 23.02+ does not).
            return self.cli.json("squeue", "--json", "--states=all")
        return self._cli_nodes()

    def _cli_nodes(self) -> dict[str, Any]:
        """Node records: ``scontrol show nodes --json`` (23.02+'s ``sinfo --json`` groups nodes
        by partition and state), ``sinfo --json`` where scontrol has no --json (22.05)."""
        if self._scontrol_json is not False and self.cli.has("scontrol"):
            args = ("show", "nodes", "--json")
            out = self.cli.run("scontrol", *args)
            if out.returncode == 0 or "unrecognized option" not in out.stderr:
                self._scontrol_json = True
                return self.cli.decode(out, "scontrol", *args)
            self._scontrol_json = False
        return self.cli.json("sinfo", "--json")

    def _records(self, endpoint: str, cli_only: bool = False) -> list[dict[str, Any]]:
        data = self._read(endpoint, cli_only)
        try:
            return slurm_json.records(data, endpoint)
        except ValueError as exc:
            raise RJMSError(
                str(exc),
                where=f"slurm {endpoint} ({self.last_source})",
                fix="rush reads Slurm 22.05 .. 25.11 (openapi v0.0.38 .. v0.0.44, squeue --json, "
                "scontrol show nodes --json)",
            ) from exc

    def _jobs(self, records: list[dict[str, Any]]) -> list[RJMSJob]:
        try:
            return self.parsed.parse(records, self.priority_lever)
        except (KeyError, TypeError, ValueError) as exc:
            raise RJMSError(
                f"unexpected job record ({exc!r})",
                where=f"slurm jobs ({self.last_source})",
                fix="rush supports Slurm 22.05+ JSON job records; rush retries next cycle",
            ) from exc

    def read_state(self, partitions: Sequence[str] = ()) -> ClusterState:
        """Pending and live jobs (finished ones left out), free CPUs and the nodes (state, free
        cores and GPUs, leaf switch), all or nothing."""
        taken_at = time.time()
        jobs = [j for j in self._jobs(self._records("jobs")) if j.state not in FINAL_STATES]
        if partitions:
            jobs = [j for j in jobs if j.partition in partitions]
        try:
            # Once REST has failed in this read, do not wait for it a second time.
            nodes = self._records("nodes", cli_only=self.last_source == "cli")
            total, free, names = parse_nodes(nodes, partitions)
            node_list = slurm_json.node_list(nodes, partitions, self.leaf_switches(), self.pod_switches())
        except (KeyError, TypeError, ValueError) as exc:
            raise RJMSError(
                f"unexpected node record ({exc!r})",
                where=f"slurm nodes ({self.last_source})",
                fix="rush supports Slurm 22.05+ JSON node records; rush retries next cycle",
            ) from exc
        if self.priority_lever == "site_factor":
            factors = self.site_factors() if any(j.state == "PENDING" for j in jobs) else {}
            jobs = self.parsed.with_site_factors(jobs, factors)
        if self.fairshare and any(j.state == "PENDING" for j in jobs):
            jobs = self.parsed.with_fairshare(jobs, self.fairshare_factors())
        return ClusterState(
            taken_at=taken_at,
            total_procs=total,
            free_procs=free,
            jobs=tuple(jobs),
            partitions=tuple(sorted(names)),
            nodes=node_list,
        )

    def leaf_switches(self) -> dict[str, int]:
        """Node name -> leaf switch index from ``scontrol show topology`` (topology/tree), read
        once every :data:`TOPOLOGY_TTL` seconds (it changes only with a reconfiguration); {}
        (every node on leaf 0) without scontrol, without a topology, or when it fails."""
        now = time.monotonic()
        if self._leaves is not None and now - self._leaves[0] < TOPOLOGY_TTL:
            return self._leaves[1]
        leaves: dict[str, int] = {}
        pods: dict[str, int] = {}
        if self.cli.has("scontrol"):
            try:
                out = self.cli.run("scontrol", "show", "topology")
            except RJMSError:
                out = None
            if out is not None and out.returncode == 0:
                # RJMSError naming the line: a hostile host list.
                leaves = slurm_json.leaf_switches(out.stdout)
                pods = slurm_json.pod_switches(out.stdout)
        self._leaves = (now, leaves, pods)
        return leaves

    def pod_switches(self) -> dict[str, int]:
        """Node name -> pod (the level-1 switch above its leaf), read with
        :meth:`leaf_switches`; {} (one pod) without a second level."""
        self.leaf_switches()
        return self._leaves[2] if self._leaves is not None else {}

    def job(self, job_id: int) -> RJMSJob | None:
        """One job as slurmctld knows it, finished ones included (for MinJobAge seconds)."""
        wanted = int(_job_id(job_id))
        found = [j for j in self._jobs(self._records("jobs")) if j.job_id == wanted]
        if not found:
            return None
        if self.priority_lever != "site_factor":
            return found[0]
        factors = self.site_factors() if found[0].state == "PENDING" else {}
        return replace(found[0], site_factor=factors.get(wanted, 0))

    def site_factors(self) -> dict[int, int]:
        """Pending jobs' site factors from ``sprio`` (neither squeue nor slurmrestd 22.05 show it).

        Best effort: a held job is not listed (reads 0), and without Slurm's commands on this
        host every job reads 0 (use the ``nice`` lever there). The daemon keeps its own record
        of what it set.
        """
        if not self.cli.has("sprio"):
            return {}
        try:
            out = self.cli.run("sprio", "-h", "-o", "%i %S")
        except RJMSError:
            return {}
        return site_factor_values.parse_sprio(out.stdout) if out.returncode == 0 else {}

    def fairshare_factors(self) -> site_factor_values.Associations:
        """Every user association's fair-share factor (:func:`site_factor.parse_sshare`); an
        RJMSError when sshare fails or answers garbage (the cycle then takes no action)."""
        out = self.cli.run("sshare", *site_factor_values.SSHARE_ARGS)
        if out.returncode != 0:
            raise RJMSError(
                f"sshare failed: {out.stderr.strip()[:300] or f'exit status {out.returncode}'}",
                where="sshare " + " ".join(site_factor_values.SSHARE_ARGS),
                fix=site_factor_values.SSHARE_FIX,
            )
        return site_factor_values.parse_sshare(out.stdout)

    def accounting(self, job_ids: Sequence[int]) -> list[dict]:
        """Finished-job records: from slurmctld while it remembers them (MinJobAge), then
        from the jobcomp/filetxt file when ``jobcomp_file`` is set. No slurmdbd needed."""
        wanted = {int(_job_id(j)) for j in job_ids}
        return finished_records(self._records("jobs"), wanted, self.last_source, self.jobcomp_file)

    # -- acting ---------------------------------------------------------------------------
    def _command(self, what: str, *argv: str) -> ActionResult:
        """An action through a Slurm command; if the command is not installed, a certain
        failure that names the fix (nothing reached Slurm)."""
        if not self.cli.has(argv[0]):
            return ActionResult(
                ok=False,
                answer=f"{what} needs {argv[0]}, which is not installed in {self.cli.bin_dir}"
                + (" (slurmrestd cannot do it)" if self.rest is not None else "")
                + ": install Slurm's client commands on this host or set rjms.options.bin_dir",
                attempted=False,
            )
        return self.cli.action(*argv)

    def _act(
        self, what: str, method: str, job_id: int, body: dict[str, Any] | None, *argv: str
    ) -> ActionResult:
        """Through slurmrestd when configured, else (or when it cannot be reached) the command."""
        jid = _job_id(job_id)
        if self.rest is not None:
            try:
                return self.rest.act(method, f"job/{jid}", body)
            except RJMSError as exc:
                self.last_rest_error = exc
                if not (self.fallback and self.cli.has(argv[0])):
                    raise
        return self._command(what, *argv)

    def set_priority(self, job_id: int, site_factor: int) -> ActionResult:
        site_factor = site_factor_values.checked(site_factor, self.priority_lever)
        jid = _job_id(job_id)
        if self.priority_lever == "nice":
            return self._act(
                "priority", "POST", job_id, {"nice": site_factor_values.as_nice(site_factor)}, "scontrol", "update",
                f"JobId={jid}", f"Nice={site_factor_values.as_nice(site_factor)}",
            )  # fmt: skip
        if self.rest is not None:
            # SiteFactor through slurmrestd where its job update takes it (v0.0.41+).
            try:
                if self.rest.can("site_factor"):
                    return self.rest.act(
                        "POST", f"job/{jid}", {"site_factor": site_factor_values.rest_raw(site_factor)}
                    )
            except RJMSError as exc:
                self.last_rest_error = exc
                if not (self.fallback and self.cli.has("scontrol")):
                    raise
        return self._command(
            "priority (SiteFactor)", "scontrol", "update", f"JobId={jid}", f"SiteFactor={site_factor}"
        )

    def hold(self, job_id: int) -> ActionResult:
        return self._act("hold", "POST", job_id, {"hold": True}, "scontrol", "hold", _job_id(job_id))

    def release(self, job_id: int) -> ActionResult:
        return self._act("release", "POST", job_id, {"hold": False}, "scontrol", "release", _job_id(job_id))

    def requeue(self, job_id: int, tags: dict[str, str]) -> ActionResult:
        """Issue the requeue and write the tags; return at once (see :meth:`finish_requeue`)."""
        comment = format_tags(tags)  # validate before killing anything
        jid = _job_id(job_id)
        if not self.cli.has("scontrol"):
            # No OpenAPI version has a requeue: nothing is killed.
            api = ""
            if self.rest is not None:
                try:
                    api = f" openapi {self.rest.negotiate()}"
                except RJMSError:
                    pass
            return self._command(f"requeue (no requeue endpoint in slurmrestd{api})", "scontrol")
        result = self.cli.action("scontrol", "requeue", jid)
        if not result.ok:
            return result
        # Tags at once: with the restart count, they are the daemon's evidence that this run
        # was requeued (it confirms the requeue next cycle, never re-issues it).
        tagged = self.cli.action("scontrol", "update", f"JobId={jid}", f"AdminComment={comment}")
        return ActionResult(
            ok=tagged.ok, answer=f"requeue issued: {result.answer}; tags {comment}: {tagged.answer}"
        )

    def finish_requeue(self, job: RJMSJob) -> ActionResult | None:
        """Slurm completes a requeue asynchronously (COMPLETING, then PENDING) and then delays
        the job's begin time by ~2 min; as a large job it may run at once, so bring the begin
        time back to now + 5 s (slurmd rejects a launch not newer than the old run's
        credential revocation). ``None`` while the old run is still completing."""
        if job.state == "PENDING":
            # scontrol like the requeue itself, which slurmrestd 22.05 cannot do. Slurm's main
            # scheduler then starts the job on its next pass (up to sched_interval later).
            begin = self._command(
                "begin time", "scontrol", "update", f"JobId={_job_id(job.job_id)}", "StartTime=now+5"
            )
            return ActionResult(
                ok=begin.ok, answer=f"begin in 5 s: {begin.answer}", attempted=begin.attempted
            )
        if job.state in ("COMPLETING", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD", "STAGE_OUT"):
            return None
        return ActionResult(ok=True, answer=f"nothing to finish (the job is {job.state})")

    # -- speculative reservations: limits are whole minutes (capabilities) -------------------
    def set_time_limit(self, job_id: int, seconds: float) -> ActionResult:
        """``scontrol update TimeLimit=M`` with M the limit in minutes, rounded up (Slurm keeps
        minutes): a run is never cut before its reservation."""
        minutes = _minutes(check_time_limit(seconds, "set_time_limit"))
        return self._command(
            "time limit", "scontrol", "update", f"JobId={_job_id(job_id)}", f"TimeLimit={minutes}"
        )

    def requeue_with_limit(self, job_id: int, tags: dict[str, str], seconds: float) -> ActionResult:
        """A batch job that ended by TIMEOUT: ``scontrol requeue N`` (it is PENDING at once, with
        the restart count up, on 22.05 and 25.11 with JobRequeue=1), then one ``scontrol update``
        of its limit, its tags (merged with the job's) and its begin time: Slurm delays a
        requeued job's begin by the credential lifetime (~2 min); now + 5 s, as
        :meth:`finish_requeue`, because slurmd refuses a launch in the same second as the old
        run's credential revocation ("Job credential revoked": the run fails at once; seen
        with StartTime=now in a whole-suite run on 22.05)."""
        minutes = _minutes(check_time_limit(seconds, "requeue_with_limit"))
        jid = _job_id(job_id)
        format_tags(tags)  # validate before touching the job
        if not self.cli.has("scontrol"):
            return self._command("requeue (no requeue endpoint in slurmrestd)", "scontrol")
        job = self.job(job_id)
        if job is None:
            return ActionResult(False, "the job is no longer known to slurmctld", attempted=False)
        if job.state != "TIMEOUT":
            return ActionResult(False, f"not requeued: the job is {job.state}, not TIMEOUT", attempted=False)
        comment = format_tags({**job.tags, **tags})
        result = self.cli.action("scontrol", "requeue", jid)
        if not result.ok:
            return result
        update = self.cli.action(
            "scontrol",
            "update",
            f"JobId={jid}",
            f"TimeLimit={minutes}",
            "StartTime=now+5",
            f"AdminComment={comment}",
        )
        return ActionResult(
            ok=update.ok,
            answer=f"requeue issued: {result.answer}; TimeLimit={minutes} StartTime=now+5 {comment}: {update.answer}",
        )

    def cancel(self, job_id: int) -> ActionResult:
        return self._act("cancel", "DELETE", job_id, None, "scancel", _job_id(job_id))

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
        check_submit(procs, time_limit, command, begin)
        minutes = _minutes(float(time_limit))  # rounded up: the job is never cut short
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
