"""A real Slurm on localhost for tests: munge, slurmctld, slurmd and slurmrestd, of a given install.

:data:`INSTALLS` names the Slurms the tests run on: Debian's 22.05 (``/usr``) and 25.11
built from ``../shared/vendor`` (``.ci/vendor-slurm.sh``, prefix ``/opt/slurm-25.11`` or
``RUSH_SLURM_25_PREFIX``). A cluster uses its install's own binaries, plugins and clients
(22.05's clients cannot talk to a 25.11 controller) and its own config, ports, state and
spool directories. Everything lives in one temporary directory: a fresh munge key and socket, a slurm.conf on
free ports, state and spool directories, logs, a JWT key. Nothing is read from /etc/slurm
or /etc/munge. One slurmd advertises ``cpus`` CPUs through
``SlurmdParameters=config_overrides``. The daemons run in the foreground as children of
the test process (each in its own session) and are stopped by their PIDs.

slurmrestd refuses to run as root. On 22.05 the tests' main instance is the local-auth one
(Unix socket, ``rest_auth/local``), started with ``SLURMRESTD_SECURITY=disable_user_check``
so that the client's uid (root) equals the daemon's. 25.11 aborts on that setting and sees a
root client of a local-auth slurmrestd run as another user as that user (writes to root's
jobs fail), so there the main instance is the production-like one that
:meth:`SlurmCluster.start_restd_jwt` starts on 22.05 too: an unprivileged slurmrestd
(``-u daemon``, neither root nor SlurmUser) with ``rest_auth/jwt`` on a TCP port, clients
authenticating with a token from ``scontrol token``. :meth:`SlurmCluster.rest_options`
gives the backend options for the main instance either way.

Multi-node layout (``layout=MULTI_NODE``, Slurm 25.11 only: the vendored build has
``--enable-multiple-slurmd``, Debian's 22.05 has not): eight nodes ``n1`` .. ``n8`` of 4 CPUs
and 1 GiB, each its own ``slurmd -N nX`` on this host (own port, spool, pid and log file
through ``%n``; ``NodeHostname=localhost``); partitions ``batch`` = n[1-6] (default) and
``gpu`` = n[5-8]; n5 .. n8 carry a fake GPU GRES (``gpu:2``: ``Name=gpu Count=2
File=<dir>/dev/gpu[0-1]`` in gres.conf with ``AutoDetect=off``; the files are empty regular
files, because 25.11's slurmd ignores a file-less GPU and the controller then marks the node
INVAL); ``topology/tree`` with leaf switches ``s1`` = n[1-4] and ``s2`` = n[5-8] under
``s0``; ``SelectType=select/cons_tres`` with ``CR_CPU``; n4 drained once every node has
registered (``reason=rush-test-drain``). It starts in about a second. The ``slurm_nodes``
session fixture (tests/conftest.py) shares one such cluster.
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
PLUGIN_LUA = REPO / "plugins" / "slurm" / "job_submit_rush.lua"
VENDOR = REPO.parent / "shared" / "vendor"
MUNGED = Path("/usr/sbin/munged")


@dataclass(frozen=True)
class SlurmInstall:
    """Where one Slurm lives: its commands, daemons and plugins."""

    name: str  # the test id: "22.05", "25.11"
    bin: Path
    sbin: Path
    plugin_dir: Path
    # slurmrestd's plugins: 22.05 needs openapi/v0.0.38 named; 25.11 loads every
    # data_parser (v0.0.41 .. v0.0.44) by default.
    restd_plugins: tuple[str, ...] = ()
    # 22.05 can run its local-auth slurmrestd as root (disable_user_check); 25.11 cannot.
    local_rest: bool = True
    # Built from ../shared/vendor (build-slurm.sh writes this marker last) rather than packaged.
    vendored: bool = False

    def tool(self, name: str) -> str:
        """The path of a client command of this install (``scontrol``, ``squeue``...)."""
        return str(self.bin / name)

    def available(self) -> str | None:
        """None when this install can run the test cluster here, else the reason to skip."""
        if self.vendored and not (self.sbin.parent / ".built-from").exists():
            if not VENDOR.is_dir():
                return f"Slurm {self.name}: {VENDOR} is absent (nothing to build it from)"
            return f"Slurm {self.name} is not built in {self.sbin.parent}: run .ci/vendor-slurm.sh"
        for path in (
            self.sbin / "slurmctld",
            self.sbin / "slurmd",
            self.sbin / "slurmrestd",
            MUNGED,
            self.bin / "sbatch",
            self.bin / "scontrol",
        ):
            if not path.exists():
                return f"{path} is not installed (.ci/install-deps.sh installs slurm-wlm, slurmrestd, munge)"
        if not (self.plugin_dir / "job_submit_lua.so").exists():
            return f"Slurm {self.name}'s job_submit/lua plugin is missing from {self.plugin_dir}"
        if os.geteuid() != 0:
            return "the test Slurm runs slurmctld/slurmd as root (SlurmUser=root)"
        return None


DEBIAN = SlurmInstall(
    "22.05",
    bin=Path("/usr/bin"),
    sbin=Path("/usr/sbin"),
    plugin_dir=Path("/usr/lib/x86_64-linux-gnu/slurm-wlm"),
    restd_plugins=("-s", "openapi/v0.0.38"),
)
_VENDORED = Path(os.environ.get("RUSH_SLURM_25_PREFIX", "/opt/slurm-25.11"))
VENDORED = SlurmInstall(
    "25.11",
    bin=_VENDORED / "bin",
    sbin=_VENDORED / "sbin",
    plugin_dir=_VENDORED / "lib" / "slurm",
    local_rest=False,
    vendored=True,
)
INSTALLS = {install.name: install for install in (DEBIAN, VENDORED)}


@dataclass(frozen=True)
class NodeLayout:
    """A multi-node cluster on this host: one slurmd per node (see the module docstring)."""

    nodes: tuple[str, ...] = tuple(f"n{i}" for i in range(1, 9))
    cpus: int = 4
    memory_mb: int = 1024
    # (partition, its nodes as a Slurm host list, default partition?)
    partitions: tuple[tuple[str, str, bool], ...] = (("batch", "n[1-6]", True), ("gpu", "n[5-8]", False))
    gpu_nodes: tuple[str, ...] = ("n5", "n6", "n7", "n8")
    gpus_per_node: int = 2
    drained: tuple[str, ...] = ("n4",)
    # (leaf switch, its nodes); the root switch s0 links them.
    switches: tuple[tuple[str, str], ...] = (("s1", "n[1-4]"), ("s2", "n[5-8]"))


MULTI_NODE = NodeLayout()
DRAIN_REASON = "rush-test-drain"

# The 22.05 paths, for callers that do not pass an install.
SBIN, BIN, PLUGIN_DIR = DEBIAN.sbin, DEBIAN.bin, DEBIAN.plugin_dir


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def available(install: SlurmInstall = DEBIAN) -> str | None:
    """None when ``install`` can run the test cluster here, else the reason to skip."""
    return install.available()


class SlurmCluster:
    """One localhost Slurm; see the module docstring. Use :meth:`start`, then :meth:`stop`."""

    def __init__(
        self,
        workdir: Path,
        cpus: int = 64,
        job_submit_lua: Path | None = PLUGIN_LUA,
        install: SlurmInstall = DEBIAN,
        layout: NodeLayout | None = None,
    ) -> None:
        self.install = install
        # None: the single node of ``cpus`` CPUs named after this host.
        self.layout = layout
        self.bin, self.sbin = install.bin, install.sbin
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
        self.has_jwt = (install.plugin_dir / "auth_jwt.so").exists()
        # This install's commands first: job scripts and helpers find the matching clients.
        path = f"{install.bin}:{install.sbin}:{os.environ.get('PATH', '/usr/bin:/bin')}"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf), "PATH": path}
        # Clients must not pick up a token or a conf from the caller's environment.
        for var in ("SLURM_JWT", "SLURMRESTD_SECURITY"):
            self.env.pop(var, None)

    @property
    def name(self) -> str:
        return self.install.name

    def tool(self, name: str) -> str:
        """The path of this install's client command ``name``."""
        return self.install.tool(name)

    def options(self, **extra: Any) -> dict[str, Any]:
        """Backend options reading this cluster through its own commands."""
        return {"slurm_conf": str(self.conf), "bin_dir": str(self.bin), **extra}

    def rest_options(self) -> dict[str, Any]:
        """Backend options for the main slurmrestd: the local-auth socket (22.05) or the
        JWT one, with a fresh root token (25.11)."""
        if self.install.local_rest:
            return {"rest_url": self.rest_url}
        return {"rest_url": self.rest_url, "jwt": self.token(), "jwt_user": "root"}

    @property
    def rest_url(self) -> str:
        """URL of the main slurmrestd (see the module docstring)."""
        if self.install.local_rest:
            return f"unix:{self.restd_socket}"
        return self.rest_jwt_url

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
        # Several slurmd on one host each need their own spool, pid and log file (%n: node name).
        slurmd_tag = "-%n" if self.layout else ""
        for node in self.layout.nodes if self.layout else ():
            (self.dir / "spool" / node).mkdir(exist_ok=True)
        lines = [
            "ClusterName=rushtest",
            f"SlurmctldHost={self.node}(127.0.0.1)",
            f"SlurmctldPort={self.ctld_port}",
            f"SlurmdPort={self.slurmd_port}",
            "SlurmUser=root",
            "SlurmdUser=root",
            f"AuthInfo=socket={self.munge_socket}",
            f"StateSaveLocation={self.dir / 'state'}",
            f"SlurmdSpoolDir={self.dir / 'spool' / slurmd_tag.strip('-')}",
            f"SlurmctldPidFile={self.dir / 'slurmctld.pid'}",
            f"SlurmdPidFile={self.dir / f'slurmd{slurmd_tag}.pid'}",
            f"SlurmctldLogFile={self.dir / 'log' / 'slurmctld.log'}",
            f"SlurmdLogFile={self.dir / 'log' / f'slurmd{slurmd_tag}.log'}",
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            "MailProg=/bin/true",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_CPU",
            "SchedulerType=sched/backfill",
            # sched_interval: the main scheduler's pass every 2 s, not 60 (a requeued job whose
            # begin time has come waits for that pass; the tests waited up to a minute each).
            "SchedulerParameters=bf_interval=1,sched_interval=2,sched_min_interval=100000",
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
            *self._node_lines(),
        ]
        if self.has_jwt:
            # JWT as an alternative so that `scontrol token` and rest_auth/jwt work.
            lines += ["AuthAltTypes=auth/jwt", f"AuthAltParameters=jwt_key={self.jwt_key}"]
        if self.job_submit_lua is not None:
            # slurmctld loads job_submit.lua from the directory of slurm.conf.
            lines.append("JobSubmitPlugins=lua")
            shutil.copyfile(self.job_submit_lua, self.dir / "job_submit.lua")
        self.conf.write_text("\n".join(lines) + "\n")

    def _node_lines(self) -> list[str]:
        """slurm.conf's nodes and partitions; for a layout also gres.conf and topology.conf."""
        if self.layout is None:
            return [
                f"NodeName={self.node} NodeAddr=127.0.0.1 CPUs={self.cpus} RealMemory=4096 State=UNKNOWN",
                f"PartitionName=debug Nodes={self.node} Default=YES MaxTime=INFINITE State=UP",
            ]
        layout = self.layout
        lines = ["GresTypes=gpu", "TopologyPlugin=topology/tree"]
        self.slurmd_ports = {node: free_port() for node in layout.nodes}
        for node in layout.nodes:
            gres = f" Gres=gpu:{layout.gpus_per_node}" if node in layout.gpu_nodes else ""
            lines.append(
                f"NodeName={node} NodeHostname=localhost NodeAddr=127.0.0.1 Port={self.slurmd_ports[node]} "
                f"CPUs={layout.cpus} RealMemory={layout.memory_mb}{gres} State=UNKNOWN"
            )
        for name, nodes, default in layout.partitions:
            lines.append(
                f"PartitionName={name} Nodes={nodes} Default={'YES' if default else 'NO'} MaxTime=INFINITE State=UP"
            )
        # 25.11's slurmd drops a file-less GPU ("Ignoring file-less GPU") and the node is then
        # INVAL: empty regular files stand in for the devices (task/none never binds them).
        devices = self.dir / "dev"
        devices.mkdir(exist_ok=True)
        for index in range(layout.gpus_per_node):
            (devices / f"gpu{index}").touch()
        files = f"{devices}/gpu[0-{layout.gpus_per_node - 1}]"
        gres = ["AutoDetect=off"]
        gres += [
            f"NodeName={node} Name=gpu Count={layout.gpus_per_node} File={files}" for node in layout.gpu_nodes
        ]
        (self.dir / "gres.conf").write_text("\n".join(gres) + "\n")
        leaves = [f"SwitchName={name} Nodes={nodes}" for name, nodes in layout.switches]
        root = f"SwitchName=s0 Switches={','.join(name for name, _ in layout.switches)}"
        (self.dir / "topology.conf").write_text("\n".join([*leaves, root]) + "\n")
        return lines

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
                str(MUNGED),
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
        for node in self.slurmd_nodes:
            self._spawn(
                self._slurmd_name(node), [str(self.sbin / "slurmd"), "-D", "-f", str(self.conf), "-N", node]
            )
        self._wait(self.node_ready, timeout, "slurmd registration")
        if self.layout is not None:
            for node in self.layout.drained:
                self.run(
                    self.tool("scontrol"),
                    "update",
                    f"NodeName={node}",
                    "State=DRAIN",
                    f"Reason={DRAIN_REASON}",
                )
        self.start_restd(timeout)
        return self

    @property
    def slurmd_nodes(self) -> tuple[str, ...]:
        """The node names this cluster runs a slurmd for."""
        return self.layout.nodes if self.layout is not None else (self.node,)

    def _slurmd_name(self, node: str) -> str:
        # The single-node cluster's slurmd keeps its name (log files, tests that stop it).
        return "slurmd" if self.layout is None else f"slurmd-{node}"

    def start_slurmctld(self, timeout: float = 60.0) -> None:
        """(Re)start slurmctld; it recovers its jobs from StateSaveLocation."""
        self._spawn("slurmctld", [str(self.sbin / "slurmctld"), "-D", "-i", "-f", str(self.conf)])
        self._wait(self.ping, timeout, "slurmctld")

    def stop_slurmctld(self) -> None:
        self._stop("slurmctld")

    def start_restd(self, timeout: float = 30.0) -> None:
        """The main slurmrestd: rest_auth/local on a Unix socket (22.05) or rest_auth/jwt on
        a TCP port (25.11; see the module docstring)."""
        if not self.install.local_rest:
            self.start_restd_jwt(timeout)
            return
        self.restd_socket.unlink(missing_ok=True)
        env = {**self.env, "SLURMRESTD_SECURITY": "disable_user_check"}
        argv = [str(self.sbin / "slurmrestd"), "-f", str(self.conf), "-a", "rest_auth/local"]
        argv += self.install.restd_plugins
        self._spawn("slurmrestd", [*argv, f"unix:{self.restd_socket}"], env=env)
        self._wait(self.restd_socket.exists, timeout, "slurmrestd socket")

    def stop_restd(self) -> None:
        """Stop the main slurmrestd."""
        self._stop("slurmrestd" if self.install.local_rest else "slurmrestd-jwt")

    def start_restd_jwt(self, timeout: float = 30.0) -> str:
        """An unprivileged slurmrestd with rest_auth/jwt on a free TCP port; returns its URL."""
        if not self.has_jwt:
            raise RuntimeError("Slurm's auth/jwt plugin is missing (apt-get install slurm-wlm-jwt-plugin)")
        if "slurmrestd-jwt" not in self.procs:
            # A restart keeps the port: clients hold the URL.
            self.jwt_port = self.jwt_port or free_port()
            # SLURM_JWT=daemon: slurmrestd itself needs no munge; each request carries a token.
            env = {**self.env, "SLURM_JWT": "daemon"}
            # After dropping to nobody it must still read slurm.conf, and pytest's temp dirs
            # are private (0700): give it a copy in a world-readable directory.
            self.public_dir = self.public_dir or Path(tempfile.mkdtemp(prefix="rush-slurmrestd-"))
            self.public_dir.chmod(0o755)
            conf = self.public_dir / "slurm.conf"
            shutil.copyfile(self.conf, conf)
            conf.chmod(0o644)
            argv = [str(self.sbin / "slurmrestd"), "-f", str(conf), "-a", "rest_auth/jwt"]
            # Neither root nor SlurmUser (25.11 refuses both).
            argv += [
                *self.install.restd_plugins,
                "-u",
                "daemon",
                "-g",
                "daemon",
                f"127.0.0.1:{self.jwt_port}",
            ]
            self._spawn("slurmrestd-jwt", argv, env=env)
            self._wait(lambda: _port_open(self.jwt_port), timeout, "slurmrestd (jwt) port")
        return self.rest_jwt_url

    def token(self, user: str = "root", lifespan: int = 3600) -> str:
        """A JWT for ``user`` from ``scontrol token`` (signed with the cluster's jwt key)."""
        out = self.run(self.tool("scontrol"), "token", f"username={user}", f"lifespan={lifespan}")
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
            f"timed out waiting for {what}: {self.log_tail('slurmctld')} "
            f"{self.log_tail(self._slurmd_name(self.slurmd_nodes[0]))}"
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
        out = self.run(self.tool("scontrol"), "ping", check=False, timeout=10)
        return out.returncode == 0 and "UP" in out.stdout

    def node_ready(self) -> bool:
        """Every node has registered (a layout's drained nodes are drained only after)."""
        out = self.run(self.tool("sinfo"), "-h", "-N", "-o", "%T", check=False, timeout=10)
        states = out.stdout.split()
        return (
            out.returncode == 0
            and len(states) >= len(self.slurmd_nodes)
            and all(state in ("idle", "mixed", "allocated") for state in states)
        )

    def node_up(self, node: str) -> Callable[[], bool]:
        """A poll: ``node`` takes jobs again (idle, mixed or allocated, no flag)."""

        def poll() -> bool:
            out = self.run(self.tool("sinfo"), "-h", "-n", node, "-o", "%T", check=False, timeout=10)
            return out.returncode == 0 and out.stdout.strip() in ("idle", "mixed", "allocated")

        return poll

    def submit(self, *sbatch_args: str) -> int:
        """``sbatch --parsable ARGS`` (e.g. ``"-n", "4", "-t", "5", "--wrap", "sleep 9"``) -> job id."""
        out = self.run(self.tool("sbatch"), "--parsable", *sbatch_args)
        return int(out.stdout.strip().split(";")[0])

    def squeue_json(self) -> list[dict]:
        """The jobs slurmctld knows (pending, running and recently finished), as squeue --json
        (raw: this install's shapes; compare parsed jobs in tests, see :meth:`job`)."""
        return json.loads(self.run(self.tool("squeue"), "--json", "--states=all").stdout)["jobs"]

    def job(self, job_id: int) -> Any:
        """The job as rush parses it (finished ones included), read through the commands."""
        from rush.rjms.base import get_backend

        return get_backend("slurm", **self.options()).job(job_id)

    def scontrol_job(self, job_id: int) -> dict[str, str]:
        """``scontrol show job -o`` as a dict (AdminComment, Restarts, JobState, ...)."""
        out = self.run(self.tool("scontrol"), "show", "job", "-o", str(int(job_id))).stdout
        fields = {}
        for item in out.split():
            key, sep, value = item.partition("=")
            if sep:
                fields[key] = value
        return fields

    def cancel_all(self, wait: float = 10.0) -> None:
        """Cancel every job and wait (briefly) until none is still running."""
        self.run(self.tool("scancel"), "--full", "-u", "root", check=False)
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
        slurmds = [self._slurmd_name(node) for node in self.slurmd_nodes]
        if "slurmctld" in self.procs and any(name in self.procs for name in slurmds):
            try:  # let jobs end cleanly; the PIDs are stopped below whatever happens
                self.cancel_all(wait=5.0)
            except (OSError, RuntimeError, subprocess.TimeoutExpired):
                pass
        for name in ("slurmrestd-jwt", "slurmrestd", *slurmds, "slurmctld", "munged"):
            self._stop(name)
        self._stop_job_steps()
        if self.public_dir is not None:
            shutil.rmtree(self.public_dir, ignore_errors=True)


def _state(job: dict) -> str:
    from rush.rjms.slurm_json import job_state

    return job_state(job.get("job_state", ""))


def _port_open(port: int | None) -> bool:
    if port is None:
        return False
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0
