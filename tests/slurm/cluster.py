"""A real Slurm on localhost for tests: munge, slurmctld, slurmd and slurmrestd.

Everything lives in one temporary directory: a fresh munge key and socket, a slurm.conf on
free ports, state and spool directories, logs, a JWT key. Nothing is read from /etc/slurm
or /etc/munge. One slurmd advertises ``cpus`` CPUs through
``SlurmdParameters=config_overrides``. The daemons run in the foreground as children of
the test process (each in its own session) and are stopped by their PIDs.

slurmrestd (22.05) refuses to run as root; the tests run as root, so the local-auth
instance (Unix socket, ``rest_auth/local``) is started with
``SLURMRESTD_SECURITY=disable_user_check``: the client's uid (root) must equal the
daemon's. :meth:`SlurmCluster.start_restd_jwt` starts the production-like variant: an
unprivileged slurmrestd (``-u nobody``) with ``rest_auth/jwt`` on a TCP port, clients
authenticating with a token from ``scontrol token``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

SBIN = Path("/usr/sbin")
BIN = Path("/usr/bin")
PLUGIN_DIR = Path("/usr/lib/x86_64-linux-gnu/slurm-wlm")
PLUGIN_LUA = Path(__file__).resolve().parents[2] / "plugins" / "slurm" / "job_submit_rush.lua"
OPENAPI = "openapi/v0.0.38"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def available() -> str | None:
    """None when everything the test Slurm needs is installed, else the reason to skip."""
    for path in (
        SBIN / "slurmctld",
        SBIN / "slurmd",
        SBIN / "slurmrestd",
        SBIN / "munged",
        BIN / "sbatch",
        BIN / "scontrol",
    ):
        if not path.exists():
            return f"{path} is not installed (.ci/install-deps.sh installs slurm-wlm, slurmrestd, munge)"
    if not (PLUGIN_DIR / "job_submit_lua.so").exists():
        return "Slurm's job_submit/lua plugin is missing (apt-get install slurm-wlm-basic-plugins)"
    if os.geteuid() != 0:
        return "the test Slurm runs slurmctld/slurmd as root (SlurmUser=root)"
    return None


class SlurmCluster:
    """One localhost Slurm; see the module docstring. Use :meth:`start`, then :meth:`stop`."""

    def __init__(self, workdir: Path, cpus: int = 64, job_submit_lua: Path | None = PLUGIN_LUA) -> None:
        self.dir = Path(workdir)
        self.cpus = cpus
        self.node = socket.gethostname().split(".")[0]
        self.job_submit_lua = job_submit_lua if job_submit_lua and job_submit_lua.exists() else None
        self.procs: dict[str, subprocess.Popen] = {}
        self.conf = self.dir / "slurm.conf"
        self.munge_socket = self.dir / "munge" / "munge.socket"
        self.jwt_key = self.dir / "state" / "jwt_hs256.key"
        self.restd_socket = self.dir / "slurmrestd.sock"
        self.jobcomp = self.dir / "log" / "jobcomp.txt"
        self.jwt_port: int | None = None
        self.public_dir: Path | None = None
        # auth/jwt comes in its own Debian package (slurm-wlm-jwt-plugin).
        self.has_jwt = (PLUGIN_DIR / "auth_jwt.so").exists()
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        # Clients must not pick up a token or a conf from the caller's environment.
        for var in ("SLURM_JWT", "SLURMRESTD_SECURITY"):
            self.env.pop(var, None)

    @property
    def rest_url(self) -> str:
        """URL of the local-auth slurmrestd (root clients only)."""
        return f"unix:{self.restd_socket}"

    @property
    def rest_jwt_url(self) -> str:
        if self.jwt_port is None:
            raise RuntimeError("call start_restd_jwt() first")
        return f"http://127.0.0.1:{self.jwt_port}"

    # -- set-up -------------------------------------------------------------------------
    def _write_config(self) -> None:
        for sub in ("munge", "state", "spool", "log"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        for key, size in ((self.dir / "munge" / "munge.key", 1024), (self.jwt_key, 32)):
            key.write_bytes(os.urandom(size))
            key.chmod(0o600)
        self.ctld_port, self.slurmd_port = free_port(), free_port()
        lines = [
            "ClusterName=rushtest",
            f"SlurmctldHost={self.node}(127.0.0.1)",
            f"SlurmctldPort={self.ctld_port}",
            f"SlurmdPort={self.slurmd_port}",
            "SlurmUser=root",
            "SlurmdUser=root",
            f"AuthInfo=socket={self.munge_socket}",
            f"StateSaveLocation={self.dir / 'state'}",
            f"SlurmdSpoolDir={self.dir / 'spool'}",
            f"SlurmctldPidFile={self.dir / 'slurmctld.pid'}",
            f"SlurmdPidFile={self.dir / 'slurmd.pid'}",
            f"SlurmctldLogFile={self.dir / 'log' / 'slurmctld.log'}",
            f"SlurmdLogFile={self.dir / 'log' / 'slurmd.log'}",
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            "MailProg=/bin/true",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_CPU",
            "SchedulerType=sched/backfill",
            "SchedulerParameters=bf_interval=1,sched_min_interval=100000",
            # multifactor: SiteFactor is added to the priority as is (no weight in 22.05).
            "PriorityType=priority/multifactor",
            "PriorityWeightAge=0",
            "PriorityWeightFairshare=0",
            "PriorityWeightJobSize=0",
            "PriorityWeightPartition=0",
            "PriorityWeightQOS=0",
            # No slurmdbd here: finished jobs stay readable through slurmctld for MinJobAge
            # seconds and in the jobcomp text file.
            "AccountingStorageType=accounting_storage/none",
            "JobAcctGatherType=jobacct_gather/none",
            "JobCompType=jobcomp/filetxt",
            f"JobCompLoc={self.jobcomp}",
            "MinJobAge=600",
            "JobRequeue=1",
            "ReturnToService=2",
            "MpiDefault=none",
            "SlurmdParameters=config_overrides",
            "InactiveLimit=0",
            "KillWait=1",
            "MessageTimeout=5",
            f"NodeName={self.node} NodeAddr=127.0.0.1 CPUs={self.cpus} RealMemory=4096 State=UNKNOWN",
            f"PartitionName=debug Nodes={self.node} Default=YES MaxTime=INFINITE State=UP",
        ]
        if self.has_jwt:
            # JWT as an alternative so that `scontrol token` and rest_auth/jwt work.
            lines += ["AuthAltTypes=auth/jwt", f"AuthAltParameters=jwt_key={self.jwt_key}"]
        if self.job_submit_lua is not None:
            # slurmctld loads job_submit.lua from the directory of slurm.conf.
            lines.append("JobSubmitPlugins=lua")
            shutil.copyfile(self.job_submit_lua, self.dir / "job_submit.lua")
        self.conf.write_text("\n".join(lines) + "\n")

    def _spawn(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
        with open(self.dir / "log" / f"{name}.out", "ab") as log:
            self.procs[name] = subprocess.Popen(
                argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env or self.env,
                cwd=self.dir,
                start_new_session=True,
            )

    def start(self, timeout: float = 60.0) -> SlurmCluster:
        self._write_config()
        self._spawn(
            "munged",
            [
                str(SBIN / "munged"),
                "-F",
                "--force",
                f"--key-file={self.dir / 'munge' / 'munge.key'}",
                f"--socket={self.munge_socket}",
                f"--pid-file={self.dir / 'munge' / 'munged.pid'}",
                f"--log-file={self.dir / 'munge' / 'munged.log'}",
                f"--seed-file={self.dir / 'munge' / 'munged.seed'}",
            ],
        )
        self._wait(self.munge_socket.exists, timeout, "munged socket")
        self.start_slurmctld(timeout)
        self._spawn("slurmd", [str(SBIN / "slurmd"), "-D", "-f", str(self.conf), "-N", self.node])
        self._wait(self.node_ready, timeout, "slurmd registration")
        self.start_restd(timeout)
        return self

    def start_slurmctld(self, timeout: float = 60.0) -> None:
        """(Re)start slurmctld; it recovers its jobs from StateSaveLocation."""
        self._spawn("slurmctld", [str(SBIN / "slurmctld"), "-D", "-i", "-f", str(self.conf)])
        self._wait(self.ping, timeout, "slurmctld")

    def stop_slurmctld(self) -> None:
        self._stop("slurmctld")

    def start_restd(self, timeout: float = 30.0) -> None:
        """slurmrestd with rest_auth/local on a Unix socket (see the module docstring)."""
        self.restd_socket.unlink(missing_ok=True)
        env = {**self.env, "SLURMRESTD_SECURITY": "disable_user_check"}
        argv = [str(SBIN / "slurmrestd"), "-f", str(self.conf), "-a", "rest_auth/local", "-s", OPENAPI]
        self._spawn("slurmrestd", [*argv, f"unix:{self.restd_socket}"], env=env)
        self._wait(self.restd_socket.exists, timeout, "slurmrestd socket")

    def stop_restd(self) -> None:
        self._stop("slurmrestd")

    def start_restd_jwt(self, timeout: float = 30.0) -> str:
        """An unprivileged slurmrestd with rest_auth/jwt on a free TCP port; returns its URL."""
        if not self.has_jwt:
            raise RuntimeError("Slurm's auth/jwt plugin is missing (apt-get install slurm-wlm-jwt-plugin)")
        if "slurmrestd-jwt" not in self.procs:
            self.jwt_port = free_port()
            # SLURM_JWT=daemon: slurmrestd itself needs no munge; each request carries a token.
            env = {**self.env, "SLURM_JWT": "daemon"}
            # After dropping to nobody it must still read slurm.conf, and pytest's temp dirs
            # are private (0700): give it a copy in a world-readable directory.
            self.public_dir = Path(tempfile.mkdtemp(prefix="rush-slurmrestd-"))
            self.public_dir.chmod(0o755)
            conf = self.public_dir / "slurm.conf"
            shutil.copyfile(self.conf, conf)
            conf.chmod(0o644)
            argv = [str(SBIN / "slurmrestd"), "-f", str(conf), "-a", "rest_auth/jwt", "-s", OPENAPI]
            argv += ["-u", "nobody", "-g", "nogroup", f"127.0.0.1:{self.jwt_port}"]
            self._spawn("slurmrestd-jwt", argv, env=env)
            self._wait(lambda: _port_open(self.jwt_port), timeout, "slurmrestd (jwt) port")
        return self.rest_jwt_url

    def token(self, user: str = "root", lifespan: int = 3600) -> str:
        """A JWT for ``user`` from ``scontrol token`` (signed with the cluster's jwt key)."""
        out = self.run(str(BIN / "scontrol"), "token", f"username={user}", f"lifespan={lifespan}")
        return out.stdout.strip().partition("SLURM_JWT=")[2]

    def _wait(self, ready: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            for name, proc in self.procs.items():
                if proc.poll() is not None:
                    raise RuntimeError(f"{name} exited with {proc.returncode}: {self.log_tail(name)}")
            if ready():
                return
            time.sleep(0.2)
        raise RuntimeError(
            f"timed out waiting for {what}: {self.log_tail('slurmctld')} {self.log_tail('slurmd')}"
        )

    def log_tail(self, name: str, lines: int = 15) -> str:
        """The last lines of a daemon's log file (or its captured stdout/stderr)."""
        for path in (self.dir / "log" / f"{name}.log", self.dir / "log" / f"{name}.out"):
            if path.exists() and path.stat().st_size:
                return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
        return ""

    # -- client helpers -----------------------------------------------------------------
    def run(self, *argv: str, check: bool = True, timeout: float = 30.0) -> subprocess.CompletedProcess:
        """Run a Slurm client against this cluster (cwd is the cluster dir: job output lands there)."""
        out = subprocess.run(
            list(argv), capture_output=True, text=True, env=self.env, timeout=timeout, cwd=self.dir
        )
        if check and out.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed: {out.stderr.strip()}")
        return out

    def ping(self) -> bool:
        out = self.run(str(BIN / "scontrol"), "ping", check=False, timeout=10)
        return out.returncode == 0 and "UP" in out.stdout

    def node_ready(self) -> bool:
        out = self.run(str(BIN / "sinfo"), "-h", "-o", "%T", check=False, timeout=10)
        return out.returncode == 0 and out.stdout.strip() in ("idle", "mixed", "allocated")

    def submit(self, *sbatch_args: str) -> int:
        """``sbatch --parsable ARGS`` (e.g. ``"-n", "4", "-t", "5", "--wrap", "sleep 9"``) -> job id."""
        out = self.run(str(BIN / "sbatch"), "--parsable", *sbatch_args)
        return int(out.stdout.strip().split(";")[0])

    def squeue_json(self) -> list[dict]:
        """The jobs slurmctld knows (pending, running and recently finished), as squeue --json."""
        return json.loads(self.run(str(BIN / "squeue"), "--json").stdout)["jobs"]

    def scontrol_job(self, job_id: int) -> dict[str, str]:
        """``scontrol show job -o`` as a dict (AdminComment, Restarts, JobState, ...)."""
        out = self.run(str(BIN / "scontrol"), "show", "job", "-o", str(int(job_id))).stdout
        fields = {}
        for item in out.split():
            key, sep, value = item.partition("=")
            if sep:
                fields[key] = value
        return fields

    def cancel_all(self, wait: float = 10.0) -> None:
        """Cancel every job and wait (briefly) until none is still running."""
        self.run(str(BIN / "scancel"), "--full", "-u", "root", check=False)
        deadline = time.time() + wait
        while time.time() < deadline:
            try:
                states = {_state(j) for j in self.squeue_json()}
            except (RuntimeError, ValueError, subprocess.TimeoutExpired):
                return
            if not states & {"PENDING", "RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED"}:
                return
            time.sleep(0.2)

    # -- tear-down ----------------------------------------------------------------------
    def _stop(self, name: str) -> None:
        proc = self.procs.pop(name, None)
        if proc is None or proc.poll() is not None:
            return
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)

    def _stop_job_steps(self) -> None:
        """slurmstepd outlives slurmd; stop the ones our slurmd started (their SLURM_CONF is ours)."""
        marker = f"SLURM_CONF={self.conf}".encode()
        for proc_dir in Path("/proc").iterdir():
            if not proc_dir.name.isdigit():
                continue
            try:
                if not (proc_dir / "cmdline").read_bytes().startswith(b"slurmstepd"):
                    continue
                if marker not in (proc_dir / "environ").read_bytes().split(b"\0"):
                    continue
                os.kill(int(proc_dir.name), signal.SIGKILL)
            except (OSError, ValueError):
                continue

    def stop(self) -> None:
        if "slurmctld" in self.procs and "slurmd" in self.procs:
            try:  # let jobs end cleanly; the PIDs are stopped below whatever happens
                self.cancel_all(wait=5.0)
            except (OSError, RuntimeError, subprocess.TimeoutExpired):
                pass
        for name in ("slurmrestd-jwt", "slurmrestd", "slurmd", "slurmctld", "munged"):
            self._stop(name)
        self._stop_job_steps()
        if self.public_dir is not None:
            shutil.rmtree(self.public_dir, ignore_errors=True)


def _state(job: dict) -> str:
    state = job.get("job_state", "")
    return state if isinstance(state, str) else (state[0] if state else "")


def _port_open(port: int | None) -> bool:
    if port is None:
        return False
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0
