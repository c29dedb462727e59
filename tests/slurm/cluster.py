"""A real Slurm on localhost for tests: munge, slurmctld, slurmd (and slurmrestd).

Everything lives in a temporary directory: a fresh munge key and socket, a slurm.conf on
free ports, state and spool directories. One slurmd advertises ``cpus`` CPUs through
``SlurmdParameters=config_overrides``. The daemons run in the foreground as children of
the test process and are stopped by their PIDs.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

SBIN = Path("/usr/sbin")
BIN = Path("/usr/bin")
PLUGIN_LUA = Path(__file__).resolve().parents[2] / "plugins" / "slurm" / "job_submit_rush.lua"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def available() -> str | None:
    """None when the binaries are installed, else the reason to skip."""
    for name in ("slurmctld", "slurmd", "munged"):
        if not (SBIN / name).exists():
            return f"{name} is not installed (apt-get install slurm-wlm munge; make test does it)"
    if os.geteuid() != 0:
        return "the test Slurm runs its daemons as root"
    return None


class SlurmCluster:
    def __init__(self, workdir: Path, cpus: int = 64, job_submit_lua: Path | None = PLUGIN_LUA) -> None:
        self.dir = workdir
        self.cpus = cpus
        self.node = socket.gethostname().split(".")[0]
        self.job_submit_lua = job_submit_lua if job_submit_lua and job_submit_lua.exists() else None
        self.procs: dict[str, subprocess.Popen] = {}
        self.conf = self.dir / "slurm.conf"
        self.munge_socket = self.dir / "munge" / "munge.socket"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}

    # -- set-up -------------------------------------------------------------------------
    def _write_config(self) -> None:
        for sub in ("munge", "state", "spool", "log"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        key = self.dir / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
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
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_CPU",
            "SchedulerType=sched/backfill",
            "SchedulerParameters=bf_interval=1,sched_min_interval=100000",
            "PriorityType=priority/multifactor",
            "PriorityWeightAge=0",
            "PriorityWeightFairshare=0",
            "PriorityWeightJobSize=0",
            "PriorityWeightPartition=0",
            "PriorityWeightQOS=0",
            "AccountingStorageType=accounting_storage/none",
            "JobAcctGatherType=jobacct_gather/none",
            "JobCompType=jobcomp/filetxt",
            f"JobCompLoc={self.dir / 'log' / 'jobcomp.txt'}",
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
        if self.job_submit_lua is not None:
            lines.append("JobSubmitPlugins=lua")
            shutil.copyfile(self.job_submit_lua, self.dir / "job_submit.lua")
        self.conf.write_text("\n".join(lines) + "\n")

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = open(self.dir / "log" / f"{name}.out", "ab")
        self.procs[name] = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, env=self.env, start_new_session=True
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
        self._wait(lambda: self.munge_socket.exists(), timeout, "munged socket")
        self.start_slurmctld(timeout)
        self._spawn("slurmd", [str(SBIN / "slurmd"), "-D", "-f", str(self.conf), "-N", self.node])
        self._wait(self.node_ready, timeout, "slurmd registration")
        return self

    def start_slurmctld(self, timeout: float = 60.0) -> None:
        self._spawn("slurmctld", [str(SBIN / "slurmctld"), "-D", "-i", "-f", str(self.conf)])
        self._wait(self.ping, timeout, "slurmctld")

    def stop_slurmctld(self) -> None:
        self._stop("slurmctld")

    def _wait(self, ready, timeout: float, what: str) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            for name, proc in self.procs.items():
                if proc.poll() is not None:
                    raise RuntimeError(f"{name} exited with {proc.returncode}: {self.log_tail(name)}")
            if ready():
                return
            time.sleep(0.3)
        raise RuntimeError(
            f"timed out waiting for {what}: {self.log_tail('slurmctld')} {self.log_tail('slurmd')}"
        )

    def log_tail(self, name: str, lines: int = 15) -> str:
        for path in (self.dir / "log" / f"{name}.log", self.dir / "log" / f"{name}.out"):
            if path.exists():
                return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
        return ""

    # -- client helpers -----------------------------------------------------------------
    def run(self, *argv: str, check: bool = True, timeout: float = 30.0) -> subprocess.CompletedProcess:
        out = subprocess.run(list(argv), capture_output=True, text=True, env=self.env, timeout=timeout)
        if check and out.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed: {out.stderr.strip()}")
        return out

    def ping(self) -> bool:
        out = subprocess.run(
            [str(BIN / "scontrol"), "ping"], capture_output=True, text=True, env=self.env, timeout=10
        )
        return out.returncode == 0 and "UP" in out.stdout

    def node_ready(self) -> bool:
        out = subprocess.run(
            [str(BIN / "sinfo"), "-h", "-o", "%T"], capture_output=True, text=True, env=self.env, timeout=10
        )
        return out.returncode == 0 and out.stdout.strip() in ("idle", "mixed", "allocated")

    def submit(self, *sbatch_args: str) -> int:
        out = self.run(str(BIN / "sbatch"), "--parsable", *sbatch_args)
        return int(out.stdout.strip().split(";")[0])

    def cancel_all(self) -> None:
        self.run(str(BIN / "scancel"), "--full", "-u", "root", check=False)

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

    def stop(self) -> None:
        for name in ("slurmd", "slurmctld", "slurmrestd", "munged"):
            self._stop(name)
