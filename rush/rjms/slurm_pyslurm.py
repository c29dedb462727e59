"""Slurm backend through pyslurm (libslurm's C API): the reads and levers of the command and
REST paths without a subprocess or HTTP, for sites that install pyslurm for their Slurm.

pyslurm X.Y.Z is built against one Slurm X.Y (its headers and ``libslurmfull``, linked by
path): it is not on the test extra and is imported lazily. :class:`PySlurmBackend` refuses
to start, naming the fix, when pyslurm is missing, cannot load its libslurm, or was built
for another Slurm than the one slurmctld runs (major.minor).

pyslurm talks to slurmctld directly with the configuration libslurm was initialised with;
that is process-wide, so the backend initialises it itself with ``slurm_conf`` (else
``SLURM_CONF``, else the install's default) instead of pyslurm's import-time automatic
one, and re-initialises when another instance needs another file. libslurm *exits the
process* on a configuration it cannot read, so a file is first tried in a child process.

Records are mapped to the fields of Slurm's JSON and read by the one normaliser
(:mod:`rush.rjms.slurm_json`), so a job reads the same here as through ``squeue --json``:

============  ==============================================================================
action        pyslurm call
============  ==============================================================================
read          ``Jobs.load()`` (finished jobs included), ``Nodes.load()``; site factors from
              ``sprio`` when Slurm's commands are in ``bin_dir`` (pyslurm's Job does not
              expose SiteFactor), else 0
job           ``Job.load(id)``
priority      ``Job(id).modify(JobSubmitDescription(site_factor=S))`` (pyslurm adds Slurm's
              NICE_OFFSET 2**31 itself, as scontrol does; it leaves out S = 0, refused here)
hold/release  ``Job(id).hold()`` (an admin hold, as ``scontrol hold`` by root) / ``release()``
requeue       ``Job(id).requeue()`` then ``modify(admin_comment=rush tags)``
begin time    ``modify(begin_time=now + 5)`` (:meth:`PySlurmBackend.finish_requeue`)
cancel        ``Job.load(id)`` (an unknown id is refused, as scancel does), ``Job(id).cancel()``
submit        ``JobSubmitDescription(script="#!/bin/sh\\n<command>", ...).submit()``
============  ==============================================================================

pyslurm's calls block for as long as libslurm waits (slurm.conf's ``MessageTimeout``), not
``timeout``, which bounds the configuration check and ``sprio``. An exit code of 128 or
more reads as code - 128 (pyslurm's conversion), where squeue gives the code itself.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from rush.errors import BackendUnavailableError, ConfigError, RJMSError
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
    register_backend,
)
from rush.rjms.slurm import (
    SlurmBackend,
    SlurmOptions,
    _job_id,
    _minutes,
    _text,
    finished_records,
    format_tags,
)

ESLURM_INVALID_JOB_ID = 2017  # slurm_errno.h, the same in every release
INSTALL_FIX = (
    "build pyslurm against this site's Slurm: SLURM_INCLUDE_DIR=PREFIX/include "
    "SLURM_LIB_DIR=PREFIX/lib pip install 'pyslurm=={version}.*' (the release for Slurm {version}; "
    '.ci/vendor-pyslurm.sh does it for the test Slurm), or use rjms.backend = "slurm"'
)
# Run in a child process before libslurm is initialised here: it exits on a bad slurm.conf.
_PROBE = (
    "import os, sys\n"
    "os.environ['PYSLURM_DISABLE_AUTO_INIT'] = '1'\n"
    "import pyslurm\n"
    "pyslurm.slurm_init(sys.argv[1] or None)\n"
    "print('rush-pyslurm-ok')\n"
)

# libslurm's configuration is one per process: the file it was last initialised with
# (None: not initialised by rush), and the files (path, mtime, size) a child process has
# initialised libslurm with successfully.
_active_conf: str | None = None
_probed: set[str] = set()


def major_minor(version: str) -> str:
    """``"25.11.2"`` -> ``"25.11"``; "" when the text is no version."""
    found = re.match(r"^(\d+)\.(\d+)(?:\.|$)", str(version))
    return f"{found[1]}.{found[2]}" if found else ""


def import_pyslurm() -> Any:
    """pyslurm, imported without its automatic ``slurm_init`` (the backend initialises libslurm
    with the cluster's slurm.conf); BackendUnavailableError naming the fix when it cannot be."""
    flags = sys.getdlopenflags()
    saved = os.environ.get("PYSLURM_DISABLE_AUTO_INIT")
    os.environ["PYSLURM_DISABLE_AUTO_INIT"] = "1"
    try:
        import pyslurm  # type: ignore[import-not-found]
    except ImportError as exc:
        if exc.name == "pyslurm":
            raise BackendUnavailableError(
                "the pyslurm backend needs pyslurm, which is not installed",
                where="rjms backend 'pyslurm'",
                fix=INSTALL_FIX.format(version="X.Y"),
            ) from exc
        # Installed but its libslurmfull is gone or was replaced by another Slurm's.
        raise BackendUnavailableError(
            f"pyslurm is installed but cannot load: {exc}",
            where="rjms backend 'pyslurm'",
            fix="rebuild it for the Slurm installed here: " + INSTALL_FIX.format(version="X.Y"),
        ) from exc
    finally:
        # pyslurm sets RTLD_GLOBAL|RTLD_DEEPBIND for the whole process; later imports need not.
        sys.setdlopenflags(flags)
        if saved is None:
            os.environ.pop("PYSLURM_DISABLE_AUTO_INIT", None)
        else:
            os.environ["PYSLURM_DISABLE_AUTO_INIT"] = saved
    return pyslurm


def _jid(job_id: object) -> int:
    """A job id as libslurm takes it (uint32): pyslurm overflows on larger ones."""
    jid = int(_job_id(job_id))
    if jid >= slurm_json.MAX_COUNT:
        raise RJMSError(
            f"invalid job id {job_id!r}", where="pyslurm backend", fix="Slurm's job ids are < 2**32"
        )
    return jid


def job_record(job: Any) -> dict[str, Any]:
    """A pyslurm Job as the fields of an ``squeue --json`` record (the normaliser reads it)."""
    return {
        "job_id": job.id,
        "job_state": job.state,  # job_state_string(): flags first, as 22.05's JSON printed it
        "submit_time": job.submit_time,
        "start_time": job.start_time,
        "end_time": job.end_time,
        "time_limit": job.time_limit,  # minutes; None when unlimited
        "cpus": job.cpus,
        "user_name": job.user_name,
        "account": job.account,
        "partition": job.partition,
        "name": job.name,
        "admin_comment": job.admin_comment,
        "state_reason": job.state_reason,
        "nice": job.nice,
        "priority": _priority(job.priority),
        "restart_cnt": job.requeue_count,
        "exit_code": {"return_code": job.exit_code, "signal": {"id": job.exit_code_signal}},
        **_resource_fields(job),
    }


def _priority(value: Any) -> Any:
    """pyslurm's Job.priority (an int, None for NO_VAL, "UNLIMITED" for INFINITE) in the
    JSON shape the normaliser reads (slurm_json.job_priority)."""
    return {"set": True, "infinite": True, "number": 0} if value == "UNLIMITED" else value


def _tres_count(tres: Any, key: str) -> int | None:
    """``tres.<key>.count`` of a pyslurm TrackableResources (None when absent)."""
    found = getattr(getattr(tres, key, None), "count", None)
    return found if isinstance(found, int) and not isinstance(found, bool) else None


def _gpu_count(gres: Any) -> int:
    """GPUs in pyslurm's gres dicts: {"gres/gpu": 2}, {"gpu": 2}, {"gpu": {"count": 2}} or a
    TrackableResources' {"gpu": GPU(count=2)}."""
    total = 0
    for key, value in (gres or {}).items() if isinstance(gres, dict) else ():
        if str(key).split(":")[0].removeprefix("gres/") != "gpu":
            continue
        value = value.get("count") if isinstance(value, dict) else getattr(value, "count", value)
        total += value if isinstance(value, int) and not isinstance(value, bool) else 0
    return total


def _cpu_ids(ids: Any) -> int:
    """CPUs in a cpu id list (``0-3,6``); bounded like a host list."""
    return len(slurm_json.hostlist(f"c[{ids}]", "cpu_ids", limit=slurm_json.MAX_COUNT >> 12)) if ids else 0


def _resource_fields(job: Any) -> dict[str, Any]:
    """Nodes, GPUs, sharing and the running allocation as squeue --json names them."""
    requested = job.requested_tres
    req_cpus, req_nodes = _tres_count(requested, "cpu"), _tres_count(requested, "node")
    per_node, per_task = _gpu_count(job.gres_per_node), _gpu_count(getattr(job.tres_per_task, "gres", None))
    fields: dict[str, Any] = {
        "node_count": job.num_nodes,
        "tasks": job.ntasks,
        "tasks_per_node": job.ntasks_per_node,
        "tres_req_str": ",".join(
            f"{key}={value}" for key, value in (("cpu", req_cpus), ("node", req_nodes)) if value is not None
        ),
        "tres_per_node": f"gres/gpu:{per_node}" if per_node else "",
        "tres_per_task": f"gres/gpu:{per_task}" if per_task else "",
        # resource_sharing: "NO" is --exclusive, "OK" oversubscribe, "USER"/"MCS"/"TOPO"
        "shared": ["none"] if job.resource_sharing == "NO" else [],
    }
    if job.state in slurm_json.RUNNING_STATES:
        layout = job.get_resource_layout_per_node() or {}
        fields["job_resources"] = {
            "nodes": {
                "allocation": [
                    {"name": name, "cpus": {"count": _cpu_ids(node.get("cpu_ids"))}}
                    for name, node in layout.items()
                ]
            }
        }
        fields["gres_detail"] = [f"gpu:{_gpu_count(node.get('gres'))}" for node in layout.values()]
    return fields


def node_record(node: Any, gpus_used: int = 0) -> dict[str, Any]:
    """A pyslurm Node as the fields of an ``scontrol show nodes --json`` record;
    ``gpus_used``: the running jobs' GPUs on it (pyslurm 25.11's ``allocated_gres`` stays
    empty while GPUs are in use)."""
    gpus = _gpu_count(node.configured_gres)
    return {
        "name": node.name,
        "cpus": node.total_cpus,
        "alloc_cpus": node.allocated_cpus,
        "state": [s for s in (node.state or "").split("+") if s],  # "IDLE+DRAIN"
        "partitions": list(node.partitions or []),
        "real_memory": node.real_memory,
        "gres": f"gpu:{gpus}" if gpus else "",
        "gres_used": f"gpu:{gpus_used}" if gpus_used else "",
    }


@register_backend("pyslurm")
class PySlurmBackend(RJMSBackend):
    """Options (``rjms.options``):

    * ``slurm_conf``: the cluster's slurm.conf (else ``SLURM_CONF``, else the install's default);
    * ``bin_dir``: where Slurm's commands are (``sprio`` for site factors; optional);
    * ``jobcomp_file``: JobCompLoc (filetxt), for :meth:`accounting` of forgotten jobs;
    * ``timeout``: seconds for the configuration check and ``sprio``;
    * ``fairshare``: read pending jobs' fair-share factors (``site.fairshare = "rjms"`` sets it)
      with one ``sshare`` per cycle, as the command backend does (pyslurm has no share query);
      refused at start when sshare is not in ``bin_dir``.
    """

    capabilities = Capabilities(time_limit_granularity=60.0)  # Slurm's limits are whole minutes
    options = (
        BackendOption("slurm_conf", str, "the cluster's slurm.conf", optional=True),
        BackendOption("bin_dir", str, "where Slurm's commands are (sprio, optional)"),
        BackendOption("jobcomp_file", str, "JobCompLoc (filetxt) for jobs slurmctld has forgotten"),
        BackendOption("timeout", float, "seconds for the configuration check and sprio"),
        BackendOption("fairshare", bool, "read pending jobs' fair-share factors (sshare; site.fairshare)"),
    )

    def __init__(
        self,
        slurm_conf: str | None = None,
        bin_dir: str = "/usr/bin",
        jobcomp_file: str = "",
        timeout: float = 20.0,
        fairshare: bool = False,
    ) -> None:
        if slurm_conf is not None and not isinstance(slurm_conf, str):
            raise ConfigError(
                f"invalid slurm_conf {slurm_conf!r}", where="rjms.options.slurm_conf", fix="a file path"
            )
        if slurm_conf and not (Path(slurm_conf).is_file() and os.access(slurm_conf, os.R_OK)):
            raise ConfigError(
                f"{slurm_conf} is not a readable file",
                where="rjms.options.slurm_conf",
                fix="the cluster's slurm.conf, readable by rush",
            )
        # The command backend for sprio and sshare only; it also checks bin_dir and timeout.
        self._commands = SlurmBackend(
            SlurmOptions(
                slurm_conf=slurm_conf or None,
                bin_dir=bin_dir,
                timeout=timeout,
                priority_lever="site_factor",
                fairshare=fairshare,
            )
        )
        # Absolute: libslurm keeps the path for later reads, whatever rush's working directory.
        self.slurm_conf = str(Path(slurm_conf).absolute()) if slurm_conf else os.environ.get("SLURM_CONF", "")
        self.timeout = float(timeout)
        self.jobcomp_file = Path(jobcomp_file) if jobcomp_file else None
        # The last read's jobs, reused while a job's record is unchanged (the read costs its changes).
        self.parsed = slurm_json.ParsedJobs()
        self.priority_lever = "site_factor"
        self.last_source = "pyslurm"
        self.pyslurm = import_pyslurm()
        self._activate()
        self.versions = ""  # "pyslurm 25.11.2, slurmctld 25.11.7" once checked
        try:
            self._check_versions()
        except RJMSError:
            pass  # slurmctld not reachable now: checked before the first call that reaches it

    # -- libslurm -------------------------------------------------------------------------
    def _activate(self) -> None:
        """Make this backend's slurm.conf libslurm's (process-wide) configuration."""
        global _active_conf
        if _active_conf == self.slurm_conf:
            return
        try:  # the file as it is now: an edited file is tried again
            stat = os.stat(self.slurm_conf) if self.slurm_conf else None
        except OSError:
            stat = None
        version = f"{self.slurm_conf}:{stat.st_mtime_ns}:{stat.st_size}" if stat else self.slurm_conf
        if version not in _probed:
            self._probe()
        self.pyslurm.slurm_fini()  # a no-op when not initialised
        self.pyslurm.slurm_init(self.slurm_conf or None)
        _active_conf = self.slurm_conf
        _probed.add(version)

    def _probe(self) -> None:
        """Initialise libslurm in a child process first: on a slurm.conf it cannot use, it
        calls exit() (which would end rush)."""
        where = f"rjms.options.slurm_conf ({self.slurm_conf or 'SLURM_CONF/default'})"
        try:
            out = subprocess.run(
                [sys.executable, "-c", _PROBE, self.slurm_conf],
                capture_output=True,
                text=True,
                timeout=self.timeout,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired as exc:
            raise ConfigError(
                f"libslurm did not read its configuration within {self.timeout:g} s",
                where=where,
                fix="set slurm_conf to the cluster's slurm.conf (without one libslurm looks for a "
                "configless slurmctld)",
            ) from exc
        if out.returncode != 0 or "rush-pyslurm-ok" not in out.stdout:
            detail = " ".join(out.stderr.strip().splitlines()[-3:])[-500:]
            raise ConfigError(
                f"libslurm cannot use this configuration: {detail or f'exit status {out.returncode}'}",
                where=where,
                fix="set slurm_conf to the cluster's slurm.conf, readable by rush",
            )

    def _call(self, what: str, call: Callable[[], Any]) -> Any:
        """A pyslurm call with this backend's configuration; RPC failures become RJMSError."""
        self._activate()
        if not self.versions:
            self._check_versions()
        return self._rpc(what, call)

    def _rpc(self, what: str, call: Callable[[], Any]) -> Any:
        try:
            return call()
        except self.pyslurm.PyslurmError as exc:
            raise RJMSError(
                f"{what} failed: {exc}",
                where=f"pyslurm {what}",
                fix="check that slurmctld is up (scontrol ping) and slurm_conf is its configuration",
            ) from exc

    def _check_versions(self) -> None:
        """pyslurm's Slurm (major.minor of its version) must be the one slurmctld runs."""
        self._activate()
        config = self._rpc("Config.load", self.pyslurm.slurmctld.Config.load)
        running, built = str(config.version or ""), str(self.pyslurm.__version__)
        if not major_minor(running) or major_minor(running) != major_minor(built):
            raise BackendUnavailableError(
                f"pyslurm {built} is built for Slurm {major_minor(built) or '?'}, "
                f"but slurmctld runs Slurm {running or '?'}",
                where="rjms backend 'pyslurm'",
                fix=INSTALL_FIX.format(version=major_minor(running) or "X.Y"),
            )
        self.versions = f"pyslurm {built}, slurmctld {running}"

    # -- reading --------------------------------------------------------------------------
    def _job_records(self) -> list[dict[str, Any]]:
        jobs = self._call("Jobs.load", self.pyslurm.Jobs.load)
        return [job_record(j) for j in jobs.values()]

    def _parse(self, records: list[dict[str, Any]], whole: bool = False) -> list[RJMSJob]:
        """The records' jobs; ``whole``: the whole queue, whose unchanged jobs the next whole
        read reuses (:class:`slurm_json.ParsedJobs`)."""
        try:
            if whole:
                return self.parsed.parse(records)
            return [slurm_json.parse_job(r) for r in records]
        except (KeyError, TypeError, ValueError) as exc:
            raise RJMSError(
                f"unexpected job record ({exc!r})",
                where="pyslurm jobs",
                fix="rush retries next cycle; a pyslurm built for another Slurm reads garbage",
            ) from exc

    def read_state(self, partitions: Sequence[str] = ()) -> ClusterState:
        """Pending and live jobs (finished ones left out), free CPUs and the nodes, all or nothing."""
        taken_at = time.time()
        live = [
            j for j in self._parse(self._job_records(), whole=True) if j.state not in slurm_json.FINAL_STATES
        ]
        jobs = [j for j in live if j.partition in partitions] if partitions else live
        nodes = self._call("Nodes.load", self.pyslurm.Nodes.load)
        gpus_used: dict[str, int] = {}
        for job in live:  # every partition's jobs: a node may be in several
            for name, _, gpus in job.allocation:
                gpus_used[name] = gpus_used.get(name, 0) + gpus
        try:
            records = [node_record(n, gpus_used.get(n.name, 0)) for n in nodes.values()]
            total, free, names = slurm_json.parse_nodes(records, partitions)
            node_list = slurm_json.node_list(
                records, partitions, self._commands.leaf_switches(), self._commands.pod_switches()
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise RJMSError(
                f"unexpected node record ({exc!r})", where="pyslurm nodes", fix="rush retries next cycle"
            ) from exc
        pending = any(j.state == "PENDING" for j in jobs)
        factors = self._commands.site_factors() if pending else {}
        jobs = self.parsed.with_site_factors(jobs, factors)
        if self._commands.fairshare and pending:
            jobs = self.parsed.with_fairshare(jobs, self._commands.fairshare_factors())
        return ClusterState(
            taken_at=taken_at,
            total_procs=total,
            free_procs=free,
            jobs=tuple(jobs),
            partitions=tuple(sorted(names)),
            nodes=node_list,
        )

    def job(self, job_id: int) -> RJMSJob | None:
        """One job as slurmctld knows it, finished ones included (for MinJobAge seconds)."""
        wanted = _jid(job_id)
        try:
            found = self._call("Job.load", lambda: self.pyslurm.Job.load(wanted))
        except RJMSError as exc:
            if getattr(exc.__cause__, "errno", None) == ESLURM_INVALID_JOB_ID:
                return None
            raise
        [parsed] = self._parse([job_record(found)])
        factors = self._commands.site_factors() if parsed.state == "PENDING" else {}
        return replace(parsed, site_factor=factors.get(wanted, 0))

    def accounting(self, job_ids: Sequence[int]) -> list[dict]:
        """Finished-job records: from slurmctld while it remembers them (MinJobAge), then
        from the jobcomp/filetxt file when ``jobcomp_file`` is set."""
        wanted = {_jid(j) for j in job_ids}
        return finished_records(self._job_records(), wanted, "pyslurm", self.jobcomp_file)

    # -- acting ---------------------------------------------------------------------------
    def _act(self, what: str, call: Callable[[], Any]) -> ActionResult:
        """An action; Slurm's refusal (bad job id, finished job) is a failed ActionResult."""
        try:
            self._call(what, call)
        except RJMSError as exc:
            cause = exc.__cause__
            if isinstance(cause, self.pyslurm.PyslurmError):
                errno = getattr(cause, "errno", None)
                return ActionResult(ok=False, answer=f"{what}: {cause} (slurm errno {errno})")
            raise
        return ActionResult(ok=True, answer=f"{what}: ok")

    def _modify(self, job_id: int, what: str, **changes: Any) -> ActionResult:
        jid = _jid(job_id)
        desc = self.pyslurm.JobSubmitDescription(**changes)
        return self._act(what, lambda: self.pyslurm.Job(jid).modify(desc))

    def set_priority(self, job_id: int, site_factor: int) -> ActionResult:
        site_factor = site_factor_values.checked(site_factor)
        _jid(job_id)
        if site_factor == 0:
            return ActionResult(
                ok=False,
                answer="pyslurm cannot set SiteFactor=0 (its JobSubmitDescription leaves a zero out); "
                "rush's priority values are >= 1",
                attempted=False,
            )
        # pyslurm adds NICE_OFFSET (2**31) itself, as scontrol does.
        return self._modify(job_id, f"SiteFactor={site_factor}", site_factor=site_factor)

    def hold(self, job_id: int) -> ActionResult:
        jid = _jid(job_id)
        return self._act("hold", lambda: self.pyslurm.Job(jid).hold())

    def release(self, job_id: int) -> ActionResult:
        jid = _jid(job_id)
        return self._act("release", lambda: self.pyslurm.Job(jid).release())

    def requeue(self, job_id: int, tags: dict[str, str]) -> ActionResult:
        """Issue the requeue and write the tags; return at once (see :meth:`finish_requeue`)."""
        comment = format_tags(tags)  # validate before killing anything
        jid = _jid(job_id)
        result = self._act("requeue", lambda: self.pyslurm.Job(jid).requeue())
        if not result.ok:
            return result
        # Tags at once: with the restart count, the daemon's evidence of this requeue.
        tagged = self._modify(jid, f"AdminComment={comment}", admin_comment=comment)
        return ActionResult(ok=tagged.ok, answer=f"requeue issued: {result.answer}; tags: {tagged.answer}")

    def finish_requeue(self, job: RJMSJob) -> ActionResult | None:
        """As :meth:`SlurmBackend.finish_requeue`: once the old run has completed, the begin
        time comes back to now + 5 s instead of Slurm's requeue delay."""
        if job.state == "PENDING":
            begin = self._modify(job.job_id, "begin time now+5", begin_time=int(time.time()) + 5)
            return ActionResult(ok=begin.ok, answer=f"begin in 5 s: {begin.answer}")
        if job.state in ("COMPLETING", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD", "STAGE_OUT"):
            return None
        return ActionResult(ok=True, answer=f"nothing to finish (the job is {job.state})")

    def cancel(self, job_id: int) -> ActionResult:
        jid = _jid(job_id)

        def cancel() -> None:
            # Job.cancel() ignores an unknown id; scancel and slurmrestd refuse it.
            self.pyslurm.Job.load(jid)
            self.pyslurm.Job(jid).cancel()

        return self._act("cancel", cancel)

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
        options: dict[str, Any] = {
            "name": _text(name, "job name"),
            "ntasks": procs,
            "time_limit": _minutes(float(time_limit)),  # rounded up: never cut short
            "standard_output": "/dev/null",
            "script": "#!/bin/sh\n" + shlex.join(command) + "\n",
        }
        if comment:
            options["comment"] = _text(comment, "comment")
        if partition:  # pyslurm's attribute is "partitions" (a list); "partition" is no attribute
            options["partitions"] = [_text(partition, "partition")]
        if begin is not None:
            options["begin_time"] = int(begin)

        def submit() -> int:
            try:
                return int(self.pyslurm.JobSubmitDescription(**options).submit())
            except ValueError as exc:  # pyslurm's own checks of the description
                raise RJMSError(f"submit refused: {exc}", where="pyslurm submit") from exc

        try:
            return self._call("submit", submit)
        except RJMSError as exc:
            raise RJMSError(exc.message, where="pyslurm submit", fix="check the job's parameters") from exc
